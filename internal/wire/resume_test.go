package wire

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shake opens a Session connection over a pipe and completes a handshake
// in which the client asks to resume session asked and the server answers
// with session granted and a session timeout of ms milliseconds. The
// client's go-zookeeper holds a watch (and so re-sets its watches on a
// resumed session). It returns the client's end and the server's.
func shake(t *testing.T, asked, granted int64, ms uint32) (net.Conn, net.Conn) {
	return shakeLayer(t, holdingLayer(), asked, granted, ms)
}

// holdingLayer is a Layer whose go-zookeeper holds a data watch, as if set
// on an earlier connection.
func holdingLayer() *Layer {
	l := New()
	l.shots.setWatches(setWatchesBody(0, "/w", shotData))
	return l
}

// shakeLayer is shake on a connection of l.
func shakeLayer(t *testing.T, l *Layer, asked, granted int64, ms uint32) (net.Conn, net.Conn) {
	t.Helper()
	c, server := pipeConn(t, l)
	shakeAs(t, c, server, asked, granted, ms)
	return c, server
}

// request is a request frame: length, xid, opcode.
func request(op uint32) []byte {
	f := binary.BigEndian.AppendUint32(nil, 8)
	f = binary.BigEndian.AppendUint32(f, 1)
	return binary.BigEndian.AppendUint32(f, op)
}

// firstReply reads the first byte of a reply frame (length, xid 1, zxid,
// err) the server sends after the handshake, in the background. (The
// connection reads frame by frame: it peeks at each frame's header.)
func firstReply(c, server net.Conn) <-chan error {
	f := binary.BigEndian.AppendUint32(nil, 16)
	f = binary.BigEndian.AppendUint32(f, 1)
	f = append(f, make([]byte, 12)...)
	go func() { _, _ = server.Write(f) }()
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	return done
}

func TestResumedConnectionReadsItsFirstReplyOnlyOnceSetWatchesIsWritten(t *testing.T) {
	c, server := shake(t, 0x1234, 0x1234, 600_000)
	go func() { _, _ = io.Copy(io.Discard, server) }()
	done := firstReply(c, server)
	_, err := c.Write(request(3)) // a request queued while the connection was down
	require.NoError(t, err)
	requireHeld(t, done, "the reply was read before SetWatches was written")

	_, err = c.Write(request(opSetWatches))
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the reply is still held after SetWatches was written")
	}
}

// requireHeld waits until a read is held in a resumed connection's select,
// and fails with msg if the read delivered on delivered first.
func requireHeld[T any](t *testing.T, delivered <-chan T, msg string) {
	t.Helper()
	early := false
	require.Eventually(t, func() bool {
		select {
		case <-delivered:
			early = true
			return true
		default:
			return goroutineIn("(*conn).readResumed")
		}
	}, 10*time.Second, time.Millisecond)
	require.False(t, early, msg)
}

// goroutineIn reports whether some goroutine waits in a select in fn.
func goroutineIn(fn string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, fn) {
			return true
		}
	}
	return false
}

func TestNewSessionConnectionReadsItsFirstReplyAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name           string
		asked, granted int64
	}{
		{"first connection", 0, 0x99},
		{"after the session expired", 0x1234, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, server := shake(t, tc.asked, tc.granted, 600_000)
			select {
			case err := <-firstReply(c, server):
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("a new session's reply is held")
			}
		})
	}
}

// A client whose go-zookeeper holds no watch sends no SetWatches and reads
// no zxid for one: its replies pass at once.
func TestResumedConnectionWithoutWatchesReadsItsFirstReplyAtOnce(t *testing.T) {
	c, server := shakeLayer(t, New(), 0x1234, 0x1234, 600_000)
	select {
	case err := <-firstReply(c, server):
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the reply of a client without watches is held")
	}
}

// The hold has no timer: a go-zookeeper that is slow to re-set its watches
// (a busy machine) is waited for. Only the read deadline go-zookeeper set
// ends the wait, as a liveness fallback that is counted and reported.
func TestResumedConnectionWaitsForSetWatchesUntilTheReadDeadlineOnly(t *testing.T) {
	l := holdingLayer()
	reported := make(chan time.Duration, 1)
	l.OnResumeFallback = func(d time.Duration) { reported <- d }
	c, server := shakeLayer(t, l, 0x1234, 0x1234, 600_000)
	go func() { _, _ = io.Copy(io.Discard, server) }()
	before := ReadCounts().ResumeFallbacks

	done := firstReply(c, server)
	requireHeld(t, done, "the reply was read before SetWatches was written")
	select {
	case <-done:
		t.Fatal("the reply passed without SetWatches and before the read deadline")
	case <-time.After(300 * time.Millisecond): // a while, with no deadline near
	}
	assert.Equal(t, before, ReadCounts().ResumeFallbacks)

	l2 := holdingLayer()
	l2.OnResumeFallback = func(d time.Duration) { reported <- d }
	c2, server2 := shakeLayer(t, l2, 0x1234, 0x1234, 600_000)
	go func() { _, _ = io.Copy(io.Discard, server2) }()
	// The fallback comes at nine tenths of the time left when the hold
	// begins: with 3 s, 800 ms or more even if the reading goroutine starts
	// late on a busy machine.
	require.NoError(t, c2.SetReadDeadline(time.Now().Add(3*time.Second)))
	select {
	case <-firstReply(c2, server2):
		// The read goes on shortly before the deadline; on a busy machine
		// it may find the deadline passed, which go-zookeeper takes as a
		// dead connection.
	case <-time.After(10 * time.Second):
		t.Fatal("the reply is held past the read deadline")
	}
	select {
	case d := <-reported:
		assert.GreaterOrEqual(t, d, 800*time.Millisecond)
	case <-time.After(10 * time.Second):
		t.Fatal("the fallback was not reported")
	}
	assert.Equal(t, before+1, ReadCounts().ResumeFallbacks)
}

// A session that expired drops go-zookeeper's watches: the next resumed
// session's replies are not held for a SetWatches that will not come.
func TestWatchesAreForgottenWhenTheSessionExpires(t *testing.T) {
	l := holdingLayer()
	require.True(t, l.shots.held() > 0)
	shakeLayer(t, l, 0x1234, 0, 600_000) // expired
	assert.False(t, l.shots.held() > 0)
}

// A new connection forgets the requests the last one did not answer, not
// the watches go-zookeeper holds: its SetWatches will carry them.
func TestWatchesHeldSurviveANewConnection(t *testing.T) {
	l := holdingLayer()
	shakeLayer(t, l, 0x1234, 0x1234, 600_000)
	assert.True(t, l.shots.held() > 0)
	assert.Equal(t, shotData, l.shots.kinds("/w"))
}

func TestClosingAResumedConnectionEndsTheReadThatWaitsForSetWatches(t *testing.T) {
	c, server := shake(t, 0x1234, 0x1234, 600_000)
	done := firstReply(c, server)
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		assert.Error(t, err, "a closed connection's read fails")
	case <-time.After(10 * time.Second):
		t.Fatal("the read still waits after Close")
	}
}

// replyFrame is a reply frame: length, xid, zxid, err.
func replyFrame(xid int32, zxid int64) []byte {
	f := binary.BigEndian.AppendUint32(nil, 16)
	f = binary.BigEndian.AppendUint32(f, uint32(xid))
	f = binary.BigEndian.AppendUint64(f, uint64(zxid))
	return binary.BigEndian.AppendUint32(f, 0)
}

// An authenticated client's credentials go out first, and nothing else
// does until their reply is read: that reply passes; the next one waits for
// SetWatches.
func TestResumedConnectionLetsTheCredentialsReplyThroughAndHoldsTheNext(t *testing.T) {
	c, server := shake(t, 0x1234, 0x1234, 600_000)
	go func() { _, _ = io.Copy(io.Discard, server) }()
	setAuth := binary.BigEndian.AppendUint32(nil, 8)
	setAuth = binary.BigEndian.AppendUint32(setAuth, 5)
	setAuth = binary.BigEndian.AppendUint32(setAuth, opSetAuth)
	_, err := c.Write(setAuth)
	require.NoError(t, err)
	go func() { _, _ = server.Write(append(replyFrame(5, 0), replyFrame(6, 0x77)...)) }()

	// Read the way go-zookeeper does: the length, then the rest.
	readFrame := func() ([]byte, error) {
		var n [4]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return nil, err
		}
		body := make([]byte, binary.BigEndian.Uint32(n[:]))
		_, err := io.ReadFull(c, body)
		return append(n[:], body...), err
	}
	next := make(chan []byte, 1)
	readNext := func() {
		f, err := readFrame()
		assert.NoError(t, err)
		next <- f
	}
	go readNext()
	select {
	case f := <-next:
		assert.Equal(t, replyFrame(5, 0), f, "the credentials' reply passes, unchanged")
	case <-time.After(10 * time.Second):
		t.Fatal("the credentials' reply is held")
	}

	go readNext()
	requireHeld(t, next, "the reply after the credentials' was read before SetWatches was written")
	_, err = c.Write(request(opSetWatches))
	require.NoError(t, err)
	select {
	case f := <-next:
		assert.Equal(t, replyFrame(6, 0), f, "its zxid kept by the layer (zxid.go)")
	case <-time.After(10 * time.Second):
		t.Fatal("the reply is still held after SetWatches was written")
	}
}

// A client closed right after it reconnected never sends the SetWatches it
// built; its close request ends the hold, so that its reading goroutine
// reads the close's reply and ends.
func TestACloseRequestEndsTheHold(t *testing.T) {
	c, server := shake(t, 0x1234, 0x1234, 600_000)
	go func() { _, _ = io.Copy(io.Discard, server) }()
	done := firstReply(c, server)
	requireHeld(t, done, "the reply was read before SetWatches or a close was written")
	_, err := c.Write(request(uint32(0xfffffff5))) // opClose, -11
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the reply is still held after the close request was written")
	}
}
