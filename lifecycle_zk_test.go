package zkrecipes

import (
	"context"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One lifecycle: Start begins the work and waits within ctx until it is
// first ready; ctx bounds only that wait. A Start that fails has stopped
// what it began; Close waits within ctx for its clean-up, is idempotent
// and safe to call concurrently.

func TestZKPersistentNodeStartReturnsOnceTheNodeIsInPlace(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/lifecycle-" + newUUID() + "/n"
	n := NewPersistentNode(s, path, []byte("x"))
	require.NoError(t, n.Start(ctx))
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	st, _ := n.Status()
	assert.True(t, st.InPlace, "in place when Start returns")
	data, _, err := raw.Get(path)
	require.NoError(t, err, "the node exists when Start returns")
	assert.Equal(t, "x", string(data))
	assert.ErrorIs(t, n.Start(ctx), ErrNodeStarted)
}

func TestZKPersistentNodeStartCtxBoundsOnlyTheWaitNotTheNodesLife(t *testing.T) {
	_, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/lifecycle-" + newUUID() + "/n"
	n := NewPersistentNode(s, path, nil, WithCreateMode(ModePersistent))
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	require.NoError(t, n.Start(sctx))
	cancel() // the wait is over; the node's life is not
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	require.NoError(t, raw.Delete(path, -1))
	require.Eventually(t, func() bool {
		ok, _, err := raw.Exists(path)
		return err == nil && ok
	}, 20*time.Second, 20*time.Millisecond, "made again after Start's ctx ended")
	require.NoError(t, n.Close(context.Background()))
	ok, _, err := raw.Exists(path)
	require.NoError(t, err)
	assert.False(t, ok, "Close deleted the node")
}

func TestZKPersistentNodeStartThatFailsStopsWhatItBeganAndCloseReturnsNil(t *testing.T) {
	_, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/lifecycle-" + newUUID() + "/n"
	n := NewPersistentNode(s, path, nil, WithCreateMode(ModePersistent))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, n.Start(ended), context.Canceled)
	assert.ErrorIs(t, n.Start(context.Background()), ErrNodeStarted, "a failed Start is not started again")
	require.NoError(t, n.Close(context.Background()), "Close after a failed Start returns nil")
	// Close waited for the failed Start's clean-up: whatever the keeper
	// made is gone, and nothing makes it again.
	ok, _, err := raw.Exists(path)
	require.NoError(t, err)
	assert.False(t, ok, "no node is left after a failed Start and Close")
	st, _ := n.Status()
	assert.False(t, st.InPlace)
}

func TestZKPersistentNodeCloseIsSafeToCallConcurrently(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/lifecycle-" + newUUID() + "/n"
	n := NewPersistentNode(s, path, nil, WithCreateMode(ModePersistent))
	require.NoError(t, n.Start(ctx))
	errs := closeConcurrently(func() error { return n.Close(ctx) })
	for _, err := range errs {
		assert.NoError(t, err)
	}
	ok, _, err := raw.Exists(path)
	require.NoError(t, err)
	assert.False(t, ok, "deleted once every Close has returned")
}

func TestZKGroupMemberStartReturnsOnceItsNodeIsInPlace(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	group := "/zkt/lifecycle-" + newUUID()
	g := NewGroupMember(s, group, "m1", []byte("d"))
	require.NoError(t, g.Start(ctx))
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	st, _ := g.Status()
	assert.True(t, st.InPlace, "in place when Start returns")
	ok, _, err := raw.Exists(group + "/m1")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, g.Close(ctx))
	ok, _, err = raw.Exists(group + "/m1")
	require.NoError(t, err)
	assert.False(t, ok, "Close deleted the member's node")
}

// Caches and PersistentWatch: Close(ctx) stops them, closes Events, and
// is idempotent and safe to call concurrently.
func TestZKCachesAndPersistentWatchCloseWithinCtxEndEventsAndAreSafeConcurrently(t *testing.T) {
	ctx, s := zkSession(t, 60*time.Second)
	raw := zkRaw(t)
	path := "/zkt/lifecycle-" + newUUID()
	_, err := raw.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	nc := NewNodeCache(s, path)
	require.NoError(t, nc.Start(ctx))
	for _, err := range closeConcurrently(func() error { return nc.Close(ctx) }) {
		assert.NoError(t, err, "NodeCache.Close")
	}
	assertClosed(t, "NodeCache", nc.Events())

	tc := NewTreeCache(s, path)
	require.NoError(t, tc.Start(ctx))
	for _, err := range closeConcurrently(func() error { return tc.Close(ctx) }) {
		assert.NoError(t, err, "TreeCache.Close")
	}
	assertClosed(t, "TreeCache", tc.Events())

	w := NewPersistentWatch(s, path)
	if err := w.Start(ctx); err != nil {
		require.ErrorIs(t, err, ErrPersistentWatchUnsupported)
		skipOutsideCI(t, "no persistent watch on this server (the caches above ran on their one-shot fallback)")
	}
	for _, err := range closeConcurrently(func() error { return w.Close(ctx) }) {
		assert.NoError(t, err, "PersistentWatch.Close")
	}
	for range w.Events() { // drains what came before Close; ends once closed
	}
	assert.ErrorIs(t, w.Start(ctx), ErrCacheStarted)
	var nilCtx context.Context
	assert.ErrorIs(t, w.Close(nilCtx), ErrInvalidArgument, "a nil ctx is refused")
}

// skipOutsideCI skips the test for why, a server too old for it; under CI
// (CI set), whose servers are all recent enough, it fails instead.
func skipOutsideCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// closeConcurrently runs closeFn from three goroutines at once and
// returns their errors.
func closeConcurrently(closeFn func() error) []error {
	errs := make([]error, 3)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; errs[i] = closeFn() }()
	}
	close(start)
	wg.Wait()
	return errs
}

// assertClosed drains events, which must be closed (Close has returned).
func assertClosed(t *testing.T, what string, events <-chan CacheEvent) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("%s: Events not closed after Close returned", what)
		}
	}
}

// serverWatchPaths returns the paths session sid watches on the
// ZK_SERVERS server (wchc, where a persistent watch appears too).
func serverWatchPaths(t *testing.T, sid int64) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", zkServers(t)[0], 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Write([]byte("wchc"))
	require.NoError(t, err)
	out, err := io.ReadAll(c)
	require.NoError(t, err)
	var paths []string
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "0x"):
			id, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "0x"), 16, 64)
			in = err == nil && id == sid
		case in && strings.HasPrefix(strings.TrimSpace(line), "/"):
			paths = append(paths, strings.TrimSpace(line))
		}
	}
	return paths
}

// A Close whose ctx has already ended still takes the watch off the
// server: the removal goes on in the Session's background.
func TestZKPersistentWatchCloseWithAnEndedCtxStillRemovesTheWatch(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	path := "/zkt/lifecycle-" + newUUID()
	_, err := raw.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	w := NewPersistentWatch(s, path)
	if err := w.Start(ctx); err != nil {
		require.ErrorIs(t, err, ErrPersistentWatchUnsupported)
		skipOutsideCI(t, "no persistent watch on this server")
	}
	require.Contains(t, serverWatchPaths(t, s.SessionID()), path, "the watch is set once Start returns")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Close(ended); err != nil {
		require.ErrorIs(t, err, ErrReleaseDeferred)
		require.ErrorIs(t, err, context.Canceled)
	}
	for range w.Events() { // closed once Close has returned
	}
	require.Eventually(t, func() bool {
		return !slices.Contains(serverWatchPaths(t, s.SessionID()), path)
	}, 20*time.Second, 20*time.Millisecond, "the watch is gone from the server")
}

// A GroupMember's Close whose ctx has already ended still deletes the
// member's node (in the background if it must), and its view stops.
func TestZKGroupMemberCloseWithAnEndedCtxStillDeletesItsNode(t *testing.T) {
	ctx, s := zkSession(t, 30*time.Second)
	raw := zkRaw(t)
	group := "/zkt/lifecycle-" + newUUID()
	g := NewGroupMember(s, group, "m", []byte("d"))
	require.NoError(t, g.Start(ctx))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Close(ended); err != nil {
		require.ErrorIs(t, err, ErrReleaseDeferred)
	}
	require.Eventually(t, func() bool {
		ok, _, err := raw.Exists(group + "/m")
		return err == nil && !ok
	}, 20*time.Second, 20*time.Millisecond, "the member's node is deleted")
	if err := g.Close(context.Background()); err != nil {
		require.ErrorIs(t, err, ErrReleaseDeferred, "a later Close returns what the first did")
	}
}
