package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

func TestCurvePreset_TheServiceCurveHasTenThousandToAMillionInstancesAndQuickTheFewest(t *testing.T) {
	full, err := curvePreset("full")
	require.NoError(t, err)
	assert.Equal(t, []int{10000, 100000, 1000000}, full.ServiceInstances)
	assert.Equal(t, full.ServiceInstances, full.sizes(curveServices))

	quick, err := curvePreset("quick")
	require.NoError(t, err)
	assert.Equal(t, []int{10000}, quick.ServiceInstances)
	assert.True(t, curveConfig{ServiceInstances: []int{10000}}.enabled(), "the service curve alone is a curve to measure")
}

// A service point is a cache point of its own curve: judged against the
// floor of the same repetition, its zeros written, read back alike.
func TestCachePoint_AServicePointIsOfItsCurveAndReadsBack(t *testing.T) {
	floor := cacheRuns(bench.CacheRun{Nodes: 10000, Load: 100 * time.Millisecond}, bench.CacheRun{Nodes: 10000, Load: 200 * time.Millisecond})
	zk := cachePoint(curveServices, cacheZkrecipes, 10000, 10000, cacheRuns(
		bench.CacheRun{Nodes: 10000, Load: 300 * time.Millisecond, HeapPerNode: 900, ServerWatches: 2, Resync: time.Second},
		bench.CacheRun{Nodes: 10000, Load: 300 * time.Millisecond, HeapPerNode: 1000, ServerWatches: 2, Mismatches: 1, Resync: 3 * time.Second, EventsMissed: 2},
	), floor, nil)
	assert.Equal(t, curveServices, zk.Curve)
	require.NotNil(t, zk.CachePoint)
	assert.Equal(t, []float64{3, 1.5}, zk.RepVsFloor)
	assert.InDelta(t, 2.25, zk.VsFloor, 1e-9)
	assert.InDelta(t, 950, zk.HeapPerNode, 1e-9)
	assert.Equal(t, 2*time.Second, zk.Resync)
	assert.Equal(t, 1, *zk.Mismatches)
	assert.Equal(t, 2, *zk.EventsMissed)

	zk.Run = "2026-11-29T14:30:00Z"
	b, err := json.Marshal(zk)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, "services", m["curve"])
	assert.EqualValues(t, 10000, m["nodes"])

	path := filepath.Join(t.TempDir(), "curves.jsonl")
	points := []CurvePoint{zk, cachePoint(curveServices, cacheFloor, 10000, 10000, floor, floor, nil)}
	require.NoError(t, writeCurves(path, points))
	back, err := readCurves(path)
	require.NoError(t, err)
	assert.Equal(t, points, back)
}

func TestCurves_TheServiceTableAndChartShowEachImplementationAndAFailedCurator(t *testing.T) {
	floor := cacheRuns(bench.CacheRun{Nodes: 10000, Load: 200 * time.Millisecond})
	points := []CurvePoint{
		cachePoint(curveServices, cacheZkrecipes, 10000, 10000, cacheRuns(bench.CacheRun{Nodes: 10000, Load: 300 * time.Millisecond, HeapPerNode: 1200.4, ServerWatches: 2, Resync: 250 * time.Millisecond}), floor, nil),
		cachePoint(curveServices, cacheFloor, 10000, 10000, floor, floor, nil),
		cachePoint(curveServices, cacheCurator, 10000, 10000, cacheRuns(bench.CacheRun{Nodes: 10000, Load: 500 * time.Millisecond, HeapPerNode: 1500}), floor, nil),
		cachePoint(curveServices, cacheCurator, 100000, 100000, nil, nil, errors.New("ServiceCache not initialized within 120 s: cached 0 of 100000 nodes")),
		cachePoint(curveCache, cacheZkrecipes, 10000, 10001, cacheRuns(bench.CacheRun{Nodes: 10001, Load: time.Second}), nil, nil),
	}
	md := curvesMarkdown(points)
	assert.Contains(t, md, "| instances | implementation | runs | instances | load ms |")
	assert.Contains(t, md, "| 10000 | zkrecipes | 1 | 10000 | 300.0 | 1.50 (1.50) | 1200 | 2 | 0 | 250.0 | 0 |")
	assert.Contains(t, md, "| 10000 | floor (raw reads) | 1 | 10000 | 200.0 | – | – | – | – | – | – |")
	assert.Contains(t, md, "| 10000 | curator | 1 | 10000 | 500.0 | 2.50 (2.50) | 1500 | – | – | – | – |")
	assert.Contains(t, md, "| 100000 | curator | 0 | **failed** |")
	assert.Contains(t, md, "services, curator at 100000 (0 runs measured): ServiceCache not initialized")
	assert.Less(t, strings.Index(md, "Cache (a root"), strings.Index(md, "Service cache ("), "the service table follows the cache table")

	dir := t.TempDir()
	require.NoError(t, writeCurveFiles(dir, points))
	for _, f := range []string{"curve-services.png", "curve-cache.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
}

// A run of the service curve alone keeps the other curves' points, in
// curveOrder: the cache before it, the lease after it.
func TestKeptPoints_TheServiceCurveKeepsTheOthersAndSitsBetweenCacheAndLease(t *testing.T) {
	earlier := []CurvePoint{
		{Curve: curveLease, Size: 1000, Impl: "zkrecipes", Run: "old"},
		{Curve: curveServices, Size: 10000, Impl: cacheZkrecipes, Run: "old"},
		{Curve: curveCache, Size: 10000, Impl: cacheZkrecipes, Run: "old"},
	}
	kept := keptPoints(earlier, curveConfig{ServiceInstances: []int{10000}})
	got := mergePoints(kept, []CurvePoint{{Curve: curveServices, Size: 10000, Impl: cacheZkrecipes, Run: "new"}})
	var rows []string
	for _, p := range got {
		rows = append(rows, p.Curve+" "+p.Run)
	}
	assert.Equal(t, []string{"cache old", "services new", "lease old"}, rows)
}

// The curve flags given replace the preset's sizes, an empty list leaves
// a curve out, and the repetitions and duration apply when above 0.
func TestCurveFlags_TheFlagsGivenReplaceThePresetsSizes(t *testing.T) {
	cc, err := curveFlags("quick", map[string]string{"curve-services": "100000,10000", "curve-caches": "", "curve-reps": "2", "curve-duration": "3s", "curve-drains-per-rep": "0"}, true)
	require.NoError(t, err)
	assert.Equal(t, []int{10000, 100000}, cc.ServiceInstances)
	assert.Nil(t, cc.CacheNodes)
	assert.Equal(t, []int{8, 32}, cc.LockSessions, "a flag not given keeps the preset")
	assert.Equal(t, 2, cc.Reps)
	assert.Equal(t, 5, cc.DrainsPerRep, "0 keeps the preset")
	assert.Equal(t, 3*time.Second, cc.LockDuration)

	_, err = curveFlags("quick", map[string]string{"curve-services": "10k"}, false)
	assert.ErrorContains(t, err, "-curve-services: bad size")
	_, err = curveFlags("off", map[string]string{}, true)
	assert.ErrorContains(t, err, "-curves-only with no curve to measure")
	_, err = curveFlags("off", map[string]string{"curve-services": "10000"}, true)
	assert.ErrorContains(t, err, "set -curve-reps", "sizes without a preset's repetitions")
}
