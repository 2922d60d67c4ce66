package wire

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// go-zookeeper records no zxid of its own (it reads every reply with a
// zxid of 0, however it splits its reads), so it cannot race on that
// field; the layer keeps the last, as go-zookeeper would have.
func TestRepliesReachGoZookeeperWithoutTheirZxidWhichTheLayerKeeps(t *testing.T) {
	l := New()
	c, server := pipeConn(t, l)
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
	l := New() // go-zookeeper holds no watch at the handshake: replies pass at once
	l.zxid.Store(0x4242)
	l.base.Store(0x4242)
	c, server := pipeConn(t, l)
	got := shakeAs(t, c, server, 0x55, 0x55, 4000) // resumed
	assert.Equal(t, uint64(0x4242), binary.BigEndian.Uint64(got[8:16]), "lastZxidSeen")
	assert.Zero(t, binary.BigEndian.Uint64(connectRequest(0x55)[8:16]), "go-zookeeper's own is 0")

	go func() { _, _ = server.Write(ownTestReply(1, 0x5000, 0, nil)) }()
	readOne(t, c)
	require.Equal(t, int64(0x5000), l.zxid.Load())

	sw := setWatchesRequest(2, 0, "/w")
	got = writeSeen(t, c, server, sw)
	assert.Equal(t, uint64(0x4242), binary.BigEndian.Uint64(got[12:20]),
		"relativeZxid: the zxid as the handshake was written, not a reply's read since")
	assert.Zero(t, binary.BigEndian.Uint64(sw[12:20]), "go-zookeeper's buffer is left alone")
}

// The zxid SetWatches start from moves only while every watch go-zookeeper
// holds is set on the server. On a resumed connection, a reply read after
// SetWatches was written but before the server answered it (here, to a
// request queued while the client was cut off, written before SetWatches)
// does not move it: were the connection lost again then, the watches are
// re-set from where the client was told of every change.
func TestTheReSetBaseWaitsForTheServerToHaveTheWatchesAgain(t *testing.T) {
	l := holdingLayer() // one watch: /w
	l.zxid.Store(0x10)
	l.base.Store(0x10)
	c, server := pipeConn(t, l)
	shakeAs(t, c, server, 0x55, 0x55, 600_000) // resumed

	got := writeSeen(t, c, server, setWatchesRequest(2, 0, "/w"))
	assert.Equal(t, uint64(0x10), binary.BigEndian.Uint64(got[12:20]))
	go func() {
		_, _ = server.Write(append(append(ownTestReply(1, 0x20, 0, nil), ownTestReply(2, 0x21, 0, nil)...),
			ownTestReply(3, 0x22, 0, nil)...))
	}()
	readOne(t, c)
	assert.Equal(t, int64(0x20), l.zxid.Load(), "the last zxid read")
	assert.Equal(t, int64(0x10), l.base.Load(), "not the base: /w is not set on the server yet")
	readOne(t, c)
	assert.Equal(t, int64(0x21), l.base.Load(), "the SetWatches reply: /w is set again")
	readOne(t, c)
	assert.Equal(t, int64(0x22), l.base.Load(), "and on from there")
}

// On a new session's connection every watch go-zookeeper holds was set on
// that connection: a SetWatches there starts from the zxid as it is
// written, not from 0 (which would fire every such watch at once).
func TestANewSessionsSetWatchesStartFromTheLastZxid(t *testing.T) {
	l := New()
	c, server := pipeConn(t, l)
	handshake(t, c, server)
	go func() { _, _ = server.Write(ownTestReply(1, 0x30, 0, nil)) }()
	readOne(t, c)
	got := writeSeen(t, c, server, setWatchesRequest(2, 0, "/w"))
	assert.Equal(t, uint64(0x30), binary.BigEndian.Uint64(got[12:20]))
}

// setWatchesRequest is go-zookeeper's SetWatches frame (length, xid,
// opcode, relativeZxid, then the data, exist and child lists) with data
// watches on paths.
func setWatchesRequest(xid int32, rel int64, paths ...string) []byte {
	body := setWatchesBody(rel, "", 0)
	if len(paths) > 0 {
		body = binary.BigEndian.AppendUint64(nil, uint64(rel))
		body = binary.BigEndian.AppendUint32(body, uint32(len(paths)))
		for _, p := range paths {
			body = binary.BigEndian.AppendUint32(body, uint32(len(p)))
			body = append(body, p...)
		}
		body = append(body, make([]byte, 8)...) // no exist, no child watches
	}
	f := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	f = binary.BigEndian.AppendUint32(f, uint32(xid))
	f = binary.BigEndian.AppendUint32(f, opSetWatches)
	return append(f, body...)
}

// writeSeen writes frame on c and returns it as the server read it.
func writeSeen(t *testing.T, c, server net.Conn, frame []byte) []byte {
	t.Helper()
	sent := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(frame))
		_, _ = io.ReadFull(server, b)
		sent <- b
	}()
	_, err := c.Write(frame)
	require.NoError(t, err)
	return <-sent
}
