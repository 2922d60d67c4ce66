package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

// heldRun is one run of the lease curve at n leases: acquired in acq,
// whole again dropWhole after the drop and restartWhole after the
// restart (0: not whole), with lost leases at each.
func heldRun(n int, acq, dropWhole, restartWhole time.Duration, dropLost, restartLost int) bench.HeldLeasesResult {
	return bench.HeldLeasesResult{
		Leases: n, Acquire: acq, HeapPerLease: 1600, GoroutinesPerLease: 0.001, Watches: int64(n),
		Drop: bench.Recovery{Back: dropWhole / 2, SameSession: true, Whole: dropWhole, Lost: dropLost, BytesReceived: int64(n) * 100},
		Restart: &bench.Recovery{Server: 3 * time.Second, Back: restartWhole - time.Second, SameSession: true,
			Whole: restartWhole, Lost: restartLost},
	}
}

func TestLeaseKinds_AreZkrecipesGoZookeeperAndCurator(t *testing.T) {
	assert.Equal(t, []string{"zkrecipes", "gozk", "curator"}, leaseKinds)
}

func TestCurvePreset_TheLeaseCurveHoldsAThousandToAHundredThousandLeasesAndQuickAThousand(t *testing.T) {
	full, err := curvePreset("full")
	require.NoError(t, err)
	assert.Equal(t, []int{1000, 10000, 100000}, full.LeaseHeld)
	assert.Equal(t, full.LeaseHeld, full.sizes(curveLease))

	quick, err := curvePreset("quick")
	require.NoError(t, err)
	assert.Equal(t, []int{1000}, quick.LeaseHeld)

	assert.True(t, curveConfig{LeaseHeld: []int{100000}}.enabled(), "the lease curve alone is a curve to measure")
}

func TestLeasePoint_IsTheMedianOfItsRunsWithTheLostLeasesSummed(t *testing.T) {
	runs := []bench.HeldLeasesResult{
		heldRun(1000, 3*time.Second, 300*time.Millisecond, 6*time.Second, 0, 0),
		heldRun(1000, 1*time.Second, 100*time.Millisecond, 4*time.Second, 2, 1),
		heldRun(1000, 2*time.Second, 200*time.Millisecond, 5*time.Second, 0, 0),
	}
	p := leasePoint(bench.LeasesZkrecipes, 1000, runs, nil)

	assert.Equal(t, curveLease, p.Curve)
	assert.Equal(t, 3, p.Runs)
	assert.Empty(t, p.Error)
	require.NotNil(t, p.LeasePoint)
	assert.Equal(t, 2*time.Second, p.Acquire)
	assert.Equal(t, 2*time.Millisecond, p.AcquirePerLease, "the median acquisition over the leases")
	assert.InDelta(t, 1600, p.HeapPerLease, 1e-9)
	assert.InDelta(t, 1000, p.WatchesAdded, 1e-9)
	assert.Equal(t, 200*time.Millisecond, p.DropWhole)
	assert.Equal(t, 100*time.Millisecond, p.DropBack)
	assert.Equal(t, 2, p.DropLost, "lost leases are summed, never a median")
	assert.InDelta(t, 100000, p.DropBytes, 1e-9)
	assert.Equal(t, 3, p.Restarts)
	assert.Equal(t, 3*time.Second, p.RestartServer)
	assert.Equal(t, 5*time.Second, p.RestartWhole)
	assert.Equal(t, 1, p.RestartLost)
	assert.Zero(t, p.DropNotWhole)
	assert.Nil(t, p.LockPoint)
	assert.Nil(t, p.MemoryPoint)
}

// A session that did not get every watch back within the wait is
// counted apart, not averaged in as a time of 0.
func TestLeasePoint_ARunNotWholeAgainIsCountedApartFromTheTimes(t *testing.T) {
	runs := []bench.HeldLeasesResult{
		heldRun(100000, time.Minute, 4*time.Second, 9*time.Second, 0, 0),
		heldRun(100000, time.Minute, 0, 0, 0, 0),
		heldRun(100000, time.Minute, 6*time.Second, 11*time.Second, 0, 0),
	}
	p := leasePoint(bench.LeasesZkrecipes, 100000, runs, nil)

	require.NotNil(t, p.LeasePoint)
	assert.Equal(t, 5*time.Second, p.DropWhole, "the median of the two runs that were whole")
	assert.Equal(t, 1, p.DropNotWhole)
	assert.Equal(t, 10*time.Second, p.RestartWhole)
	assert.Equal(t, 1, p.RestartNotWhole)

	md := curvesMarkdown([]CurvePoint{p})
	assert.Contains(t, md, "5.00, **not whole** in 1")
}

func TestLeasePoint_AKindThatFailsAtASizeRecordsWhyAndARunWithoutRestartSaysSo(t *testing.T) {
	failed := leasePoint(bench.LeasesGozk, 100000, nil, errors.New("acquiring 100000 leases: zk: connection closed"))
	assert.Equal(t, 0, failed.Runs)
	assert.Contains(t, failed.Error, "connection closed")
	assert.Nil(t, failed.LeasePoint, "no figures for a point that never ran")

	r := heldRun(1000, time.Second, 50*time.Millisecond, 0, 0, 0)
	r.Restart = nil
	p := leasePoint(bench.LeasesGozk, 1000, []bench.HeldLeasesResult{r}, nil)
	require.NotNil(t, p.LeasePoint)
	assert.Zero(t, p.Restarts)
	assert.Zero(t, p.RestartWhole)

	md := curvesMarkdown([]CurvePoint{p, failed})
	assert.Contains(t, md, "| 1000 | gozk | 1 | 1.00 | 1000 | 1600 | 0.0010 | 1000 | 0.03 / 0.05 | 0 | not run | – |")
	assert.Contains(t, md, "| 100000 | gozk | 0 | **failed** |")
	assert.Contains(t, md, "lease, gozk at 100000 (0 runs measured): acquiring 100000 leases: zk: connection closed")
}

// One JSON line a point, the lease figures flat beside the point's
// identity, none of them named as another curve's figure (encoding/json
// drops both of two embedded fields of one name).
func TestCurvePoint_ALeasePointsJSONLineHasItsFiguresFlatAndReadsBack(t *testing.T) {
	p := leasePoint(bench.LeasesZkrecipes, 1000, []bench.HeldLeasesResult{heldRun(1000, time.Second, time.Second, 5*time.Second, 0, 0)}, nil)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"curve", "size", "impl", "runs", "acquire_ns", "acquire_per_lease_ns", "heap_bytes_per_lease",
		"goroutines_per_lease", "watches_added", "drop_back_ns", "drop_whole_ns", "drop_lost", "drop_not_whole",
		"drop_bytes_received", "restarts", "restart_server_ns", "restart_back_ns", "restart_whole_ns", "restart_lost"} {
		assert.Contains(t, m, k)
	}
	assert.EqualValues(t, 0, m["drop_lost"], "0 leases lost is a result: written")
	for _, k := range []string{"heap_bytes_per_session", "throughput_per_s", "per_handoff_ns", "error"} {
		assert.NotContains(t, m, k)
	}

	path := filepath.Join(t.TempDir(), "curves.jsonl")
	require.NoError(t, writeCurves(path, []CurvePoint{p}))
	back, err := readCurves(path)
	require.NoError(t, err)
	assert.Equal(t, []CurvePoint{p}, back)
}

func TestCurves_TheLeaseTableAndChartShowEveryKindAndAFailedPoint(t *testing.T) {
	points := []CurvePoint{
		leasePoint(bench.LeasesZkrecipes, 1000, []bench.HeldLeasesResult{heldRun(1000, time.Second, 200*time.Millisecond, 5*time.Second, 0, 0)}, nil),
		leasePoint(bench.LeasesGozk, 1000, []bench.HeldLeasesResult{heldRun(1000, 2*time.Second, 100*time.Millisecond, 4*time.Second, 0, 0)}, nil),
		leasePoint(bench.LeasesZkrecipes, 100000, []bench.HeldLeasesResult{heldRun(100000, time.Minute, 3*time.Second, 9*time.Second, 0, 0)}, nil),
		leasePoint(bench.LeasesGozk, 100000, nil, errors.New("no memory")),
		leasePoint(bench.LeasesCurator, 1000, []bench.HeldLeasesResult{heldRun(1000, 3*time.Second, 300*time.Millisecond, 6*time.Second, 0, 0)}, nil),
	}
	md := curvesMarkdown(points)
	assert.Contains(t, md, "Leases held on one session")
	assert.Contains(t, md, "| 1000 | zkrecipes | 1 | 1.00 | 1000 | 1600 | 0.0010 | 1000 | 0.10 / 0.20 | 0 | 3.00 / 4.00 / 5.00 | 0 |")
	assert.Contains(t, md, "| 100000 | zkrecipes | 1 | 60.00 | 600 | 1600 | 0.0010 | 100000 | 1.50 / 3.00 | 0 | 3.00 / 8.00 / 9.00 | 0 |")
	assert.Contains(t, md, "| 100000 | gozk | 0 | **failed** |")
	assert.Contains(t, md, "| 1000 | curator | 1 | 3.00 | 3000 | 1600 | 0.0010 | 1000 | 0.15 / 0.30 | 0 | 3.00 / 5.00 / 6.00 | 0 |")
	assert.Contains(t, md, "Curator's heap and threads are its JVM's")

	dir := t.TempDir()
	require.NoError(t, writeCurveFiles(dir, points))
	st, err := os.Stat(filepath.Join(dir, "curve-lease.png"))
	require.NoError(t, err)
	assert.Positive(t, st.Size())
	for _, f := range []string{"curve-lock.png", "curve-memory.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		assert.ErrorIs(t, err, os.ErrNotExist, "no chart for a curve without points: %s", f)
	}
}

// A run of the lease curve alone keeps the other curves' points, and a
// run of the others keeps the lease points.
func TestKeptPoints_TheLeaseCurveAndTheOthersKeepEachOthersPoints(t *testing.T) {
	earlier := []CurvePoint{
		{Curve: curveLease, Size: 1000, Impl: bench.LeasesZkrecipes, Run: "old"},
		{Curve: curveLease, Size: 100000, Impl: bench.LeasesZkrecipes, Run: "old"},
		{Curve: curveMemory, Size: 100, Impl: bench.MemoryZkrecipes, Run: "old"},
		{Curve: curveLock, Size: 8, Impl: "zkrecipes", Run: "old"},
	}
	rows := func(ps []CurvePoint) []string {
		var rs []string
		for _, p := range ps {
			rs = append(rs, fmt.Sprintf("%s %d %s", p.Curve, p.Size, p.Run))
		}
		return rs
	}
	leasesOnly := mergePoints(keptPoints(earlier, curveConfig{LeaseHeld: []int{100000}}),
		[]CurvePoint{{Curve: curveLease, Size: 100000, Impl: bench.LeasesZkrecipes, Run: "new"}})
	assert.Equal(t, []string{"lock 8 old", "memory 100 old", "lease 1000 old", "lease 100000 new"}, rows(leasesOnly))

	lockOnly := mergePoints(keptPoints(earlier, curveConfig{LockSessions: []int{8}}),
		[]CurvePoint{{Curve: curveLock, Size: 8, Impl: "zkrecipes", Run: "new"}})
	assert.Equal(t, []string{"lock 8 new", "memory 100 old", "lease 1000 old", "lease 100000 old"}, rows(lockOnly))
}
