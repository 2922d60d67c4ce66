package bench

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/peers"
)

func TestForEach_CallsEachIndexOnceFromTheWorkers(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	require.NoError(t, forEach(context.Background(), 1000, 32, func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		seen[i]++
		return nil
	}))
	assert.Len(t, seen, 1000)
	for i, n := range seen {
		assert.Equal(t, 1, n, "index %d", i)
	}
}

func TestForEach_StopsStartingCallsAfterTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	calls := 0
	err := forEach(context.Background(), 10000, 1, func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if i == 3 {
			return boom
		}
		return nil
	})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 4, calls, "one worker: calls 0 to 3, then none")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, forEach(ctx, 10, 4, func(int) error { return nil }), context.Canceled)
}

// A CuratorCache that cannot load the tree is recorded with what it
// cached and what its exception handler received, never a figure.
func TestCuratorCacheLine_AFailedLoadSaysHowManyNodesAndTheException(t *testing.T) {
	l := curatorCacheLine{Initialized: false, Nodes: 65635, Exceptions: 34466,
		FirstException: "java.lang.IllegalStateException: Attempt to register more than 65535 parties"}
	err := l.failure("CuratorCache", 100490, 120)
	assert.EqualError(t, err, "CuratorCache not initialized within 120 s: cached 65635 of 100490 nodes; its exception handler received 34466 exceptions, the first java.lang.IllegalStateException: Attempt to register more than 65535 parties")

	l = curatorCacheLine{Initialized: true, Nodes: 99000, LoadMS: 4100}
	assert.EqualError(t, l.failure("CuratorCache", 100490, 120), "CuratorCache initialized after 4100 ms with 99000 of 100490 nodes")

	line, err := lastJSONLine("heap: 1 2 3\n{\"a\":1}\nnoise\n{\"nodes\":5}\n")
	require.NoError(t, err)
	assert.Equal(t, `{"nodes":5}`, line)
	_, err = lastJSONLine("Exception in thread main\n")
	assert.Error(t, err)
}

func TestParentOf_IsThePathUpToTheLastSlash(t *testing.T) {
	assert.Equal(t, "/zkbench/curves", parentOf("/zkbench/curves/cache10000"))
	assert.Equal(t, "/", parentOf("/zkbench"))
}

// The cache curve on a small tree (1 + 10² nodes) on a real server: the
// tree is built and deleted whole, the floor reads every node, the
// TreeCache holds exactly the tree with the 2 watches of its persistent
// watch, resyncs after a drop without missing an event, and Curator's
// CuratorCache (where its jars are) loads the tree too.
func TestCacheCurve_OnASmallTreeOnARealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := ownEnv(t, ctx, "a shared server's other clients move its watch count") // the resync waits for it to be back

	tree := NewCacheTree("/curves/cache", 100)
	require.Equal(t, 101, tree.Nodes)
	_, err := BuildCacheTree(ctx, env.Observer, tree)
	require.NoError(t, err)

	floor, err := RawTreeLoad(ctx, env, tree.Root)
	require.NoError(t, err)
	assert.Equal(t, tree.Nodes, floor.Nodes)
	assert.Positive(t, floor.Load)

	for rep := range 2 {
		r, err := TreeCacheRun(ctx, env, tree.Root, rep)
		require.NoError(t, err, "repetition %d", rep)
		assert.Equal(t, tree.Nodes, r.Nodes, "the drops' changes leave the node count as it was")
		assert.Zero(t, r.Mismatches)
		assert.EqualValues(t, 2, r.ServerWatches, "one persistent recursive watch")
		assert.Positive(t, r.HeapPerNode)
		assert.Positive(t, r.Resync)
		assert.Zero(t, r.EventsMissed)
	}

	if peers.Available(peers.Curator) == nil {
		cr, err := CuratorCacheRun(ctx, env, tree.Root, tree.Nodes, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, tree.Nodes, cr.Nodes)
		assert.Positive(t, cr.HeapPerNode)
		_, err = CuratorCacheRun(ctx, env, tree.Root, tree.Nodes+1, 5*time.Second)
		assert.ErrorContains(t, err, "CuratorCache initialized after", "a node count other than the tree's is a failure")
	}

	_, err = DeleteCacheTree(ctx, env.Observer, tree.Root)
	require.NoError(t, err)
	ok, _, err := env.Observer.Exists(tree.Root)
	require.NoError(t, err)
	assert.False(t, ok, "the tree is gone")
}
