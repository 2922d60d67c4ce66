package zkrecipes

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replyLoser closes a Session's connection right after writing a request
// that matches one of its rules: the server receives and runs the request,
// the client never reads its reply (ZOOKEEPER-1262), and go-zookeeper
// reconnects under the same session.
type replyLoser struct {
	mu    sync.Mutex
	rules []loseRule
}

// loseRule loses the replies of the next n requests whose "op path" (see
// frameOps) starts with prefix, and calls then (if not nil) once each such
// request is sent.
type loseRule struct {
	prefix string
	n      int
	then   func()
}

func (l *replyLoser) lose(prefix string, n int) { l.loseThen(prefix, n, nil) }

func (l *replyLoser) loseThen(prefix string, n int, then func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rules = append(l.rules, loseRule{prefix, n, then})
}

// match reports whether a write of frames must lose its replies, counts it
// against the first rule that matches, and returns that rule's then.
func (l *replyLoser) match(frames []byte) (bool, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, op := range frameOps(frames) {
		for i := range l.rules {
			if r := &l.rules[i]; r.n > 0 && strings.HasPrefix(op, r.prefix) {
				r.n--
				return true, r.then
			}
		}
	}
	return false, nil
}

type losingConn struct {
	net.Conn
	l    *replyLoser
	dead atomic.Bool // set before a write whose replies are lost: nothing read after it is delivered
}

func (c *losingConn) Write(p []byte) (int, error) {
	lose, then := c.l.match(p)
	if lose {
		c.dead.Store(true)
	}
	n, err := c.Conn.Write(p)
	if lose {
		c.Conn.Close() // the request is sent; its reply is never read
		if then != nil {
			then()
		}
	}
	return n, err
}

// Read drops whatever arrives once a write lost its replies: a reply read
// between that write and the Close after it would otherwise get through.
func (c *losingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.dead.Load() {
		return 0, net.ErrClosed
	}
	return n, err
}

// session returns a Session whose connection loses replies as l
// says. Its server list names each server twice: go-zookeeper waits a
// second before it reconnects to a list it has been through, and every lost
// reply costs a reconnection.
func (l *replyLoser) session(t *testing.T, d time.Duration, opts ...SessionOption) (context.Context, *Session) {
	t.Helper()
	servers := zkServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	s, err := Connect(ctx, append(servers, servers...), append(opts, WithDialer(l.dialer()))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return ctx, s
}

func (l *replyLoser) dialer() func(string, string, time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &losingConn{Conn: c, l: l}, nil
	}
}

// childrenOf lists dir on a plain connection, nil when dir is gone.
func childrenOf(t *testing.T, dir string) []string {
	t.Helper()
	kids, _, err := zkRaw(t).Children(dir)
	if err != nil {
		return nil
	}
	return kids
}

// A protected create whose reply is lost, and whose search for the node it
// may have made fails too, searches again before it creates anything: the
// acquisition ends up with the one node the server made, and holds.
func TestZKLostCreateReplyAndLostSearchMakeNoSecondNode(t *testing.T) {
	for _, tc := range []struct {
		name, node string
		acquire    func(ctx context.Context, s *Session, dir string) (*Lease, error)
	}{
		{"Mutex", "lock-", func(ctx context.Context, s *Session, dir string) (*Lease, error) {
			return NewMutex(s, dir).Acquire(ctx)
		}},
		{"Semaphore", "lease-", func(ctx context.Context, s *Session, dir string) (*Lease, error) {
			l, err := NewSemaphore(s, dir, 1).Acquire(ctx, 1)
			if err != nil {
				return nil, err
			}
			return l[0], nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loser := &replyLoser{}
			ctx, s := loser.session(t, 30*time.Second)
			dir := "/zkt/lost-search-" + newUUID()
			warm, err := tc.acquire(ctx, s, dir) // makes the parents
			require.NoError(t, err)
			require.NoError(t, warm.Release(ctx))

			// Lose the create's reply, then those of the next two listings
			// of the directory: a listing sent behind the create may take
			// one, the search for the node takes the other.
			loser.lose("create "+dir, 1)
			loser.lose("getChildren "+dir, 2)
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			l, err := tc.acquire(actx, s, dir)
			require.NoError(t, err, "the acquisition must find its own node, not wait behind it")
			var ours []string
			for _, k := range childrenOf(t, l.Path()[:strings.LastIndex(l.Path(), "/")]) {
				if strings.Contains(k, tc.node) {
					ours = append(ours, k)
				}
			}
			assert.Equal(t, []string{baseName(l.Path())}, ours, "one acquisition, one node")
			require.NoError(t, l.Release(ctx))
		})
	}
}

// An acquisition that gives up while its create's reply is lost leaves no
// node behind: the clean-up waits for the create to be over and retries
// its listing until it succeeds, so another session then acquires.
func TestZKAbandonedCreateWithLostRepliesLeavesNoNode(t *testing.T) {
	loser := &replyLoser{}
	ctx, s := loser.session(t, 60*time.Second)
	_, other := zkSession(t, 60*time.Second)
	dir := "/zkt/lost-abandon-" + newUUID()
	m := NewMutex(s, dir)
	warm, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))

	for i := range 20 {
		// The acquisition gives up once its create is sent (at once, or
		// a little later), and the create's reply is lost; so are those of
		// the clean-up's first listings.
		actx, cancel := context.WithCancel(ctx)
		loser.loseThen("create "+dir, 1, func() {
			time.AfterFunc(time.Duration(i)*300*time.Microsecond, cancel)
		})
		loser.lose("getChildren "+dir, 1+i%2)
		_, err := m.Acquire(actx)
		cancel()
		require.True(t, errors.Is(err, context.Canceled), "%v", err)
		require.Eventually(t, func() bool { return len(childrenOf(t, dir)) == 0 }, 10*time.Second, 10*time.Millisecond,
			"round %d: a node is left: %v", i, childrenOf(t, dir))
	}
	octx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := NewMutex(other, dir).Acquire(octx)
	require.NoError(t, err, "another session acquires")
	require.NoError(t, l.Release(ctx))
}

// A clean-up that cannot finish (every listing loses its reply) ends when
// the Session closes: Close neither waits for it nor leaves it running,
// and the Tracer is told how it ended.
func TestZKCloseEndsACleanUpThatCannotFinish(t *testing.T) {
	loser := &replyLoser{}
	ended := make(chan error, 1)
	var listings atomic.Int32
	tracer := TracerFunc(func(ev TraceEvent) {
		switch {
		case ev.Op == "cleanup":
			ended <- ev.Err
		case ev.Op == "getChildren" && ev.Err != nil:
			listings.Add(1)
		}
	})
	ctx, s := loser.session(t, 60*time.Second, WithTracer(tracer))
	dir := "/zkt/lost-close-" + newUUID()
	m := NewMutex(s, dir)
	warm, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))

	loser.lose("getChildren "+dir, 1<<30)
	actx, cancel := context.WithCancel(ctx)
	loser.loseThen("create "+dir, 1, cancel)
	_, err = m.Acquire(actx)
	require.ErrorIs(t, err, context.Canceled)
	// The clean-up has tried (and failed) more than once: each lost reply
	// costs a reconnection, and go-zookeeper waits a second before some.
	// (A listing of the acquisition itself may fail just after it returned.)
	listings.Store(0)
	require.Eventually(t, func() bool { return listings.Load() >= 3 }, 30*time.Second, time.Millisecond)

	closed := make(chan struct{})
	go func() { _ = s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a clean-up that cannot finish")
	}
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, ErrClosed)
	default:
		t.Fatal("the clean-up's end was not traced")
	}
}
