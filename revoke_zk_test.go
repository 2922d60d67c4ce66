package zkrecipes

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestZKRevocableHolderHearsRevokeAndKeepsTheLockUntilItReleases(t *testing.T) {
	ctx, a := zkSession(t, 30*time.Second)
	_, b := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	dir := "/zkt/revoke-" + newUUID()

	l, err := NewMutex(a, dir, WithRevocable(true)).Acquire(ctx)
	require.NoError(t, err)
	data, _, err := raw.Get(l.Path())
	require.NoError(t, err)
	assert.Empty(t, data, "a revocable node holds no data, as Curator's")

	waiter := NewMutex(b, dir)
	ps, err := waiter.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.NoError(t, Revoke(ctx, b, dir+"/"+ps[0].Node))
	select {
	case <-l.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("the revocable holder never heard the request")
	}
	require.NoError(t, l.Err(), "a request does not end the lease")
	_, err = waiter.TryAcquire(ctx)
	require.ErrorIs(t, err, ErrLocked, "the holder keeps the lock until it releases")
	require.NoError(t, l.Release(ctx))
	next, err := waiter.TryAcquire(ctx)
	require.NoError(t, err)
	require.NoError(t, next.Release(ctx))
}

func TestZKHolderThatDidNotOptInIsNotDisturbedByRevoke(t *testing.T) {
	ctx, a := zkSession(t, 30*time.Second)
	_, b := zkSession(t, 30*time.Second)
	dir := "/zkt/revoke-plain-" + newUUID()

	l, err := NewMutex(a, dir).Acquire(ctx)
	require.NoError(t, err)
	assert.Nil(t, l.Revoked())
	ch, errs := acquireAsync(ctx, NewMutex(b, dir).Acquire)
	require.Eventually(t, func() bool {
		ps, err := NewMutex(b, dir).Participants(ctx)
		return err == nil && len(ps) == 2
	}, 10*time.Second, 5*time.Millisecond, "the waiter queues")
	require.NoError(t, Revoke(ctx, b, l.Path()))
	require.Never(t, func() bool { return len(ch) > 0 || len(errs) > 0 || l.Err() != nil },
		300*time.Millisecond, 10*time.Millisecond, "a revoke write neither ends the lease nor lets the waiter in")
	require.NoError(t, l.Release(ctx))
	next := awaitLease(t, ch, errs, 10*time.Second)
	require.NoError(t, next.Release(ctx))
}

// Revoke refuses a waiting contender; a request another tool (Curator's
// Revoker) writes into a waiting node is seen once the contender holds.
func TestZKRevokeRefusesAWaiterAndARequestWrittenWhileWaitingIsSeenOnceGranted(t *testing.T) {
	ctx, a := zkSession(t, 30*time.Second)
	_, b := zkSession(t, 30*time.Second)
	dir := "/zkt/revoke-waiting-" + newUUID()

	held, err := NewMutex(a, dir).Acquire(ctx)
	require.NoError(t, err)
	ch, errs := acquireAsync(ctx, NewMutex(b, dir, WithRevocable(true)).Acquire)
	var waiting Participant
	require.Eventually(t, func() bool {
		ps, err := NewMutex(a, dir).Participants(ctx)
		if err != nil || len(ps) != 2 {
			return false
		}
		waiting = ps[1]
		return true
	}, 10*time.Second, 5*time.Millisecond, "the revocable contender queues")
	require.ErrorIs(t, Revoke(ctx, a, dir+"/"+waiting.Node), ErrNotHolder)
	_, err = zkRaw(t).Set(dir+"/"+waiting.Node, revokeMessage, -1) // as Curator's Revoker does
	require.NoError(t, err)
	require.NoError(t, held.Release(ctx))
	l := awaitLease(t, ch, errs, 10*time.Second)
	select {
	case <-l.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("a request made while waiting was not seen once granted")
	}
	require.NoError(t, l.Release(ctx))
}

func TestZKRevokeBadInput(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	require.NoError(t, Revoke(ctx, s, "/zkt/revoke-none-"+newUUID()+"/_c_"+newUUID()+"-lock-0000000001"), "a lock node already gone is not an error")
	require.ErrorIs(t, Revoke(ctx, s, "/zkt/revoke-none-"+newUUID()+"/gone"), ErrInvalidArgument, "a name no lock node has")
	require.ErrorIs(t, Revoke(ctx, s, "no-slash"), ErrInvalidPath)
	var nilCtx context.Context
	require.ErrorIs(t, Revoke(nilCtx, s, "/zkt/x"), ErrInvalidArgument)
	require.ErrorIs(t, Revoke(ctx, nil, "/zkt/x"), ErrNilSession)
	_, err := NewMutex(s, "/zkt/revoke-bad-"+newUUID(), WithRevocable(true), WithNodeData([]byte("__REVOKE__"))).Acquire(ctx)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestZKRevocationReachesEveryLockKind(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	base := "/zkt/revoke-kinds-" + newUUID()
	acquire := map[string]func(context.Context) (*Lease, error){
		"WriteLock":      NewRWMutex(s, base+"/rw", WithRevocable(true)).WriteLock().Acquire,
		"ReadLock":       NewRWMutex(s, base+"/rw2", WithRevocable(true)).ReadLock().Acquire,
		"SemaphoreMutex": NewSemaphoreMutex(s, base+"/semmutex", WithRevocable(true)).Acquire,
	}
	for name, acq := range acquire {
		l, err := acq(ctx)
		require.NoError(t, err, name)
		require.NoError(t, Revoke(ctx, s, l.Path()), name)
		select {
		case <-l.Revoked():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the revocable holder never heard the request", name)
		}
		require.NoError(t, l.Release(ctx), name)
	}
}

func TestZKReleaseEndsTheRevocationWatch(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	l, err := NewMutex(s, "/zkt/revoke-release-"+newUUID(), WithRevocable(true)).Acquire(ctx)
	require.NoError(t, err)
	watching := func() bool {
		buf := make([]byte, 1<<20)
		return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "awaitRevoke")
	}
	require.Eventually(t, watching, 10*time.Second, 5*time.Millisecond, "a revocable holder watches its node")
	require.NoError(t, l.Release(ctx))
	require.Eventually(t, func() bool { return !watching() }, 10*time.Second, 5*time.Millisecond,
		"the watch ends with the hold")
}
