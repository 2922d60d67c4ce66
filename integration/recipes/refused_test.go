package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
)

// A request ZooKeeper refuses for the Session's identity (NOAUTH) cannot
// succeed by being sent again: every recipe ends the call at once with
// ErrNotAuthorized (matching zk.ErrNoAuth too), never retries until ctx
// ends, and leaves no node behind.

const ownerPW = "owner-secret"

// refusedCalls are one writing call per recipe family, each on its own
// path under dir; keepers are closed before the call returns.
func refusedCalls(s *zr.Session, dir string) map[string]func(ctx context.Context) error {
	p := func(name string) string { return dir + "/" + name }
	lease := func(l *zr.Lease, err error) error {
		if l != nil {
			_ = l.Release(context.Background())
		}
		return err
	}
	keeper := func(n *zr.PersistentNode, ctx context.Context) error {
		if err := n.Start(ctx); err != nil {
			return err
		}
		defer func() { _ = n.Close(context.Background()) }()
		return n.WaitInPlace(ctx)
	}
	return map[string]func(ctx context.Context) error{
		"Mutex.Acquire": func(ctx context.Context) error { return lease(zr.NewMutex(s, p("mutex")).Acquire(ctx)) },
		"RWMutex.WriteLock.Acquire": func(ctx context.Context) error {
			return lease(zr.NewRWMutex(s, p("rw")).WriteLock().Acquire(ctx))
		},
		"Semaphore.Acquire": func(ctx context.Context) error {
			ls, err := zr.NewSemaphore(s, p("sem"), 2).Acquire(ctx, 1)
			for _, l := range ls {
				_ = l.Release(context.Background())
			}
			return err
		},
		"MultiLock.Acquire": func(ctx context.Context) error {
			return lease(zr.NewMultiLock(zr.NewMutex(s, p("multi-a")), zr.NewMutex(s, p("multi-b"))).Acquire(ctx))
		},
		"Election.Campaign": func(ctx context.Context) error { return lease(zr.NewElection(s, p("election")).Campaign(ctx)) },
		"PersistentNode.WaitInPlace": func(ctx context.Context) error {
			return keeper(zr.NewPersistentNode(s, p("node"), []byte("x")), ctx)
		},
		"PersistentNode(EPHEMERAL_SEQUENTIAL).WaitInPlace": func(ctx context.Context) error {
			return keeper(zr.NewPersistentNode(s, p("seq/n"), []byte("x"), zr.WithCreateMode(zr.ModeEphemeralSequential)), ctx)
		},
		"PersistentNode(PERSISTENT).WaitInPlace": func(ctx context.Context) error {
			return keeper(zr.NewPersistentNode(s, p("persistent"), []byte("x"), zr.WithCreateMode(zr.ModePersistent)), ctx)
		},
		"GroupMember.Start": func(ctx context.Context) error {
			g := zr.NewGroupMember(s, p("group"), "m", []byte("x"))
			defer func() { _ = g.Close(context.Background()) }()
			return g.Start(ctx)
		},
		"discovery.Register": func(ctx context.Context) error {
			d := discovery.New(s, p("services"))
			defer func() { _ = d.Close(context.Background()) }()
			return d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Address: "127.0.0.1"})
		},
		"discovery.Register(STATIC)": func(ctx context.Context) error {
			d := discovery.New(s, p("static"))
			defer func() { _ = d.Close(context.Background()) }()
			return d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Address: "127.0.0.1", Type: discovery.Static})
		},
		"SharedValue.Set": func(ctx context.Context) error {
			_, err := zr.NewSharedValue(s, p("value"), nil).Set(ctx, []byte("v"))
			return err
		},
		"SharedCount.Set": func(ctx context.Context) error {
			_, err := zr.NewSharedCount(s, p("count"), 0).Set(ctx, 1)
			return err
		},
		"AtomicCounter.Add": func(ctx context.Context) error {
			_, err := zr.NewAtomicCounter(s, p("counter")).Add(ctx, 1)
			return err
		},
		"Queue.Offer":         func(ctx context.Context) error { return zr.NewQueue(s, p("queue")).Offer(ctx, []byte("x")) },
		"Barrier.Set":         func(ctx context.Context) error { return zr.NewBarrier(s, p("barrier")).Set(ctx) },
		"DoubleBarrier.Enter": func(ctx context.Context) error { return zr.NewDoubleBarrier(s, p("double"), 1).Enter(ctx) },
	}
}

// The same calls on a Session whose WithACL the server refuses to set
// (CreatorACL without any authentication: INVALIDACL) fail at once with
// ErrInvalidACL, and leave no node either.
func TestRefused_EveryWritingRecipeFailsAtOnceTypedAndLeavesNoNode(t *testing.T) {
	c := server(t)
	for _, tc := range []struct {
		name        string
		parentACL   []zk.ACL
		opts        []zr.SessionOption
		kind, cause error
	}{
		{"NOAUTH", append(zk.DigestACL(zk.PermAll, "owner", ownerPW), zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}),
			[]zr.SessionOption{zr.WithDigestAuth("mallory", "guess")}, zr.ErrNotAuthorized, zk.ErrNoAuth},
		{"INVALIDACL", append(zk.DigestACL(zk.PermAll, "owner", ownerPW), zk.WorldACL(zk.PermAll)...),
			[]zr.SessionOption{zr.WithACL(zr.CreatorACL())}, zr.ErrInvalidACL, zk.ErrInvalidACL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := secPath(t)
			owner := c.Observer(t)
			require.NoError(t, owner.AddAuth("digest", []byte("owner:"+ownerPW)))
			_, err := owner.Create(dir, nil, 0, tc.parentACL)
			require.NoError(t, err)
			t.Cleanup(func() { _ = deleteTree(owner, dir) })
			m := connect(t, c, nil, tc.opts...)
			for name, call := range refusedCalls(m.Session, dir) {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					ctx := ctxT(t, 30*time.Second)
					start := time.Now()
					err := call(ctx)
					took := time.Since(start)
					require.Error(t, err)
					assert.ErrorIs(t, err, tc.kind, "%v", err)
					assert.ErrorIs(t, err, tc.cause, "%v", err)
					assert.Less(t, took, 2*time.Second, "ended at once, not retried until ctx ended: %v", err)
				})
			}
			t.Cleanup(func() {
				kids, _, err := owner.Children(dir)
				require.NoError(t, err)
				assert.Empty(t, kids, "no node left by the refused calls")
			})
		})
	}
}

// createTimes records when each create of path was refused.
type createTimes struct {
	mu      sync.Mutex
	path    string
	refused []time.Time
}

func (c *createTimes) TraceOp(ev zr.TraceEvent) {
	if ev.Op == "create" && ev.Path == c.path && errors.Is(ev.Err, zk.ErrNoAuth) {
		c.mu.Lock()
		c.refused = append(c.refused, time.Now())
		c.mu.Unlock()
	}
}

// logBuffer keeps a Session's log for a failing test to show.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (c *createTimes) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.refused)
}

// A keeper whose node is refused after it was in place (the parent's ACL
// changed under it) says so in its Status, looks again no more often than
// every ~2 s instead of in a loop, and puts the node back once the ACL
// lets it.
func TestRefused_KeeperRefusedLaterReportsItInStatusDoesNotLoopAndComesBack(t *testing.T) {
	c := server(t)
	open := append(zk.DigestACL(zk.PermAll, "owner", ownerPW), zk.WorldACL(zk.PermAll)...)
	readOnly := append(zk.DigestACL(zk.PermAll, "owner", ownerPW), zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"})
	for _, tc := range []struct {
		name   string
		parent string // whose ACL changes; the node is parent + "/a"
		start  func(t *testing.T, ctx context.Context, s *zr.Session, root string) (status func() (zr.NodeStatus, error), close func())
	}{
		{"PersistentNode", "/node", func(t *testing.T, ctx context.Context, s *zr.Session, root string) (func() (zr.NodeStatus, error), func()) {
			dir := root + "/node"
			n := zr.NewPersistentNode(s, dir+"/a", []byte("x"))
			require.NoError(t, n.Start(ctx))
			require.NoError(t, n.WaitInPlace(ctx))
			return func() (zr.NodeStatus, error) {
					st, _ := n.Status()
					return st, n.WaitInPlace(ctx)
				}, func() {
					assert.NoError(t, n.Close(ctx))
				}
		}},
		{"discovery registration", "/services/api", func(t *testing.T, ctx context.Context, s *zr.Session, root string) (func() (zr.NodeStatus, error), func()) {
			d := discovery.New(s, root+"/services")
			require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Address: "127.0.0.1"}))
			return func() (zr.NodeStatus, error) {
					st, _, err := d.Status("api", "a")
					require.NoError(t, err)
					return st, st.Err
				}, func() {
					assert.NoError(t, d.Close(ctx))
				}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := secPath(t)
			owner := c.Observer(t)
			require.NoError(t, owner.AddAuth("digest", []byte("owner:"+ownerPW)))
			_, err := owner.Create(root, nil, 0, open)
			require.NoError(t, err)
			t.Cleanup(func() { _ = deleteTree(owner, root) })
			parent, node := root+tc.parent, root+tc.parent+"/a"
			// The parents are plain persistent nodes made here: a keeper
			// would make them containers, which the server deletes once
			// the node is deleted below, and with the parent its ACL, so
			// that the keeper's next create would pass.
			for p := root; p != parent; {
				p += "/" + strings.SplitN(strings.TrimPrefix(parent, p+"/"), "/", 2)[0]
				_, err = owner.Create(p, nil, 0, open)
				require.NoError(t, err)
			}
			creates := &createTimes{path: node}
			// The Session's log (the keeper's warnings), shown if the test fails.
			logs := &logBuffer{}
			logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the Session's log:\n%s", logs.String())
				}
			})
			m := connect(t, c, nil, zr.WithDigestAuth("mallory", "guess"), zr.WithTracer(creates), zr.WithLogger(logger))
			ctx := ctxT(t, 30*time.Second)
			status, closeKeeper := tc.start(t, ctx, m.Session, root)

			_, err = owner.SetACL(parent, readOnly, -1)
			require.NoError(t, err)
			require.NoError(t, owner.Delete(node, -1))
			if !assert.Eventually(t, func() bool { return len(creates.times()) >= 3 }, 15*time.Second, 20*time.Millisecond,
				"the keeper looks again") {
				st, _ := status()
				t.Fatalf("refused creates at %v; status %+v", creates.times(), st)
			}
			st, err := status()
			assert.False(t, st.InPlace)
			assert.ErrorIs(t, st.Err, zr.ErrNotAuthorized, "Status says why")
			assert.ErrorIs(t, st.Err, zk.ErrNoAuth)
			assert.ErrorIs(t, err, zr.ErrNotAuthorized, "and a wait for the node returns it at once")
			ts := creates.times()
			for i := 1; i < len(ts); i++ {
				assert.GreaterOrEqual(t, ts[i].Sub(ts[i-1]), 1500*time.Millisecond, "refused creates %d and %d: not a loop", i, i+1)
			}

			_, err = owner.SetACL(parent, open, -1)
			require.NoError(t, err)
			require.Eventually(t, func() bool { st, _ := status(); return st.InPlace }, 15*time.Second, 20*time.Millisecond,
				"the node comes back once the ACL lets it")
			ok, _, err := owner.Exists(node)
			require.NoError(t, err)
			assert.True(t, ok)
			closeKeeper()
			kids, _, err := owner.Children(parent)
			require.NoError(t, err)
			assert.Empty(t, kids, "no node left after Close")
		})
	}
}

// Reading recipes on a node whose ACL refuses the Session READ fail at
// once with ErrNotAuthorized too: caches, listings, waits.
func TestRefused_ReadersOfAnUnreadableNodeFailAtOnceWithErrNotAuthorized(t *testing.T) {
	c := server(t)
	dir := secPath(t)
	owner := c.Observer(t)
	require.NoError(t, owner.AddAuth("digest", []byte("owner:"+ownerPW)))
	_, err := owner.Create(dir, nil, 0, zk.DigestACL(zk.PermAll, "owner", ownerPW))
	require.NoError(t, err)
	t.Cleanup(func() { _ = deleteTree(owner, dir) })
	m := connect(t, c, nil, zr.WithDigestAuth("mallory", "guess"))
	s := m.Session
	for name, call := range map[string]func(ctx context.Context) error{
		"NodeCache.Start": func(ctx context.Context) error {
			nc := zr.NewNodeCache(s, dir)
			defer func() { _ = nc.Close(context.Background()) }()
			return nc.Start(ctx)
		},
		"TreeCache.Start": func(ctx context.Context) error {
			tc := zr.NewTreeCache(s, dir)
			defer func() { _ = tc.Close(context.Background()) }()
			return tc.Start(ctx)
		},
		"discovery.ServiceCache.Start": func(ctx context.Context) error {
			sc := discovery.New(s, "/").NewCache(dir[1:])
			defer func() { _ = sc.Close(context.Background()) }()
			return sc.Start(ctx)
		},
		"Mutex.Participants": func(ctx context.Context) error { _, err := zr.NewMutex(s, dir).Participants(ctx); return err },
		"Queue.Take":         func(ctx context.Context) error { _, err := zr.NewQueue(s, dir).Take(ctx); return err },
		"Barrier.Wait": func(ctx context.Context) error {
			return zr.NewBarrier(s, dir).Wait(ctx)
		},
		"SharedValue.Get": func(ctx context.Context) error { _, err := zr.NewSharedValue(s, dir, nil).Get(ctx); return err },
		"Election.Leader": func(ctx context.Context) error { _, err := zr.NewElection(s, dir).Leader(ctx); return err },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t, 30*time.Second)
			start := time.Now()
			err := call(ctx)
			took := time.Since(start)
			require.Error(t, err)
			assert.ErrorIs(t, err, zr.ErrNotAuthorized, "%v", err)
			assert.ErrorIs(t, err, zk.ErrNoAuth, "%v", err)
			assert.Less(t, took, 2*time.Second, "ended at once, not retried until ctx ended: %v", err)
		})
	}
}
