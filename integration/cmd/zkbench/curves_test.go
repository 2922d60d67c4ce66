package main

import (
	"context"
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

func TestCurvePreset_FullMeasuresTheIssuesSizesAndQuickTheSmallest(t *testing.T) {
	full, err := curvePreset("full")
	require.NoError(t, err)
	assert.Equal(t, []int{8, 32, 128, 512}, full.LockSessions)
	assert.Equal(t, []int{10, 100, 1000}, full.DrainWaiters)
	assert.Equal(t, []int{1, 100, 1000}, full.MemorySessions)
	assert.Equal(t, 3, full.Reps)
	assert.GreaterOrEqual(t, full.DrainsPerRep, 5, "the drain is judged on at least 5 interleaved drains per repetition")

	quick, err := curvePreset("quick")
	require.NoError(t, err)
	assert.Equal(t, []int{8, 32}, quick.LockSessions)
	assert.Equal(t, []int{10}, quick.DrainWaiters)
	assert.Equal(t, []int{1, 100}, quick.MemorySessions)
	assert.Equal(t, 1, quick.Reps)
	assert.True(t, quick.enabled())

	off, err := curvePreset("off")
	require.NoError(t, err)
	assert.False(t, off.enabled())

	_, err = curvePreset("fast")
	assert.ErrorContains(t, err, "full, quick or off")
}

func TestParseSizes_SortsAndDropsRepeatsAndRefusesNonPositive(t *testing.T) {
	ns, err := parseSizes(" 512,8, 32,8 ")
	require.NoError(t, err)
	assert.Equal(t, []int{8, 32, 512}, ns)

	ns, err = parseSizes("")
	require.NoError(t, err)
	assert.Nil(t, ns, "an empty list skips the curve")

	for _, bad := range []string{"0", "-8", "8,x", "1e3"} {
		_, err := parseSizes(bad)
		assert.Error(t, err, bad)
	}
}

func TestLockPoint_IsTheMedianOfItsRunsWithAcquisitionsAndViolationsSummed(t *testing.T) {
	runs := []bench.ContendedResult{
		{Acquisitions: 100, Throughput: 1000, ReqPerAcq: 5, ResponseBytesPerAcq: 900, HandoffP99: 3 * time.Millisecond, ServerCPUPerAcq: 300 * time.Microsecond},
		{Acquisitions: 300, Throughput: 3000, ReqPerAcq: 5.2, ResponseBytesPerAcq: 1100, HandoffP99: 1 * time.Millisecond, ServerCPUPerAcq: 500 * time.Microsecond, Violations: 1},
		{Acquisitions: 200, Throughput: 2000, ReqPerAcq: 5.1, ResponseBytesPerAcq: 1000, HandoffP99: 2 * time.Millisecond, ServerCPUPerAcq: 400 * time.Microsecond},
	}
	p := lockPoint("gozk", 32, runs, nil)

	assert.Equal(t, curveLock, p.Curve)
	assert.Equal(t, 32, p.Size)
	assert.Equal(t, 3, p.Runs)
	assert.Empty(t, p.Error)
	require.NotNil(t, p.LockPoint)
	assert.InDelta(t, 2000, p.Throughput, 1e-9)
	assert.InDelta(t, 5.1, p.ReqPerAcq, 1e-9)
	assert.InDelta(t, 1000, p.BytesPerAcq, 1e-9)
	assert.Equal(t, 2*time.Millisecond, p.HandoffP99)
	assert.Equal(t, 400*time.Microsecond, p.ServerCPUPerAcq)
	assert.Equal(t, 600, p.Acquisitions)
	assert.Equal(t, 1, p.Violations)
	assert.Equal(t, []float64{1000, 3000, 2000}, p.RepThroughput)
	assert.Nil(t, p.DrainPoint)
	assert.Nil(t, p.MemoryPoint)
}

func TestLockPoint_APeerThatCannotRunASizeRecordsWhy(t *testing.T) {
	p := lockPoint("curator", 512, nil, errors.New("peer curator bench-contended exited: unable to create native thread"))

	assert.Equal(t, 0, p.Runs)
	assert.Contains(t, p.Error, "unable to create native thread")
	assert.Nil(t, p.LockPoint, "no figures for a point that never ran")
}

// The drain is judged against the marked chain of the same repetition:
// each repetition's median drain over that repetition's median chain,
// then the median of those ratios.
func TestDrainPoint_IsJudgedAgainstTheMarkedChainOfTheSameRepetition(t *testing.T) {
	d := func(us ...int) []bench.DrainResult {
		var ds []bench.DrainResult
		for _, u := range us {
			ds = append(ds, bench.DrainResult{PerHandoff: time.Duration(u) * time.Microsecond, BytesPerHandoff: 111, ReqPerHandoff: 1})
		}
		return ds
	}
	reps := [][]bench.DrainResult{d(300, 200, 250, 260, 240), d(500, 480, 520, 510, 490), d(330, 310, 320, 300, 340)}
	floor := [][]bench.DrainResult{d(200, 200, 200, 200, 200), d(400, 400, 400, 400, 400), d(300, 300, 300, 300, 300)}
	p := drainPoint("zkrecipes", 100, reps, floor, nil)

	require.NotNil(t, p.DrainPoint)
	assert.Equal(t, 15, p.Runs)
	assert.Equal(t, []time.Duration{250 * time.Microsecond, 500 * time.Microsecond, 320 * time.Microsecond}, p.RepPerHandoff)
	require.Len(t, p.RepVsMarkedFloor, 3)
	assert.InDelta(t, 1.25, p.RepVsMarkedFloor[0], 1e-9)
	assert.InDelta(t, 1.25, p.RepVsMarkedFloor[1], 1e-9)
	assert.InDelta(t, 320.0/300, p.RepVsMarkedFloor[2], 1e-9)
	assert.InDelta(t, 1.25, p.VsMarkedFloor, 1e-9)
	assert.Equal(t, 320*time.Microsecond, p.PerHandoff, "the median of every drain")
	assert.InDelta(t, 111, p.BytesPerHandoff, 1e-9)

	chain := drainPoint(markedChainName, 100, floor, nil, nil)
	assert.Zero(t, chain.VsMarkedFloor, "the chain is not compared with itself")
	assert.Empty(t, chain.RepVsMarkedFloor)
}

func TestDrainPoint_AFailedDrainKeepsTheDrainsMeasuredBeforeIt(t *testing.T) {
	reps := [][]bench.DrainResult{{{PerHandoff: time.Millisecond}, {PerHandoff: 3 * time.Millisecond}}}
	p := drainPoint("kazoo", 1000, reps, nil, errors.New("waiters did not queue within 120s"))

	assert.Equal(t, 2, p.Runs)
	assert.Equal(t, "waiters did not queue within 120s", p.Error)
	require.NotNil(t, p.DrainPoint)
	assert.Equal(t, 2*time.Millisecond, p.PerHandoff)
	assert.Zero(t, p.VsMarkedFloor, "no chain measured, no ratio")
}

func TestMemoryPoint_IsTheMedianOfItsRuns(t *testing.T) {
	p := memoryPoint(bench.MemoryGozk, 100, []bench.SessionMemoryResult{
		{Sessions: 100, HeapPerSession: 3e6, GoroutinesPerSession: 4},
		{Sessions: 100, HeapPerSession: 3.2e6, GoroutinesPerSession: 4},
		{Sessions: 100, HeapPerSession: 3.1e6, GoroutinesPerSession: 4},
	}, nil)

	require.NotNil(t, p.MemoryPoint)
	assert.InDelta(t, 3.1e6, p.HeapPerSession, 1e-6)
	assert.InDelta(t, 4, p.GoroutinesPerSession, 1e-9)
}

// One JSON line a point, its curve's figures flat beside the point's
// identity; a zero figure is written (0 violations is a result), a
// figure of another curve is not.
func TestCurvePoint_JSONLineHasTheCurvesFiguresFlat(t *testing.T) {
	p := lockPoint("zkrecipes", 8, []bench.ContendedResult{{Acquisitions: 10, Throughput: 2000, ReqPerAcq: 5.01}}, nil)
	p.Run = "2026-11-29T07:00:00Z"
	b, err := json.Marshal(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))

	for _, k := range []string{"curve", "size", "impl", "run", "runs", "throughput_per_s", "requests_per_acquisition",
		"response_bytes_per_acquisition", "handoff_p99_ns", "violations", "acquisitions"} {
		assert.Contains(t, m, k)
	}
	assert.Equal(t, "lock", m["curve"])
	assert.EqualValues(t, 8, m["size"])
	assert.EqualValues(t, 0, m["violations"])
	for _, k := range []string{"error", "per_handoff_ns", "heap_bytes_per_session", "server_cpu_per_acquisition_ns"} {
		assert.NotContains(t, m, k, "absent: %s", k)
	}

	failed, err := json.Marshal(memoryPoint(bench.MemoryZkrecipes, 1000, nil, errors.New("too many open files")))
	require.NoError(t, err)
	m = nil
	require.NoError(t, json.Unmarshal(failed, &m))
	assert.Equal(t, "too many open files", m["error"])
	assert.EqualValues(t, 0, m["runs"])
	assert.NotContains(t, m, "heap_bytes_per_session")
}

func TestCurves_WrittenAndReadBackOneLineAPoint(t *testing.T) {
	points := []CurvePoint{
		lockPoint("zkrecipes", 8, []bench.ContendedResult{{Acquisitions: 10, Throughput: 2000}}, nil),
		lockPoint("curator", 512, nil, errors.New("no threads")),
		drainPoint("gozk", 10, [][]bench.DrainResult{{{PerHandoff: time.Millisecond}}}, [][]bench.DrainResult{{{PerHandoff: time.Millisecond / 2}}}, nil),
		memoryPoint(bench.MemoryGozk, 1, []bench.SessionMemoryResult{{HeapPerSession: 3e6}}, nil),
	}
	path := filepath.Join(t.TempDir(), "curves.jsonl")
	require.NoError(t, writeCurves(path, points))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, len(points), countLines(b))

	back, err := readCurves(path)
	require.NoError(t, err)
	assert.Equal(t, points, back)
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

func TestCurves_TheTablesAndChartsShowAFailedPoint(t *testing.T) {
	points := []CurvePoint{
		lockPoint("zkrecipes", 8, []bench.ContendedResult{{Acquisitions: 10, Throughput: 2000, ServerCPUPerAcq: 300 * time.Microsecond}}, nil),
		lockPoint("zkrecipes", 32, []bench.ContendedResult{{Acquisitions: 10, Throughput: 1800}}, nil),
		lockPoint("kazoo", 8, []bench.ContendedResult{{Acquisitions: 10, Throughput: 500}}, nil),
		lockPoint("kazoo", 32, nil, errors.New("kazoo_peer: error: bench-contended: too many threads")),
		drainPoint("zkrecipes", 10, [][]bench.DrainResult{{{PerHandoff: time.Millisecond}}}, [][]bench.DrainResult{{{PerHandoff: time.Millisecond / 2}}}, nil),
		drainPoint(markedChainName, 10, [][]bench.DrainResult{{{PerHandoff: time.Millisecond / 2}}}, nil, nil),
		memoryPoint(bench.MemoryZkrecipes, 1, []bench.SessionMemoryResult{{HeapPerSession: 3e6, GoroutinesPerSession: 6}}, nil),
		memoryPoint(bench.MemoryGozk, 1, []bench.SessionMemoryResult{{HeapPerSession: 3e6, GoroutinesPerSession: 4}}, nil),
	}
	md := curvesMarkdown(points)
	assert.Contains(t, md, "| 32 | kazoo | 0 | **failed** |")
	assert.Contains(t, md, "lock, kazoo at 32 (0 runs measured): kazoo_peer: error: bench-contended: too many threads")
	assert.Contains(t, md, "| 10 | zkrecipes | 1 | 1000 | 2.00 (2.00) |")
	assert.Contains(t, md, "| 8 | zkrecipes | 1 | 2000 | 0.00 | 0 | 0 | 300 | 0 |")
	assert.Contains(t, md, "| 32 | zkrecipes | 1 | 1800 | 0.00 | 0 | 0 | – | 0 |", "no server CPU read: a dash, not 0")

	dir := t.TempDir()
	require.NoError(t, writeCurveFiles(dir, points))
	for _, f := range []string{"curves.jsonl", "curves.md", "curve-lock.png", "curve-drain.png", "curve-memory.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if assert.NoError(t, err, f) {
			assert.Positive(t, st.Size(), f)
		}
	}
}

func TestRotate_BeginsAtTheKthElement(t *testing.T) {
	assert.Equal(t, []int{3, 1, 2}, rotate([]int{1, 2, 3}, 2))
	assert.Equal(t, []int{2, 3, 1}, rotate([]int{1, 2, 3}, 4))
	assert.Nil(t, rotate([]int(nil), 3))
}

// fakeRunner is an implementation that needs no server: its runs return
// fixed results, or fail with err.
type fakeRunner struct {
	id    string
	err   error
	calls *[]string
}

func (f fakeRunner) name() string { return f.id }

func (f fakeRunner) uncontended(context.Context, bench.Env, string) (bench.UncontendedResult, error) {
	return bench.UncontendedResult{}, errors.New("not used")
}

func (f fakeRunner) contended(_ context.Context, _ bench.Env, _ string, load bench.Load) (bench.ContendedResult, error) {
	*f.calls = append(*f.calls, fmt.Sprintf("lock %s %d", f.id, load.Sessions))
	if f.err != nil {
		return bench.ContendedResult{}, f.err
	}
	return bench.ContendedResult{Sessions: load.Sessions, Acquisitions: 100, Throughput: 1000}, nil
}

func (f fakeRunner) drain(_ context.Context, _ bench.Env, _ string, n int) (bench.DrainResult, error) {
	*f.calls = append(*f.calls, fmt.Sprintf("drain %s %d", f.id, n))
	if f.err != nil {
		return bench.DrainResult{}, f.err
	}
	return bench.DrainResult{Waiters: n, PerHandoff: time.Millisecond}, nil
}

// A peer that cannot run a size is tried once at that size, then left
// out of it, and its point says why; the others' points are whole, and
// the points are on disk after each size.
func TestCurveRun_APeerThatFailsAtASizeGetsAPointSayingWhy(t *testing.T) {
	var calls []string
	ok := fakeRunner{id: "zkrecipes", calls: &calls}
	bad := fakeRunner{id: "curator", err: errors.New("java.lang.OutOfMemoryError: unable to create native thread"), calls: &calls}
	dir := t.TempDir()
	cr := &curveRun{cc: curveConfig{Reps: 2, DrainsPerRep: 5, LockDuration: time.Second}, dir: dir, started: "2026-11-29T07:00:00Z"}

	require.NoError(t, cr.lock(context.Background(), []runner{ok, bad}, 32))
	require.NoError(t, cr.drain(context.Background(), []drainer{ok, bad, markedChainOf(&calls)}, 10))

	count := func(prefix string) int {
		n := 0
		for _, c := range calls {
			if c == prefix {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 2, count("lock zkrecipes 32"), "once a repetition")
	assert.Equal(t, 1, count("lock curator 32"), "not tried again at the size it failed at")
	assert.Equal(t, 10, count("drain zkrecipes 10"), "5 drains in each of 2 repetitions")
	assert.Equal(t, 1, count("drain curator 10"))

	back, err := readCurves(filepath.Join(dir, "curves.jsonl"))
	require.NoError(t, err)
	byKey := map[string]CurvePoint{}
	for _, p := range back {
		byKey[fmt.Sprintf("%s %s %d", p.Curve, p.Impl, p.Size)] = p
	}
	require.Len(t, byKey, 5)
	assert.Equal(t, 2, byKey["lock zkrecipes 32"].Runs)
	assert.Contains(t, byKey["lock curator 32"].Error, "unable to create native thread")
	assert.Equal(t, 0, byKey["lock curator 32"].Runs)
	z := byKey["drain zkrecipes 10"]
	require.NotNil(t, z.DrainPoint)
	assert.Equal(t, 10, z.Runs)
	assert.Equal(t, []float64{2, 2}, z.RepVsMarkedFloor, "each repetition against its own chain")
	assert.Equal(t, "2026-11-29T07:00:00Z", z.Run)
	assert.Contains(t, byKey["drain curator 10"].Error, "unable to create native thread")
}

// fakeChain is a marked chain twice as fast as fakeRunner's drains.
type fakeChain struct{ calls *[]string }

func markedChainOf(calls *[]string) drainer { return fakeChain{calls} }

func (fakeChain) name() string { return markedChainName }

func (f fakeChain) drain(_ context.Context, _ bench.Env, _ string, n int) (bench.DrainResult, error) {
	*f.calls = append(*f.calls, fmt.Sprintf("drain chain %d", n))
	return bench.DrainResult{Waiters: n, PerHandoff: time.Millisecond / 2}, nil
}

func TestKeptPoints_ARunOfOneCurveKeepsTheOthersPointsInCurveAndSizeOrder(t *testing.T) {
	earlier := []CurvePoint{
		{Curve: curveLock, Size: 8, Impl: "zkrecipes", Run: "old"},
		{Curve: curveLock, Size: 512, Impl: "zkrecipes", Run: "old"},
		{Curve: curveDrain, Size: 10, Impl: "zkrecipes", Run: "old"},
		{Curve: curveMemory, Size: 100, Impl: "zkrecipes", Run: "old"},
	}
	cc := curveConfig{LockSessions: []int{8, 32}}
	kept := keptPoints(earlier, cc)
	got := mergePoints(kept, []CurvePoint{
		{Curve: curveLock, Size: 32, Impl: "zkrecipes", Run: "new"},
		{Curve: curveLock, Size: 8, Impl: "zkrecipes", Run: "new"},
		{Curve: curveLock, Size: 8, Impl: "go-zk", Run: "new"},
	})
	var rows []string
	for _, p := range got {
		rows = append(rows, fmt.Sprintf("%s %d %s %s", p.Curve, p.Size, p.Impl, p.Run))
	}
	assert.Equal(t, []string{
		"lock 8 zkrecipes new", "lock 8 go-zk new", // re-measured: the old point is gone
		"lock 32 zkrecipes new",
		"lock 512 zkrecipes old", // not measured by this run: kept
		"drain 10 zkrecipes old",
		"memory 100 zkrecipes old",
	}, rows)
}
