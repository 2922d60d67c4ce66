package zkrecipes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awaitLease waits for a lease acquired on another goroutine.
func awaitLease(t *testing.T, ch <-chan *Lease, errs <-chan error, d time.Duration) *Lease {
	t.Helper()
	select {
	case l := <-ch:
		return l
	case err := <-errs:
		t.Fatalf("acquire failed: %v", err)
	case <-time.After(d):
		t.Fatal("never acquired")
	}
	return nil
}

func acquireAsync(ctx context.Context, acquire func(context.Context) (*Lease, error)) (<-chan *Lease, <-chan error) {
	ch, errs := make(chan *Lease, 1), make(chan error, 1)
	go func() {
		l, err := acquire(ctx)
		if err != nil {
			errs <- err
			return
		}
		ch <- l
	}()
	return ch, errs
}

func TestZKLeaseTimeEndsTheLeaseDeletesItsNodeAndTheNextTokenIsHigher(t *testing.T) {
	ctx, a := zkSession(t, 30*time.Second)
	_, b := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	dir := "/zkt/leasetime-" + newUUID()

	const leaseTime = 300 * time.Millisecond
	start := time.Now()
	l, err := NewMutex(a, dir, WithLeaseTime(leaseTime)).Acquire(ctx)
	require.NoError(t, err)
	ch, errs := acquireAsync(ctx, NewMutex(b, dir).Acquire)

	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease outlived its lease time")
	}
	assert.GreaterOrEqual(t, time.Since(start), leaseTime)
	assert.ErrorIs(t, l.Err(), ErrLeaseExpired)
	assert.ErrorIs(t, l.Err(), ErrLockLost, "existing loss handling sees an expiry as a loss")
	next := awaitLease(t, ch, errs, 10*time.Second)
	assert.Greater(t, next.Token(), l.Token(), "the next holder's token is higher")
	_, _, err = raw.Get(l.Path())
	assert.ErrorIs(t, err, zk.ErrNoNode, "the expired holder's node is deleted")
	assert.ErrorIs(t, l.Release(ctx), ErrLeaseExpired, "a release after the expiry reports it")
	require.NoError(t, next.Release(ctx))
}

func TestZKLeaseTimeIsSharedByAReentrantHoldersLeases(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	const leaseTime, into = time.Second, 600 * time.Millisecond
	m := NewMutex(s, "/zkt/leasetime-reentrant-"+newUUID(), WithLeaseTime(leaseTime))
	first, err := m.Acquire(ctx)
	require.NoError(t, err)
	granted := time.Now()
	time.Sleep(into) // let the lease time run, then reenter
	second, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, first.Path(), second.Path())
	<-second.Done()
	// Restarted at the reentry, it would end at least leaseTime+into
	// after the grant.
	assert.Less(t, time.Since(granted), leaseTime+into-50*time.Millisecond,
		"the reentrant lease did not restart the lease time")
	assert.ErrorIs(t, second.Err(), ErrLeaseExpired)
	assert.ErrorIs(t, first.Err(), ErrLeaseExpired)
}

func TestZKReleaseStopsTheLeaseTimer(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	l, err := NewMutex(s, "/zkt/leasetime-release-"+newUUID(), WithLeaseTime(time.Minute)).Acquire(ctx)
	require.NoError(t, err)
	require.NotNil(t, l.h.expiry)
	require.NoError(t, l.Release(ctx))
	assert.False(t, l.h.expiry.Stop(), "Release stopped the lease timer")
	assert.ErrorIs(t, l.Err(), ErrReleased)
}

func TestZKCloseStopsTheLeaseTimer(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	l, err := NewMutex(s, "/zkt/leasetime-close-"+newUUID(), WithLeaseTime(time.Minute)).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	<-l.Done()
	assert.ErrorIs(t, l.Err(), ErrClosed)
	assert.False(t, l.h.expiry.Stop(), "Close stopped the lease timer")
}

func TestZKLeaseTimeEndsSemaphoreAndReadWriteLeases(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	base := "/zkt/leasetime-kinds-" + newUUID()
	lt := WithLeaseTime(200 * time.Millisecond)
	acquire := map[string]func(context.Context) (*Lease, error){
		"SemaphoreMutex": NewSemaphoreMutex(s, base+"/semmutex", lt).Acquire,
		"Semaphore": func(ctx context.Context) (*Lease, error) {
			return first(NewSemaphore(s, base+"/sem", 2, lt).Acquire(ctx, 1))
		},
		"WriteLock": NewRWMutex(s, base+"/rw", lt).WriteLock().Acquire,
		"ReadLock":  NewRWMutex(s, base+"/rw2", lt).ReadLock().Acquire,
	}
	for name, acq := range acquire {
		l, err := acq(ctx)
		require.NoError(t, err, name)
		select {
		case <-l.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the lease outlived its lease time", name)
		}
		assert.ErrorIs(t, l.Err(), ErrLeaseExpired, name)
		again, err := acq(ctx)
		require.NoError(t, err, "%s: free again after the expiry", name)
		assert.Greater(t, again.Token(), l.Token(), "%s: the next lease's token is higher", name)
		require.NoError(t, again.Release(ctx), name)
	}
}

func TestZKLeaseTimeNotPositiveIsInvalidAndLeavesNoNode(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	dir := "/zkt/leasetime-bad-" + newUUID()
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := NewMutex(s, dir, WithLeaseTime(d)).Acquire(ctx)
		require.ErrorIs(t, err, ErrInvalidArgument)
		_, err = NewSemaphoreMutex(s, dir, WithLeaseTime(d)).Acquire(ctx)
		require.ErrorIs(t, err, ErrInvalidArgument)
		assert.True(t, errors.Is(err, ErrInvalidArgument) && len(err.Error()) > len("zkrecipes: "))
	}
	ok, _, err := raw.Exists(dir)
	require.NoError(t, err)
	assert.False(t, ok, "nothing created")
}

// A downgraded read lease continues its write lease's ownership, and so
// ends at the write lease's time, not a full lease time after the
// downgrade.
func TestZKDowngradedReadLeaseEndsAtTheWriteLeasesTime(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	const leaseTime = time.Second
	rw := NewRWMutex(s, "/zkt/leasetime-downgrade-"+newUUID(), WithLeaseTime(leaseTime))
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	granted := time.Now()
	// The subject is the lease's time: downgrade well into it.
	time.Sleep(600 * time.Millisecond)
	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx))
	select {
	case <-r.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the downgraded lease did not end")
	}
	assert.ErrorIs(t, r.Err(), ErrLeaseExpired)
	assert.Less(t, time.Since(granted), leaseTime+400*time.Millisecond,
		"the downgraded lease ran a new lease time from the downgrade")
}
