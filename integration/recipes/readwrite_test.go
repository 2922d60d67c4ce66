package recipes_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

var writeLockRecipe = recipe{
	name: "RWMutex/write",
	make: func(s *zr.Session, path string) locker { return zr.NewRWMutex(s, path).WriteLock() },
	dir:  func(path string) string { return path },
}

func TestWriteLockContract(t *testing.T) { runExclusiveContract(t, writeLockRecipe) }

// ReadLock on its own honours the parts of the contract that do not need
// exclusion.
func TestReadLock_AcquireReleaseAndFencing(t *testing.T) {
	r := recipe{
		name: "RWMutex/read",
		make: func(s *zr.Session, path string) locker { return zr.NewRWMutex(s, path).ReadLock() },
		dir:  func(path string) string { return path },
	}
	t.Run("AcquireAndRelease", func(t *testing.T) { contractAcquireRelease(t, r) })
	t.Run("SessionExpiredWhileHoldingClosesDone", func(t *testing.T) { contractExpireHolding(t, r) })
	t.Run("NodeDeletedByOperatorClosesDone", func(t *testing.T) { contractOperatorDelete(t, r) })
	t.Run("SuspendedClosesDoneUnderDefaultPolicy", func(t *testing.T) { contractSuspended(t, r) })
	t.Run("FencingTokensIncreaseAcrossHoldersAndParentRecreation", func(t *testing.T) { contractFencing(t, r) })
}

func TestReadWrite_ReadersHoldTogether(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	const readers = 6
	got := make(chan *zr.Lease, readers)
	errs := make(chan error, readers)
	for i := 0; i < readers; i++ {
		rl := zr.NewRWMutex(connect(t, c, nil).Session, path).ReadLock()
		go func() {
			l, err := rl.Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			got <- l
		}()
	}
	var leases []*zr.Lease
	for len(leases) < readers {
		select {
		case l := <-got:
			leases = append(leases, l)
		case err := <-errs:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("only %d of %d readers got in", len(leases), readers)
		}
	}
	// Every reader holds at once: none has been released, none lost.
	for _, l := range leases {
		assert.NoError(t, l.Err())
	}
	assert.Len(t, children(t, conn, path), readers)
	_, err := zr.NewRWMutex(connect(t, c, nil).Session, path).WriteLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, zr.ErrLocked, "a writer stays out while readers hold")
	for _, l := range leases {
		require.NoError(t, l.Release(ctx))
	}
}

// A reader waits only for writers ahead of it: behind a holding reader it
// gets in at once; behind a waiting writer it waits for that writer.
func TestReadWrite_ReadersWaitOnlyForWritersAhead(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	r1, err := zr.NewRWMutex(connect(t, c, nil).Session, path).ReadLock().Acquire(ctx)
	require.NoError(t, err)
	r2, err := zr.NewRWMutex(connect(t, c, nil).Session, path).ReadLock().TryAcquire(ctx)
	require.NoError(t, err, "a reader behind a reader holds at once")

	var mu sync.Mutex
	var order []string
	mark := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	w := zr.NewRWMutex(connect(t, c, nil).Session, path).WriteLock()
	wdone := make(chan error, 1)
	go func() {
		l, err := w.Acquire(ctx)
		if err == nil {
			mark("writer")
			err = l.Release(ctx)
		}
		wdone <- err
	}()
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 3 }, 10*time.Second, time.Millisecond)
	r3 := zr.NewRWMutex(connect(t, c, nil).Session, path).ReadLock()
	_, err = r3.TryAcquire(ctx)
	assert.ErrorIs(t, err, zr.ErrLocked, "a reader behind a waiting writer waits")
	rdone := make(chan error, 1)
	go func() {
		l, err := r3.Acquire(ctx)
		if err == nil {
			mark("late reader")
			err = l.Release(ctx)
		}
		rdone <- err
	}()
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 4 }, 10*time.Second, time.Millisecond)
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))
	require.NoError(t, <-wdone)
	require.NoError(t, <-rdone)
	assert.Equal(t, []string{"writer", "late reader"}, order)
}

func TestReadWrite_ReentrantOnBothSides(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	rw := zr.NewRWMutex(connect(t, c, nil).Session, path)
	w1, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	w2, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, w1.Path(), w2.Path())
	assert.Len(t, children(t, conn, path), 1)
	require.NoError(t, w2.Release(ctx))
	require.NoError(t, w1.Release(ctx))
	assert.Empty(t, children(t, conn, path))

	r1, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	r2, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, r1.Path(), r2.Path())
	assert.Len(t, children(t, conn, path), 1)
	require.NoError(t, r1.Release(ctx))
	assert.NoError(t, r2.Err(), "held until the last release")
	require.NoError(t, r2.Release(ctx))
	assert.Empty(t, children(t, conn, path))
}

// Curator waits forever here; the upgrade is refused at once.
func TestReadWrite_UpgradeFailsAtOnce(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	rw := zr.NewRWMutex(connect(t, c, nil).Session, path)
	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	_, err = rw.WriteLock().Acquire(ctx)
	assert.ErrorIs(t, err, zr.ErrUpgrade, "refused, not waiting for ctx")
	assert.Len(t, children(t, conn, path), 1, "no write node was created")
	// Another goroutine is another owner: it waits like any writer.
	res := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := rw.WriteLock().Acquire(wctx)
		res <- err
	}()
	assert.ErrorIs(t, <-res, context.DeadlineExceeded)
	require.NoError(t, r.Release(ctx))
}

// CURATOR-276: write → read downgrade must not let a waiting writer in.
func TestReadWrite_DowngradeKeepsAWaitingWriterOut(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	cl := connect(t, c, nil)
	rw := zr.NewRWMutex(cl.Session, path)
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)

	granted := make(chan time.Time, 1)
	other := zr.NewRWMutex(connect(t, c, nil).Session, path).WriteLock()
	go func() {
		l, err := other.Acquire(ctx)
		if err != nil {
			close(granted)
			return
		}
		granted <- time.Now()
		_ = l.Release(ctx)
	}()
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 2 }, 10*time.Second, time.Millisecond)

	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err, "the write holder takes the read lock at once")
	wSeq := w.Path()[len(w.Path())-10:]
	assert.True(t, strings.HasSuffix(r.Path(), "-__READ__"+wSeq), "read node %s carries the writer's sequence %s", r.Path(), wSeq)
	require.NoError(t, w.Release(ctx))
	require.Eventually(t, func() bool { ok, _, err := conn.Exists(zkPath(cl.Session, w.Path())); return err == nil && !ok },
		10*time.Second, time.Millisecond, "the write node is gone")
	// The waiting writer has been woken by the write node's deletion; it
	// must go on waiting for the downgraded reader. A third writer cannot
	// get in either.
	_, err = zr.NewRWMutex(connect(t, c, nil).Session, path).WriteLock().TryAcquire(ctx)
	assert.ErrorIs(t, err, zr.ErrLocked)
	select {
	case <-granted:
		t.Fatal("a waiting writer got in while the downgraded read lock is held")
	case <-time.After(time.Second):
	}
	released := time.Now()
	require.NoError(t, r.Release(ctx))
	at, ok := <-granted
	require.True(t, ok, "the waiting writer failed")
	assert.True(t, at.After(released), "writer granted only after the read release")
}

func TestReadWrite_RecipeConflictIsAnErrorNotAHang(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 20*time.Second)
	a, b := connect(t, c, nil), connect(t, c, nil)
	m, err := zr.NewMutex(a.Session, path).Acquire(ctx)
	require.NoError(t, err)
	_, err = zr.NewRWMutex(b.Session, path).WriteLock().Acquire(ctx)
	assert.ErrorIs(t, err, zr.ErrRecipeConflict)
	_, err = zr.NewRWMutex(b.Session, path).ReadLock().Acquire(ctx)
	assert.ErrorIs(t, err, zr.ErrRecipeConflict)
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 1 }, 5*time.Second, time.Millisecond, "no node left behind")
	require.NoError(t, m.Release(ctx))
}

func TestReadWrite_ParticipantsMarkTheReadersAheadOfTheFirstWriterAsHolders(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, 30*time.Second)
	a, b := connect(t, c, nil), connect(t, c, nil)
	r1, err := zr.NewRWMutex(a.Session, path, zr.WithNodeData([]byte("reader-1"))).ReadLock().Acquire(ctx)
	require.NoError(t, err)
	r2, err := zr.NewRWMutex(b.Session, path, zr.WithNodeData([]byte("reader-2"))).ReadLock().Acquire(ctx)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = zr.NewRWMutex(connect(t, c, nil).Session, path, zr.WithNodeData([]byte("writer"))).WriteLock().Acquire(wctx)
	}()
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 3 }, 10*time.Second, time.Millisecond)
	go func() {
		_, _ = zr.NewRWMutex(connect(t, c, nil).Session, path, zr.WithNodeData([]byte("late reader"))).ReadLock().Acquire(wctx)
	}()
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 4 }, 10*time.Second, time.Millisecond)

	ps, err := zr.NewRWMutex(a.Session, path).Participants(ctx)
	require.NoError(t, err)
	var got []string
	for _, p := range ps {
		got = append(got, fmt.Sprintf("%s:%v", p.Data, p.Holder))
	}
	assert.Equal(t, []string{"reader-1:true", "reader-2:true", "writer:false", "late reader:false"}, got)
	assert.Equal(t, r1.Token(), ps[0].Token)
	assert.Equal(t, a.SessionID(), ps[0].SessionID)

	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))
	require.Eventually(t, func() bool {
		ps, err = zr.NewRWMutex(a.Session, path).Participants(ctx)
		return err == nil && len(ps) == 2 && ps[0].Holder
	}, 10*time.Second, time.Millisecond, "the writer holds once the readers are gone")
	assert.Equal(t, "writer", string(ps[0].Data))
	assert.False(t, ps[1].Holder, "the late reader waits behind the writer")
}
