package zkrecipes

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A lock's first listing travels right behind its create: the create's
// reply is held back until the listing has been written, which would
// leave an acquisition that waits for that reply waiting in vain.
func TestZKLockListsTheChildrenWithoutWaitingForItsCreateReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock func(s *Session, dir string) acquirer
	}{
		{"Mutex", func(s *Session, dir string) acquirer { return NewMutex(s, dir) }},
		{"RWMutex write", func(s *Session, dir string) acquirer { return NewRWMutex(s, dir).WriteLock() }},
		{"RWMutex read", func(s *Session, dir string) acquirer { return NewRWMutex(s, dir).ReadLock() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := "/zkt/pipelined-" + newUUID()
			var gated, waitedInVain atomic.Bool
			listed := make(chan struct{})
			var once sync.Once
			beforeWrite := func(f []byte) {
				if gated.Load() && isListing(f, dir) {
					once.Do(func() { close(listed) })
				}
			}
			afterRead := holdReplies(gated.Load, listed, &waitedInVain)
			ctx, s := zkSession(t, 30*time.Second, WithDialer(hookedDialer(beforeWrite, afterRead)))
			lock := tc.lock(s, dir)
			l, err := lock.Acquire(ctx) // the first one also makes the parents
			require.NoError(t, err)
			require.NoError(t, l.Release(ctx))

			gated.Store(true)
			l, err = lock.Acquire(ctx)
			gated.Store(false)
			require.NoError(t, err)
			assert.False(t, waitedInVain.Load(), "a reply was held back for 5 s: the listing was not sent before the create's reply came")
			kids, _, err := zkRaw(t).Children(dir)
			require.NoError(t, err)
			assert.Equal(t, []string{baseName(l.Path())}, kids)
			require.NoError(t, l.Release(ctx))
		})
	}
}

// A semaphore acquiring several leases sends all their creates at once:
// the replies are held back from the first lease create's write on, which
// would leave creates made one after another waiting in vain.
func TestZKSemaphoreSendsTheCreatesOfItsLeasesTogether(t *testing.T) {
	const n = 3
	path := "/zkt/sem-together-" + newUUID()
	leases := path + "/" + semLeases + "/"
	var gated, waitedInVain atomic.Bool
	var mu sync.Mutex
	creates := 0
	firstSent, allSent := make(chan struct{}), make(chan struct{})
	beforeWrite := func(p []byte) {
		if !gated.Load() {
			return
		}
		for _, op := range frameOps(p) { // a write may carry gathered frames
			if strings.HasPrefix(op, "create "+leases) {
				mu.Lock()
				if creates++; creates == 1 {
					close(firstSent)
				}
				if creates == n {
					close(allSent)
				}
				mu.Unlock()
			}
		}
	}
	afterRead := holdReplies(func() bool {
		select {
		case <-firstSent:
			return gated.Load() && !waitedInVain.Load()
		default:
			return false
		}
	}, allSent, &waitedInVain)
	ctx, s := zkSession(t, 30*time.Second, WithDialer(hookedDialer(beforeWrite, afterRead)))
	sem := NewSemaphore(s, path, n)
	warm, err := sem.Acquire(ctx, 1) // the first one also makes the parents
	require.NoError(t, err)
	require.NoError(t, warm[0].Release(ctx))

	gated.Store(true)
	got, err := sem.Acquire(ctx, n)
	gated.Store(false)
	require.NoError(t, err)
	assert.False(t, waitedInVain.Load(), "a reply was held back for 5 s: a lease's create waited for another's reply")
	require.Len(t, got, n)
	raw := zkRaw(t)
	kids, _, err := raw.Children(strings.TrimSuffix(leases, "/"))
	require.NoError(t, err)
	assert.Len(t, kids, n)
	for i, l := range got {
		_, st, err := raw.Get(l.Path())
		require.NoError(t, err)
		assert.Equal(t, st.Czxid, l.Token(), "a lease's token is its node's czxid")
		if i > 0 {
			assert.Greater(t, l.Token(), got[i-1].Token(), "leases come oldest first")
		}
	}
	for _, l := range got {
		require.NoError(t, l.Release(ctx))
	}
}

// Uncontended, a lock costs its create, the listing and its delete, and
// nothing else: its node, alone in the listing, is not read.
func TestZKUncontendedLockCostsCreateListingAndDelete(t *testing.T) {
	setForTest(t, &selfWatchGrace, time.Hour) // no late watch, however slow the machine
	for _, tc := range []struct {
		name string
		lock func(s *Session, dir string) acquirer
	}{
		{"Mutex", func(s *Session, dir string) acquirer { return NewMutex(s, dir) }},
		{"RWMutex write", func(s *Session, dir string) acquirer { return NewRWMutex(s, dir).WriteLock() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := "/zkt/uncontended-" + newUUID()
			var ops opLog
			ctx, s := zkSession(t, 30*time.Second, WithTracer(ops.tracer(false)))
			lock := tc.lock(s, dir)
			l, err := lock.Acquire(ctx) // the first one also makes the parents
			require.NoError(t, err)
			require.NoError(t, l.Release(ctx))

			ops.take()
			l, err = lock.Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, l.Release(ctx))
			got := ops.take()
			assert.ElementsMatch(t, []string{"create", "getChildren", "delete"}, got) // traced as the replies come
			assert.Equal(t, "delete", got[len(got)-1])
		})
	}
}

// Leases created together are all removed when the acquisition ends
// before the grant, whichever of their creates the cancel caught in flight.
func TestZKSemaphoreCancelledWhileCreatingLeasesLeavesNoNode(t *testing.T) {
	path := "/zkt/sem-cancelled-" + newUUID()
	ctx, s := zkSession(t, 60*time.Second)
	sem := NewSemaphore(s, path, 5)
	warm, err := sem.Acquire(ctx, 1) // the first one also makes the parents
	require.NoError(t, err)
	require.NoError(t, warm[0].Release(ctx))
	cancelled := 0
	for i := range 60 {
		// From before the creates leave to after the grant, in 50 µs steps.
		actx, cancel := context.WithTimeout(ctx, time.Duration(i)*50*time.Microsecond)
		got, err := sem.Acquire(actx, 3)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			cancelled++
			continue
		}
		for _, l := range got {
			require.NoError(t, l.Release(ctx))
		}
	}
	t.Logf("%d of 60 acquisitions cancelled", cancelled)
	assert.Positive(t, cancelled, "no acquisition was cancelled: the test cannot have caught a create in flight")
	raw := zkRaw(t)
	require.Eventually(t, func() bool {
		kids, _, err := raw.Children(path + "/" + semLeases)
		return err == nil && len(kids) == 0
	}, 10*time.Second, 10*time.Millisecond, "every lease node of a cancelled acquisition is removed")
}
