package zkrecipes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testLease() *Lease { return &Lease{h: &hold{sig: newSignal()}} }

func hooks(l *Lease) int {
	sig := l.sig()
	sig.mu.Lock()
	defer sig.mu.Unlock()
	return len(sig.hooks)
}

func TestLeaseContext_EndsWithTheLossAsItsCause(t *testing.T) {
	l := testLease()
	ctx, cancel := l.Context(context.Background())
	defer cancel()
	require.NoError(t, ctx.Err(), "held: the context is live")

	l.h.sig.fire(lost(ErrNodeDeleted))
	<-ctx.Done()
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	cause := context.Cause(ctx)
	assert.ErrorIs(t, cause, ErrLockLost)
	assert.ErrorIs(t, cause, ErrNodeDeleted)
	assert.Eventually(t, func() bool { return hooks(l) == 0 }, time.Second, time.Millisecond)
}

func TestLeaseContext_EndsWithErrReleasedOnRelease(t *testing.T) {
	l := testLease()
	ctx, cancel := l.Context(context.Background())
	defer cancel()
	l.h.sig.fire(ErrReleased)
	<-ctx.Done()
	assert.ErrorIs(t, context.Cause(ctx), ErrReleased)
}

func TestLeaseContext_OfAnEndedLeaseIsDoneAtOnce(t *testing.T) {
	l := testLease()
	l.h.sig.fire(lost(ErrSuspended))
	ctx, cancel := l.Context(context.Background())
	defer cancel()
	select {
	case <-ctx.Done():
	default:
		t.Fatal("the context of an ended lease is not done")
	}
	assert.ErrorIs(t, context.Cause(ctx), ErrSuspended)
}

func TestLeaseContext_EndsWithItsParentAndKeepsTheParentsCause(t *testing.T) {
	l := testLease()
	why := errors.New("shutting down")
	parent, stop := context.WithCancelCause(context.Background())
	ctx, cancel := l.Context(parent)
	defer cancel()
	stop(why)
	<-ctx.Done()
	assert.ErrorIs(t, context.Cause(ctx), why)
	assert.NoError(t, l.Err(), "the lease outlives its context")
	assert.Eventually(t, func() bool { return hooks(l) == 0 }, time.Second, time.Millisecond, "no hook left on the lease")
}

func TestLeaseContext_CancelLeavesTheLeaseAndUnhooks(t *testing.T) {
	l := testLease()
	ctx, cancel := l.Context(context.Background())
	cancel()
	<-ctx.Done()
	assert.ErrorIs(t, context.Cause(ctx), context.Canceled)
	assert.Eventually(t, func() bool { return hooks(l) == 0 }, time.Second, time.Millisecond)
	l.h.sig.fire(lost(ErrNodeDeleted)) // a late loss changes nothing
	assert.ErrorIs(t, context.Cause(ctx), context.Canceled)
}

// A real lease: its context ends, with the loss as its cause, when another
// client deletes the lock's node; another ends with ErrReleased on Release.
func TestZKLeaseContextEndsWhenTheLeaseEnds(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	dir := "/zkt/lease-context-" + newUUID()
	m := NewMutex(s, dir)

	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	work, stop := l.Context(ctx)
	defer stop()
	require.NoError(t, zkRaw(t).Delete(l.Path(), -1))
	select {
	case <-work.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease's context did not end when its node was deleted")
	}
	assert.ErrorIs(t, context.Cause(work), ErrLockLost)
	assert.ErrorIs(t, context.Cause(work), ErrNodeDeleted)

	l, err = m.Acquire(ctx)
	require.NoError(t, err)
	work, stop = l.Context(ctx)
	defer stop()
	require.NoError(t, l.Release(ctx))
	<-work.Done()
	assert.ErrorIs(t, context.Cause(work), ErrReleased)
}
