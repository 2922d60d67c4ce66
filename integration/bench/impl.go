package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	zr "github.com/zkrecipes/zkrecipes"
)

// SessionTimeout is the ZooKeeper session timeout of every benchmark client.
const SessionTimeout = 10 * time.Second

// Locker is one contender: a lock on one path over its own ZooKeeper
// session. A Locker is used by one goroutine at a time.
type Locker interface {
	// Lock blocks until the lock is held; it fails when ctx ends first.
	Lock(ctx context.Context) error
	// Unlock releases the lock held by the last Lock.
	Unlock(ctx context.Context) error
	// Close ends the session.
	Close()
}

// Impl is an implementation measured in-process.
type Impl struct {
	// Name identifies the implementation in results: "zkrecipes", "gozk".
	Name string
	// Open connects a new session to servers and returns a lock on path
	// bound to it.
	Open func(ctx context.Context, servers []string, path string) (Locker, error)
	// Watches returns how many watches the server holds once a holder and
	// n waiters are queued: how Drain knows every waiter is waiting.
	Watches func(n int) int
}

// Impls are the in-process implementations: zkrecipes' Mutex and
// go-zookeeper's zk.Lock.
var Impls = []Impl{
	// The first waiter watches the holder's node, each other waiter the
	// data and the deletion of its predecessor (it does not watch its own
	// node while it waits); the holder, holding long, watches its own node.
	{Name: "zkrecipes", Open: openZkrecipes, Watches: func(n int) int { return 2 * n }},
	// Each waiter watches its predecessor.
	{Name: "gozk", Open: openGozk, Watches: func(n int) int { return n }},
}

// Variants are zkrecipes' Mutex with one of its optimisations off, so that
// one run shows what each saves and what it costs (zkbench measures them
// beside the others; the Go benchmarks do not).
var Variants = []Impl{
	// The fast handoff and its marked release off: a waiter watches its
	// predecessor's data and lists again after every deletion; releases
	// are plain deletes. The first waiter watches the holder, each other
	// waiter its predecessor; the holder, holding long, its own node.
	{Name: "zkrecipes-plain", Open: openZkrecipesWith(nil, zr.WithFastHandoff(false)), Watches: func(n int) int { return n + 1 }},
	// The wire layer off: no listing behind the create (so no token from
	// it: every waiter reads its own node beside its first watch), no
	// gathered writes. Each waiter watches its own node, the first the
	// holder's, each other its predecessor's data and deletion; the
	// holder its own node.
	{Name: "zkrecipes-nowire", Open: openZkrecipesWith([]zr.SessionOption{zr.WithWireLayer(false)}), Watches: func(n int) int { return 3 * n }},
}

// ImplByName returns the in-process implementation or variant called name.
func ImplByName(name string) (Impl, bool) {
	for _, i := range append(slices.Clone(Impls), Variants...) {
		if i.Name == name {
			return i, true
		}
	}
	return Impl{}, false
}

type zkrLocker struct {
	s     *zr.Session
	m     *zr.Mutex
	lease *zr.Lease
}

func openZkrecipes(ctx context.Context, servers []string, path string) (Locker, error) {
	return openZkrecipesWith(nil)(ctx, servers, path)
}

// openZkrecipesWith opens zkrecipes' Mutex with session options sopts and
// lock options lopts added to the benchmark's.
func openZkrecipesWith(sopts []zr.SessionOption, lopts ...zr.LockOption) func(context.Context, []string, string) (Locker, error) {
	return func(ctx context.Context, servers []string, path string) (Locker, error) {
		opts := append([]zr.SessionOption{zr.WithSessionTimeout(SessionTimeout), zr.WithDialer(LoopbackDialer)}, sopts...)
		s, err := zr.Connect(ctx, servers, opts...)
		if err != nil {
			return nil, err
		}
		return &zkrLocker{s: s, m: zr.NewMutex(s, path, lopts...)}, nil
	}
}

func (l *zkrLocker) Lock(ctx context.Context) error {
	lease, err := l.m.Acquire(ctx)
	if err != nil {
		return err
	}
	l.lease = lease
	return nil
}

func (l *zkrLocker) Unlock(ctx context.Context) error {
	if l.lease == nil {
		return errors.New("bench: unlock without lock")
	}
	err := l.lease.Release(ctx)
	l.lease = nil
	return err
}

func (l *zkrLocker) Close() { _ = l.s.Close() }

// gozkLocker is go-zookeeper's own lock, called exactly as its users call
// it. zk.Lock takes no context: when ctx ends during Lock, the connection
// is closed, which fails the pending Lock.
type gozkLocker struct {
	conn *zk.Conn
	l    *zk.Lock
}

func openGozk(ctx context.Context, servers []string, path string) (Locker, error) {
	conn, err := ConnectRaw(ctx, servers)
	if err != nil {
		return nil, err
	}
	return &gozkLocker{conn: conn, l: zk.NewLock(conn, path, zk.WorldACL(zk.PermAll))}, nil
}

func (l *gozkLocker) Lock(ctx context.Context) error {
	stop := context.AfterFunc(ctx, l.conn.Close)
	err := l.l.Lock()
	if !stop() {
		// ctx ended and closed the connection, maybe just after Lock
		// succeeded: the lock went with the session either way.
		return ctx.Err()
	}
	return err
}

func (l *gozkLocker) Unlock(context.Context) error { return l.l.Unlock() }

func (l *gozkLocker) Close() { l.conn.Close() }

// ConnectRaw opens a plain go-zookeeper connection, drains its events, and
// waits until it has a session or ctx ends.
func ConnectRaw(ctx context.Context, servers []string) (*zk.Conn, error) {
	return connectRaw(ctx, servers, LoopbackDialer)
}

func connectRaw(ctx context.Context, servers []string, dial zk.Dialer) (*zk.Conn, error) {
	conn, events, err := zk.Connect(servers, SessionTimeout, zk.WithDialer(dial),
		zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		once := false
		for ev := range events {
			if ev.State == zk.StateHasSession && !once {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
		return conn, nil
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("bench: connect to %v: %w", servers, ctx.Err())
	}
}

// LoopbackDialer dials TCP addresses in 127.0.0.0/8 and refuses any other.
func LoopbackDialer(network, address string, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || ip.To4() == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("bench: refusing to dial %s: loopback (127.0.0.0/8) only", address)
	}
	return net.DialTimeout(network, address, timeout)
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
