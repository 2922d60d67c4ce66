package recipes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
	"github.com/zkrecipes/zkrecipes/zktest"
)

// The WorkQueue's items with an id (Curator's DistributedIdQueue): Put
// WithID, WorkItem.ID, Remove.

// freshWorkQueue returns the test's queue path, with no queue and no lock
// left there by an earlier run (-count=2).
func freshWorkQueue(t *testing.T, c *zktest.Cluster) string {
	t.Helper()
	path := testPath(t)
	obs := raw(t, c)
	require.NoError(t, deleteTree(obs, path))
	require.NoError(t, deleteTree(obs, path+"-locks"))
	return path
}

// takeID takes one item of q and acks it, returning its data and its id.
func takeID(t *testing.T, ctx context.Context, q *zr.WorkQueue) (data, id string) {
	t.Helper()
	wi, err := q.Take(ctx)
	require.NoError(t, err)
	data, id = string(wi.Data()), wi.ID()
	require.NoError(t, wi.Ack(ctx))
	return data, id
}

// idItem is an item and the id it is put with ("" for none).
type idItem struct{ data, id string }

// putIDs puts items into q in order, each WithID its id (none for "").
func putIDs(t *testing.T, ctx context.Context, q *zr.WorkQueue, items ...idItem) {
	t.Helper()
	for _, it := range items {
		var opts []zr.PutOption
		if it.id != "" {
			opts = append(opts, zr.WithID(it.id))
		}
		require.NoError(t, q.Put(ctx, []byte(it.data), opts...))
	}
}

// assertTakenInOrder takes and acks one item of q for each of want, and
// asserts that they come in that order, each with its id.
func assertTakenInOrder(t *testing.T, ctx context.Context, q *zr.WorkQueue, want ...idItem) {
	t.Helper()
	for _, w := range want {
		data, id := takeID(t, ctx, q)
		assert.Equal(t, w.data, data)
		assert.Equal(t, w.id, id, "the id of %s", data)
	}
}

// queueIDs returns the ids in the names of the items under path, in
// sequence order, from outside.
func queueIDs(t *testing.T, obs *zk.Conn, path string) []string {
	t.Helper()
	kids := children(t, obs, path)
	slices.SortFunc(kids, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
	var ids []string
	for _, k := range kids {
		_, rest, _ := strings.Cut(k, "|")
		id, _, _ := strings.Cut(rest, "|")
		ids = append(ids, id)
	}
	return ids
}

// Ids that sort before and after the sequence numbers as strings: taken in
// the order put all the same, each with its id.
func TestWorkQueue_IDItemsComeOutInTheOrderPutWithTheirID(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	items := []idItem{{"first", "zz"}, {"second", "aa"}, {"third", ""}, {"fourth", "mm"}}
	putIDs(t, ctx, q, items...)
	obs := raw(t, c)
	for _, k := range children(t, obs, path) {
		assert.Regexp(t, `^queue-(\|(zz|aa|mm)\|)?\d{10}$`, k)
	}
	assertTakenInOrder(t, ctx, q, items...)
	assertWorkQueueEmpty(t, c, path)
}

func TestWorkQueue_ReleasedIDItemKeepsItsID(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	require.NoError(t, q.Put(ctx, []byte("job"), zr.WithID("job-7")))
	wi, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, wi.Release(ctx))
	assert.Equal(t, []string{"job-7"}, queueIDs(t, raw(t, c), path))
	data, id := takeID(t, ctx, q)
	assert.Equal(t, "job", data)
	assert.Equal(t, "job-7", id)
	n, err := q.Remove(ctx, "job-7")
	require.NoError(t, err)
	assert.Zero(t, n, "acked: nothing left to remove")
}

// Remove deletes every item of the id that no consumer holds, counts
// them, and leaves the held one to its consumer, which can still ack it;
// released, the held item is back and a second Remove deletes it.
func TestWorkQueue_RemoveDeletesTheFreeItemsOfAnIDAndLeavesAHeldOne(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	putIDs(t, ctx, q, idItem{"j0", "job"}, idItem{"j1", "job"}, idItem{"o", "other"}, idItem{"j2", "job"}, idItem{"p", ""})
	held, err := q.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "j0", string(held.Data()))

	remover := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	n, err := remover.Remove(ctx, "job")
	require.NoError(t, err)
	assert.Equal(t, 2, n, "j1 and j2; j0 is held")
	obs := raw(t, c)
	assert.Equal(t, []string{"job", "other", ""}, queueIDs(t, obs, path))
	select {
	case <-held.Done():
		t.Fatalf("the consumer lost the held item: %v", held.Err())
	default:
	}
	assert.Equal(t, []string{held.Name()}, children(t, obs, path+"-locks"), "Remove left a lock, or took the consumer's")

	require.NoError(t, held.Release(ctx))
	n, err = remover.Remove(ctx, "job")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the released j0")
	for _, want := range []string{"o", "p"} {
		data, _ := takeID(t, ctx, q)
		assert.Equal(t, want, data)
	}
	assertWorkQueueEmpty(t, c, path)
}

// An item held when Remove runs is its consumer's to end: acked, it is
// gone, and nothing is left.
func TestWorkQueue_ItemHeldThroughARemoveIsAckedByItsConsumer(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	require.NoError(t, q.Put(ctx, []byte("x"), zr.WithID("job")))
	held, err := q.Take(ctx)
	require.NoError(t, err)
	n, err := zr.NewWorkQueue(connect(t, c, nil).Session, path).Remove(ctx, "job")
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, held.Ack(ctx))
	assertWorkQueueEmpty(t, c, path)
}

func TestWorkQueue_RemoveOfAnIDWithNoItemRemovesNothingAndMakesNoNode(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	n, err := q.Remove(ctx, "job")
	require.NoError(t, err)
	assert.Zero(t, n)
	obs := raw(t, c)
	for _, p := range []string{path, path + "-locks"} {
		ok, _, err := obs.Exists(p)
		require.NoError(t, err)
		assert.False(t, ok, "Remove made %s", p)
	}
	require.NoError(t, q.Put(ctx, []byte("x"), zr.WithID("other")))
	require.NoError(t, q.Put(ctx, []byte("y")))
	n, err = q.Remove(ctx, "job")
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, []string{"other", ""}, queueIDs(t, obs, path))
}

func TestWorkQueue_BadIDsAreRefusedBeforeAnyCall(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 30*time.Second)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	for _, id := range []string{"", "a/b", "a|b", "tab\t", "\U0001F600"} {
		err := q.Put(ctx, []byte("x"), zr.WithID(id))
		assert.ErrorIs(t, err, zr.ErrInvalidItemID, "Put WithID(%q)", id)
		assert.ErrorIs(t, err, zr.ErrInvalidArgument, "Put WithID(%q)", id)
		_, err = q.Remove(ctx, id)
		assert.ErrorIs(t, err, zr.ErrInvalidItemID, "Remove(%q)", id)
	}
	assert.ErrorIs(t, q.Put(ctx, []byte("x"), zr.WithID("a"), zr.WithPriority(1)), zr.ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err := q.Remove(nil, "a")
	assert.ErrorIs(t, err, zr.ErrInvalidArgument)
	ok, _, err := raw(t, c).Exists(path)
	require.NoError(t, err)
	assert.False(t, ok, "a refused call made the queue")
}

// The characters WithID refuses besides '/' and '|' are those the server
// refuses in a node name (its PathUtils rule, on UTF-16 code units), and
// the ones it accepts pass: checked with a plain go-zookeeper create
// (which refuses some of them itself; U+E000 and the emoji, a surrogate
// pair to the server, reach the server and are refused there).
func TestWorkQueue_IDCharactersRefusedAreThoseTheServerRefuses(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 30*time.Second)
	obs := raw(t, c)
	_, err := obs.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	q := zr.NewWorkQueue(connect(t, c, nil).Session, path)
	for _, id := range []string{"\u007f", "\u0085", "\ue000", "\uf8ff", "\ufff0", "\U0001F600"} {
		require.ErrorIs(t, q.Put(ctx, []byte("x"), zr.WithID(id)), zr.ErrInvalidItemID, "%q", id)
		_, err := obs.Create(path+"/queue-|"+id+"|", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
		assert.Error(t, err, "the server took %q in a node name", id)
	}
	for _, id := range []string{"\u00a0", "日本", "\uf900", "\uffef", "a b.c:d~e"} {
		require.NoError(t, q.Put(ctx, []byte("x"), zr.WithID(id)), "%q", id)
		n, err := q.Remove(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "%q", id)
	}
	assertWorkQueueEmpty(t, c, path)
}

// A Remove whose ctx ends while its transaction is on its way (the server
// has applied it, its reply is held) says the outcome is unknown, and
// leaves no lock behind: the lock its transaction made goes once the
// reply comes, though the Session lives on.
func TestWorkQueue_RemoveWhoseCtxEndsOnTheWayLeavesNoLock(t *testing.T) {
	c := server(t)
	path := freshWorkQueue(t, c)
	ctx := ctxT(t, 90*time.Second)
	proxy := zktest.NewProxy(t, c.Servers()[0])
	cl := connect(t, c, []string{proxy.Addr()}, zr.WithSessionTimeout(30*time.Second))
	q := zr.NewWorkQueue(cl.Session, path)
	require.NoError(t, q.Put(ctx, []byte("x"), zr.WithID("job")))
	// The lock path exists: the transaction is the Remove's second request.
	held, err := q.Take(ctx)
	require.NoError(t, err)
	require.NoError(t, held.Release(ctx))

	f := proxy.HoldRequestReply(2) // after the listing, the transaction's
	short, cancel := context.WithCancel(ctx)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := q.Remove(short, "job")
		done <- result{n, err}
	}()
	select {
	case <-f.Hit():
	case <-ctx.Done():
		t.Fatal("the transaction's reply never came")
	}
	cancel()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("Remove did not return when its ctx ended")
	}
	f.Release()
	require.ErrorIs(t, r.err, zr.ErrOutcomeUnknown)
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Zero(t, r.n)

	obs := raw(t, c)
	assert.Empty(t, children(t, obs, path), "the item was removed")
	require.Eventually(t, func() bool { return len(children(t, obs, path+"-locks")) == 0 }, 30*time.Second,
		20*time.Millisecond, "the lock of the Remove stays while its Session lives")
}

// A Remove whose transaction was applied but whose reply is lost, and
// whose ctx ends before the connection is back (cancelFirst: before the
// connection goes), leaves no lock of its live session once the
// connection is back, however long it was away.
func TestWorkQueue_RemoveCutOffFromItsReplyLeavesNoLockAfterALongOutage(t *testing.T) {
	for _, cancelFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancelFirst=%v", cancelFirst), func(t *testing.T) {
			c, path := cutOffFromReplyThroughAnOutage(t, cancelFirst, zr.ErrOutcomeUnknown,
				func(ctx context.Context, q *zr.WorkQueue) error { return q.Put(ctx, []byte("x"), zr.WithID("job")) },
				func(ctx context.Context, q *zr.WorkQueue) error { _, err := q.Remove(ctx, "job"); return err })
			assert.Empty(t, children(t, raw(t, c), path), "the item was removed")
		})
	}
}
