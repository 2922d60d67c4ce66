package zkrecipes

// Hooks on a Session's connection and a log of its operations, for the
// tests that check which requests a recipe sends and when.

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hookedConn lets a test act on a Session's connection: beforeWrite sees
// every frame before it is written, afterRead runs after every read,
// before its bytes reach go-zookeeper.
type hookedConn struct {
	net.Conn
	beforeWrite func(frame []byte)
	afterRead   func()
}

func (c *hookedConn) Write(p []byte) (int, error) {
	if c.beforeWrite != nil {
		c.beforeWrite(p)
	}
	return c.Conn.Write(p)
}

func (c *hookedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.afterRead != nil {
		c.afterRead()
	}
	return n, err
}

// hookedDialer dials with net.DialTimeout and wraps each connection with
// the hooks.
func hookedDialer(beforeWrite func([]byte), afterRead func()) func(string, string, time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &hookedConn{Conn: c, beforeWrite: beforeWrite, afterRead: afterRead}, nil
	}
}

// acquirer is what the lock recipes have in common.
type acquirer interface {
	Acquire(context.Context) (*Lease, error)
}

// opLog records the operations a Session's tracer sees, as their replies
// come: "op", or "op path" with paths.
type opLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *opLog) tracer(paths bool) Tracer {
	return TracerFunc(func(ev TraceEvent) {
		op := ev.Op
		if paths {
			op += " " + ev.Path
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ops = append(l.ops, op)
	})
}

// take returns what was recorded and starts over.
func (l *opLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops := l.ops
	l.ops = nil
	return ops
}

// holdReplies returns a read hook that, while holding reports true, holds
// each read's bytes back from go-zookeeper until released closes; after
// 5 s it lets them through and sets inVain.
func holdReplies(holding func() bool, released <-chan struct{}, inVain *atomic.Bool) func() {
	return func() {
		if !holding() {
			return
		}
		select {
		case <-released:
		case <-time.After(5 * time.Second):
			inVain.Store(true)
		}
	}
}

// isListing reports whether frame is a getChildren request (as
// go-zookeeper sends it: getChildren2) for path.
func isListing(frame []byte, path string) bool {
	const opGetChildren2 = 12
	if len(frame) < 16 || binary.BigEndian.Uint32(frame[8:12]) != opGetChildren2 {
		return false
	}
	l := int(binary.BigEndian.Uint32(frame[12:16]))
	return l <= len(frame)-16 && string(frame[16:16+l]) == path
}

const (
	opSync    = 9 // opMulti: writes_test.go
	opSetAuth = 100
)

// requestDropper shuts a Session's connection instead of writing the next
// requests of given opcodes: the server never sees them, the client gets
// no reply, and go-zookeeper reconnects under the same session.
type requestDropper struct {
	mu    sync.Mutex
	drop  map[uint32]int // opcode → how many more to drop
	dials int
	last  net.Conn // the latest connection dialled
}

func (d *requestDropper) dropNext(op uint32, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.drop == nil {
		d.drop = map[uint32]int{}
	}
	d.drop[op] += n
}

// stopDropping drops no more requests of opcode op.
func (d *requestDropper) stopDropping(op uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.drop, op)
}

// takes reports whether the frame p must be dropped, and counts it.
func (d *requestDropper) takes(p []byte) bool {
	if len(p) < 12 {
		return false
	}
	op := binary.BigEndian.Uint32(p[8:12])
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.drop[op] > 0 {
		d.drop[op]--
		return true
	}
	return false
}

// left returns how many requests of opcode op are still to be dropped.
func (d *requestDropper) left(op uint32) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.drop[op]
}

// dialled returns how many connections the Session has begun to dial.
func (d *requestDropper) dialled() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials
}

func (d *requestDropper) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	d.dials++
	d.mu.Unlock()
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.last = c
	d.mu.Unlock()
	return &droppingConn{Conn: c, d: d}, nil
}

// cut closes the latest connection under the Session, as a server or a
// network does: go-zookeeper reconnects under the same session.
func (d *requestDropper) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	_ = d.last.Close()
}

type droppingConn struct {
	net.Conn
	d *requestDropper
}

func (c *droppingConn) Write(p []byte) (int, error) {
	if c.d.takes(p) {
		_ = c.Conn.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return c.Conn.Write(p)
}

// session returns a Session on the ZK_SERVERS server whose connection
// drops requests as d says; its server list names each server twice, so
// that go-zookeeper reconnects without its pause after a full round.
func (d *requestDropper) session(t *testing.T, timeout time.Duration, opts ...SessionOption) (context.Context, *Session) {
	t.Helper()
	servers := zkServers(t)
	zkRaw(t) // makes /zkt, for a test run alone
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	s, err := Connect(ctx, append(servers, servers...), append(opts, WithDialer(d.dial))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return ctx, s
}
