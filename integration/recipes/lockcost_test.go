package recipes_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// costLock is one contender of the request-count comparison: a zkrecipes
// Mutex or go-zookeeper's zk.Lock, on a session of its own.
type costLock interface {
	lock(ctx context.Context) error
	unlock(ctx context.Context) error
}

type zkrCostLock struct {
	m *zr.Mutex
	l *zr.Lease
}

func (c *zkrCostLock) lock(ctx context.Context) (err error) {
	c.l, err = c.m.Acquire(ctx)
	return err
}

func (c *zkrCostLock) unlock(ctx context.Context) error { return c.l.Release(ctx) }

type gozkCostLock struct{ l *zk.Lock }

func (c gozkCostLock) lock(context.Context) error   { return c.l.Lock() }
func (c gozkCostLock) unlock(context.Context) error { return c.l.Unlock() }

// A waiter whose handoff is slow (its holder holds long, and its own link
// to the server is slow) sends the server no more requests for its
// acquisition and release than go-zookeeper's zk.Lock sends for the same
// acquisition, queued at the same place: the server is shared by every
// client on it, so a lock must not buy its speed with the server's work.
// Each waiter's requests are counted at a proxy of its own (the replies
// to client requests it delivers; pings and the handshake are not
// requests).
func TestMutex_SlowHandoffCostsTheServerNoMoreRequestsThanGoZookeepersLock(t *testing.T) {
	requestsPerQueuedAcquisition(t, false)
}

// The same when another contender's node is created between the waiter's
// create and its listing: the listing then cannot give the waiter's
// fencing token, and the waiter must get it without an extra request.
func TestMutex_WaiterWithANodeCreatedBetweenItsCreateAndListingCostsNoMoreRequestsThanGoZookeepersLock(t *testing.T) {
	requestsPerQueuedAcquisition(t, true)
}

// requestsPerQueuedAcquisition counts the requests of a waiter second in
// line, zkrecipes' Mutex against go-zookeeper's zk.Lock; with between,
// another session creates a node in the queue after the waiter's create
// and before its listing reaches the server.
func requestsPerQueuedAcquisition(t *testing.T, between bool) {
	c := server(t)
	ctx := ctxT(t, time.Minute)
	base := testPath(t)
	impls := []struct {
		name string
		// queued is the replies a waiter second in line has once it waits:
		// go-zookeeper's create, listing and getData watch; zkrecipes'
		// create, listing and its two watches on the node ahead (handoff.go).
		queued int
		open   func(t *testing.T, addrs []string, path string, dial dialFunc) costLock
	}{
		{"gozk", 3, func(t *testing.T, addrs []string, path string, dial dialFunc) costLock {
			conn := rawAt(t, addrs, dial)
			return gozkCostLock{zk.NewLock(conn, path, worldACL())}
		}},
		{"zkrecipes", 4, func(t *testing.T, addrs []string, path string, dial dialFunc) costLock {
			// The wire layer is what lets the listing behind the create
			// give a waiter its token; a waiter without it reads its own
			// node.
			opts := []zr.SessionOption{zr.WithWireLayer(true)}
			if dial != nil {
				opts = append(opts, zr.WithDialer(dial))
			}
			return &zkrCostLock{m: zr.NewMutex(connect(t, c, addrs, opts...).Session, path)}
		}},
	}
	const hold = 200 * time.Millisecond // the holder's critical section
	requests := map[string]int{}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			path := base + "/" + impl.name
			conn := raw(t, c)
			holder := impl.open(t, nil, path, nil)
			require.NoError(t, holder.lock(ctx))

			// The first waiter, then the one measured, second in line (so
			// that a zkrecipes waiter watches the node ahead for a marked
			// release), behind a slow link.
			first := impl.open(t, nil, path, nil)
			firstDone := make(chan error, 1)
			go func() {
				err := first.lock(ctx)
				if err == nil {
					err = first.unlock(ctx)
				}
				firstDone <- err
			}()
			require.Eventually(t, func() bool { return len(childrenQuiet(conn, path)) == 2 },
				10*time.Second, time.Millisecond, "the first waiter queues")

			var dial dialFunc
			var interposed atomic.Bool
			if between {
				// Before the measured waiter's first listing goes out, once
				// the server shows its node, another session queues a node
				// behind it.
				other := raw(t, c)
				dial = beforeListing(path, func() {
					if interposed.Load() {
						return
					}
					deadline := time.Now().Add(10 * time.Second)
					for len(childrenQuiet(conn, path)) < 3 && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond)
					}
					_, err := other.CreateProtectedEphemeralSequential(path+"/_c_"+"-lock-", nil, worldACL())
					interposed.Store(err == nil)
				})
			}
			p := zktest.NewProxy(t, c.Servers()[0])
			p.SetDelay(2 * time.Millisecond)
			measured := impl.open(t, []string{p.Addr()}, path, dial)
			before := p.RequestReplies()
			measuredDone := make(chan error, 1)
			go func() {
				err := measured.lock(ctx)
				if err == nil {
					err = measured.unlock(ctx)
				}
				measuredDone <- err
			}()
			// Queued and watching: its create, its listing and its watches
			// are answered.
			require.Eventually(t, func() bool { return p.RequestReplies()-before >= impl.queued },
				10*time.Second, time.Millisecond, "the measured waiter queues and watches")
			time.Sleep(hold) // the holder holds long: the waiters wait
			require.NoError(t, holder.unlock(ctx))
			require.NoError(t, <-firstDone)
			require.NoError(t, <-measuredDone)
			if between {
				require.True(t, interposed.Load(), "a node was created between the waiter's create and its listing")
			}
			requests[impl.name] = p.RequestReplies() - before
			t.Logf("%s: %d requests for the measured acquisition and its release", impl.name, requests[impl.name])
		})
	}
	require.Contains(t, requests, "gozk")
	require.Contains(t, requests, "zkrecipes")
	assert.LessOrEqual(t, requests["zkrecipes"], requests["gozk"],
		"zkrecipes' waiter made more requests than go-zookeeper's lock for the same acquisition")
}

// dialFunc opens a connection (zr.WithDialer, zk.WithDialer).
type dialFunc = func(network, address string, timeout time.Duration) (net.Conn, error)

// beforeListing dials connections that call hook before writing the
// first getChildren request on path (go-zookeeper's getChildren2 frame),
// holding that write until hook returns.
func beforeListing(path string, hook func()) dialFunc {
	var once sync.Once
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &listingHookConn{Conn: c, path: path, hook: func() { once.Do(hook) }}, nil
	}
}

type listingHookConn struct {
	net.Conn
	path string
	hook func()
}

func (c *listingHookConn) Write(p []byte) (int, error) {
	const opGetChildren2 = 12
	if len(p) >= 16 && binary.BigEndian.Uint32(p[8:12]) == opGetChildren2 {
		if l := int(binary.BigEndian.Uint32(p[12:16])); l <= len(p)-16 && string(p[16:16+l]) == c.path {
			c.hook()
		}
	}
	return c.Conn.Write(p)
}

// childrenQuiet lists path's children, none on error.
func childrenQuiet(conn *zk.Conn, path string) []string {
	kids, _, _ := conn.Children(path)
	return kids
}

// rawAt opens a plain go-zookeeper session through addrs (a proxy, say),
// waits until it has a session, and closes it when the test ends.
func rawAt(t *testing.T, addrs []string, dial dialFunc) *zk.Conn {
	t.Helper()
	if addrs == nil {
		addrs = server(t).Servers()
	}
	if dial == nil {
		dial = net.DialTimeout
	}
	conn, events, err := zk.Connect(addrs, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}), zk.WithDialer(dial))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	deadline := time.After(20 * time.Second)
	for has := false; !has; {
		select {
		case ev := <-events:
			has = ev.State == zk.StateHasSession
		case <-deadline:
			t.Fatalf("no session through %v within 20s", addrs)
		}
	}
	go func() {
		for range events { // drained until the connection closes
		}
	}()
	return conn
}
