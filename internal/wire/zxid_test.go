package wire

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// go-zookeeper records no zxid of its own (it reads every reply with a
// zxid of 0, however it splits its reads), so it cannot race on that
// field; the layer keeps the last, as go-zookeeper would have.
func TestRepliesReachGoZookeeperWithoutTheirZxidWhichTheLayerKeeps(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	l := New()
	c, err := l.Dialer(func(string, string, time.Duration) (net.Conn, error) { return client, nil })("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	defer c.Close()
	handshake(t, c, server)

	var burst []byte
	for i, z := range []int64{0x10, 0x11, 0, 0x12} {
		burst = append(burst, ownTestReply(int32(i+1), z, 0, []byte("body"))...)
	}
	notification := ownTestReply(-1, -1, 0, []byte{0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 2, '/', 'a'})
	burst = append(burst, notification...)
	go func() { _, _ = server.Write(burst) }()

	for i := range 4 {
		var got []byte
		if i%2 == 0 {
			got = readOne(t, c) // as go-zookeeper reads: the length, then the rest
		} else { // byte by byte
			b := make([]byte, 4+20)
			for j := range b {
				_, err := io.ReadFull(c, b[j:j+1])
				require.NoError(t, err)
			}
			got = b[4:]
		}
		assert.Equal(t, ownTestReply(int32(i+1), 0, 0, []byte("body"))[4:], got, "reply %d", i+1)
	}
	assert.Equal(t, notification[4:], readOne(t, c), "a notification passes untouched")
	assert.Equal(t, int64(0x12), l.zxid.Load(), "the last zxid above 0")
}

// The zxid go-zookeeper would have sent goes out in its place: in the
// ConnectRequest (a server refuses a client that has seen more than it
// has), and in SetWatches, as it stood when the connection's handshake was
// written, whatever replies were read on the connection since.
func TestTheLayersZxidGoesOutInTheHandshakeAndInSetWatches(t *testing.T) {
	l := New()
	l.zxid.Store(0x4242)
	client, server := net.Pipe()
	defer server.Close()
	c, err := l.Dialer(func(string, string, time.Duration) (net.Conn, error) { return client, nil })("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	defer c.Close()

	req := make([]byte, 4+44)
	binary.BigEndian.PutUint32(req, 44)
	binary.BigEndian.PutUint32(req[4:8], 0) // protocolVersion; lastZxidSeen 0: go-zookeeper's own
	sent := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(req))
		_, _ = io.ReadFull(server, b)
		sent <- b
	}()
	_, err = c.Write(req)
	require.NoError(t, err)
	got := <-sent
	assert.Equal(t, uint64(0x4242), binary.BigEndian.Uint64(got[8:16]), "lastZxidSeen")
	assert.Zero(t, binary.BigEndian.Uint64(req[8:16]), "go-zookeeper's buffer is left alone")

	resp := binary.BigEndian.AppendUint32(nil, 36)
	resp = binary.BigEndian.AppendUint32(resp, 0)
	resp = binary.BigEndian.AppendUint32(resp, 4000)
	resp = binary.BigEndian.AppendUint64(resp, 0x55)
	resp = binary.BigEndian.AppendUint32(resp, 16)
	resp = append(resp, make([]byte, 16)...)
	go func() { _, _ = server.Write(append(resp, ownTestReply(1, 0x5000, 0, nil)...)) }()
	_, err = io.ReadFull(c, make([]byte, len(resp)))
	require.NoError(t, err)
	readOne(t, c)
	require.Equal(t, int64(0x5000), l.zxid.Load())

	// SetWatches: length, xid, opcode, relativeZxid (0: go-zookeeper's), three empty lists.
	sw := binary.BigEndian.AppendUint32(nil, 8+8+12)
	sw = binary.BigEndian.AppendUint32(sw, 2)
	sw = binary.BigEndian.AppendUint32(sw, opSetWatches)
	sw = append(sw, make([]byte, 8+12)...)
	go func() {
		b := make([]byte, len(sw))
		_, _ = io.ReadFull(server, b)
		sent <- b
	}()
	_, err = c.Write(sw)
	require.NoError(t, err)
	got = <-sent
	assert.Equal(t, uint64(0x4242), binary.BigEndian.Uint64(got[12:20]),
		"relativeZxid: the zxid as the handshake was written, not a reply's read since")
}
