package recipes_test

import (
	"context"
	"encoding/binary"
	"math/rand"
	"os"
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

var semaphoreMutexRecipe = recipe{
	name:  "SemaphoreMutex",
	make:  func(s *zr.Session, path string) locker { return zr.NewSemaphoreMutex(s, path) },
	dir:   func(path string) string { return path + "/locks" },
	extra: func(path string) []string { return []string{path + "/leases"} },
}

func TestSemaphoreMutexContract(t *testing.T) { runExclusiveContract(t, semaphoreMutexRecipe) }

// semNodes lists the lease and mutex nodes under a semaphore's path.
func semNodes(t *testing.T, conn *zk.Conn, path string) (leases, locks []string) {
	return children(t, conn, path+"/leases"), children(t, conn, path+"/locks")
}

// requireSemaphoreEmpty waits until no lease and no mutex node is left
// under path: once leases are granted, the semaphore's internal mutex is
// released in the background.
func requireSemaphoreEmpty(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	require.Eventually(t, func() bool {
		leases, locks := semNodes(t, conn, path)
		return len(leases) == 0 && len(locks) == 0
	}, 10*time.Second, time.Millisecond, "lease or mutex nodes left under %s", path)
}

func TestSemaphoreMutex_IsNotReentrant(t *testing.T) {
	c := server(t)
	ctx := ctxT(t, 20*time.Second)
	m := zr.NewSemaphoreMutex(connect(t, c, nil).Session, testPath(t))
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	_, err = m.TryAcquire(ctx)
	assert.ErrorIs(t, err, zr.ErrLocked, "the holding goroutine does not re-enter")
	// The lease is the capability: another goroutine releases it.
	done := make(chan error, 1)
	go func() { done <- l.Release(ctx) }()
	require.NoError(t, <-done)
	l2, err := m.TryAcquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l2.Release(ctx))
}

func TestSemaphore_AcquireNIsAllOrNothing(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	a := zr.NewSemaphore(connect(t, c, nil).Session, path, 3)
	b := zr.NewSemaphore(connect(t, c, nil).Session, path, 3)

	_, err := a.Acquire(ctx, 4)
	assert.ErrorIs(t, err, zr.ErrInvalidArgument, "more than the maximum can never be granted")
	_, err = a.Acquire(ctx, 0)
	assert.ErrorIs(t, err, zr.ErrInvalidArgument)

	held, err := a.Acquire(ctx, 2)
	require.NoError(t, err)
	require.Len(t, held, 2)
	assert.NotEqual(t, held[0].Path(), held[1].Path(), "one node per lease")
	assert.NotEqual(t, held[0].Token(), held[1].Token())

	_, err = b.TryAcquire(ctx, 2)
	assert.ErrorIs(t, err, zr.ErrLocked)
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = b.Acquire(dctx, 2)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool {
		leases, locks := semNodes(t, conn, path)
		return len(leases) == 2 && len(locks) == 0
	}, 10*time.Second, time.Millisecond, "the failed acquisitions rolled back every node")

	one, err := b.Acquire(ctx, 1)
	require.NoError(t, err, "the one free lease")
	require.Len(t, one, 1)

	// Returning one lease lets a waiter for two in once a second is back.
	res := make(chan []*zr.Lease, 1)
	go func() {
		ls, err := b.Acquire(ctx, 2)
		if err != nil {
			close(res)
			return
		}
		res <- ls
	}()
	require.NoError(t, held[0].Release(ctx))
	select {
	case <-res:
		t.Fatal("granted two leases while only one was free")
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, held[1].Release(ctx))
	two, ok := <-res
	require.True(t, ok)
	require.Len(t, two, 2)
	for _, l := range append(two, one...) {
		require.NoError(t, l.Release(ctx))
	}
	requireSemaphoreEmpty(t, conn, path)
}

// The semaphore is never above its maximum with 16 contenders while
// sessions are expired along the way, and no lease node is left behind.
func TestSemaphore_NeverAboveMaxWithSessionsKilled(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	const maxLeases, contenders = 3, 16
	ctx := ctxT(t, 2*time.Minute)

	type contender struct {
		cl     *client
		mu     sync.Mutex
		inside bool
		kills  int // bumped by the killer: a grant begun before a kill is void

		killedID int64 // the killer's own: the last session id it expired
	}
	var global, peak, acquired, lostCount atomic.Int64
	var overflow atomic.Int64
	cs := make([]*contender, contenders)
	for i := range cs {
		cs[i] = &contender{cl: connect(t, c, nil, zr.WithRetryPolicy(zr.RetryForever(20*time.Millisecond)))}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for _, ct := range cs {
		sem := zr.NewSemaphore(ct.cl.Session, path, maxLeases)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ct.mu.Lock()
				kills := ct.kills
				ct.mu.Unlock()
				actx, cancel := context.WithTimeout(ctx, 20*time.Second)
				ls, err := sem.Acquire(actx, 1)
				cancel()
				if err != nil {
					select {
					case <-stop:
						return
					default:
					}
					if ctx.Err() == nil && actx.Err() == nil {
						errs <- err
						return
					}
					continue
				}
				l := ls[0]
				ct.mu.Lock()
				valid := ct.kills == kills && l.Err() == nil
				if valid {
					ct.inside = true
					n := global.Add(1)
					if n > maxLeases {
						overflow.Add(1)
					}
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
				}
				ct.mu.Unlock()
				if valid {
					acquired.Add(1)
					select {
					case <-l.Done():
						lostCount.Add(1)
					case <-time.After(time.Duration(2+rand.Intn(8)) * time.Millisecond):
					}
				}
				ct.mu.Lock()
				if ct.inside {
					ct.inside = false
					global.Add(-1)
				}
				ct.mu.Unlock()
				_ = l.Release(ctx)
			}
		}()
	}
	// Expire a random contender's session every so often; from that moment
	// the server no longer counts its lease, so neither does the test.
	kills := 0
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		ct := cs[rand.Intn(contenders)]
		// Only a session that is back after its last kill can be killed.
		if st := ct.cl.State(); (st != zr.StateConnected && st != zr.StateReconnected) || ct.cl.SessionID() == ct.killedID {
			time.Sleep(10 * time.Millisecond) // poll for another candidate
			continue
		}
		ct.killedID = ct.cl.SessionID()
		ct.mu.Lock()
		ct.kills++
		if ct.inside {
			ct.inside = false
			global.Add(-1)
		}
		ct.mu.Unlock()
		ct.cl.expire(t)
		kills++
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(400 * time.Millisecond):
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d acquisitions, %d sessions expired, %d leases lost while held, peak %d of %d", acquired.Load(), kills, lostCount.Load(), peak.Load(), maxLeases)
	assert.Zero(t, overflow.Load(), "more than %d holders at once", maxLeases)
	assert.LessOrEqual(t, peak.Load(), int64(maxLeases))
	assert.Equal(t, int64(maxLeases), peak.Load(), "the semaphore was used to its maximum")
	assert.Greater(t, acquired.Load(), int64(contenders))
	require.Eventually(t, func() bool {
		leases, locks := semNodes(t, conn, path)
		return len(leases) == 0 && len(locks) == 0
	}, 20*time.Second, 10*time.Millisecond, "no lease or mutex node leaked")
}

// CURATOR-462: a cancelled waiter leaves no lease node.
func TestSemaphore_CancelWhileWaitingLeavesNoLease(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	h, err := zr.NewSemaphore(connect(t, c, nil).Session, path, 1).Acquire(ctx, 1)
	require.NoError(t, err)
	w := zr.NewSemaphore(connect(t, c, nil).Session, path, 1)
	for i := 0; i < 5; i++ {
		cctx, cancel := context.WithCancel(ctx)
		res := make(chan error, 1)
		go func() { _, err := w.Acquire(cctx, 1); res <- err }()
		require.Eventually(t, func() bool { l, _ := semNodes(t, conn, path); return len(l) == 2 }, 10*time.Second, time.Millisecond)
		cancel()
		assert.ErrorIs(t, <-res, context.Canceled)
		leases, locks := semNodes(t, conn, path)
		assert.Len(t, leases, 1, "the cancelled lease node is gone when Acquire returns")
		assert.Empty(t, locks)
	}
	require.NoError(t, h[0].Release(ctx))
}

// CURATOR-315 / CURATOR-335: a connection reset or a session expiry while
// waiting leaves no orphan, and the waiter gets exactly what it asked for.
func TestSemaphore_ReconnectOrExpiryWhileWaitingLeavesNoOrphan(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, time.Minute)
	holder, err := zr.NewSemaphore(connect(t, c, nil).Session, path, 1).Acquire(ctx, 1)
	require.NoError(t, err)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	w := connect(t, c, []string{proxy.Addr()}, zr.WithRetryPolicy(zr.RetryForever(20*time.Millisecond)))
	res := make(chan []*zr.Lease, 1)
	go func() {
		ls, err := zr.NewSemaphore(w.Session, path, 1).Acquire(ctx, 1)
		if err != nil {
			close(res)
			return
		}
		res <- ls
	}()
	waiting := func() bool { l, _ := semNodes(t, conn, path); return len(l) == 2 }
	require.Eventually(t, waiting, 10*time.Second, time.Millisecond)
	for i := 0; i < 3; i++ {
		proxy.ResetAll() // the connection drops; the session lives
		require.Eventually(t, func() bool { return w.State() == zr.StateReconnected && waiting() }, 20*time.Second, 5*time.Millisecond)
	}
	old := w.SessionID()
	w.expire(t)
	require.Eventually(t, func() bool {
		return w.SessionID() != old && waiting() && ownedBy(t, conn, path+"/leases", w.SessionID()) == 1
	}, 30*time.Second, 5*time.Millisecond)
	require.NoError(t, holder[0].Release(ctx))
	ls, ok := <-res
	require.True(t, ok, "the waiter failed")
	require.Len(t, ls, 1, "exactly the leases asked for")
	leases, _ := semNodes(t, conn, path)
	assert.Len(t, leases, 1, "no orphan lease node")
	require.Eventually(t, func() bool { _, locks := semNodes(t, conn, path); return len(locks) == 0 }, 10*time.Second, time.Millisecond,
		"the internal mutex is released (in the background once the lease is granted)")
	require.NoError(t, ls[0].Release(ctx))
}

// CURATOR-595: a holder that lost its lease while its session survived on
// the server (the server restarted and kept the session) deletes the lease
// node, so other clients are not locked out.
func TestSemaphore_LeaseLostAcrossServerRestartIsReturned(t *testing.T) {
	cluster := zktest.Start(t)
	if cluster.Backend() == zktest.BackendServers {
		msg := "kills and restarts the server, which ZK_SERVERS cannot; the java and docker backends run it"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	conn := raw(t, cluster)
	path := testPath(t)
	ctx := ctxT(t, 2*time.Minute)
	h := connect(t, cluster, nil, zr.WithSessionTimeout(4*time.Second))
	ls, err := zr.NewSemaphore(h.Session, path, 1).Acquire(ctx, 1)
	require.NoError(t, err)
	st := watchStates(t, h.Session)
	require.NoError(t, cluster.Kill(0))
	select {
	case <-ls[0].Done():
	case <-time.After(15 * time.Second):
		t.Fatal("holder not told")
	}
	st.next(t, 20*time.Second, zr.StateLost) // presumed expired on the client
	require.NoError(t, cluster.Restart(0))
	require.NoError(t, cluster.WaitServing(ctx, 0))
	st.next(t, 30*time.Second, zr.StateReconnected)
	other := connect(t, cluster, nil)
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := zr.NewSemaphore(other.Session, path, 1).Acquire(actx, 1)
	require.NoError(t, err, "the lost lease was returned")
	require.NoError(t, got[0].Release(ctx))
	_ = conn
}

func TestSemaphore_SharedCountChangesTheMaximumAtRuntime(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	countPath := path + "-count"
	ctx := ctxT(t, 30*time.Second)
	mk := func() *zr.Semaphore {
		return zr.NewSemaphore(connect(t, c, nil).Session, path, 1, zr.WithSharedCount(countPath))
	}
	a, b := mk(), mk()
	l1, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	data, _, err := conn.Get(countPath)
	require.NoError(t, err, "the count node is seeded")
	assert.Equal(t, []byte{0, 0, 0, 1}, data, "Curator SharedCount format: 4-byte big-endian")
	_, err = b.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, zr.ErrLocked)

	res := make(chan []*zr.Lease, 1)
	go func() {
		ls, err := b.Acquire(ctx, 2)
		if err != nil {
			close(res)
			return
		}
		res <- ls
	}()
	require.Eventually(t, func() bool { l, _ := semNodes(t, conn, path); return len(l) == 3 }, 10*time.Second, time.Millisecond)
	_, err = conn.Set(countPath, binary.BigEndian.AppendUint32(nil, 3), -1)
	require.NoError(t, err)
	ls, ok := <-res
	require.True(t, ok, "raising the count admits the waiter")
	require.Len(t, ls, 2)

	_, err = conn.Set(countPath, []byte("bad"), -1)
	require.NoError(t, err)
	_, err = a.Acquire(ctx, 1)
	assert.ErrorIs(t, err, zr.ErrBadCount)
	for _, l := range append(ls, l1...) {
		require.NoError(t, l.Release(ctx))
	}
	requireSemaphoreEmpty(t, conn, path)
}

func TestSemaphore_RecipeConflictIsAnErrorNotAHang(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	m, err := zr.NewMutex(connect(t, c, nil).Session, path).Acquire(ctx)
	require.NoError(t, err)
	_, err = zr.NewSemaphore(connect(t, c, nil).Session, path, 2).Acquire(ctx, 1)
	assert.ErrorIs(t, err, zr.ErrRecipeConflict)
	require.Eventually(t, func() bool { l, _ := semNodes(t, conn, path); return len(l) == 0 }, 5*time.Second, time.Millisecond,
		"no lease node left behind")
	// And the mutex, when it looks again, sees the semaphore's nodes.
	require.NoError(t, m.Release(ctx))
	_, err = zr.NewMutex(connect(t, c, nil).Session, path).Acquire(ctx)
	assert.ErrorIs(t, err, zr.ErrRecipeConflict)
}

func TestSemaphore_BadArguments(t *testing.T) {
	c := server(t)
	s := connect(t, c, nil).Session
	ctx := ctxT(t, 10*time.Second)
	_, err := zr.NewSemaphore(s, "/x", 0).Acquire(ctx, 1)
	assert.ErrorIs(t, err, zr.ErrInvalidArgument)
	_, err = zr.NewSemaphore(s, "x", 1).Acquire(ctx, 1)
	assert.ErrorIs(t, err, zr.ErrInvalidPath)
	_, err = zr.NewSemaphore(nil, "/x", 1).Acquire(ctx, 1)
	assert.ErrorIs(t, err, zr.ErrNilSession)
	_, err = zr.NewSemaphore(s, "/x", 1, zr.WithSharedCount("")).Acquire(ctx, 1)
	assert.ErrorIs(t, err, zr.ErrInvalidArgument)
	_, err = zr.NewSemaphore(s, "/x", 1, nil).Acquire(ctx, 1)
	assert.ErrorIs(t, err, zr.ErrInvalidArgument)
}
