package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

// oneRun is a run of zkrecipes, go-zookeeper and Curator with the floor and the raw
// lock, one repetition, with round figures.
func oneRun() *Results {
	c := config{Reps: 1, Impls: []string{"zkrecipes", "gozk", "curator"}, Sessions: 8, Drains: []int{50, 200}, ChainLinks: 200}
	r := newResults(c, Machine{CPUs: 2})
	r.Floor = []bench.FloorResult{{CycleP50: 500 * time.Microsecond, ReqPerCycle: 3, Throughput: 4000, PerHandoff: 250 * time.Microsecond,
		ServerCPUPerHandoff: 250 * time.Microsecond, ClientCPUPerHandoff: 150 * time.Microsecond}}
	r.RawLock = []bench.ContendedResult{{Throughput: 3000, HandoffP50: 300 * time.Microsecond, ReqPerAcq: 4,
		ServerCPUPerAcq: 400 * time.Microsecond, ClientCPUPerAcq: 200 * time.Microsecond}}
	for name, tp := range map[string]float64{"zkrecipes": 2500, "gozk": 2000, "curator": 1000} {
		ir := r.add(name)
		ir.Uncontended = []bench.UncontendedResult{{P50: 500 * time.Microsecond}}
		ir.Contended = []bench.ContendedResult{{Throughput: tp, HandoffP99: time.Duration(tp) * time.Microsecond, ReqPerAcq: 6, ServerCPUPerAcq: 500 * time.Microsecond, ClientCPUPerAcq: 250 * time.Microsecond}}
		for _, n := range []string{"50", "200"} {
			ir.Drain[n] = []bench.DrainResult{{PerHandoff: 300 * time.Microsecond, BytesPerHandoff: 111}}
		}
	}
	r.finish()
	return r
}

func TestResults_ReportTheRawLockBesideTheChainFloor(t *testing.T) {
	r := oneRun()

	assert.InDelta(t, 3000.0/2500, r.Ratios["throughput_raw_lock_over_zkrecipes"], 1e-9)
	assert.InDelta(t, 4000.0/2500, r.Ratios["throughput_floor_over_zkrecipes"], 1e-9)
	md := r.markdown()
	assert.Contains(t, md, "| floor (raw lock) | – | – | – | 3000 | 300 |")
	assert.Contains(t, md, "| floor (raw lock) | 4.00 | 400 | 200 | 600 | 3000 | 1.80 of 2 |")
	assert.Contains(t, md, "| zkrecipes | 6.00 | 500 | 250 | 750 | 2500 | 1.88 of 2 |", "requests per acquisition, median of the runs")
	assert.Contains(t, md, "4.00 requests per acquisition")
	assert.Contains(t, md, "| floor (raw requests) | 500 | 0 | 3.00 |", "the floor's requests per cycle")
	assert.Contains(t, md, "| floor chain (per handoff: one delete, one notification) | – |", "the chain's requests are not counted")
}

// The contended floor is the raw lock (within 1.15× of it); the bare
// delete→notification chain is no target, only a reference in Ratios.
func TestResults_TheRawLockIsTheContendedFloorAndTheChainNoTarget(t *testing.T) {
	r := oneRun()

	byWhat := map[string]Target{}
	for _, tg := range r.Targets {
		byWhat[tg.What] = tg
		assert.NotContains(t, tg.What, "chain", "the chain is no target")
	}
	raw, ok := byWhat["8 sessions: raw lock's throughput / ours"]
	require.True(t, ok)
	assert.Equal(t, "≤ 1.15", raw.Want)
	assert.False(t, raw.Met, "1.2 is not within 1.15")
	tail, ok := byWhat["8 sessions: handoff p99 / go-zookeeper's"]
	require.True(t, ok, "the tail target")
	assert.InDelta(t, 2500.0/2000, tail.Ratio, 1e-9)
	assert.False(t, tail.Met, "a p99 a quarter above go-zookeeper's is worse")
	assert.Contains(t, r.Ratios, "throughput_floor_over_zkrecipes", "the chain stays as a reference")
}

func TestDrawChart_DrawsTheRawLockInTheContendedPanelOnly(t *testing.T) {
	r := oneRun()
	path := filepath.Join(t.TempDir(), "chart.png")

	require.NoError(t, drawChart(r, path))
	assert.FileExists(t, path)
}

func TestResults_ReportTheExclusionCheckSummedOverRepetitions(t *testing.T) {
	r := oneRun()
	r.Config.ExclusionHold, r.Config.ExclusionDuration = time.Millisecond, 2*time.Second
	r.Impls["zkrecipes"].Exclusion = []bench.ContendedResult{{Hold: time.Millisecond, Acquisitions: 1500}, {Hold: time.Millisecond, Acquisitions: 1400}}
	r.Impls["gozk"].Exclusion = []bench.ContendedResult{{Hold: time.Millisecond, Acquisitions: 1300, Violations: 2}, {Hold: time.Millisecond, Acquisitions: 1200, Violations: 1}}
	r.RawLockExclusion = []bench.ContendedResult{{Hold: time.Millisecond, Acquisitions: 1600}}
	r.finish()

	assert.Equal(t, Exclusion{Hold: time.Millisecond, Acquisitions: 2900}, r.Median["zkrecipes"].Exclusion)
	assert.Equal(t, Exclusion{Hold: time.Millisecond, Acquisitions: 2500, Violations: 3}, r.Median["gozk"].Exclusion)
	md := r.markdown()
	assert.Contains(t, md, "| 0 | 0 of 2900 |")
	assert.Contains(t, md, "| 0 | 3 of 2500 |")
	assert.Contains(t, md, "| 0 | – |", "curator: not checked in this run")
	assert.Contains(t, md, "| 0 | 0 of 1600 |", "the raw lock")
	assert.Contains(t, md, "staying 1ms inside, for 2s per repetition")
}

func TestResults_FileEachContendedRunUnderItsImplementationAndPhase(t *testing.T) {
	r := newResults(config{}, Machine{})
	r.addContended("zkrecipes", false, bench.ContendedResult{Acquisitions: 1})
	r.addContended("zkrecipes", true, bench.ContendedResult{Acquisitions: 2})
	r.addContended(bench.RawLock.Name, false, bench.ContendedResult{Acquisitions: 3})
	r.addContended(bench.RawLock.Name, true, bench.ContendedResult{Acquisitions: 4})

	assert.Equal(t, 1, r.Impls["zkrecipes"].Contended[0].Acquisitions)
	assert.Equal(t, 2, r.Impls["zkrecipes"].Exclusion[0].Acquisitions)
	assert.Equal(t, 3, r.RawLock[0].Acquisitions)
	assert.Equal(t, 4, r.RawLockExclusion[0].Acquisitions)
	assert.NotContains(t, r.Impls, bench.RawLock.Name, "the raw lock is not an implementation")
}

func TestConfig_TheExclusionCheckRunsUnlessItsHoldIsZero(t *testing.T) {
	c := config{Sessions: 8, Contended: 5 * time.Second, ExclusionHold: time.Millisecond, ExclusionDuration: 2 * time.Second}
	ps := c.contendedPhases()
	require.Len(t, ps, 2)
	assert.Equal(t, bench.Load{Sessions: 8, Duration: 5 * time.Second}, ps[0].load)
	assert.Equal(t, bench.Load{Sessions: 8, Duration: 2 * time.Second, Hold: time.Millisecond}, ps[1].load)

	c.ExclusionHold = 0
	assert.Len(t, c.contendedPhases(), 1)
}

func TestRender_DerivesTheSameTablesFromARunsJSON(t *testing.T) {
	r := oneRun()
	dir := t.TempDir()
	require.NoError(t, r.writeJSON(filepath.Join(dir, "results.json")))

	out := filepath.Join(dir, "again")
	require.NoError(t, render(filepath.Join(dir, "results.json"), out))
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	require.NoError(t, err)
	assert.Equal(t, r.markdown(), string(md))
	assert.FileExists(t, filepath.Join(out, "chart.png"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.json"), []byte("{}"), 0o644))
	assert.ErrorContains(t, render(filepath.Join(dir, "empty.json"), out), "no implementation's results")
}

// Each target's ratio is also given repetition by repetition, each from
// that repetition's own runs, while met is judged on the medians.
func TestResults_ReportEachTargetRepetitionByRepetition(t *testing.T) {
	c := config{Reps: 2, Impls: []string{"zkrecipes", "curator"}, Sessions: 8, Drains: []int{50, 200}, ChainLinks: 200}
	r := newResults(c, Machine{CPUs: 2})
	r.Floor = []bench.FloorResult{{CycleP50: 500 * time.Microsecond, Throughput: 3000, PerHandoff: 250 * time.Microsecond},
		{CycleP50: 400 * time.Microsecond, Throughput: 3200, PerHandoff: 200 * time.Microsecond}}
	for name, tps := range map[string][]float64{"zkrecipes": {2600, 2400}, "curator": {1000, 1000}} {
		ir := r.add(name)
		for _, tp := range tps {
			ir.Uncontended = append(ir.Uncontended, bench.UncontendedResult{P50: 500 * time.Microsecond})
			ir.Contended = append(ir.Contended, bench.ContendedResult{Throughput: tp})
			for _, n := range []string{"50", "200"} {
				ir.Drain[n] = append(ir.Drain[n], bench.DrainResult{PerHandoff: 300 * time.Microsecond, BytesPerHandoff: 111})
			}
		}
	}
	r.finish()

	byWhat := map[string]Target{}
	for _, tg := range r.Targets {
		byWhat[tg.What] = tg
	}
	cur := byWhat["8 sessions: throughput / Curator's"]
	assert.InDelta(t, 2.5, cur.Ratio, 1e-9, "the medians' ratio")
	assert.True(t, cur.Met)
	require.Len(t, cur.PerRep, 2)
	assert.InDelta(t, 2.6, cur.PerRep[0], 1e-9)
	assert.InDelta(t, 2.4, cur.PerRep[1], 1e-9, "the second repetition alone would miss")
	unc := byWhat["uncontended p50 / floor"]
	require.Len(t, unc.PerRep, 2)
	assert.InDelta(t, 1.0, unc.PerRep[0], 1e-9)
	assert.InDelta(t, 1.25, unc.PerRep[1], 1e-9, "each repetition against its own floor")
	assert.Contains(t, r.markdown(), "| 8 sessions: throughput / Curator's | 2.50 | 2.60, 2.40 | ≥ 2.5 | yes |")

	r.Floor = r.Floor[:1] // a repetition missing: no per-repetition ratios
	r.finish()
	assert.Empty(t, r.Targets[0].PerRep)
	assert.Contains(t, r.markdown(), "| 8 sessions: throughput / Curator's | 2.50 | – | ≥ 2.5 | yes |")
}
