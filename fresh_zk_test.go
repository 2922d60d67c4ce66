package zkrecipes

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queued is the outcome of an Acquire run in the background; the test
// goroutine checks it (an assertion from the background goroutine could
// come after the test ended).
type queued struct {
	l   *Lease
	err error
}

// queueBehind starts an Acquire of a Mutex on dir in the background and
// waits until the server shows its node, the n-th child of dir. It returns
// that node's path and the channel the outcome arrives on.
func queueBehind(t *testing.T, s *Session, dir string, n int) (string, <-chan queued) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	got := make(chan queued, 1)
	go func() {
		l, err := NewMutex(s, dir).Acquire(ctx)
		got <- queued{l, err}
	}()
	raw := zkRaw(t)
	var kids []string
	require.Eventually(t, func() bool {
		var err error
		kids, _, err = raw.Children(dir)
		return err == nil && len(kids) == n
	}, 10*time.Second, time.Millisecond, "contender %d queues", n)
	return dir + "/" + sortNodes(kids, mutexMarkers)[n-1].name, got
}

// holdAndQueue makes a first Session hold a Mutex on dir and a second one
// queue behind it. It returns the holder's context and lease, the
// waiter's node and the channel its lease arrives on.
func holdAndQueue(t *testing.T, dir string) (context.Context, *Lease, string, <-chan queued) {
	t.Helper()
	ctx, first := zkSession(t, 30*time.Second)
	l0, err := NewMutex(first, dir).Acquire(ctx)
	require.NoError(t, err)
	_, second := zkSession(t, 30*time.Second)
	waiting, got := queueBehind(t, second, dir, 2)
	return ctx, l0, waiting, got
}

// passDown releases held, then each waiter's lease in turn as it arrives,
// except the last, which it returns held with the others.
func passDown(t *testing.T, ctx context.Context, held *Lease, waiters ...<-chan queued) []*Lease {
	t.Helper()
	leases := []*Lease{held}
	for _, w := range waiters {
		require.NoError(t, leases[len(leases)-1].Release(ctx))
		q := <-w
		require.NoError(t, q.err)
		require.NotNil(t, q.l)
		leases = append(leases, q.l)
	}
	return leases
}

// awaitChildren polls until dir has n children, dir cannot be listed, or
// ctx ends: for hooks that must not fail the test from the connection's
// goroutine.
func awaitChildren(ctx context.Context, raw *zk.Conn, dir string, n int) {
	for {
		kids, _, err := raw.Children(dir)
		if err != nil || len(kids) == n || ctx.Err() != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// A waiter whose listing came right behind its create, with no child
// created in between, takes its fencing token from that listing: behind
// another waiter, its acquisition and release cost five requests (create,
// listing, the two watches on the node ahead, the marked release), not
// six. Its own node is not read.
func TestZKWaiterWithAFreshListingDoesNotReadItsOwnNode(t *testing.T) {
	setForTest(t, &selfWatchGrace, time.Hour) // no late watch, however slow the machine
	dir := "/zkt/fresh-" + newUUID()
	ctx, l0, ahead, secondGot := holdAndQueue(t, dir)

	var log opLog
	_, third := zkSession(t, 30*time.Second, WithTracer(log.tracer(true)))
	own, thirdGot := queueBehind(t, third, dir, 3)
	// Its watches must be on the node ahead before that node goes: set
	// later, they would find it gone, and the waiter would list again.
	require.Eventually(t, func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return slices.Contains(log.ops, "getData "+ahead) && slices.Contains(log.ops, "getChildren "+ahead)
	}, 10*time.Second, time.Millisecond, "the third contender watches the second")

	leases := passDown(t, ctx, l0, secondGot, thirdGot)
	require.NoError(t, leases[2].Release(ctx))

	ops := log.take()
	assert.ElementsMatch(t, []string{
		"create " + dir + "/" + protectedPrefix, // the name is the server's
		"getChildren " + dir,
		"getData " + leases[1].Path(),
		"getChildren " + leases[1].Path(),
		"multi " + own,
	}, prefixOps(ops, dir+"/"+protectedPrefix))
	assert.NotContains(t, ops, "getChildren "+own, "its own node is not read")
}

// prefixOps cuts every path that starts with prefix and names a create
// back to prefix, so that a create can be matched without the name the
// server gave it.
func prefixOps(ops []string, prefix string) []string {
	out := slices.Clone(ops)
	for i, op := range out {
		if strings.HasPrefix(op, "create "+prefix) {
			out[i] = "create " + prefix
		}
	}
	return out
}

// A waiter that took its token from its listing has no watch on its own
// node at first. Once it has waited its session's timeout (shortened
// here), it sets one, so a deletion of its node while it waits (an
// operator's, say) makes it queue again, as a waiter that read its node
// does, instead of holding a lock without a node when the node ahead goes.
func TestZKWaiterWithAFreshListingLearnsOfItsNodeDeletedWhileItWaits(t *testing.T) {
	setForTest(t, &waiterReadAfter, 20*time.Millisecond)
	dir := "/zkt/fresh-deleted-" + newUUID()
	ctx, l0, waiting, secondGot := holdAndQueue(t, dir)

	raw := zkRaw(t)
	require.NoError(t, raw.Delete(waiting, -1))
	var again string
	require.Eventually(t, func() bool {
		kids, _, err := raw.Children(dir)
		if err != nil || len(kids) != 2 {
			return false
		}
		again = dir + "/" + sortNodes(kids, mutexMarkers)[1].name
		return again != waiting
	}, 10*time.Second, time.Millisecond, "the waiter queues again while the lock is still held")

	require.NoError(t, l0.Release(ctx))
	q := <-secondGot
	require.NoError(t, q.err)
	l1 := q.l
	require.NotNil(t, l1)
	assert.Equal(t, again, l1.Path(), "it holds with the node it queued again with")
	require.NoError(t, l1.Release(ctx))
}

// A reader that joins other readers holds at once. With its listing right
// behind its create and no child created in between, it takes its token
// from that listing: create ‖ getChildren, then delete, two round trips,
// where reading its own node before the grant made three.
func TestZKReaderJoiningReadersHoldsWithoutReadingItsOwnNode(t *testing.T) {
	setForTest(t, &selfWatchGrace, time.Hour) // no late watch, however slow the machine
	dir := "/zkt/fresh-readers-" + newUUID()
	ctx, first := zkSession(t, 30*time.Second)
	r0, err := NewRWMutex(first, dir).ReadLock().Acquire(ctx)
	require.NoError(t, err)

	var log opLog
	_, second := zkSession(t, 30*time.Second, WithTracer(log.tracer(false)))
	r1, err := NewRWMutex(second, dir).ReadLock().Acquire(ctx)
	require.NoError(t, err)
	_, st, err := zkRaw(t).Get(r1.Path())
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, r1.Token(), "nothing was deleted between its create and its listing")
	assert.Greater(t, r1.Token(), r0.Token())
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r0.Release(ctx))

	ops := log.take()
	assert.ElementsMatch(t, []string{"create", "getChildren", "delete"}, ops) // traced as the replies come
	assert.Equal(t, "delete", ops[len(ops)-1])
}

// A semaphore lease is created with the leases listed right behind it.
// Under the semaphore's mutex no other lease is created meanwhile, so that
// listing gives the lease's token, and the lease's node is not read: an
// uncontended Acquire is the mutex's create ‖ listing, the lease's create
// ‖ listing beside the semaphore path's listing, and the mutex's release.
func TestZKSemaphoreLeaseTakesItsTokenFromTheListingBehindItsCreate(t *testing.T) {
	setForTest(t, &selfWatchGrace, time.Hour) // no late watch, however slow the machine
	path := "/zkt/fresh-sem-" + newUUID()
	var log opLog
	ctx, s := zkSession(t, 30*time.Second, WithTracer(log.tracer(true)))
	sem := NewSemaphore(s, path, 2)
	// The semaphore's mutex is released in the background.
	mutexReleased := func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return slices.ContainsFunc(log.ops, func(op string) bool { return strings.HasPrefix(op, "delete ") })
	}
	first, err := sem.Acquire(ctx, 1) // the first one also makes the parents
	require.NoError(t, err)
	require.Eventually(t, mutexReleased, 10*time.Second, time.Millisecond)
	log.take()

	leases, err := sem.Acquire(ctx, 1)
	require.NoError(t, err)
	l := leases[0]
	require.Eventually(t, mutexReleased, 10*time.Second, time.Millisecond)
	ops := log.take()
	assert.NotContains(t, ops, "getChildren "+l.Path(), "the lease's node is not read")
	assert.Len(t, ops, 6, "create ‖ getChildren (mutex), create ‖ getChildren (lease) beside the path's listing, delete (mutex): %q", ops)
	_, st, err := zkRaw(t).Get(l.Path())
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, l.Token())
	assert.Greater(t, l.Token(), first[0].Token())
	require.NoError(t, l.Release(ctx))
	require.NoError(t, first[0].Release(ctx))
}

// A waiter that does not read its own node while it waits can be granted
// after its node was deleted under it (an operator's delete, say), by a
// marked release ahead, which it takes without listing again. Its lease
// must then end, from the watch its hold sets after selfWatchGrace, as a
// hold whose node is deleted does: never a lease on a node that is gone.
func TestZKWaiterWhoseNodeWasDeletedWhileItWaitedLosesTheLeaseItIsGranted(t *testing.T) {
	dir := "/zkt/fresh-deleted-granted-" + newUUID()
	ctx, l0, _, firstGot := holdAndQueue(t, dir)
	_, third := zkSession(t, 30*time.Second)
	waiting, got := queueBehind(t, third, dir, 3)

	require.NoError(t, zkRaw(t).Delete(waiting, -1))
	leases := passDown(t, ctx, l0, firstGot)
	require.NoError(t, leases[1].Release(ctx))
	q := <-got
	require.NoError(t, q.err)
	// Nothing tells the waiter of its node's deletion before its grant: the
	// release ahead is marked (no listing) and its late read is 30 s off.
	require.Equal(t, waiting, q.l.Path(), "the waiter holds on the node deleted under it")
	select {
	case <-q.l.Done():
		assert.ErrorIs(t, q.l.Err(), ErrNodeDeleted)
		assert.ErrorIs(t, q.l.Err(), ErrLockLost)
	case <-time.After(3 * time.Second): // selfWatchGrace and a round trip, on a loaded machine
		t.Fatal("a lease granted on a deleted node did not end")
	}
}

// A waiter first in line has nothing cached ahead of the node it watches,
// so it needs only that node's deletion: a marked release ahead (its
// holder had waited) must cost it no read. Its acquisition and release
// are four requests: create ‖ listing, the watch on the holder's node, the
// release (go-zookeeper's lock makes five).
func TestZKWaiterFirstInLineBehindAMarkedReleaseMakesFourRequests(t *testing.T) {
	setForTest(t, &selfWatchGrace, time.Hour) // no late watch, however slow the machine
	dir := "/zkt/fresh-first-" + newUUID()
	ctx, l0, _, secondGot := holdAndQueue(t, dir)
	held := passDown(t, ctx, l0, secondGot)[1] // it waited: its release is marked

	var log opLog
	_, third := zkSession(t, 30*time.Second, WithTracer(log.tracer(true)))
	own, thirdGot := queueBehind(t, third, dir, 2)
	require.Eventually(t, func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return slices.Contains(log.ops, "getData "+held.Path()) || slices.Contains(log.ops, "getChildren "+held.Path())
	}, 10*time.Second, time.Millisecond, "the waiter watches the holder's node")
	require.NoError(t, held.Release(ctx))
	q := <-thirdGot
	require.NoError(t, q.err)
	require.Equal(t, own, q.l.Path())
	require.NoError(t, q.l.Release(ctx))

	assert.ElementsMatch(t, []string{
		"create " + dir + "/" + protectedPrefix,
		"getChildren " + dir,
		"getChildren " + held.Path(),
		"multi " + own,
	}, prefixOps(log.take(), dir+"/"+protectedPrefix))
}
