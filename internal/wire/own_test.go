package wire

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownTestReply is a reply frame: length, xid, zxid, err, then body.
func ownTestReply(xid int32, zxid int64, code int32, body []byte) []byte {
	f := binary.BigEndian.AppendUint32(nil, uint32(16+len(body)))
	f = binary.BigEndian.AppendUint32(f, uint32(xid))
	f = binary.BigEndian.AppendUint64(f, uint64(zxid))
	f = binary.BigEndian.AppendUint32(f, uint32(code))
	return append(f, body...)
}

// pipeConn returns a connection of l over a pipe, and the server's end;
// both are closed when the test ends.
func pipeConn(t *testing.T, l *Layer) (net.Conn, net.Conn) {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { _ = server.Close() })
	c, err := l.Dialer(func(string, string, time.Duration) (net.Conn, error) { return client, nil })("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, server
}

// connectRequest is a ConnectRequest frame (length, protocolVersion,
// lastZxidSeen 0, timeOut, sessionId, password) asking for session asked
// (0: a new one), as go-zookeeper writes it.
func connectRequest(asked int64) []byte {
	req := binary.BigEndian.AppendUint32(nil, 44)
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 4000)
	req = binary.BigEndian.AppendUint64(req, uint64(asked))
	req = binary.BigEndian.AppendUint32(req, 16)
	return append(req, make([]byte, 16)...)
}

// connectResponse is a ConnectResponse frame (length, protocolVersion,
// timeOut, sessionId, password) granting session granted (0: expired) for
// ms milliseconds.
func connectResponse(granted int64, ms uint32) []byte {
	resp := binary.BigEndian.AppendUint32(nil, 36)
	resp = binary.BigEndian.AppendUint32(resp, 0)
	resp = binary.BigEndian.AppendUint32(resp, ms)
	resp = binary.BigEndian.AppendUint64(resp, uint64(granted))
	resp = binary.BigEndian.AppendUint32(resp, 16)
	return append(resp, make([]byte, 16)...)
}

// shakeAs writes on c a ConnectRequest asking for session asked, reads the
// server's ConnectResponse (session granted, ms milliseconds) the way
// go-zookeeper does, and returns the request as the server read it.
func shakeAs(t *testing.T, c, server net.Conn, asked, granted int64, ms uint32) []byte {
	t.Helper()
	req := connectRequest(asked)
	sent := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(req))
		_, _ = io.ReadFull(server, b)
		sent <- b
	}()
	_, err := c.Write(req)
	require.NoError(t, err)
	go func() { _, _ = server.Write(connectResponse(granted, ms)) }()
	readOne(t, c)
	return <-sent
}

// handshake is shakeAs for a new session's ConnectRequest, answered with
// session 0x55 and 4 s.
func handshake(t *testing.T, c, server net.Conn) {
	t.Helper()
	shakeAs(t, c, server, 0, 0x55, 4000)
}

// readOne reads one frame as go-zookeeper does (length, then body) and
// returns its body.
func readOne(t *testing.T, c net.Conn) []byte {
	t.Helper()
	var n [4]byte
	_, err := io.ReadFull(c, n[:])
	require.NoError(t, err)
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err = io.ReadFull(c, b)
	require.NoError(t, err)
	return b
}

func TestOwnReplyIsTakenOutOfTheStreamAndTheRestPassesInOrder(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	l := New()
	c, err := l.Dialer(func(string, string, time.Duration) (net.Conn, error) { return client, nil })("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	defer c.Close()
	handshake(t, c, server)

	type result struct {
		r   Reply
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := l.Call(context.Background(), 3, []byte{0, 0, 0, 1, '/', 0})
		done <- result{r, err}
	}()
	req := make([]byte, 4+14)
	_, err = io.ReadFull(server, req)
	require.NoError(t, err)
	xid := int32(binary.BigEndian.Uint32(req[4:8]))
	assert.Less(t, xid, int32(-8), "an own xid: negative, away from the special ones")
	assert.True(t, isOwn(xid))
	assert.Equal(t, uint32(3), binary.BigEndian.Uint32(req[8:12]))

	notification := ownTestReply(-1, -1, 0, []byte{0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 2, '/', 'a'})
	var burst []byte
	burst = append(burst, ownTestReply(1, 7, 0, []byte("first"))...)
	burst = append(burst, ownTestReply(xid, 8, 0, []byte("own reply"))...)
	burst = append(burst, notification...)
	burst = append(burst, ownTestReply(2, 9, -101, nil)...)
	go func() { _, _ = server.Write(burst) }()

	assert.Equal(t, ownTestReply(1, 0, 0, []byte("first"))[4:], readOne(t, c), "its zxid blanked (zxid.go)")
	assert.Equal(t, notification[4:], readOne(t, c))
	assert.Equal(t, ownTestReply(2, 0, -101, nil)[4:], readOne(t, c))
	assert.Equal(t, int64(9), l.zxid.Load(), "go-zookeeper's last zxid, kept by the layer")
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, Reply{Zxid: 8, Code: 0, Body: []byte("own reply")}, r.r)

	// In flight when the connection closes: ErrConnLost, at once.
	go func() {
		_, err := l.Call(context.Background(), 3, nil)
		done <- result{err: err}
	}()
	_, err = io.ReadFull(server, make([]byte, 12))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	select {
	case r := <-done:
		assert.ErrorIs(t, r.err, ErrConnLost)
	case <-time.After(5 * time.Second):
		t.Fatal("the own request still waits after Close")
	}
	_, err = l.Call(context.Background(), 3, nil)
	assert.ErrorIs(t, err, ErrConnLost, "no request on a closed connection")
}

// streamConn reads an endless repetition of one frame, once set.
type streamConn struct {
	net.Conn
	frame []byte
	off   int
}

func (s *streamConn) Read(p []byte) (int, error) {
	if s.frame == nil {
		return s.Conn.Read(p)
	}
	n := 0
	for n < len(p) {
		k := copy(p[n:], s.frame[s.off:])
		n += k
		s.off = (s.off + k) % len(s.frame)
	}
	return n, nil
}

func TestFramesPassingThroughCostNoAllocation(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	l := New()
	sc := &streamConn{Conn: client}
	c, err := l.Dialer(func(string, string, time.Duration) (net.Conn, error) { return sc, nil })("tcp", "127.0.0.1:2181", time.Second)
	require.NoError(t, err)
	defer c.Close()
	handshake(t, c, server)
	sc.frame = ownTestReply(5, 1, 0, make([]byte, 100))
	var hdr [4]byte
	body := make([]byte, 1<<10)
	allocs := testing.AllocsPerRun(1000, func() {
		_, _ = io.ReadFull(c, hdr[:])
		_, _ = io.ReadFull(c, body[:binary.BigEndian.Uint32(hdr[:])])
	})
	assert.Zero(t, allocs)
}

// However the client reads, no read crosses the end of the handshake's
// reply, so an own reply right behind it is still taken out.
func TestReadsStopAtTheHandshakeSoTheFramesBehindItAreDemultiplexed(t *testing.T) {
	c, server := pipeConn(t, New())
	req := connectRequest(0)
	go func() { _, _ = io.ReadFull(server, make([]byte, len(req))) }()
	_, err := c.Write(req)
	require.NoError(t, err)
	resp := connectResponse(0x55, 4000)
	own := ownTestReply(ownXidMax, 3, 0, nil) // no waiter: dropped
	next := ownTestReply(1, 4, 0, []byte("go-zookeeper's"))
	blanked := ownTestReply(1, 0, 0, []byte("go-zookeeper's"))
	go func() { _, _ = server.Write(append(append(append([]byte(nil), resp...), own...), next...)) }()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second))) // a failure, not a hang
	buf := make([]byte, 1<<10)
	n, err := io.ReadAtLeast(c, buf, len(resp))
	require.NoError(t, err)
	assert.Equal(t, resp, buf[:n], "the handshake's reply alone")
	assert.Equal(t, blanked[4:], readOne(t, c), "the own reply taken out")
}
