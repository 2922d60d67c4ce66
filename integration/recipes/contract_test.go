package recipes_test

import (
	"context"
	"fmt"
	"strconv"
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

// locker is what every exclusive recipe offers; the contract below runs
// over each of them.
type locker interface {
	Acquire(ctx context.Context) (*zr.Lease, error)
	TryAcquire(ctx context.Context) (*zr.Lease, error)
}

// recipe builds a locker on a session and path; dir is the path under
// which the recipe's contenders queue, extra (optional) lists the other
// paths where it creates nodes (a semaphore's leases, a MultiLock's later
// members): together they are where leftovers are looked for.
type recipe struct {
	name  string
	make  func(s *zr.Session, path string) locker
	dir   func(path string) string
	extra func(path string) []string
}

// nodes lists every node the recipe has on the server under path.
func (r recipe) nodes(t *testing.T, conn *zk.Conn, path string) []string {
	dirs := []string{r.dir(path)}
	if r.extra != nil {
		dirs = append(dirs, r.extra(path)...)
	}
	var out []string
	for _, d := range dirs {
		for _, k := range children(t, conn, d) {
			out = append(out, d+"/"+k)
		}
	}
	return out
}

// contenders counts the ZooKeeper sessions that own a node of the recipe
// under path: holders and waiters, when each has a session of its own (a
// semaphore waiter owns a mutex node and a lease node).
func (r recipe) contenders(t *testing.T, conn *zk.Conn, path string) int {
	owners := map[int64]bool{}
	for _, n := range r.nodes(t, conn, path) {
		if _, st, err := conn.Get(n); err == nil {
			owners[st.EphemeralOwner] = true
		}
	}
	return len(owners)
}

// runExclusiveContract runs the contract every exclusive lock recipe
// honours.
func runExclusiveContract(t *testing.T, r recipe) {
	if wireOff() {
		// The run without the wire layer (scripts/test.sh) runs the recipes'
		// contracts side by side to keep CI short.
		t.Parallel()
	}
	t.Run("AcquireAndRelease", func(t *testing.T) { contractAcquireRelease(t, r) })
	t.Run("MutualExclusionAcrossSessionsAndGoroutines", func(t *testing.T) { contractExclusion(t, r) })
	t.Run("FIFOOrder", func(t *testing.T) { contractFIFO(t, r) })
	t.Run("TryAcquireReturnsErrLockedAndLeavesNoNode", func(t *testing.T) { contractTry(t, r) })
	t.Run("CancelAndDeadlineLeaveNoNode", func(t *testing.T) { contractCancel(t, r) })
	t.Run("SessionExpiredWhileWaitingAcquiresOnNewSession", func(t *testing.T) { contractExpireWaiting(t, r) })
	t.Run("SessionExpiredWhileHoldingClosesDone", func(t *testing.T) { contractExpireHolding(t, r) })
	t.Run("NodeDeletedByOperatorClosesDone", func(t *testing.T) { contractOperatorDelete(t, r) })
	t.Run("SuspendedClosesDoneUnderDefaultPolicy", func(t *testing.T) { contractSuspended(t, r) })
	t.Run("ReleaseDuringConnectionLossDeletesNodeAfterReconnect", func(t *testing.T) { contractReleaseWhileDown(t, r) })
	t.Run("FencingTokensIncreaseAcrossHoldersAndParentRecreation", func(t *testing.T) { contractFencing(t, r) })
}

func contractAcquireRelease(t *testing.T, r recipe) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	l, err := r.make(cl.Session, path).Acquire(ctx)
	require.NoError(t, err)
	assert.NoError(t, l.Err())
	assert.Positive(t, l.Token())
	select {
	case <-l.Done():
		t.Fatal("Done closed while held")
	default:
	}
	_, st, err := conn.Get(zkPath(cl.Session, l.Path()))
	require.NoError(t, err, "the lease's node exists on the server")
	assert.Equal(t, cl.SessionID(), st.EphemeralOwner)
	assert.Equal(t, st.Czxid, l.Token(), "the token is the node's czxid")

	require.NoError(t, l.Release(ctx))
	<-l.Done()
	assert.ErrorIs(t, l.Err(), zr.ErrReleased)
	assert.ErrorIs(t, l.Release(ctx), zr.ErrReleased, "a second release says so")
	assert.Empty(t, r.nodes(t, conn, path), "release deletes the node")
}

func contractExclusion(t *testing.T, r recipe) {
	c := server(t)
	const sessions, goroutines, rounds = 4, 3, 15
	path := testPath(t)
	var inside, overlaps, total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, sessions*goroutines)
	ctx := ctxT(t, 2*time.Minute)
	for i := 0; i < sessions; i++ {
		cl := connect(t, c, nil)
		for g := 0; g < goroutines; g++ {
			lk := r.make(cl.Session, path)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < rounds; j++ {
					l, err := lk.Acquire(ctx)
					if err != nil {
						errs <- err
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					total.Add(1)
					runtime_Gosched()
					inside.Add(-1)
					if err := l.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(sessions*goroutines*rounds), total.Load())
	assert.Zero(t, overlaps.Load(), "two holders at once")
	assert.Empty(t, r.nodes(t, raw(t, c), path))
}

func contractFIFO(t *testing.T, r recipe) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	// The waiters share ctx: it covers their queueing, up to 30 s each, and
	// the hand-overs after it.
	ctx := ctxT(t, 4*time.Minute)
	holder, err := r.make(connect(t, c, nil).Session, path).Acquire(ctx)
	require.NoError(t, err)

	const n = 5
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		lk := r.make(connect(t, c, nil).Session, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := lk.Acquire(ctx)
			if err != nil {
				order <- -1
				return
			}
			order <- i
			_ = l.Release(ctx)
		}()
		// Queue them one at a time: wait until this waiter's node is there
		// (a new Session and its first requests: seconds on a busy machine).
		require.Eventually(t, func() bool { return r.contenders(t, conn, path) == i+2 }, 30*time.Second, 10*time.Millisecond)
	}
	require.NoError(t, holder.Release(ctx))
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4}, got, "acquired in queue order")
}

func contractTry(t *testing.T, r recipe) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	a, b := connect(t, c, nil), connect(t, c, nil)
	l, err := r.make(a.Session, path).TryAcquire(ctx)
	require.NoError(t, err, "free: TryAcquire takes it")
	_, err = r.make(b.Session, path).TryAcquire(ctx)
	require.ErrorIs(t, err, zr.ErrLocked)
	require.Eventually(t, func() bool { return r.contenders(t, conn, path) == 1 }, 5*time.Second, time.Millisecond,
		"the failed try leaves no node")
	require.NoError(t, l.Release(ctx))
}

func contractCancel(t *testing.T, r recipe) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	holder, err := r.make(connect(t, c, nil).Session, path).Acquire(ctx)
	require.NoError(t, err)
	w := connect(t, c, nil)

	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = r.make(w.Session, path).Acquire(dctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	cctx, cancel2 := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { _, err := r.make(w.Session, path).Acquire(cctx); res <- err }()
	require.Eventually(t, func() bool { return r.contenders(t, conn, path) == 2 }, 10*time.Second, time.Millisecond)
	cancel2()
	assert.ErrorIs(t, <-res, context.Canceled)
	require.Eventually(t, func() bool { return r.contenders(t, conn, path) == 1 }, 10*time.Second, time.Millisecond,
		"cancelled and timed-out waiters leave no node")
	require.NoError(t, holder.Release(ctx))
}

func contractExpireWaiting(t *testing.T, r recipe) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, time.Minute)
	holder, err := r.make(connect(t, c, nil).Session, path).Acquire(ctx)
	require.NoError(t, err)
	w := connect(t, c, nil, zr.WithRetryPolicy(zr.RetryForever(20*time.Millisecond)))
	oldID := w.SessionID()
	res := make(chan *zr.Lease, 1)
	errc := make(chan error, 1)
	go func() {
		l, err := r.make(w.Session, path).Acquire(ctx)
		errc <- err
		res <- l
	}()
	require.Eventually(t, func() bool { return r.contenders(t, conn, path) == 2 }, 10*time.Second, time.Millisecond)
	w.expire(t)
	// The waiter starts over on its new session and queues again.
	require.Eventually(t, func() bool {
		return w.SessionID() != oldID && ownedBy(t, conn, r.dir(path), w.SessionID()) == 1
	}, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, holder.Release(ctx))
	require.NoError(t, <-errc)
	l := <-res
	_, st, err := conn.Get(zkPath(w.Session, l.Path()))
	require.NoError(t, err)
	assert.Equal(t, w.SessionID(), st.EphemeralOwner, "held under the new session")
	require.NoError(t, l.Release(ctx))
}

// ownedBy counts the nodes under dir owned by session id.
func ownedBy(t *testing.T, conn *zk.Conn, dir string, id int64) int {
	n := 0
	for _, k := range children(t, conn, dir) {
		_, st, err := conn.Get(dir + "/" + k)
		if err == nil && st.EphemeralOwner == id {
			n++
		}
	}
	return n
}

func contractExpireHolding(t *testing.T, r recipe) {
	c := server(t)
	// Under the default policy the holder is told at SUSPENDED, before the
	// expiry: LoseOnLost shows the expiry itself is reported.
	cl := connect(t, c, nil, zr.WithLossPolicy(zr.LoseOnLost))
	ctx := ctxT(t, 30*time.Second)
	l, err := r.make(cl.Session, testPath(t)).Acquire(ctx)
	require.NoError(t, err)
	cl.expire(t)
	select {
	case <-l.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("holder not told of the expiry")
	}
	assert.ErrorIs(t, l.Err(), zr.ErrLockLost)
	assert.ErrorIs(t, l.Err(), zr.ErrSessionExpired)
	assert.ErrorIs(t, l.Release(ctx), zr.ErrLockLost, "release after loss reports the loss")
}

func contractOperatorDelete(t *testing.T, r recipe) {
	c := server(t)
	cl := connect(t, c, nil)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	l, err := r.make(cl.Session, path).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, conn.Delete(zkPath(cl.Session, l.Path()), -1))
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("holder not told its node was deleted")
	}
	assert.ErrorIs(t, l.Err(), zr.ErrNodeDeleted)
	// Someone else can take it now.
	l2, err := r.make(connect(t, c, nil).Session, path).TryAcquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l2.Release(ctx))
}

func contractSuspended(t *testing.T, r recipe) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()})
	ctx := ctxT(t, 30*time.Second)
	l, err := r.make(cl.Session, testPath(t)).Acquire(ctx)
	require.NoError(t, err)
	proxy.Blackhole()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("holder not told of the suspended connection")
	}
	assert.ErrorIs(t, l.Err(), zr.ErrSuspended)
	proxy.Heal()
	// The node of the lost lease is cleaned up once the connection is back.
	conn := raw(t, c)
	require.Eventually(t, func() bool { return len(r.nodes(t, conn, testPath(t))) == 0 }, 20*time.Second, 10*time.Millisecond)
}

func contractReleaseWhileDown(t *testing.T, r recipe) {
	c := server(t)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithLossPolicy(zr.LoseOnLost), zr.WithSessionTimeout(8*time.Second))
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	l, err := r.make(cl.Session, path).Acquire(ctx)
	require.NoError(t, err)
	st := watchStates(t, cl.Session)
	proxy.Blackhole()
	st.next(t, 10*time.Second, zr.StateSuspended)
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = l.Release(rctx)
	assert.ErrorIs(t, err, zr.ErrReleaseDeferred)
	assert.ErrorIs(t, l.Err(), zr.ErrReleased, "released locally at once")
	assert.Equal(t, 1, r.contenders(t, conn, path), "still on the server while cut off")
	proxy.Heal()
	require.Eventually(t, func() bool { return len(r.nodes(t, conn, path)) == 0 }, 20*time.Second, 10*time.Millisecond,
		"deleted once the connection is back")
}

func contractFencing(t *testing.T, r recipe) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	a, b := connect(t, c, nil), connect(t, c, nil)
	var last int64
	for round := 0; round < 3; round++ {
		for _, cl := range []*client{a, b, a} {
			l, err := r.make(cl.Session, path).Acquire(ctx)
			require.NoError(t, err)
			assert.Greater(t, l.Token(), last, "tokens strictly increase")
			last = l.Token()
			require.NoError(t, l.Release(ctx))
		}
		// The container parent is reaped once empty (deleting it does the
		// same at once): sequence numbers start over, tokens must not.
		dir := zkPath(a.Session, path)
		require.NoError(t, deleteTree(conn, dir))
	}
}

// deleteTree deletes dir and everything under it.
func deleteTree(conn *zk.Conn, dir string) error {
	kids, _, err := conn.Children(dir)
	if err == zk.ErrNoNode {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := deleteTree(conn, dir+"/"+k); err != nil {
			return err
		}
	}
	if err := conn.Delete(dir, -1); err != nil && err != zk.ErrNoNode {
		return err
	}
	return nil
}

// zkPath maps a namespace-relative path to the server path.
func zkPath(s *zr.Session, p string) string { return s.Namespace() + p }

func mntrInt(t *testing.T, c *zktest.Cluster, key string) int64 {
	t.Helper()
	m, err := c.Mntr(0)
	require.NoError(t, err)
	v, err := strconv.ParseFloat(m[key], 64)
	require.NoError(t, err, fmt.Sprintf("%s=%q", key, m[key]))
	return int64(v)
}
