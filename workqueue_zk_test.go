package zkrecipes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A take that reaches a name of its listing whose item another consumer
// acked since (a name of an older listing, among many consumers) spends
// one request on it, and leaves no lock: the lock's create and a check of
// the item are one transaction. A name whose item is there is locked as
// before.
func TestZKWorkQueueNameWhoseItemIsGoneCostsOneRequestAndLeavesNoLock(t *testing.T) {
	rec := &opRecorder{}
	ctx, s := zkSession(t, time.Minute, WithObserver(rec))
	path := "/zkt/" + t.Name()
	t.Cleanup(func() {
		_ = s.Delete(context.Background(), path, WithDeleteChildren(true))
		_ = s.Delete(context.Background(), path+"-locks", WithDeleteChildren(true))
	})
	q := NewWorkQueue(s, path)
	require.NoError(t, q.Put(ctx, []byte("one")))
	kids, _, err := s.Children(ctx, path)
	require.NoError(t, err)
	require.Len(t, kids, 1)
	name := kids[0]
	_, err = q.lock(ctx, "queue-9999999999") // no such item; the lock path is made first
	require.ErrorIs(t, err, errItemGone)
	before := len(rec.recorded())

	_, err = q.lock(ctx, "queue-9999999998")
	require.ErrorIs(t, err, errItemGone)
	ops := rec.recorded()[before:]
	require.Len(t, ops, 1, "one request for a name whose item is gone: %q", ops)
	assert.True(t, strings.HasPrefix(ops[0], "multi "), ops[0])
	locks, _, err := s.Children(ctx, path+"-locks")
	require.NoError(t, err)
	assert.Empty(t, locks, "no lock left")

	wi, err := q.lock(ctx, name)
	require.NoError(t, err)
	require.NotNil(t, wi)
	assert.Equal(t, "one", strings.Join(itemStrings(wi), ","))
	locks, _, err = s.Children(ctx, path+"-locks")
	require.NoError(t, err)
	assert.Equal(t, []string{name}, locks)
	require.NoError(t, wi.Ack(ctx))
}

func itemStrings(wi *WorkItem) []string {
	var out []string
	for _, it := range wi.Items() {
		out = append(out, string(it))
	}
	return out
}

func (o *opRecorder) recorded() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.ops...)
}

// A take does not create an item's lock while this Session is still
// deleting an earlier lock of the item in the background (a clean-up whose
// delete was cut off): retried, that delete would remove the new lock,
// and the item would be handed out twice. The robustness suite saw it
// happen (seed 1795955450206845532).
func TestZKWorkQueueTakeWaitsForTheCleanUpOfAnEarlierLockOfItsItem(t *testing.T) {
	d := &requestDropper{}
	// The clean-up retries its delete 1.5 to 4.5 s after it was cut off:
	// time enough for a take that does not wait to make its lock first.
	ctx, s := d.session(t, time.Minute, WithRetryPolicy(ExponentialBackoff(3*time.Second, 3*time.Second)))
	path := "/zkt/take-after-cleanup-" + newUUID()
	t.Cleanup(func() {
		_ = s.Delete(context.Background(), path, WithDeleteChildren(true))
		_ = s.Delete(context.Background(), path+"-locks", WithDeleteChildren(true))
	})
	q := NewWorkQueue(s, path)
	require.NoError(t, q.Put(ctx, []byte("one")))
	require.NoError(t, q.makePath(ctx, q.lockDir))
	kids, _, err := s.Children(ctx, path)
	require.NoError(t, err)
	require.Len(t, kids, 1)

	// An earlier take's clean-up of the item's lock (gone already: its
	// first delete was applied, the reply lost), whose next delete is cut
	// off too.
	d.dropNext(opDelete, 1)
	gen, _ := s.current()
	dials := d.dialled()
	s.deleteEventually(joinPath(q.lockDir, kids[0]), gen.id)
	require.Eventually(t, func() bool { return d.dialled() > dials }, 10*time.Second, time.Millisecond,
		"the clean-up's delete was cut off")
	_, _, err = s.awaitConnected(ctx)
	require.NoError(t, err)

	wi, err := q.Take(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s.deferredMu.Lock()
		defer s.deferredMu.Unlock()
		return len(s.deferred) == 0
	}, 20*time.Second, 10*time.Millisecond, "the clean-up ends")
	locks, _, err := s.Children(ctx, q.lockDir)
	require.NoError(t, err)
	require.Equal(t, []string{kids[0]}, locks, "the take's lock is there: the clean-up ended before the take made it")
	select {
	case <-wi.Done():
		t.Fatalf("the take's hold ended: %v", wi.Err())
	default:
	}
	require.NoError(t, wi.Ack(ctx))
}
