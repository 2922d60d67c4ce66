package recipes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/discovery"
)

// Misuse that needs a server: a closed session, release twice, release
// after loss, a nil context on a live lease, a bad path on a live session.
// Each gives a typed error, never a panic or a hang, and leaves no node.
// Pure validation is tabled in the root package (badinput_test.go); a new
// recipe adds itself to badInputRecipes.

// semaphoreOne adapts a Semaphore taking one permit to the locker shape.
type semaphoreOne struct{ sem *zr.Semaphore }

func (s semaphoreOne) Acquire(ctx context.Context) (*zr.Lease, error) {
	return one(s.sem.Acquire(ctx, 1))
}
func (s semaphoreOne) TryAcquire(ctx context.Context) (*zr.Lease, error) {
	return one(s.sem.TryAcquire(ctx, 1))
}

func one(ls []*zr.Lease, err error) (*zr.Lease, error) {
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// campaign adapts an Election: Campaign has no try form, so TryAcquire
// campaigns too.
type campaign struct{ e *zr.Election }

func (c campaign) Acquire(ctx context.Context) (*zr.Lease, error)    { return c.e.Campaign(ctx) }
func (c campaign) TryAcquire(ctx context.Context) (*zr.Lease, error) { return c.e.Campaign(ctx) }

var badInputRecipes = []struct {
	name string
	make func(s *zr.Session, path string) locker
}{
	{"Mutex", mutexRecipe.make},
	{"RWMutex/write", writeLockRecipe.make},
	{"RWMutex/read", func(s *zr.Session, p string) locker { return zr.NewRWMutex(s, p).ReadLock() }},
	{"SemaphoreMutex", semaphoreMutexRecipe.make},
	{"Semaphore", func(s *zr.Session, p string) locker { return semaphoreOne{zr.NewSemaphore(s, p, 2)} }},
	{"MultiLock", multiLockRecipe.make},
	{"Election", func(s *zr.Session, p string) locker { return campaign{zr.NewElection(s, p)} }},
}

// ephemeralsUnder counts the ephemeral nodes in the subtree at path.
func ephemeralsUnder(t *testing.T, conn *zk.Conn, path string) int {
	t.Helper()
	_, st, err := conn.Get(path)
	if err == zk.ErrNoNode {
		return 0
	}
	require.NoError(t, err)
	n := 0
	if st.EphemeralOwner != 0 {
		n++
	}
	for _, k := range children(t, conn, path) {
		n += ephemeralsUnder(t, conn, path+"/"+k)
	}
	return n
}

func TestBadInput_ClosedSessionRefusesEveryCallAndCreatesNothing(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	require.NoError(t, cl.Close())
	assert.NoError(t, cl.Close(), "Close is idempotent")
	assert.ErrorIs(t, cl.Err(), zr.ErrClosed)
	subCtx, cancel := context.WithCancel(context.Background())
	ch, _ := cl.Subscribe(subCtx)
	_, open := <-ch
	assert.False(t, open, "Subscribe on a closed session returns a closed channel")
	cancel()
	ctx := ctxT(t, 20*time.Second)
	for _, r := range badInputRecipes {
		t.Run(r.name, func(t *testing.T) {
			path := testPath(t)
			lk := r.make(cl.Session, path)
			_, err := lk.Acquire(ctx)
			assert.ErrorIs(t, err, zr.ErrClosed)
			_, err = lk.TryAcquire(ctx)
			assert.ErrorIs(t, err, zr.ErrClosed)
			ok, _, err := conn.Exists(path)
			require.NoError(t, err)
			assert.False(t, ok, "no node, not even a parent, on a closed session")
		})
	}
	_, err := zr.NewMutex(cl.Session, "/x").Participants(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = zr.NewElection(cl.Session, "/x").Leader(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = zr.NewElection(cl.Session, "/x").Subscribe(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = zr.NewSemaphore(cl.Session, "/x", 2).Participants(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
	_, err = zr.NewSemaphore(cl.Session, "/x", 2).Available(ctx)
	assert.ErrorIs(t, err, zr.ErrClosed)
}

func TestBadInput_ReleaseTwiceSaysReleased(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	ctx := ctxT(t, 60*time.Second)
	for _, r := range badInputRecipes {
		t.Run(r.name, func(t *testing.T) {
			path := testPath(t)
			l, err := r.make(cl.Session, path).Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, l.Release(ctx))
			assert.ErrorIs(t, l.Release(ctx), zr.ErrReleased)
			assert.ErrorIs(t, l.Err(), zr.ErrReleased)
			assert.Zero(t, ephemeralsUnder(t, conn, path))
		})
	}
}

func TestBadInput_ReleaseAfterLossReportsTheLossAndErrKeepsIt(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	ctx := ctxT(t, 2*time.Minute)
	for _, r := range badInputRecipes {
		t.Run(r.name, func(t *testing.T) {
			cl := connect(t, c, nil)
			path := testPath(t)
			l, err := r.make(cl.Session, path).Acquire(ctx)
			require.NoError(t, err)
			cl.expire(t)
			select {
			case <-l.Done():
			case <-time.After(15 * time.Second):
				t.Fatal("holder not told of the loss")
			}
			lossErr := l.Err()
			require.ErrorIs(t, lossErr, zr.ErrLockLost)
			assert.ErrorIs(t, l.Release(ctx), zr.ErrLockLost, "release after loss reports the loss")
			assert.Equal(t, lossErr, l.Err(), "Err, like a context's, does not change once set")
			assert.ErrorIs(t, l.Release(ctx), zr.ErrReleased)
			require.Eventually(t, func() bool { return ephemeralsUnder(t, conn, path) == 0 }, 20*time.Second, 20*time.Millisecond)
		})
	}
}

func TestBadInput_ReleaseWithNilContextKeepsTheLease(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	ctx := ctxT(t, 60*time.Second)
	for _, r := range badInputRecipes {
		t.Run(r.name, func(t *testing.T) {
			path := testPath(t)
			l, err := r.make(cl.Session, path).Acquire(ctx)
			require.NoError(t, err)
			var nilCtx context.Context
			assert.ErrorIs(t, l.Release(nilCtx), zr.ErrInvalidArgument)
			assert.NoError(t, l.Err(), "still held")
			require.NoError(t, l.Release(ctx))
			assert.Zero(t, ephemeralsUnder(t, conn, path))
		})
	}
}

func TestBadInput_BadPathOnALiveSessionCreatesNothing(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	ctx := ctxT(t, 20*time.Second)
	rootBefore := children(t, conn, "/")
	zkBefore := children(t, conn, "/zookeeper")
	for _, r := range badInputRecipes {
		for _, p := range []string{"", "rel/ative", "/trailing/", "/zookeeper/x", "/a//b", "/"} {
			lk := r.make(cl.Session, p)
			if r.name == "MultiLock" { // its contract maker derives member paths
				lk = zr.NewMultiLock(zr.NewMutex(cl.Session, "/ok"), zr.NewMutex(cl.Session, p))
			}
			_, err := lk.Acquire(ctx)
			assert.ErrorIs(t, err, zr.ErrInvalidPath, "%s %q", r.name, p)
		}
	}
	assert.ElementsMatch(t, rootBefore, children(t, conn, "/"))
	assert.ElementsMatch(t, zkBefore, children(t, conn, "/zookeeper"))
}

// The recipes added after the locks: caches, watches, keepers, barriers,
// counters, the queue, revocation, election extras and discovery. Their
// pure validation is tabled in the root package (badinput_more_test.go);
// these are the cases that need a server, each checked for a typed error,
// no panic, no hang (every call is bounded), and no node left behind.

// leftBehind lists the nodes in the subtree at path that are ephemeral or
// hold data: what a call left. The empty parents the recipes make are
// containers, which the server reaps once empty; a client cannot tell them
// from persistent nodes (the server shows a container's ephemeralOwner as
// 0), so an empty node with no data is not counted.
func leftBehind(t *testing.T, conn *zk.Conn, path string) []string {
	t.Helper()
	data, st, err := conn.Get(path)
	if err == zk.ErrNoNode {
		return nil
	}
	require.NoError(t, err)
	var left []string
	if st.EphemeralOwner != 0 || len(data) > 0 {
		left = append(left, path)
	}
	for _, k := range children(t, conn, path) {
		left = append(left, leftBehind(t, conn, path+"/"+k)...)
	}
	return left
}

// bounded runs call with a 20 s context on its own goroutine and returns
// its error; a panic or a call that outlives its context fails the test.
func bounded(t *testing.T, what string, call func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		done <- call(ctx)
	}()
	select {
	case err := <-done:
		if err != nil {
			assert.NotContains(t, err.Error(), "panic: ", what)
			assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), "%s: %v", what, err)
		}
		return err
	case <-time.After(25 * time.Second):
		t.Fatalf("%s: still running 5 s after its context ended", what)
		return nil
	}
}

// newerRecipeCalls are one call of each recipe added after the locks, on
// s and path.
func newerRecipeCalls(s *zr.Session, path string) map[string]func(ctx context.Context) error {
	noData := func([]byte, *zr.NodeStat) error { return nil }
	noKids := func([]string, *zr.NodeStat) error { return nil }
	return map[string]func(ctx context.Context) error{
		"NodeCache.Start":     func(ctx context.Context) error { return zr.NewNodeCache(s, path).Start(ctx) },
		"TreeCache.Start":     func(ctx context.Context) error { return zr.NewTreeCache(s, path).Start(ctx) },
		"WatchData":           func(ctx context.Context) error { return zr.WatchData(ctx, s, path, noData) },
		"WatchChildren":       func(ctx context.Context) error { return zr.WatchChildren(ctx, s, path, noKids) },
		"Barrier.Set":         func(ctx context.Context) error { return zr.NewBarrier(s, path).Set(ctx) },
		"Barrier.Remove":      func(ctx context.Context) error { return zr.NewBarrier(s, path).Remove(ctx) },
		"Barrier.Wait":        func(ctx context.Context) error { return zr.NewBarrier(s, path).Wait(ctx) },
		"Barrier.IsSet":       func(ctx context.Context) error { _, err := zr.NewBarrier(s, path).IsSet(ctx); return err },
		"DoubleBarrier.Enter": func(ctx context.Context) error { return zr.NewDoubleBarrier(s, path, 1).Enter(ctx) },
		"Queue.Offer":         func(ctx context.Context) error { return zr.NewQueue(s, path).Offer(ctx, []byte("x")) },
		"Queue.Poll":          func(ctx context.Context) error { _, err := zr.NewQueue(s, path).Poll(ctx); return err },
		"Queue.Peek":          func(ctx context.Context) error { _, err := zr.NewQueue(s, path).Peek(ctx); return err },
		"Queue.Take":          func(ctx context.Context) error { _, err := zr.NewQueue(s, path).Take(ctx); return err },
		"Revoke":              func(ctx context.Context) error { return zr.Revoke(ctx, s, path+"/_c_x-lock-0000000000") },
		"SharedValue.Set": func(ctx context.Context) error {
			_, err := zr.NewSharedValue(s, path, nil).Set(ctx, []byte("v"))
			return err
		},
		"SharedCount.Get":      func(ctx context.Context) error { _, err := zr.NewSharedCount(s, path, 1).Get(ctx); return err },
		"AtomicCounter.Add":    func(ctx context.Context) error { _, err := zr.NewAtomicCounter(s, path).Add(ctx, 1); return err },
		"PersistentNode.Start": func(ctx context.Context) error { return zr.NewPersistentNode(s, path, []byte("x")).Start(ctx) },
		"GroupMember.Start":    func(ctx context.Context) error { return zr.NewGroupMember(s, path, "m", []byte("x")).Start(ctx) },
		"Election.Run": func(ctx context.Context) error {
			return zr.NewElection(s, path).Run(ctx, func(context.Context, *zr.Lease) error { return nil })
		},
		"Semaphore.Available": func(ctx context.Context) error { _, err := zr.NewSemaphore(s, path, 2).Available(ctx); return err },
		"Mutex(revocable, lease time).Acquire": func(ctx context.Context) error {
			_, err := zr.NewMutex(s, path, zr.WithRevocable(true), zr.WithLeaseTime(time.Minute)).Acquire(ctx)
			return err
		},
		"discovery.Register": func(ctx context.Context) error {
			return discovery.New(s, path).Register(ctx, discovery.Instance{Name: "api", ID: "a"})
		},
	}
}

func TestBadInput_ClosedSessionRefusesTheNewerRecipesAndCreatesNothing(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	require.NoError(t, cl.Close())
	base := testPath(t)
	for name := range newerRecipeCalls(cl.Session, base) {
		call := newerRecipeCalls(cl.Session, base+"/"+unsafe.ReplaceAllString(name, "_"))[name]
		t.Run(name, func(t *testing.T) {
			err := bounded(t, name, call)
			assert.ErrorIs(t, err, zr.ErrClosed)
		})
	}
	ok, _, err := conn.Exists(base)
	require.NoError(t, err)
	assert.False(t, ok, "no node, not even a parent, on a closed session")
}

func TestBadInput_NewerRecipesGivenABadPathOnALiveSessionCreateNothing(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	rootBefore := children(t, conn, "/")
	zkBefore := children(t, conn, "/zookeeper")
	for _, p := range []string{"", "rel/ative", "/trailing/", "/zookeeper/x", "/zookeeper", "/a//b", "/a/./b", "/a/../b", "/a\x00b", "/"} {
		for name, call := range newerRecipeCalls(cl.Session, p) {
			if name == "Revoke" { // its call names a node under p
				call = func(ctx context.Context) error { return zr.Revoke(ctx, cl.Session, p) }
			}
			if name == "discovery.Register" && p == "/" {
				continue // a valid base path: services at the top level, as Curator allows
			}
			err := bounded(t, name, call)
			assert.ErrorIs(t, err, zr.ErrInvalidPath, "%s %q", name, p)
		}
	}
	assert.ElementsMatch(t, rootBefore, children(t, conn, "/"))
	assert.ElementsMatch(t, zkBefore, children(t, conn, "/zookeeper"))
}

// TestBadInput_KeepersAndCachesStartOnceCloseTwiceAndLeaveNoNode: Start
// twice, Close twice, and every call after Close, on a live Session.
func TestBadInput_KeepersAndCachesStartOnceCloseTwiceAndLeaveNoNode(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	s := cl.Session
	base := testPath(t)
	call := func(what string, f func(ctx context.Context) error) error { return bounded(t, what, f) }

	t.Run("NodeCache", func(t *testing.T) {
		nc := zr.NewNodeCache(s, base+"/nc")
		require.NoError(t, call("Start", nc.Start))
		assert.ErrorIs(t, call("Start again", nc.Start), zr.ErrCacheStarted)
		require.NoError(t, call("Close", nc.Close))
		assert.NoError(t, call("Close again", nc.Close), "Close is idempotent")
		assert.ErrorIs(t, call("Start after Close", nc.Start), zr.ErrCacheStarted)
		assert.NoError(t, nc.Err(), "Err is nil after Close")
	})
	t.Run("TreeCache", func(t *testing.T) {
		tc := zr.NewTreeCache(s, base+"/tc")
		require.NoError(t, call("Start", tc.Start))
		assert.ErrorIs(t, call("Start again", tc.Start), zr.ErrCacheStarted)
		require.NoError(t, call("Close", tc.Close))
		assert.NoError(t, call("Close again", tc.Close), "Close is idempotent")
		assert.ErrorIs(t, call("Start after Close", tc.Start), zr.ErrCacheStarted)
		_, ok := tc.Get("not/a/path")
		assert.False(t, ok)
		_, ok = tc.Children("")
		assert.False(t, ok)
	})
	t.Run("PersistentNode", func(t *testing.T) {
		n := zr.NewPersistentNode(s, base+"/pn", []byte("x"))
		assert.ErrorIs(t, call("WaitInPlace before Start", n.WaitInPlace), zr.ErrClosed)
		require.NoError(t, call("Start", n.Start))
		assert.ErrorIs(t, call("Start again", n.Start), zr.ErrNodeStarted)
		require.NoError(t, call("WaitInPlace", n.WaitInPlace))
		var nilCtx context.Context
		assert.ErrorIs(t, n.Close(nilCtx), zr.ErrInvalidArgument)
		assert.NoError(t, call("WaitInPlace after Close(nil)", n.WaitInPlace), "still kept")
		require.NoError(t, call("Close", n.Close))
		assert.NoError(t, call("Close again", n.Close), "Close is idempotent")
		assert.ErrorIs(t, call("Start again", n.Start), zr.ErrNodeStarted)
		assert.ErrorIs(t, call("SetData after Close", func(ctx context.Context) error { return n.SetData(ctx, []byte("y")) }), zr.ErrClosed)
		assert.ErrorIs(t, call("WaitInPlace after Close", n.WaitInPlace), zr.ErrClosed)
	})
	t.Run("GroupMember", func(t *testing.T) {
		g := zr.NewGroupMember(s, base+"/gm", "m", []byte("x"))
		require.NoError(t, call("Start", g.Start))
		assert.ErrorIs(t, call("Start again", g.Start), zr.ErrNodeStarted)
		require.NoError(t, call("WaitInPlace", g.WaitInPlace))
		var nilCtx context.Context
		assert.ErrorIs(t, g.Close(nilCtx), zr.ErrInvalidArgument)
		assert.NoError(t, call("WaitInPlace after Close(nil)", g.WaitInPlace), "still a member")
		require.NoError(t, call("Close", g.Close))
		assert.NoError(t, call("Close again", g.Close), "Close is idempotent")
		assert.ErrorIs(t, call("Start after Close", g.Start), zr.ErrNodeStarted)
		assert.ErrorIs(t, call("SetData after Close", func(ctx context.Context) error { return g.SetData(ctx, []byte("y")) }), zr.ErrClosed)
	})
	t.Run("ServiceCache and Provider", func(t *testing.T) {
		d := discovery.New(s, base+"/sd")
		sc := d.NewCache("api")
		require.NoError(t, call("ServiceCache.Start", sc.Start))
		assert.ErrorIs(t, call("ServiceCache.Start again", sc.Start), discovery.ErrClosed)
		require.NoError(t, call("Close", sc.Close))
		assert.NoError(t, call("Close again", sc.Close), "Close is idempotent")
		p := d.NewProvider("api")
		_, err := p.Instance()
		assert.ErrorIs(t, err, discovery.ErrNoInstance, "Instance before Start")
		require.NoError(t, call("Provider.Start", p.Start))
		assert.ErrorIs(t, call("Provider.Start again", p.Start), discovery.ErrClosed)
		p.NoteError(discovery.Instance{}) // an instance it never gave: ignored
		require.NoError(t, call("Close", p.Close))
		assert.NoError(t, call("Close again", p.Close), "Close is idempotent")
		assert.ErrorIs(t, call("Unregister twice", func(ctx context.Context) error {
			require.NoError(t, d.Register(ctx, discovery.Instance{Name: "api", ID: "a"}))
			require.NoError(t, d.Unregister(ctx, "api", "a"))
			return d.Unregister(ctx, "api", "a")
		}), discovery.ErrNotRegistered)
		require.NoError(t, call("Close", d.Close))
		assert.NoError(t, call("Close again", d.Close), "Close is idempotent")
		assert.ErrorIs(t, call("Register after Close", func(ctx context.Context) error {
			return d.Register(ctx, discovery.Instance{Name: "api", ID: "b"})
		}), discovery.ErrClosed)
	})
	t.Run("Subscribe", func(t *testing.T) {
		subCtx, cancel := context.WithCancel(context.Background())
		_, err := s.Subscribe(subCtx)
		require.NoError(t, err)
		cancel()
		cancel() // idempotent, no panic
		var nilCtx context.Context
		_, err = s.Subscribe(nilCtx)
		assert.ErrorIs(t, err, zr.ErrInvalidArgument)
	})
	assert.Empty(t, leftBehind(t, conn, base))
}

// TestBadInput_MisusedLeasesBarriersAndQueueGiveTypedErrorsAndLeaveNoNode:
// a lease from elsewhere or already ended, calls out of order, a nil item,
// a revocation aimed at something that is not a holder's node.
func TestBadInput_MisusedLeasesBarriersAndQueueGiveTypedErrorsAndLeaveNoNode(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	s := cl.Session
	base := testPath(t)
	call := func(what string, f func(ctx context.Context) error) error { return bounded(t, what, f) }
	ctx := ctxT(t, time.Minute)

	t.Run("Election.Proclaim", func(t *testing.T) {
		e := zr.NewElection(s, base+"/e", zr.WithProclaim(true))
		other := zr.NewElection(s, base+"/e2", zr.WithProclaim(true))
		lease, err := e.Campaign(ctx)
		require.NoError(t, err)
		mine, err := zr.NewMutex(s, base+"/m").Acquire(ctx)
		require.NoError(t, err)
		assert.ErrorIs(t, call("Proclaim(another election's lease)", func(ctx context.Context) error {
			return other.Proclaim(ctx, lease, []byte("x"))
		}), zr.ErrInvalidArgument)
		assert.ErrorIs(t, call("Proclaim(a mutex lease)", func(ctx context.Context) error {
			return e.Proclaim(ctx, mine, []byte("x"))
		}), zr.ErrInvalidArgument)
		assert.ErrorIs(t, call("Proclaim(1.1 MB)", func(ctx context.Context) error {
			return e.Proclaim(ctx, lease, make([]byte, 1100*1024))
		}), zr.ErrDataTooLarge)
		assert.NoError(t, lease.Err(), "still the leader")
		require.NoError(t, mine.Release(ctx))
		require.NoError(t, lease.Release(ctx))
		assert.ErrorIs(t, call("Proclaim(released lease)", func(ctx context.Context) error {
			return e.Proclaim(ctx, lease, []byte("x"))
		}), zr.ErrNotLeader)
		assert.NoError(t, call("Resign when not leading", e.Resign))
		assert.ErrorIs(t, call("Proclaim in latch layout without WithProclaim", func(ctx context.Context) error {
			e := zr.NewElection(s, base+"/e3")
			l, err := e.Campaign(ctx)
			require.NoError(t, err)
			defer func() { assert.NoError(t, l.Release(ctx)) }()
			return e.Proclaim(ctx, l, []byte("x"))
		}), zr.ErrInvalidArgument)
	})
	t.Run("Subscribe until ctx ends", func(t *testing.T) {
		octx, cancel := context.WithCancel(ctx)
		ch, err := zr.NewElection(s, base+"/obs").Subscribe(octx)
		require.NoError(t, err)
		<-ch
		cancel()
		for range ch { // closed once ctx ends
		}
	})
	t.Run("DoubleBarrier", func(t *testing.T) {
		b := zr.NewDoubleBarrier(s, base+"/db", 1)
		assert.ErrorIs(t, call("Leave before Enter", b.Leave), zr.ErrNotEntered)
		require.NoError(t, call("Enter", b.Enter))
		assert.ErrorIs(t, call("Enter twice", b.Enter), zr.ErrEntered)
		require.NoError(t, call("Leave", b.Leave))
		assert.ErrorIs(t, call("Leave twice", b.Leave), zr.ErrNotEntered)
	})
	t.Run("Barrier", func(t *testing.T) {
		b := zr.NewBarrier(s, base+"/b")
		require.NoError(t, call("Remove before Set", b.Remove))
		require.NoError(t, call("Set", b.Set))
		require.NoError(t, call("Set twice", b.Set))
		require.NoError(t, call("Remove", b.Remove))
		require.NoError(t, call("Remove twice", b.Remove))
	})
	t.Run("Queue", func(t *testing.T) {
		q := zr.NewQueue(s, base+"/q")
		assert.ErrorIs(t, call("Offer(nil)", func(ctx context.Context) error { return q.Offer(ctx, nil) }), zr.ErrInvalidArgument)
		_, err := q.Poll(ctx)
		assert.ErrorIs(t, err, zr.ErrQueueEmpty, "nothing was offered")
		require.NoError(t, call("Offer(empty)", func(ctx context.Context) error { return q.Offer(ctx, []byte{}) }))
		item, err := q.Poll(ctx)
		require.NoError(t, err)
		assert.Empty(t, item)
	})
	t.Run("Revoke", func(t *testing.T) {
		m := zr.NewMutex(s, base+"/lock", zr.WithRevocable(true))
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		assert.NoError(t, call("Revoke(a node that is gone)", func(ctx context.Context) error {
			return zr.Revoke(ctx, s, base+"/lock/_c_00000000-0000-0000-0000-000000000000-lock-0000000099")
		}))
		assert.ErrorIs(t, call("Revoke(the lock's path, not the holder's node)", func(ctx context.Context) error {
			return zr.Revoke(ctx, s, base+"/lock")
		}), zr.ErrInvalidArgument)
		_, err = conn.Create(base+"/config", []byte("keep me"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		assert.ErrorIs(t, call("Revoke(a node that is no lock node)", func(ctx context.Context) error {
			return zr.Revoke(ctx, s, base+"/config")
		}), zr.ErrInvalidArgument)
		data, _, err := conn.Get(base + "/config")
		require.NoError(t, err)
		assert.Equal(t, "keep me", string(data), "Revoke wrote into a node that is not a lock node")
		data, _, err = conn.Get(base + "/lock")
		require.NoError(t, err)
		assert.Empty(t, data, "Revoke wrote into the lock's parent")
		select {
		case <-l.Revoked():
			t.Error("the holder was told of a revocation nobody made")
		default:
		}
		require.NoError(t, l.Release(ctx))
		require.NoError(t, conn.Delete(base+"/config", -1))
	})
	t.Run("AtomicCounter.CompareAndSet(nil ctx)", func(t *testing.T) {
		var nilCtx context.Context
		assert.ErrorIs(t, bounded(t, "CompareAndSet", func(context.Context) error {
			_, err := zr.NewAtomicCounter(s, base+"/counter").CompareAndSet(nilCtx, 0, 1)
			return err
		}), zr.ErrInvalidArgument)
	})
	t.Run("Lease time of 1 ns", func(t *testing.T) {
		l, err := zr.NewMutex(s, base+"/lt", zr.WithLeaseTime(time.Nanosecond)).Acquire(ctx)
		if err == nil {
			select {
			case <-l.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("a lease of 1 ns was not ended")
			}
			assert.ErrorIs(t, l.Err(), zr.ErrLeaseExpired)
			assert.ErrorIs(t, l.Release(ctx), zr.ErrLeaseExpired)
		} else {
			assert.ErrorIs(t, err, zr.ErrLeaseExpired)
		}
		require.Eventually(t, func() bool { return len(leftBehind(t, conn, base+"/lt")) == 0 }, 10*time.Second, 20*time.Millisecond)
	})
	assert.Empty(t, leftBehind(t, conn, base))
}

// TestBadInput_HugeDataOnTheRecipesAddedAfterTheLocks: 1.1 MB of data (past
// ZooKeeper's default jute.maxbuffer) given to every call of the recipes
// added after the locks that writes caller data must fail at once with
// ErrDataTooLarge, leaving no node and disturbing no other lease of the
// Session (see datatoolarge_test.go for the locks). A keeper (Start does no
// I/O) reports it from Start or from WaitInPlace.
func TestBadInput_HugeDataOnTheRecipesAddedAfterTheLocks(t *testing.T) {
	huge := make([]byte, 1100*1024)
	hugeJSON := json.RawMessage(`"` + strings.Repeat("x", len(huge)) + `"`)
	// keeper starts a keeper and waits for its node in place.
	keeper := func(start, wait func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := start(ctx); err != nil {
				return err
			}
			return wait(ctx)
		}
	}
	// thenClose runs setup, then the call to refuse, then close: the call's
	// error, unless setup or close failed.
	thenClose := func(setup, call, closeIt func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := setup(ctx); err != nil {
				return fmt.Errorf("start: %w", err)
			}
			err := call(ctx)
			if cerr := closeIt(ctx); cerr != nil {
				return fmt.Errorf("close: %w", cerr)
			}
			return err
		}
	}
	// left names, per case, the node (under path) a case makes before its
	// refused call and removes after: its container parents stay until the
	// server reaps them, so that node is what must be gone.
	left := map[string]string{"GroupMember.SetData(1.1 MB)": "/m", "discovery.Update(1.1 MB payload)": "/api/a"}
	cases := []struct {
		name string
		call func(s *zr.Session, path string) func(ctx context.Context) error
	}{
		{"PersistentNode(1.1 MB).Start", func(s *zr.Session, path string) func(context.Context) error {
			n := zr.NewPersistentNode(s, path, huge)
			t.Cleanup(func() { _ = n.Close(context.Background()) })
			return keeper(n.Start, n.WaitInPlace)
		}},
		{"PersistentNode.SetData(1.1 MB)", func(s *zr.Session, path string) func(context.Context) error {
			n := zr.NewPersistentNode(s, path, []byte("small"))
			t.Cleanup(func() { _ = n.Close(context.Background()) })
			return thenClose(keeper(n.Start, n.WaitInPlace),
				func(ctx context.Context) error { return n.SetData(ctx, huge) }, n.Close)
		}},
		{"GroupMember(1.1 MB).Start", func(s *zr.Session, path string) func(context.Context) error {
			g := zr.NewGroupMember(s, path, "m", huge)
			t.Cleanup(func() { _ = g.Close(context.Background()) })
			return keeper(g.Start, g.WaitInPlace)
		}},
		{"GroupMember.SetData(1.1 MB)", func(s *zr.Session, path string) func(context.Context) error {
			g := zr.NewGroupMember(s, path, "m", []byte("small"))
			t.Cleanup(func() { _ = g.Close(context.Background()) })
			return thenClose(keeper(g.Start, g.WaitInPlace),
				func(ctx context.Context) error { return g.SetData(ctx, huge) }, g.Close)
		}},
		{"discovery.Register(1.1 MB payload)", func(s *zr.Session, path string) func(context.Context) error {
			d := discovery.New(s, path)
			t.Cleanup(func() { _ = d.Close(context.Background()) })
			return func(ctx context.Context) error {
				return d.Register(ctx, discovery.Instance{Name: "api", ID: "a", Payload: hugeJSON})
			}
		}},
		{"discovery.Update(1.1 MB payload)", func(s *zr.Session, path string) func(context.Context) error {
			d := discovery.New(s, path)
			t.Cleanup(func() { _ = d.Close(context.Background()) })
			return thenClose(func(ctx context.Context) error { return d.Register(ctx, discovery.Instance{Name: "api", ID: "a"}) },
				func(ctx context.Context) error {
					return d.Update(ctx, discovery.Instance{Name: "api", ID: "a", Payload: hugeJSON})
				}, d.Close)
		}},
		{"SharedValue.Set(1.1 MB)", func(s *zr.Session, path string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := zr.NewSharedValue(s, path, nil).Set(ctx, huge); return err }
		}},
		{"SharedValue(1.1 MB seed).Get", func(s *zr.Session, path string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := zr.NewSharedValue(s, path, huge).Get(ctx); return err }
		}},
		{"Queue.Offer(1.1 MB)", func(s *zr.Session, path string) func(context.Context) error {
			return func(ctx context.Context) error { return zr.NewQueue(s, path).Offer(ctx, huge) }
		}},
		{"Barrier(1.1 MB data).Set", func(s *zr.Session, path string) func(context.Context) error {
			return func(ctx context.Context) error { return zr.NewBarrier(s, path, zr.WithBarrierData(huge)).Set(ctx) }
		}},
		{"Election.Proclaim(1.1 MB)", func(s *zr.Session, path string) func(context.Context) error {
			return func(ctx context.Context) error {
				e := zr.NewElection(s, path+"-election", zr.WithProclaim(true)) // path stays empty
				l, err := e.Campaign(ctx)
				if err != nil {
					return fmt.Errorf("campaign: %w", err)
				}
				err = e.Proclaim(ctx, l, huge)
				if rerr := l.Release(ctx); rerr != nil {
					return fmt.Errorf("release: %w", rerr)
				}
				return err
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBystander(t)
			path := testPath(t)
			b.refuses(t, tc.name, tc.call(b.cl.Session, path))
			b.undisturbed(t, path+left[tc.name])
		})
	}
}

// TestBadInput_PathTooLongForARequestIsRefusedAtOnceAndDisturbsNoLease: a
// path of 1.1 MB (no node can have it: its create would be past the
// server's jute.maxbuffer) must fail at once with ErrInvalidPath, before
// any request: a read of it is a request the server answers by closing
// the connection, which would put every lease of the Session in doubt.
func TestBadInput_PathTooLongForARequestIsRefusedAtOnceAndDisturbsNoLease(t *testing.T) {
	long := "/" + strings.Repeat("x", 1100*1024)
	noData := func([]byte, *zr.NodeStat) error { return nil }
	noKids := func([]string, *zr.NodeStat) error { return nil }
	calls := map[string]func(s *zr.Session, p string) func(context.Context) error{
		"WatchData": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { return zr.WatchData(ctx, s, p, noData) }
		},
		"WatchChildren": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { return zr.WatchChildren(ctx, s, p, noKids) }
		},
		"NodeCache.Start": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { c := zr.NewNodeCache(s, p); defer c.Close(ctx); return c.Start(ctx) }
		},
		"TreeCache.Start": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { c := zr.NewTreeCache(s, p); defer c.Close(ctx); return c.Start(ctx) }
		},
		"Queue.Peek": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := zr.NewQueue(s, p).Peek(ctx); return err }
		},
		"AtomicCounter.Get": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := zr.NewAtomicCounter(s, p).Get(ctx); return err }
		},
		"Revoke": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { return zr.Revoke(ctx, s, p+"/_c_x-lock-0000000001") }
		},
		"PersistentNode.Start": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error {
				n := zr.NewPersistentNode(s, p, nil)
				defer func() { _ = n.Close(ctx) }()
				if err := n.Start(ctx); err != nil {
					return err
				}
				return n.WaitInPlace(ctx)
			}
		},
		"GroupMember.Start": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error {
				g := zr.NewGroupMember(s, p, "m", nil)
				defer func() { _ = g.Close(ctx) }()
				return g.Start(ctx)
			}
		},
		"Barrier.Wait": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { return zr.NewBarrier(s, p).Wait(ctx) }
		},
		"DoubleBarrier.Enter": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { return zr.NewDoubleBarrier(s, p, 1).Enter(ctx) }
		},
		"SharedValue.Get": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := zr.NewSharedValue(s, p, nil).Get(ctx); return err }
		},
		"Election.Leader": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := zr.NewElection(s, p).Leader(ctx); return err }
		},
		"Semaphore.Available": func(s *zr.Session, p string) func(context.Context) error {
			return func(ctx context.Context) error { _, err := zr.NewSemaphore(s, p, 1).Available(ctx); return err }
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			b := newBystander(t)
			path := testPath(t)
			done := make(chan error, 1)
			go func() { done <- call(b.cl.Session, path+long)(context.Background()) }()
			select {
			case err := <-done:
				require.ErrorIs(t, err, zr.ErrInvalidPath)
				assert.Less(t, len(err.Error()), 1000, "the error quotes a shortened path")
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer after 10s with context.Background(): it must fail at once")
			}
			b.undisturbed(t, path)
		})
	}
}

// TestBadInput_SemaphoreAcquireOfAHugeCountFailsAtOnce: Acquire and
// TryAcquire of 2^30 leases, within a fixed maximum as large or under a
// shared count, fail at once with ErrInvalidArgument (the listing of so
// many lease nodes could never be read back), create nothing, and do not
// take the process down.
func TestBadInput_SemaphoreAcquireOfAHugeCountFailsAtOnce(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	cl := connect(t, c, nil)
	path := testPath(t)
	const huge = 1 << 30
	for name, sem := range map[string]*zr.Semaphore{
		"fixed maximum": zr.NewSemaphore(cl.Session, path+"/fixed", huge),
		"shared count":  zr.NewSemaphore(cl.Session, path+"/shared", huge, zr.WithSharedCount(path+"/count")),
	} {
		assert.ErrorIs(t, bounded(t, name+" Acquire", func(ctx context.Context) error {
			_, err := sem.Acquire(ctx, huge)
			return err
		}), zr.ErrInvalidArgument, name)
		assert.ErrorIs(t, bounded(t, name+" TryAcquire", func(ctx context.Context) error {
			_, err := sem.TryAcquire(ctx, huge)
			return err
		}), zr.ErrInvalidArgument, name)
	}
	assert.Empty(t, leftBehind(t, conn, path))
	ok, _, err := conn.Exists(path)
	require.NoError(t, err)
	assert.False(t, ok, "nothing created")
}

// TestBadInput_SessionTimeoutOutOfRangeIsRefusedAtOnce: go-zookeeper sends
// the session timeout as a 32-bit count of milliseconds; below 1 ms (0) or
// past 2^31-1 ms (negative) it never connects, so Connect must refuse such
// a timeout at once rather than wait for ctx.
func TestBadInput_SessionTimeoutOutOfRangeIsRefusedAtOnce(t *testing.T) {
	c := server(t)
	for _, d := range []time.Duration{time.Nanosecond, 999 * time.Microsecond, 1 << 31 * time.Millisecond, 30 * 24 * time.Hour, 1 << 62} {
		err := bounded(t, d.String(), func(context.Context) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, err := zr.Connect(ctx, c.Servers(), zr.WithSessionTimeout(d))
			if err == nil {
				_ = s.Close()
			}
			return err
		})
		assert.ErrorIs(t, err, zr.ErrInvalidArgument, "%v: refused, not waiting for ctx", d)
	}
	for _, d := range []time.Duration{time.Millisecond, (1<<31 - 1) * time.Millisecond} { // the bounds work
		ctx := ctxT(t, 20*time.Second)
		s, err := zr.Connect(ctx, c.Servers(), zr.WithSessionTimeout(d))
		require.NoError(t, err, "%v", d)
		require.NoError(t, s.Close())
	}
}

// TestBadInput_ConnectRefusesANamespaceACLOrCredentialsTooLargeForAnyRequest:
// a namespace that no node path could fit a request with, an ACL entry or
// digest credentials of 1.1 MB are refused by Connect at once, with a
// typed error, rather than a Session whose every request (or whose
// authentication) the server answers by closing the connection.
func TestBadInput_ConnectRefusesANamespaceACLOrCredentialsTooLargeForAnyRequest(t *testing.T) {
	c := server(t)
	big := strings.Repeat("x", 1100*1024)
	for name, tc := range map[string]struct {
		opt  zr.SessionOption
		want error
	}{
		"namespace":       {zr.WithNamespace(big), zr.ErrInvalidPath},
		"ACL":             {zr.WithACL([]zr.ACL{zr.DigestACL(big, "p", zr.PermAll)}), zr.ErrInvalidArgument},
		"digest user":     {zr.WithDigestAuth(big, "p"), zr.ErrInvalidArgument},
		"digest password": {zr.WithDigestAuth("u", big), zr.ErrInvalidArgument},
	} {
		err := bounded(t, name, func(ctx context.Context) error {
			s, err := zr.Connect(ctx, c.Servers(), tc.opt)
			if err == nil {
				_ = s.Close()
			}
			return err
		})
		assert.ErrorIs(t, err, tc.want, name)
		if err != nil {
			assert.Less(t, len(err.Error()), 1000, "%s: the error quotes a shortened value", name)
		}
	}
}
