package zkrecipes

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestZKSharedCountCreatesItsNodeWithTheSeedAndContainerParents(t *testing.T) {
	var mu sync.Mutex
	containers := map[string]bool{}
	ctx, s := zkSession(t, 30*time.Second, WithTracer(TracerFunc(func(ev TraceEvent) {
		if ev.Op == "createContainer" && ev.Err == nil {
			mu.Lock()
			containers[ev.Path] = true
			mu.Unlock()
		}
	})))
	raw := zkRaw(t)
	dir := "/zkt/count-" + newUUID()
	c := NewSharedCount(s, dir+"/a/n", 7)

	v, err := c.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, VersionedCount{Count: 7, Version: 0}, v)

	data, st, err := raw.Get(dir + "/a/n")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 7}, data, "Curator's format: 4-byte big-endian int")
	assert.Zero(t, st.EphemeralOwner, "the count node is persistent")
	mu.Lock()
	assert.True(t, containers[dir] && containers[dir+"/a"], "parents are created as containers: %v", containers)
	assert.False(t, containers[dir+"/a/n"], "the count node itself is not a container")
	mu.Unlock()
	require.NoError(t, raw.Delete(dir+"/a/n", -1))
}

func TestZKSharedCountTrySetWritesOnlyOverTheVersionRead(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/count-" + newUUID()
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	a, b := NewSharedCount(s, path, 1), NewSharedCount(s, path, 1)

	v, err := a.Get(ctx)
	require.NoError(t, err)
	w, err := b.TrySet(ctx, 2, v.Version)
	require.NoError(t, err)
	assert.Equal(t, VersionedCount{Count: 2, Version: v.Version + 1}, w)

	_, err = a.TrySet(ctx, 3, v.Version)
	require.ErrorIs(t, err, ErrVersionChanged, "a stale version must not overwrite")
	got, err := a.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, w, got)

	set, err := a.Set(ctx, -5)
	require.NoError(t, err)
	assert.Equal(t, VersionedCount{Count: -5, Version: w.Version + 1}, set)
	data, _, err := raw.Get(path)
	require.NoError(t, err)
	assert.Equal(t, int32(-5), int32(binary.BigEndian.Uint32(data)))
}

func TestZKSharedCountOnANodeThatIsNotACountFailsWithErrBadCount(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/count-" + newUUID()
	_, err := raw.Create(path, []byte("hello"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Delete(path, -1) })

	c := NewSharedCount(s, path, 1)
	_, err = c.Get(ctx)
	require.ErrorIs(t, err, ErrBadCount)
	assert.Contains(t, err.Error(), "5 bytes")
	err = c.Watch(ctx, func(VersionedCount) { t.Error("a bad count must not be delivered") })
	require.ErrorIs(t, err, ErrBadCount)
}

// A watcher whose callback is slow may miss intermediate values, but the
// last value it sees is the last one written.
func TestZKSharedCountWatchNeverMissesTheFinalValue(t *testing.T) {
	ctx, s := zkSession(t, 60*time.Second)
	_, writer := zkSession(t, 60*time.Second)
	raw := zkRaw(t)
	path := "/zkt/count-" + newUUID()
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	w := NewSharedCount(writer, path, 0)
	_, err := w.Get(ctx)
	require.NoError(t, err)

	var mu sync.Mutex
	var seen []VersionedCount
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- NewSharedCount(s, path, 0).Watch(wctx, func(v VersionedCount) {
			mu.Lock()
			seen = append(seen, v)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond) // a slow consumer
		})
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) > 0 }, 10*time.Second, time.Millisecond)
	const last = 200
	for i := int32(1); i <= last; i++ {
		_, err := w.Set(ctx, i)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[len(seen)-1].Count == last
	}, 10*time.Second, time.Millisecond, "the watcher sees the final value")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(seen); i++ {
		assert.Greater(t, seen[i].Version, seen[i-1].Version, "versions only move forward")
	}
	t.Logf("%d writes seen as %d calls", last, len(seen))
}

// A Semaphore whose maximum is a SharedCount admits more holders as soon
// as the count is raised through SharedCount.Set.
func TestZKSemaphoreMaximumFollowsSharedCountSet(t *testing.T) {
	ctx, s := zkSession(t, 60*time.Second)
	_, s2 := zkSession(t, 60*time.Second)
	dir := "/zkt/count-" + newUUID()
	count := NewSharedCount(s, dir+"/max", 1)
	sem := NewSemaphore(s, dir+"/sem", 1, WithSharedCount(dir+"/max"))
	sem2 := NewSemaphore(s2, dir+"/sem", 1, WithSharedCount(dir+"/max"))

	l1, err := sem.Acquire(ctx, 1)
	require.NoError(t, err)
	defer func() { _ = l1[0].Release(ctx) }()
	tctx, tcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = sem2.Acquire(tctx, 1)
	tcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the count admits one")

	got := make(chan error, 1)
	go func() {
		l2, err := sem2.Acquire(ctx, 1)
		if err == nil {
			err = l2[0].Release(ctx)
		}
		got <- err
	}()
	_, err = count.Set(ctx, 2)
	require.NoError(t, err)
	select {
	case err := <-got:
		require.NoError(t, err, "raising the count admits the waiter")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not admitted after the count was raised")
	}
}

func TestZKSharedValueWatchEndsWithErrClosedWhenTheSessionCloses(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/value-" + newUUID()
	t.Cleanup(func() { _ = raw.Delete(path, -1) })
	v := NewSharedValue(s, path, []byte("seed"))

	got := make(chan VersionedValue, 10)
	done := make(chan error, 1)
	go func() { done <- v.Watch(ctx, func(r VersionedValue) { got <- r }) }()
	assert.Equal(t, VersionedValue{Value: []byte("seed"), Version: 0}, <-got)
	set, err := v.Set(ctx, []byte("next"))
	require.NoError(t, err)
	assert.Equal(t, VersionedValue{Value: []byte("next"), Version: 1}, set)
	assert.Equal(t, set, <-got)

	require.NoError(t, s.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return after Close")
	}
	data, _, err := raw.Get(path)
	require.NoError(t, err)
	assert.Equal(t, []byte("next"), data)
}
