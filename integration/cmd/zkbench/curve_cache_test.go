package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

func TestCurvePreset_TheCacheCurveLoadsTenThousandToAMillionNodesAndQuickTheSmallest(t *testing.T) {
	full, err := curvePreset("full")
	require.NoError(t, err)
	assert.Equal(t, []int{10000, 100000, 1000000}, full.CacheNodes)
	assert.Equal(t, full.CacheNodes, full.sizes(curveCache))

	quick, err := curvePreset("quick")
	require.NoError(t, err)
	assert.Equal(t, []int{10000}, quick.CacheNodes)
	assert.True(t, curveConfig{CacheNodes: []int{10000}}.enabled(), "the cache curve alone is a curve to measure")
}

func TestNewCacheTree_HasAboutTheSizeAndTheExactCountOfItsShape(t *testing.T) {
	for size, want := range map[int][2]int{10000: {100, 10001}, 100000: {317, 100490}, 1000000: {1000, 1000001}} {
		tr := bench.NewCacheTree("/t", size)
		assert.Equal(t, want[0], tr.K, "K at %d", size)
		assert.Equal(t, want[1], tr.Nodes, "nodes at %d", size)
	}
	tr := bench.NewCacheTree("/t", 10000)
	assert.Equal(t, "/t/c0099/g0098", tr.Grandchild(99, 98))
}

// cacheRuns is runs by repetition.
func cacheRuns(rs ...bench.CacheRun) map[int]bench.CacheRun {
	m := map[int]bench.CacheRun{}
	for i, r := range rs {
		m[i] = r
	}
	return m
}

// The TreeCache's load is judged against the floor of the same
// repetition; its watches are the most of any run, its mismatches and
// missed events summed, so that one bad run shows.
func TestCachePoint_IsJudgedAgainstTheFloorOfTheSameRepetition(t *testing.T) {
	floor := cacheRuns(bench.CacheRun{Nodes: 10001, Load: 800 * time.Millisecond},
		bench.CacheRun{Nodes: 10001, Load: 1000 * time.Millisecond}, bench.CacheRun{Nodes: 10001, Load: 900 * time.Millisecond})
	zk := cacheRuns(
		bench.CacheRun{Nodes: 10001, Load: 400 * time.Millisecond, HeapPerNode: 260, ServerWatches: 2, Resync: 300 * time.Millisecond},
		bench.CacheRun{Nodes: 10001, Load: 300 * time.Millisecond, HeapPerNode: 258, ServerWatches: 3, Mismatches: 1, Resync: 500 * time.Millisecond},
		bench.CacheRun{Nodes: 10001, Load: 450 * time.Millisecond, HeapPerNode: 262, ServerWatches: 2, Resync: 400 * time.Millisecond, EventsMissed: 2},
	)
	p := cachePoint(curveCache, cacheZkrecipes, 10000, 10001, zk, floor, nil)

	assert.Equal(t, curveCache, p.Curve)
	assert.Equal(t, 10000, p.Size)
	assert.Equal(t, 3, p.Runs)
	require.NotNil(t, p.CachePoint)
	assert.Equal(t, 10001, p.Nodes)
	assert.Equal(t, 400*time.Millisecond, p.Load)
	assert.Equal(t, []time.Duration{400 * time.Millisecond, 300 * time.Millisecond, 450 * time.Millisecond}, p.RepLoad)
	require.Len(t, p.RepVsFloor, 3)
	assert.InDelta(t, 0.5, p.RepVsFloor[0], 1e-9)
	assert.InDelta(t, 0.3, p.RepVsFloor[1], 1e-9)
	assert.InDelta(t, 0.5, p.RepVsFloor[2], 1e-9)
	assert.InDelta(t, 0.5, p.VsFloor, 1e-9)
	assert.InDelta(t, 260, p.HeapPerNode, 1e-9)
	require.NotNil(t, p.ServerWatches)
	assert.EqualValues(t, 3, *p.ServerWatches, "the most of any run")
	assert.Equal(t, 1, *p.Mismatches)
	assert.Equal(t, 2, *p.EventsMissed)
	assert.Equal(t, 400*time.Millisecond, p.Resync)

	f := cachePoint(curveCache, cacheFloor, 10000, 10001, floor, floor, nil)
	assert.Zero(t, f.VsFloor, "the floor is not compared with itself")
	assert.Nil(t, f.ServerWatches, "not measured for the floor")
	assert.Nil(t, f.Mismatches)
	assert.Zero(t, f.Resync)
}

// A repetition whose floor failed has no ratio; the others keep theirs.
func TestCachePoint_ARepetitionWithoutAFloorHasNoRatio(t *testing.T) {
	floor := map[int]bench.CacheRun{1: {Load: time.Second}}
	p := cachePoint(curveCache, cacheCurator, 100000, 100490, cacheRuns(bench.CacheRun{Load: 3 * time.Second}, bench.CacheRun{Load: 2 * time.Second}), floor, nil)
	assert.Equal(t, []float64{2}, p.RepVsFloor)
	assert.InDelta(t, 2, p.VsFloor, 1e-9)
}

// Curator's CuratorCache cannot load every tree: its point has no figure,
// the tree's node count, and what happened.
func TestCachePoint_ACacheThatCannotLoadATreeRecordsWhyAndNoFigure(t *testing.T) {
	why := errors.New("CuratorCache not initialized within 120 s: cached 65635 of 100490 nodes; its exception handler received 34466 exceptions, the first java.lang.IllegalStateException: Attempt to register more than 65535 parties")
	p := cachePoint(curveCache, cacheCurator, 100000, 100490, nil, cacheRuns(bench.CacheRun{Load: time.Second}), why)

	assert.Equal(t, 0, p.Runs)
	assert.Contains(t, p.Error, "65535 parties")
	require.NotNil(t, p.CachePoint)
	assert.Equal(t, 100490, p.Nodes, "the tree's size is recorded")
	assert.Zero(t, p.Load)

	b, err := json.Marshal(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.EqualValues(t, 0, m["runs"])
	assert.EqualValues(t, 100490, m["nodes"])
	for _, k := range []string{"load_ns", "heap_bytes_per_node", "server_watches", "load_vs_floor"} {
		assert.NotContains(t, m, k, "no figure for a point that never ran: %s", k)
	}
}

// The TreeCache's zero counts are results and are written; a figure not
// measured for an implementation is not.
func TestCachePoint_JSONLineWritesTheTreeCachesZerosAndReadsBack(t *testing.T) {
	zk := cachePoint(curveCache, cacheZkrecipes, 10000, 10001, cacheRuns(bench.CacheRun{Nodes: 10001, Load: time.Second, HeapPerNode: 260, ServerWatches: 2, Resync: time.Second}), nil, nil)
	zk.Run = "2026-11-29T11:30:00Z"
	b, err := json.Marshal(zk)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.EqualValues(t, 0, m["mismatches"])
	assert.EqualValues(t, 0, m["events_missed"])
	assert.EqualValues(t, 2, m["server_watches"])
	assert.Equal(t, "cache", m["curve"])

	path := filepath.Join(t.TempDir(), "curves.jsonl")
	points := []CurvePoint{zk, cachePoint(curveCache, cacheFloor, 10000, 10001, cacheRuns(bench.CacheRun{Nodes: 10001, Load: time.Second}), nil, nil)}
	require.NoError(t, writeCurves(path, points))
	back, err := readCurves(path)
	require.NoError(t, err)
	assert.Equal(t, points, back)
}

func TestCurves_TheCacheTableAndChartShowEachImplementationAndAFailedCurator(t *testing.T) {
	floor := cacheRuns(bench.CacheRun{Nodes: 10001, Load: 800 * time.Millisecond})
	bigFloor := cacheRuns(bench.CacheRun{Nodes: 1000001, Load: 80 * time.Second})
	points := []CurvePoint{
		cachePoint(curveCache, cacheZkrecipes, 10000, 10001, cacheRuns(bench.CacheRun{Nodes: 10001, Load: 400 * time.Millisecond, HeapPerNode: 259.6, ServerWatches: 2, Resync: 350 * time.Millisecond}), floor, nil),
		cachePoint(curveCache, cacheFloor, 10000, 10001, floor, floor, nil),
		cachePoint(curveCache, cacheCurator, 10000, 10001, cacheRuns(bench.CacheRun{Nodes: 10001, Load: 900 * time.Millisecond, HeapPerNode: 270}), floor, nil),
		cachePoint(curveCache, cacheZkrecipes, 1000000, 1000001, cacheRuns(bench.CacheRun{Nodes: 1000001, Load: 40 * time.Second, HeapPerNode: 280, ServerWatches: 2, Resync: 42 * time.Second}), bigFloor, nil),
		cachePoint(curveCache, cacheFloor, 1000000, 1000001, bigFloor, bigFloor, nil),
		cachePoint(curveCache, cacheCurator, 1000000, 1000001, nil, bigFloor, errors.New("CuratorCache not initialized within 120 s: cached 65635 of 1000001 nodes")),
	}
	md := curvesMarkdown(points)
	assert.Contains(t, md, "| 10000 | zkrecipes | 1 | 10001 | 400.0 | 0.50 (0.50) | 260 | 2 | 0 | 350.0 | 0 |")
	assert.Contains(t, md, "| 10000 | floor (raw reads) | 1 | 10001 | 800.0 | – | – | – | – | – | – |")
	assert.Contains(t, md, "| 10000 | curator | 1 | 10001 | 900.0 | 1.12 (1.12) | 270 | – | – | – | – |")
	assert.Contains(t, md, "| 1000000 | curator | 0 | **failed** |")
	assert.Contains(t, md, "cache, curator at 1000000 (0 runs measured): CuratorCache not initialized within 120 s: cached 65635 of 1000001 nodes")

	dir := t.TempDir()
	require.NoError(t, writeCurveFiles(dir, points))
	st, err := os.Stat(filepath.Join(dir, "curve-cache.png"))
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}

// A run of the cache curve alone keeps the other curves' points, and a
// run of the others keeps the cache curve's.
func TestKeptPoints_TheCacheCurveAndTheOthersKeepEachOthersPoints(t *testing.T) {
	earlier := []CurvePoint{
		{Curve: curveLock, Size: 8, Impl: "zkrecipes", Run: "old"},
		{Curve: curveCache, Size: 10000, Impl: cacheZkrecipes, Run: "old"},
		{Curve: curveCache, Size: 1000000, Impl: cacheZkrecipes, Run: "old"},
	}
	kept := keptPoints(earlier, curveConfig{CacheNodes: []int{10000}})
	got := mergePoints(kept, []CurvePoint{{Curve: curveCache, Size: 10000, Impl: cacheZkrecipes, Run: "new"}})
	var rows []string
	for _, p := range got {
		rows = append(rows, p.Curve+" "+p.Run)
	}
	assert.Equal(t, []string{"lock old", "cache new", "cache old"}, rows, "the cache curve comes last")

	kept = keptPoints(earlier, curveConfig{LockSessions: []int{8}})
	assert.Len(t, kept, 2, "a lock run keeps both cache points")
}
