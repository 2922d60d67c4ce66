package zkrecipes

// Hooks on a Session's connection and a log of its operations, for the
// tests that check which requests a recipe sends and when.

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
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
