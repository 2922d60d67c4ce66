package zkrecipes

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seenData records what a WatchData callback was called with.
type seenData struct {
	mu    sync.Mutex
	calls []dataCall
}

type dataCall struct {
	data string
	stat *NodeStat
}

func (r *seenData) fn(data []byte, st *NodeStat) error {
	r.mu.Lock()
	r.calls = append(r.calls, dataCall{string(data), st})
	r.mu.Unlock()
	return nil
}

func (r *seenData) last() (dataCall, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return dataCall{}, 0
	}
	return r.calls[len(r.calls)-1], len(r.calls)
}

func (r *seenData) all() []dataCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]dataCall(nil), r.calls...)
}

// runWatch runs watch on its own goroutine until the test ends. The
// returned channel is closed when watch returns; err then holds its result.
func runWatch(t *testing.T, ctx context.Context, watch func(ctx context.Context) error) (done <-chan struct{}, err *error, cancel context.CancelFunc) {
	wctx, cancel := context.WithCancel(ctx)
	ch := make(chan struct{})
	err = new(error)
	go func() {
		defer close(ch)
		*err = watch(wctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-ch
	})
	return ch, err, cancel
}

func TestZKWatchDataReportsAbsenceCreationChangesAndDeletionInOrder(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/watchdata-" + newUUID()
	var seen seenData
	done, werr, cancel := runWatch(t, ctx, func(ctx context.Context) error { return WatchData(ctx, s, path, seen.fn) })

	require.Eventually(t, func() bool { _, n := seen.last(); return n == 1 }, 10*time.Second, time.Millisecond)
	first, _ := seen.last()
	assert.Nil(t, first.stat, "a missing node is reported with a nil stat")

	_, err := raw.Create(path, []byte("v0"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	for i := 1; i <= 20; i++ {
		_, err = raw.Set(path, []byte("v"+string(rune('a'+i))), -1)
		require.NoError(t, err)
	}
	want, st, err := raw.Get(path)
	require.NoError(t, err)
	require.Eventually(t, func() bool { c, _ := seen.last(); return c.stat != nil && c.stat.Mzxid == st.Mzxid }, 10*time.Second, time.Millisecond)
	c, _ := seen.last()
	assert.Equal(t, string(want), c.data)
	assert.Equal(t, st.Version, c.stat.Version)
	assert.Equal(t, st.Czxid, c.stat.Czxid)

	require.NoError(t, raw.Delete(path, -1))
	require.Eventually(t, func() bool { c, _ := seen.last(); return c.stat == nil }, 10*time.Second, time.Millisecond)

	calls := seen.all()
	var mz int64
	for i, c := range calls[1 : len(calls)-1] {
		require.NotNil(t, c.stat, "call %d", i+1)
		assert.Greater(t, c.stat.Mzxid, mz, "mzxid order")
		mz = c.stat.Mzxid
	}
	cancel()
	<-done
	assert.ErrorIs(t, *werr, context.Canceled)
}

func TestZKWatchDataStopsWithTheCallbacksError(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	stop := errors.New("enough")
	err := WatchData(ctx, s, "/zkt/watchstop-"+newUUID(), func([]byte, *NodeStat) error { return stop })
	assert.ErrorIs(t, err, stop)
}

func TestZKWatchDataEndsWithErrClosedWhenTheSessionCloses(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	var seen seenData
	done, werr, _ := runWatch(t, ctx, func(ctx context.Context) error { return WatchData(ctx, s, "/zkt/watchclose-"+newUUID(), seen.fn) })
	require.Eventually(t, func() bool { _, n := seen.last(); return n == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	select {
	case <-done:
		assert.ErrorIs(t, *werr, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("WatchData still running after Close")
	}
}

func TestZKWatchChildrenSeesTheLastListingAndNotDataChanges(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/watchkids-" + newUUID()
	var mu sync.Mutex
	type call struct {
		kids []string
		stat *NodeStat
	}
	var calls []call
	last := func() (call, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(calls) == 0 {
			return call{}, 0
		}
		return calls[len(calls)-1], len(calls)
	}
	runWatch(t, ctx, func(ctx context.Context) error {
		return WatchChildren(ctx, s, path, func(kids []string, st *NodeStat) error {
			mu.Lock()
			calls = append(calls, call{kids, st})
			mu.Unlock()
			time.Sleep(time.Millisecond) // a slow consumer
			return nil
		})
	})
	require.Eventually(t, func() bool { _, n := last(); return n == 1 }, 10*time.Second, time.Millisecond)
	c, _ := last()
	assert.Nil(t, c.stat)

	_, err := raw.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	for _, k := range []string{"c", "a", "b"} {
		_, err := raw.Create(path+"/"+k, nil, 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	require.NoError(t, raw.Delete(path+"/b", -1))
	_, parent, err := raw.Exists(path)
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the listing after b's deletion, not the one before b's creation
		c, _ := last()
		return c.stat != nil && c.stat.Pzxid == parent.Pzxid
	}, 10*time.Second, time.Millisecond)
	c, _ = last()
	require.Equal(t, []string{"a", "c"}, c.kids)
	_, n := last()
	_, err = raw.Set(path, []byte("data"), -1)
	require.NoError(t, err)
	_, err = raw.Set(path+"/a", []byte("data"), -1)
	require.NoError(t, err)
	require.NoError(t, raw.Delete(path+"/a", -1))
	require.Eventually(t, func() bool { c, _ := last(); return len(c.kids) == 1 }, 10*time.Second, time.Millisecond)
	mu.Lock()
	for _, c := range calls[n:] {
		assert.Equal(t, []string{"c"}, c.kids, "data changes do not call fn")
	}
	var pz int64
	for _, c := range calls[1:] {
		assert.Greater(t, c.stat.Pzxid, pz, "pzxid order")
		pz = c.stat.Pzxid
	}
	mu.Unlock()
	require.NoError(t, raw.Delete(path+"/c", -1))
}

// A callback that blocks holds up only its own watch: the Session goes on
// serving requests, and once the callback returns it gets the last value.
func TestZKWatchDataBlockedCallbackNeverBlocksTheSessionAndThenSeesTheLastValue(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/watchslow-" + newUUID()
	_, err := raw.Create(path, []byte{0}, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	var seen seenData
	blocked, release := make(chan struct{}), make(chan struct{})
	runWatch(t, ctx, func(ctx context.Context) error {
		return WatchData(ctx, s, path, func(data []byte, st *NodeStat) error {
			_ = seen.fn(data, st)
			if data[0] == 1 {
				close(blocked)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
	})
	require.Eventually(t, func() bool { _, n := seen.last(); return n == 1 }, 10*time.Second, time.Millisecond)
	_, err = raw.Set(path, []byte{1}, -1)
	require.NoError(t, err)
	<-blocked
	var st *zk.Stat
	for i := 2; i <= 50; i++ {
		st, err = raw.Set(path, []byte{byte(i)}, -1)
		require.NoError(t, err)
	}
	_, got, err := s.get(ctx, s.abs(path))
	require.NoError(t, err, "the Session serves requests while a callback blocks")
	assert.Equal(t, st.Mzxid, got.Mzxid)
	close(release)
	require.Eventually(t, func() bool { c, _ := seen.last(); return c.stat != nil && c.stat.Mzxid == st.Mzxid }, 10*time.Second, time.Millisecond)
	_, n := seen.last()
	assert.Equal(t, 3, n, "the changes made while fn was blocked are coalesced into one call")
}
