package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

var runtime_Gosched = runtime.Gosched

var mutexRecipe = recipe{
	name: "Mutex",
	make: func(s *zr.Session, path string) locker { return zr.NewMutex(s, path) },
	dir:  func(path string) string { return path },
}

func TestMutexContract(t *testing.T) { runExclusiveContract(t, mutexRecipe) }

func TestMutexContractWithoutFastHandoff(t *testing.T) {
	runExclusiveContract(t, recipe{
		name: "Mutex/relist",
		make: func(s *zr.Session, path string) locker { return zr.NewMutex(s, path, zr.WithFastHandoff(false)) },
		dir:  func(path string) string { return path },
	})
}

func TestMutex_ReentrantPerGoroutineWithHoldCounts(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	m := zr.NewMutex(cl.Session, path)
	var leases []*zr.Lease
	for i := 0; i < 3; i++ {
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		leases = append(leases, l)
	}
	assert.Len(t, children(t, conn, path), 1, "re-entry adds no node")
	assert.Equal(t, leases[0].Path(), leases[2].Path())
	assert.Equal(t, leases[0].Token(), leases[2].Token())

	// Another goroutine of the same process does not get in.
	tried := make(chan error, 1)
	go func() { _, err := m.TryAcquire(ctx); tried <- err }()
	assert.ErrorIs(t, <-tried, zr.ErrLocked)

	require.NoError(t, leases[2].Release(ctx))
	require.NoError(t, leases[1].Release(ctx))
	assert.Len(t, children(t, conn, path), 1, "held until the last release")
	assert.NoError(t, leases[0].Err())
	require.NoError(t, leases[0].Release(ctx))
	assert.Empty(t, children(t, conn, path))
}

func TestMutex_AnotherGoroutineCanReleaseTheLease(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	m := zr.NewMutex(cl.Session, path)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	var rerr error
	go func() { defer wg.Done(); rerr = l.Release(ctx) }()
	wg.Wait()
	require.NoError(t, rerr)
	assert.Empty(t, children(t, conn, path))
	// The acquiring goroutine no longer holds: a new Acquire creates a node.
	l2, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, l.Path(), l2.Path())
	require.NoError(t, l2.Release(ctx))
}

func TestMutex_OtherGoroutinesOfOneProcessWait(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	ctx := ctxT(t, 20*time.Second)
	m := zr.NewMutex(cl.Session, testPath(t))
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := m.TryAcquire(ctx)
		got <- err
	}()
	assert.ErrorIs(t, <-got, zr.ErrLocked, "re-entry is per goroutine, not per Mutex")
	require.NoError(t, l.Release(ctx))
}

// Re-entry is per Mutex value and goroutine, as Curator's is per instance
// and thread: a second Mutex on the same path, on the same Session and in
// the same goroutine, is another contender and waits for the first.
func TestMutex_ASecondMutexOnThePathWaitsEvenInTheHoldingGoroutine(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	first, second := zr.NewMutex(cl.Session, path), zr.NewMutex(cl.Session, path)
	l, err := first.Acquire(ctx)
	require.NoError(t, err)
	_, err = second.TryAcquire(ctx)
	assert.ErrorIs(t, err, zr.ErrLocked)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = second.Acquire(short)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "it waits for the first Mutex's release")
	again, err := first.Acquire(ctx)
	require.NoError(t, err, "the first Mutex re-enters")
	require.NoError(t, again.Release(ctx))
	require.NoError(t, l.Release(ctx))
	l2, err := second.Acquire(ctx)
	require.NoError(t, err, "once the first is released")
	require.NoError(t, l2.Release(ctx))
}

func TestMutex_OneReleaseWakesOneWaiter(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, time.Minute)
	holder, err := zr.NewMutex(connect(t, c, nil).Session, path).Acquire(ctx)
	require.NoError(t, err)
	const waiters = 8
	granted := make(chan *zr.Lease, waiters)
	for i := 0; i < waiters; i++ {
		m := zr.NewMutex(connect(t, c, nil).Session, path)
		go func() {
			l, err := m.Acquire(ctx)
			if err == nil {
				granted <- l
			}
		}()
	}
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == waiters+1 }, 10*time.Second, time.Millisecond)
	// Every waiter watches only its predecessor (its data, and, when other
	// nodes were ahead of it too, its deletion) and its own node's deletion.
	assert.LessOrEqual(t, mntrInt(t, c, "zk_watch_count"), int64(3*(waiters+1)), "no waiter watches more than its predecessor")

	// A release notifies its successor alone (one notification, or two
	// when the successor watches both the data and the deletion of a
	// holder that releases with the mark; see handoff.go), and the releaser's
	// own deletion watch (which reports an operator's delete). The first
	// holder never waited and deletes plainly; the next one waited.
	release := func(l *zr.Lease, wantChanged, wantDeleted int64) *zr.Lease {
		t.Helper()
		deleted := mntrInt(t, c, "zk_sum_node_deleted_watch_count")
		changed := mntrInt(t, c, "zk_sum_node_changed_watch_count")
		require.NoError(t, l.Release(ctx))
		next := <-granted
		select {
		case <-granted:
			t.Fatal("one release granted two waiters")
		default:
		}
		assert.Equal(t, wantChanged, mntrInt(t, c, "zk_sum_node_changed_watch_count")-changed, "data-change notifications")
		assert.Equal(t, wantDeleted, mntrInt(t, c, "zk_sum_node_deleted_watch_count")-deleted, "deletion notifications")
		return next
	}
	l := release(holder, 0, 2)
	l = release(l, 1, 2)
	for i := 2; i < waiters; i++ {
		require.NoError(t, l.Release(ctx))
		l = <-granted
	}
	require.NoError(t, l.Release(ctx))
}

func TestMutex_ParticipantsListHolderThenQueue(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	a, b := connect(t, c, nil), connect(t, c, nil)
	l, err := zr.NewMutex(a.Session, path, zr.WithNodeData([]byte("worker-a"))).Acquire(ctx)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _, _ = zr.NewMutex(b.Session, path, zr.WithNodeData([]byte("worker-b"))).Acquire(wctx) }()
	m := zr.NewMutex(a.Session, path)
	var ps []zr.Participant
	require.Eventually(t, func() bool { ps, err = m.Participants(ctx); return err == nil && len(ps) == 2 }, 10*time.Second, time.Millisecond)
	assert.True(t, ps[0].Holder)
	assert.Equal(t, "worker-a", string(ps[0].Data))
	assert.Equal(t, a.SessionID(), ps[0].SessionID)
	assert.Equal(t, l.Token(), ps[0].Token)
	assert.False(t, ps[1].Holder)
	assert.Equal(t, "worker-b", string(ps[1].Data))
	require.NoError(t, l.Release(ctx))
}

func TestMutex_RecipeConflictIsAnErrorNotAHang(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	_, err := conn.Create(path, nil, 0, worldACL())
	if err != nil {
		require.NoError(t, deleteTree(conn, path))
		_, err = conn.Create(path, nil, 0, worldACL())
	}
	require.NoError(t, err)
	_, err = conn.Create(path+"/leases", nil, 0, worldACL())
	require.NoError(t, err)
	_, err = zr.NewMutex(connect(t, c, nil).Session, path).Acquire(ctx)
	assert.ErrorIs(t, err, zr.ErrRecipeConflict)
	assert.Equal(t, []string{"leases"}, children(t, conn, path), "no node left behind")
}

func TestMutex_CheckMakesAWriteConditionalOnHolding(t *testing.T) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	res := path + "-resource"
	mkdirs(t, conn, "/t") // the parent, when the test runs alone
	_, err := conn.Create(res, []byte("v0"), 0, worldACL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Delete(res, -1) })
	l, err := zr.NewMutex(cl.Session, path).Acquire(ctx)
	require.NoError(t, err)

	_, err = cl.Multi(ctx, l.Check(), zr.SetOp(res, []byte("v1")))
	require.NoError(t, err, "the write goes through while the lock is held")
	require.NoError(t, l.Release(ctx))
	_, err = cl.Multi(ctx, l.Check(), zr.SetOp(res, []byte("v2")))
	require.ErrorIs(t, err, zr.ErrLockLost, "the write is refused once the lock node is gone")
	data, _, err := conn.Get(res)
	require.NoError(t, err)
	assert.Equal(t, "v1", string(data))
}

// Draining a queue costs each waiter one listing of the children, however
// long the queue: a holder's release tells the waiter behind it that it
// was the holder's (see handoff.go), so the waiter needs no second listing.
func TestMutex_QueueDrainListsTheChildrenOncePerWaiter(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, 2*time.Minute)
	var lists, reads, dataReads atomic.Int64
	tracer := zr.TracerFunc(func(ev zr.TraceEvent) {
		switch {
		case ev.Op == "getChildren" && ev.Path == path:
			lists.Add(1)
		case ev.Op == "getData" || ev.Op == "getChildren":
			reads.Add(1)
			if ev.Op == "getData" {
				dataReads.Add(1)
			}
		}
	})
	holder, err := zr.NewMutex(connect(t, c, nil).Session, path).Acquire(ctx)
	require.NoError(t, err)
	const waiters = 30
	done := make(chan error, waiters)
	conn := raw(t, c)
	for i := 0; i < waiters; i++ {
		m := zr.NewMutex(connect(t, c, nil, zr.WithTracer(tracer)).Session, path)
		go func() {
			l, err := m.Acquire(ctx)
			if err == nil {
				err = l.Release(ctx)
			}
			done <- err
		}()
		require.Eventually(t, func() bool { return len(children(t, conn, path)) == i+2 }, 10*time.Second, time.Millisecond)
	}
	require.NoError(t, holder.Release(ctx))
	for i := 0; i < waiters; i++ {
		require.NoError(t, <-done)
	}
	assert.Equal(t, int64(waiters), lists.Load(), "one listing per waiter")
	assert.LessOrEqual(t, reads.Load(), int64(5*waiters), "a bounded number of reads per waiter")
	// Each waiter sets one data watch on the node ahead of it and, told of
	// that node's marked release by its notifications, needs no read to
	// confirm it (a few may, when the deletion's notification is handed
	// over more than markGrace after the data change's on a loaded machine).
	assert.LessOrEqual(t, dataReads.Load(), int64(waiters+waiters/10), "no read to confirm a marked release")
	t.Logf("%d waiters: %d listings, %d reads (%d getData)", waiters, lists.Load(), reads.Load(), dataReads.Load())
}

// Under LoseOnLost a lease held through a dropped connection that came
// back under the same session still ends when the session does: at an
// expiry, and at Close. Its ownership epoch was replaced on the
// reconnect, and nothing told the lease any more.
func TestMutex_LeaseHeldThroughAReconnectEndsWithItsSession(t *testing.T) {
	for _, end := range []string{"expiry", "close"} {
		t.Run(end, func(t *testing.T) {
			c := server(t)
			proxy := zktest.NewProxy(t, c.Servers()[0])
			cl := connect(t, c, []string{proxy.Addr()}, zr.WithLossPolicy(zr.LoseOnLost), zr.WithSessionTimeout(10*time.Second))
			ctx := ctxT(t, time.Minute)
			l, err := zr.NewMutex(cl.Session, testPath(t)).Acquire(ctx)
			require.NoError(t, err)
			st := watchStates(t, cl.Session)
			proxy.ResetAll()
			st.next(t, 10*time.Second, zr.StateSuspended)
			st.next(t, 10*time.Second, zr.StateReconnected)
			require.NoError(t, l.Err(), "LoseOnLost keeps the lease through a reconnect")

			want := zr.ErrClosed
			if end == "expiry" {
				want = zr.ErrSessionExpired
				cl.expire(t)
			} else {
				require.NoError(t, cl.Session.Close())
			}
			select {
			case <-l.Done():
			case <-time.After(15 * time.Second):
				t.Fatalf("the lease did not end with its session (%s)", end)
			}
			assert.ErrorIs(t, l.Err(), want)
		})
	}
}
