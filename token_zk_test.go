package zkrecipes

import (
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A holder granted on a listing in which it was alone takes the parent's
// pzxid as its token (listingToken) when it does not know its czxid: on a
// Session without the wire layer, which lists after the create's reply.
// When the previous owner's node goes between the new node's create and
// that listing, pzxid is the zxid of that delete, above the new node's
// czxid: the token must still sit between the previous owner's and the
// next one's. On the wire layer the token is the czxid, from the create's
// reply.
func TestZKAloneTokenStaysBetweenOwnersWhenTheOwnerAheadGoesBeforeTheListing(t *testing.T) {
	for _, tc := range []struct {
		name string
		wire bool
	}{{"wire layer off: the listing's pzxid", false}, {"wire layer: the create's reply", true}} {
		t.Run(tc.name, func(t *testing.T) { testAloneToken(t, tc.wire) })
	}
}

func testAloneToken(t *testing.T, onWire bool) {
	ctx, first := zkSession(t, 30*time.Second)
	dir := "/zkt/alone-token-" + newUUID()
	l0, err := NewMutex(first, dir).Acquire(ctx)
	require.NoError(t, err)

	// Release the first owner after the second one's create and before
	// its listing: while the listing's frame waits to be written, once
	// the server shows the new node (the create may still be on its way
	// when the listing is about to go).
	raw := zkRaw(t)
	var once sync.Once
	var releaseErr error
	beforeWrite := func(f []byte) {
		if !isListing(f, dir) {
			return
		}
		once.Do(func() {
			awaitChildren(ctx, raw, dir, 2)
			releaseErr = l0.Release(ctx)
		})
	}
	_, second := zkSession(t, 30*time.Second, WithDialer(hookedDialer(beforeWrite, nil)), WithWireLayer(onWire))
	l1, err := NewMutex(second, dir).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, releaseErr)

	_, own, err := raw.Get(l1.Path())
	require.NoError(t, err)
	if onWire {
		assert.Equal(t, own.Czxid, l1.Token(), "the token is the czxid the create's reply gave")
	} else {
		assert.Greater(t, l1.Token(), own.Czxid, "the token is the pzxid of the listing, not the czxid: this test must exercise that case")
	}
	assert.Greater(t, l1.Token(), l0.Token(), "above the previous owner's token")
	require.NoError(t, l1.Release(ctx))

	l2, err := NewMutex(first, dir).Acquire(ctx)
	require.NoError(t, err)
	assert.Greater(t, l2.Token(), l1.Token(), "below the next owner's token")
	require.NoError(t, l2.Release(ctx))
}

// A holder granted alone sets the watch on its node's deletion only after
// selfWatchGrace; a deletion before that must still end the lease.
func TestZKAloneHolderLearnsOfItsNodeDeletedDuringTheGrace(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)

	l, err := NewMutex(s, "/zkt/alone-deleted-"+newUUID()).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, raw.Delete(l.Path(), -1))
	select {
	case <-l.Done():
		assert.ErrorIs(t, l.Err(), ErrNodeDeleted)
		assert.ErrorIs(t, l.Err(), ErrLockLost)
	case <-ctx.Done():
		t.Fatal("the lease did not end after its node was deleted")
	}
}

// Before its monitor starts, a hold learns of a loss of its ownership
// epoch from the epoch's hook, and its grace timer is stopped: one granted
// alone (no watch on its node yet) and one that waited (its watch set).
func TestZKHoldReportsAnEpochLossBeforeItsMonitorStarts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		watch bool
	}{{"granted alone", false}, {"waited", true}} {
		t.Run(tc.name, func(t *testing.T) {
			// With the grace longer than the test, only the hook can end the hold.
			setForTest(t, &selfWatchGrace, time.Hour)
			ctx, s := zkSession(t, 10*time.Second)
			node, err := s.createProtected(ctx, "/zkt/hold-epoch-"+newUUID(), "lock-", nil)
			require.NoError(t, err)
			var selfW <-chan zk.Event
			if tc.watch {
				_, selfW, err = s.watchDeletion(ctx, node.path)
				require.NoError(t, err)
			}

			epoch := newSignal()
			h := newHold(s, node, 1, selfW, epoch, func() {})
			epoch.fire(lost(ErrSuspended))
			select {
			case <-h.sig.done:
				assert.ErrorIs(t, h.sig.err, ErrSuspended)
				assert.ErrorIs(t, h.sig.err, ErrLockLost)
			case <-ctx.Done():
				t.Fatal("the hold did not end when its epoch did")
			}
			if h.late != nil {
				assert.False(t, h.late.Stop(), "the grace timer was stopped by the loss")
			}
			assert.True(t, h.sig.fired())
		})
	}
}

// A holder that waited may hold with or without the watch on its node's
// deletion set (it sets it once it has waited selfWatchGrace): either way
// a deletion of its node ends its lease.
func TestZKWaitedHolderLearnsOfItsNodeDeletedDuringTheGrace(t *testing.T) {
	setForTest(t, &selfWatchGrace, 300*time.Millisecond)
	ctx, first := zkSession(t, 30*time.Second)
	_, second := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	dir := "/zkt/waited-deleted-" + newUUID()

	l0, err := NewMutex(first, dir).Acquire(ctx)
	require.NoError(t, err)
	type acquired struct {
		l   *Lease
		err error
	}
	ac := make(chan acquired, 1)
	go func() {
		l, err := NewMutex(second, dir).Acquire(ctx)
		ac <- acquired{l, err}
	}()
	require.Eventually(t, func() bool {
		kids, _, err := raw.Children(dir)
		return err == nil && len(kids) == 2
	}, 10*time.Second, time.Millisecond, "the second contender queues")
	require.NoError(t, l0.Release(ctx))
	a := <-ac
	require.NoError(t, a.err)
	require.NoError(t, raw.Delete(a.l.Path(), -1))
	select {
	case <-a.l.Done():
		assert.ErrorIs(t, a.l.Err(), ErrNodeDeleted)
		assert.ErrorIs(t, a.l.Err(), ErrLockLost)
	case <-ctx.Done():
		t.Fatal("the lease did not end after its node was deleted")
	}
}
