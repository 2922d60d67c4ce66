package zkrecipes

import (
	"context"
	"encoding/binary"
	"net"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokenWriteConn is a Session's TCP connection on which, once armed, the
// write of the next create request for a path containing match fails in
// the kernel: the socket's sending side is shut down first, so the write
// gets EPIPE, as when the peer has gone. failed counts the writes that
// did fail so.
type brokenWriteConn struct {
	*net.TCPConn
	match  string
	armed  *atomic.Bool
	failed *atomic.Int32
}

func (c *brokenWriteConn) Write(p []byte) (int, error) {
	if !isCreateOf(p, c.match) || !c.armed.CompareAndSwap(true, false) {
		return c.TCPConn.Write(p)
	}
	_ = c.CloseWrite()
	n, err := c.TCPConn.Write(p)
	if err != nil {
		c.failed.Add(1)
	}
	return n, err
}

// isCreateOf reports whether frame is a create request (length, xid,
// opcode, path) for a path containing match.
func isCreateOf(frame []byte, match string) bool {
	if len(frame) < 16 || binary.BigEndian.Uint32(frame[8:12]) != opCreate {
		return false
	}
	l := int(binary.BigEndian.Uint32(frame[12:16]))
	return l <= len(frame)-16 && strings.Contains(string(frame[16:16+l]), match)
}

// go-zookeeper hands a request whose frame could not be written the
// write's own error ("write: broken pipe", "connection reset by peer", a
// write deadline), where every other request of a lost connection fails
// with ErrConnectionClosed. An acquisition must take either for a lost
// connection and go on once the Session has reconnected, not fail.
func TestZKAcquisitionGoesOnWhenItsCreateCannotBeWritten(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match string // the create to fail
		lock  func(s *Session, dir string) acquirer
	}{
		{"Mutex", "-lock-", func(s *Session, dir string) acquirer { return NewMutex(s, dir) }},
		{"Semaphore lease", "/leases/", func(s *Session, dir string) acquirer { return NewSemaphoreMutex(s, dir) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var armed atomic.Bool
			var failed atomic.Int32
			dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
				c, err := net.DialTimeout(network, address, timeout)
				if err != nil {
					return nil, err
				}
				return &brokenWriteConn{TCPConn: c.(*net.TCPConn), match: tc.match, armed: &armed, failed: &failed}, nil
			}
			ctx, s := zkSession(t, 30*time.Second, WithDialer(dial), WithRetryPolicy(RetryForever(10*time.Millisecond)))
			dir := "/zkt/connlost-" + newUUID()
			lock := tc.lock(s, dir)
			l, err := lock.Acquire(ctx) // the first one also makes the parents
			require.NoError(t, err)
			require.NoError(t, l.Release(ctx))

			armed.Store(true)
			l, err = lock.Acquire(ctx)
			require.NoError(t, err, "a create whose frame could not be written is a lost connection")
			assert.EqualValues(t, 1, failed.Load(), "the create's write failed in the kernel")
			kids, _, err := zkRaw(t).Children(path.Dir(l.Path()))
			require.NoError(t, err)
			assert.Equal(t, []string{baseName(l.Path())}, kids, "one node: no orphan of the broken write")
			require.NoError(t, l.Release(context.Background()))
		})
	}
}
