package zkrecipes

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// barrierReturned reports, without blocking, whether ch has delivered.
func barrierReturned(ch <-chan error) bool { return len(ch) > 0 }

func TestZKBarrierWaitReturnsOnlyOnceRemoved(t *testing.T) {
	ctx, setter := zkSession(t, 30*time.Second)
	_, waiter := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/barrier-" + newUUID() + "/b"

	b := NewBarrier(setter, path)
	require.NoError(t, b.Set(ctx))
	require.NoError(t, b.Set(ctx), "setting a set barrier is no error")
	data, st, err := raw.Get(path)
	require.NoError(t, err)
	assert.Equal(t, localAddress(), string(data), "Curator's default data: the creator's address")
	assert.Zero(t, st.EphemeralOwner, "the barrier node is persistent")
	_, pst, err := raw.Get(parentPath(path))
	require.NoError(t, err)
	assert.Zero(t, pst.EphemeralOwner)

	done := make(chan error, 1)
	go func() { done <- NewBarrier(waiter, path).Wait(ctx) }()
	require.Never(t, func() bool { return barrierReturned(done) }, 300*time.Millisecond, 10*time.Millisecond, "Wait barrierReturned while the barrier is set")

	require.NoError(t, NewBarrier(waiter, path).Remove(ctx))
	require.Eventually(t, func() bool { return barrierReturned(done) }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, <-done)
	require.NoError(t, b.Remove(ctx), "removing a removed barrier is no error")
	require.NoError(t, b.Wait(ctx), "Wait on a barrier not set returns at once")
}

func TestZKBarrierWaitEndsWithItsContextAndSeesDataChangesAsNoRelease(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/barrier-" + newUUID()
	b := NewBarrier(s, path)
	require.NoError(t, b.Set(ctx))
	t.Cleanup(func() { _ = raw.Delete(path, -1) })

	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Wait(wctx) }()
	require.Never(t, func() bool { return barrierReturned(done) }, 200*time.Millisecond, 10*time.Millisecond)
	_, err := raw.Set(path, []byte("x"), -1)
	require.NoError(t, err)
	require.Never(t, func() bool { return barrierReturned(done) }, 200*time.Millisecond, 10*time.Millisecond, "a data change is not a removal")
	cancel()
	require.Eventually(t, func() bool { return barrierReturned(done) }, 5*time.Second, 5*time.Millisecond)
	require.ErrorIs(t, <-done, context.Canceled)
	set, err := b.IsSet(ctx)
	require.NoError(t, err)
	assert.True(t, set)
}

func TestZKDoubleBarrierReleasesEnterOnlyWhenNAreInAndLeaveOnlyWhenAllAreOut(t *testing.T) {
	const n = 3
	ctx, _ := zkSession(t, 60*time.Second)
	raw := zkRaw(t)
	path := "/zkt/dbarrier-" + newUUID()
	members := make([]*DoubleBarrier, n)
	for i := range members {
		_, s := zkSession(t, 60*time.Second)
		members[i] = NewDoubleBarrier(s, path, n)
	}

	// One at a time, so that each arrival wakes the members already waiting:
	// a wake-up is not a full barrier.
	// The channels are made up front: testify's Never may still run a
	// check on its own goroutine after it returned.
	entered := make([]chan error, n)
	for i := range entered {
		entered[i] = make(chan error, 1)
	}
	anyEntered := func() bool {
		for _, ch := range entered {
			if barrierReturned(ch) {
				return true
			}
		}
		return false
	}
	for i := range n - 1 {
		go func() { entered[i] <- members[i].Enter(ctx) }()
		require.Eventually(t, func() bool {
			kids, _, err := raw.Children(path)
			return err == nil && len(kids) == i+1
		}, 10*time.Second, 5*time.Millisecond)
		require.Never(t, anyEntered, 300*time.Millisecond, 10*time.Millisecond, "Enter barrierReturned before n members entered")
	}

	require.NoError(t, members[n-1].Enter(ctx))
	for i := range n - 1 {
		require.Eventually(t, func() bool { return barrierReturned(entered[i]) }, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, <-entered[i])
	}
	kids, _, err := raw.Children(path)
	require.NoError(t, err)
	assert.Len(t, kids, n+1)
	assert.Contains(t, kids, "ready")
	_, st, err := raw.Get(path + "/ready")
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner, "ready is persistent, as Curator makes it")
	require.ErrorIs(t, members[0].Enter(ctx), ErrEntered)

	left := make([]chan error, n)
	for i := range n - 1 {
		left[i] = make(chan error, 1)
		go func() { left[i] <- members[i].Leave(ctx) }()
	}
	require.Never(t, func() bool { return barrierReturned(left[0]) || barrierReturned(left[1]) }, 300*time.Millisecond, 10*time.Millisecond,
		"Leave barrierReturned while a member is still in")
	require.NoError(t, members[n-1].Leave(ctx))
	for i := range n - 1 {
		require.Eventually(t, func() bool { return barrierReturned(left[i]) }, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, <-left[i])
	}
	kids, _, err = raw.Children(path)
	if err != zk.ErrNoNode {
		require.NoError(t, err)
		assert.Empty(t, kids, "no node left behind, ready included")
	}
	require.ErrorIs(t, members[0].Leave(ctx), ErrNotEntered)

	// The members can go round again.
	errs := make(chan error, n)
	for _, m := range members {
		go func() {
			err := m.Enter(ctx)
			if err == nil {
				err = m.Leave(ctx)
			}
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
}

func TestZKDoubleBarrierCancelledEnterLeavesNoNode(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/dbarrier-" + newUUID()
	b := NewDoubleBarrier(s, path, 2)
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Enter(ectx) }()
	require.Eventually(t, func() bool {
		kids, _, err := raw.Children(path)
		return err == nil && len(kids) == 1
	}, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	kids, _, err := raw.Children(path)
	require.NoError(t, err)
	assert.Empty(t, kids)
	require.ErrorIs(t, b.Leave(ctx), ErrNotEntered, "a cancelled Enter has not entered")
}

func TestZKBarrierBadInputIsATypedErrorBeforeAnyCall(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	var nilCtx context.Context // the misuse under test
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"relative path", NewBarrier(s, "b").Set(ctx), ErrInvalidPath},
		{"nil session", NewBarrier(nil, "/b").Wait(ctx), ErrNilSession},
		{"nil option", NewBarrier(s, "/b", nil).Remove(ctx), ErrInvalidArgument},
		{"nil context", NewBarrier(s, "/b").Wait(nilCtx), ErrInvalidArgument},
		{"data too large", NewBarrier(s, "/b", WithBarrierData(make([]byte, 2<<20))).Set(ctx), ErrDataTooLarge},
		{"zero members", NewDoubleBarrier(s, "/d", 0).Enter(ctx), ErrInvalidArgument},
		{"negative members", NewDoubleBarrier(s, "/d", -1).Leave(ctx), ErrInvalidArgument},
		{"double barrier path", NewDoubleBarrier(s, "/d/", 2).Enter(ctx), ErrInvalidPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.err, tc.want)
			assert.Contains(t, fmt.Sprint(tc.err), "zkrecipes: ")
		})
	}
}

func TestZKDoubleBarrierCancelledLeaveDeletesItsNodeAndNoLongerHoldsTheOthers(t *testing.T) {
	ctx, _ := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/dbarrier-" + newUUID()
	var ms []*DoubleBarrier
	for range 3 {
		_, s := zkSession(t, 30*time.Second)
		ms = append(ms, NewDoubleBarrier(s, path, 3))
	}
	errs := make(chan error, 3)
	for _, m := range ms {
		go func() { errs <- m.Enter(ctx) }()
	}
	for range ms {
		require.NoError(t, <-errs)
	}

	// Two leave and wait for the third; one of them gives up.
	lctx, cancel := context.WithCancel(ctx)
	quit := make(chan error, 1)
	go func() { quit <- ms[0].Leave(lctx) }()
	stay := make(chan error, 1)
	go func() { stay <- ms[1].Leave(ctx) }()
	require.Never(t, func() bool { return barrierReturned(quit) || barrierReturned(stay) }, 300*time.Millisecond, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-quit, context.Canceled)
	require.Eventually(t, func() bool {
		kids, _, err := raw.Children(path)
		return err == nil && !slices.Contains(kids, baseName(ms[0].self))
	}, 10*time.Second, 5*time.Millisecond, "the member that gave up deleted its node")
	require.Never(t, func() bool { return barrierReturned(stay) }, 200*time.Millisecond, 10*time.Millisecond, "a member is still in")

	require.NoError(t, ms[2].Leave(ctx))
	require.Eventually(t, func() bool { return barrierReturned(stay) }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, <-stay)
	kids, _, err := raw.Children(path)
	if err != zk.ErrNoNode {
		require.NoError(t, err)
		assert.Empty(t, kids)
	}
	require.ErrorIs(t, ms[0].Leave(ctx), ErrNotEntered, "a cancelled Leave has left")
}

func TestZKBarriersOnAClosedSessionFailWithErrClosed(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	path := "/zkt/barrier-" + newUUID()
	b, d := NewBarrier(s, path), NewDoubleBarrier(s, path+"-d", 2)
	require.NoError(t, s.Close())
	require.ErrorIs(t, b.Set(ctx), ErrClosed)
	require.ErrorIs(t, b.Wait(ctx), ErrClosed)
	require.ErrorIs(t, b.Remove(ctx), ErrClosed)
	require.ErrorIs(t, d.Enter(ctx), ErrClosed)
}

func TestZKDoubleBarrierReadyLeftByDeadMembersLetsTheNextPassAndIsRemovedOnLeave(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/dbarrier-" + newUUID()
	// What members that all died between Enter and Leave leave behind.
	require.NoError(t, s.ensureParents(ctx, path))
	_, err := raw.Create(path+"/ready", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	b := NewDoubleBarrier(s, path, 2)
	require.NoError(t, b.Enter(ctx), "ready is there: Enter passes at once, as Curator's does")
	require.NoError(t, b.Leave(ctx))
	kids, _, err := raw.Children(path)
	if err != zk.ErrNoNode {
		require.NoError(t, err)
		assert.Empty(t, kids, "Leave removed ready")
	}
}
