package recipes_test

//lint:file-ignore SA1019 WithTracer is deprecated (an adapter on the Observer); it still sees every request with its absolute path, which this file uses.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	zr "github.com/zkrecipes/zkrecipes"
)

// A data change on the node a waiter watches is not a release by itself:
// Curator's Revoker.attemptRevoke writes "__REVOKE__" into the holder's
// node, and a holder that does not honour revocation keeps the lock. A
// waiter right behind the holder has nothing cached ahead of it, so it
// watches only that node's deletion: the data change costs it no request,
// and it goes on waiting until the node is gone.
func TestMutex_DataChangeOnTheWatchedNodeIsNotARelease(t *testing.T) {
	c := server(t)
	path := testPath(t)
	ctx := ctxT(t, time.Minute)
	holder, err := zr.NewMutex(connect(t, c, nil).Session, path).Acquire(ctx)
	require.NoError(t, err)
	node := holder.Path()

	// The waiter's requests on the holder's node.
	var mu sync.Mutex
	var ops []string
	watching := make(chan struct{}, 16)
	tracer := zr.TracerFunc(func(ev zr.TraceEvent) {
		if ev.Path != node {
			return
		}
		mu.Lock()
		ops = append(ops, ev.Op)
		mu.Unlock()
		if ev.Err == nil {
			watching <- struct{}{}
		}
	})
	ws := connect(t, c, nil, zr.WithTracer(tracer)).Session
	type result struct {
		l   *zr.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := zr.NewMutex(ws, path).Acquire(ctx)
		got <- result{l, err}
	}()
	select {
	case <-watching: // the waiter watches the holder's node
	case r := <-got:
		t.Fatalf("waiter acquired while the lock was held: %v", r.err)
	case <-ctx.Done():
		t.Fatal("the waiter never watched the holder's node")
	}

	// What Curator's Revoker does to a lock node; then a read on the
	// waiter's connection, whose reply comes after any notification the
	// change sent it.
	_, err = raw(t, c).Set(node, []byte("__REVOKE__"), -1)
	require.NoError(t, err)
	_, _, err = ws.Conn().Exists(path)
	require.NoError(t, err)
	select {
	case r := <-got:
		t.Fatalf("waiter acquired on a data change while the holder's node exists (err %v)", r.err)
	default:
	}
	require.NoError(t, holder.Err(), "the holder still holds")

	// The real release still hands over.
	require.NoError(t, holder.Release(ctx))
	r := <-got
	require.NoError(t, r.err)
	require.Greater(t, r.l.Token(), holder.Token())
	require.NoError(t, r.l.Release(ctx))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"getChildren"}, ops, "one deletion watch, and no read after the data change")
}

// The same with a waiter further back, which watches both the data and the
// deletion of the node ahead: a data change on a waiting node ahead, then
// that waiter giving up, must not let it in while the holder holds.
func TestMutex_DataChangeThenCancelAheadIsNotARelease(t *testing.T) {
	c := server(t)
	conn := raw(t, c)
	path := testPath(t)
	ctx := ctxT(t, time.Minute)
	holder, err := zr.NewMutex(connect(t, c, nil).Session, path).Acquire(ctx)
	require.NoError(t, err)

	// A waits right behind the holder; B behind A.
	actx, cancelA := context.WithCancel(ctx)
	aDone := make(chan error, 1)
	go func() { _, err := zr.NewMutex(connect(t, c, nil).Session, path).Acquire(actx); aDone <- err }()
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 2 }, 10*time.Second, time.Millisecond)
	kids := children(t, conn, path)
	var aNode string
	for _, k := range kids {
		if path+"/"+k != holder.Path() {
			aNode = path + "/" + k
		}
	}
	reads := make(chan struct{}, 16)
	tracer := zr.TracerFunc(func(ev zr.TraceEvent) {
		if ev.Op == "getData" && ev.Path == aNode && ev.Err == nil {
			reads <- struct{}{}
		}
	})
	type result struct {
		l   *zr.Lease
		err error
	}
	got := make(chan result, 1)
	b := zr.NewMutex(connect(t, c, nil, zr.WithTracer(tracer)).Session, path)
	go func() { l, err := b.Acquire(ctx); got <- result{l, err} }()
	awaitRead := func(what string) {
		t.Helper()
		select {
		case <-reads:
		case r := <-got:
			t.Fatalf("B acquired while the holder holds, before %s (err %v)", what, r.err)
		case <-ctx.Done():
			t.Fatalf("no %s", what)
		}
	}
	awaitRead("B's watch on A")

	_, err = conn.Set(aNode, []byte("__REVOKE__"), -1)
	require.NoError(t, err)
	awaitRead("B's second read of A, finding it still there")
	cancelA()
	require.ErrorIs(t, <-aDone, context.Canceled)
	require.Eventually(t, func() bool { return len(children(t, conn, path)) == 2 }, 10*time.Second, time.Millisecond,
		"A's node is gone, the holder's and B's remain")
	select {
	case r := <-got:
		t.Fatalf("B acquired while the holder holds (err %v)", r.err)
	default:
	}
	require.NoError(t, holder.Err())
	require.NoError(t, holder.Release(ctx))
	r := <-got
	require.NoError(t, r.err)
	require.NoError(t, r.l.Release(ctx))
}
