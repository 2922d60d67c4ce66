package zkrecipes

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queueBehind starts an Acquire of a Mutex on dir in the background and
// waits until the server shows its node, the n-th child of dir. It returns
// that node's path and the channel the lease arrives on.
func queueBehind(t *testing.T, s *Session, dir string, n int) (string, <-chan *Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	got := make(chan *Lease, 1)
	go func() {
		l, err := NewMutex(s, dir).Acquire(ctx)
		assert.NoError(t, err)
		got <- l
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

// A waiter whose listing came right behind its create, with no child
// created in between, takes its fencing token from that listing: behind
// another waiter, its acquisition and release cost five requests (create,
// listing, the two watches on the node ahead, the marked release), not
// six. Its own node is not read.
func TestZKWaiterWithAFreshListingDoesNotReadItsOwnNode(t *testing.T) {
	defer func(g time.Duration) { selfWatchGrace = g }(selfWatchGrace)
	selfWatchGrace = time.Hour // no late watch, however slow the machine
	dir := "/zkt/fresh-" + newUUID()
	ctx, first := zkSession(t, 30*time.Second)
	l0, err := NewMutex(first, dir).Acquire(ctx)
	require.NoError(t, err)
	_, second := zkSession(t, 30*time.Second)
	_, secondGot := queueBehind(t, second, dir, 2)

	var mu sync.Mutex
	var ops []string
	tracer := TracerFunc(func(ev TraceEvent) {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, ev.Op+" "+ev.Path)
	})
	_, third := zkSession(t, 30*time.Second, WithTracer(tracer))
	own, thirdGot := queueBehind(t, third, dir, 3)

	require.NoError(t, l0.Release(ctx))
	l1 := <-secondGot
	require.NotNil(t, l1)
	require.NoError(t, l1.Release(ctx))
	l2 := <-thirdGot
	require.NotNil(t, l2)
	require.NoError(t, l2.Release(ctx))

	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, []string{
		"create " + dir + "/" + protectedPrefix, // the name is the server's
		"getChildren " + dir,
		"getData " + l1.Path(),
		"getChildren " + l1.Path(),
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
// node at first. Once it has waited selfWatchGrace, it sets one, so a
// deletion of its node while it waits (an operator's, say) makes it queue
// again at once, as a waiter that read its node does, instead of holding
// a lock without a node when the node ahead goes.
func TestZKWaiterWithAFreshListingLearnsOfItsNodeDeletedWhileItWaits(t *testing.T) {
	dir := "/zkt/fresh-deleted-" + newUUID()
	ctx, first := zkSession(t, 30*time.Second)
	l0, err := NewMutex(first, dir).Acquire(ctx)
	require.NoError(t, err)
	_, second := zkSession(t, 30*time.Second)
	waiting, secondGot := queueBehind(t, second, dir, 2)

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
	l1 := <-secondGot
	require.NotNil(t, l1)
	assert.Equal(t, again, l1.Path(), "it holds with the node it queued again with")
	require.NoError(t, l1.Release(ctx))
}
