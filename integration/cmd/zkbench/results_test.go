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
		ir.Contended = []bench.ContendedResult{{Throughput: tp, HandoffP99: time.Duration(tp) * time.Microsecond, ReqPerAcq: 6, ServerCPUPerAcq: 500 * time.Microsecond, ClientCPUPerAcq: 250 * time.Microsecond, ResponseBytesPerAcq: 300}}
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

// The targets are issue 33's, against go-zookeeper's lock: the raw lock,
// Curator and the bare delete→notification chain are references in
// Ratios, not targets.
func TestResults_TheTargetsAreTheServersWorkAgainstGoZookeepersLock(t *testing.T) {
	r := oneRun()

	byWhat := map[string]Target{}
	for _, tg := range r.Targets {
		byWhat[tg.What] = tg
		assert.NotContains(t, tg.What, "chain", "the chain is no target")
		assert.NotContains(t, tg.What, "raw lock", "the raw lock is no target")
		assert.NotContains(t, tg.What, "Curator", "Curator is no target")
	}
	for what, want := range map[string]string{
		"contended: throughput / go-zookeeper's":                     "≥ 1.0",
		"contended: requests per acquisition / go-zookeeper's":       "≤ 1.0",
		"contended: server CPU per acquisition / go-zookeeper's":     "≤ 1.0",
		"contended: response bytes per acquisition / go-zookeeper's": "≤ 1.0",
		"contended: handoff p99 / go-zookeeper's":                    "≤ 1.2",
		"drain 200: time per handoff / go-zookeeper's":               "≤ 0.6",
		"uncontended p50 / go-zookeeper's":                           "≤ 1.0",
	} {
		tg, ok := byWhat[what]
		if assert.True(t, ok, what) {
			assert.Equal(t, want, tg.Want, what)
		}
	}
	tail := byWhat["contended: handoff p99 / go-zookeeper's"]
	assert.InDelta(t, 2500.0/2000, tail.Ratio, 1e-9)
	assert.False(t, tail.Met, "a p99 a quarter above go-zookeeper's is above 1.2")
	assert.True(t, byWhat["contended: requests per acquisition / go-zookeeper's"].Met, "as many requests")
	assert.Contains(t, r.Ratios, "throughput_floor_over_zkrecipes", "the chain stays as a reference")
	assert.Contains(t, r.Ratios, "throughput_raw_lock_over_zkrecipes", "the raw lock stays as a reference")
}

// Issue 33's table: per implementation, the server's work per contended
// acquisition and the handoff times; then zkrecipes' ratios to
// go-zookeeper's lock and to each variant with an optimisation off, with
// each repetition's; CPU and times labelled with the load they met.
func TestResults_TableTheServersWorkPerAcquisitionWithRatios(t *testing.T) {
	c := config{Reps: 2, Impls: []string{"zkrecipes", "gozk", "zkrecipes-plain"}, Sessions: 8, Drains: []int{50, 200}, ChainLinks: 200}
	r := newResults(c, Machine{CPUs: 2, LoadAvgStart: "2.50 1.00 0.50", LoadAvgEnd: "0.40 0.30 0.20"})
	r.Floor = []bench.FloorResult{{Throughput: 3000}, {Throughput: 3000}}
	for name, k := range map[string]bench.ContendedResult{
		"zkrecipes":       {Throughput: 2000, ReqPerAcq: 5, ServerCPUPerAcq: 400 * time.Microsecond, ResponseBytesPerAcq: 300, HandoffP50: 500 * time.Microsecond, HandoffP99: 2 * time.Millisecond, NotificationsPerAcq: 2, PacketsSentPerAcq: 7},
		"gozk":            {Throughput: 1600, ReqPerAcq: 5, ServerCPUPerAcq: 500 * time.Microsecond, ResponseBytesPerAcq: 400, HandoffP50: 800 * time.Microsecond, HandoffP99: 2 * time.Millisecond, NotificationsPerAcq: 1, PacketsSentPerAcq: 6},
		"zkrecipes-plain": {Throughput: 1800, ReqPerAcq: 5, ServerCPUPerAcq: 500 * time.Microsecond, ResponseBytesPerAcq: 600, HandoffP50: 1000 * time.Microsecond, HandoffP99: 4 * time.Millisecond, NotificationsPerAcq: 1, PacketsSentPerAcq: 6},
	} {
		ir := r.add(name)
		for range 2 {
			ir.Uncontended = append(ir.Uncontended, bench.UncontendedResult{P50: 500 * time.Microsecond})
			ir.Contended = append(ir.Contended, k)
		}
	}
	r.finish()

	md := r.markdown()
	assert.Contains(t, md, "| zkrecipes | 5.00 | 400 | 300 | 500 | 2000 | 2.00 | 7.00 |")
	assert.Contains(t, md, "| gozk | 5.00 | 500 | 400 | 800 | 2000 | 1.00 | 6.00 |")
	assert.Contains(t, md, "| zkrecipes / gozk | 1.00 (1.00, 1.00) | 0.80 (0.80, 0.80) | 0.75 (0.75, 0.75) | 0.62 (0.62, 0.62) | 1.00 (1.00, 1.00) | 2.00 | 1.17 |")
	assert.Contains(t, md, "| zkrecipes / zkrecipes-plain | 1.00 (1.00, 1.00) | 0.80 (0.80, 0.80) | 0.50 (0.50, 0.50) | 0.50 (0.50, 0.50) | 0.50 (0.50, 0.50) | 2.00 | 1.17 |")
	assert.Contains(t, md, "measured on a loaded machine (load average 2.50 1.00 0.50 at the start")
	assert.InDelta(t, 2000.0/1600, r.Ratios["throughput_vs_best_peer"], 1e-9, "a variant is not a peer")
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
	c := config{Reps: 2, Impls: []string{"zkrecipes", "gozk"}, Sessions: 8, Drains: []int{50, 200}, ChainLinks: 200}
	r := newResults(c, Machine{CPUs: 2})
	r.Floor = []bench.FloorResult{{CycleP50: 500 * time.Microsecond, Throughput: 3000, PerHandoff: 250 * time.Microsecond},
		{CycleP50: 400 * time.Microsecond, Throughput: 3200, PerHandoff: 200 * time.Microsecond}}
	for name, tps := range map[string][]float64{"zkrecipes": {1100, 900}, "gozk": {1000, 1000}} {
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
	tp := byWhat["contended: throughput / go-zookeeper's"]
	assert.InDelta(t, 1.0, tp.Ratio, 1e-9, "the medians' ratio")
	assert.True(t, tp.Met)
	require.Len(t, tp.PerRep, 2)
	assert.InDelta(t, 1.1, tp.PerRep[0], 1e-9)
	assert.InDelta(t, 0.9, tp.PerRep[1], 1e-9, "the second repetition alone would miss")
	assert.Contains(t, r.markdown(), "| contended: throughput / go-zookeeper's | 1.00 | 1.10, 0.90 | ≥ 1.0 | yes |")

	r.Floor = r.Floor[:1] // a repetition missing: no per-repetition ratios
	r.finish()
	assert.Empty(t, r.Targets[0].PerRep)
	assert.Contains(t, r.markdown(), "| contended: throughput / go-zookeeper's | 1.00 | – | ≥ 1.0 | yes |")
}

// A ratio that two decimals would round onto its bound gets a third, so
// that a missed "≤ 1.0" never reads "1.00".
func TestTarget_ARatioRoundedOntoItsBoundShowsAThirdDecimal(t *testing.T) {
	tg := Target{Want: "≤ 1.0"}
	assert.Equal(t, "1.002", tg.format(5.03/5.02))
	assert.Equal(t, "1.00", tg.format(1.0))
	assert.Equal(t, "0.91", tg.format(0.91))
	assert.Equal(t, "1.20", Target{Want: "≤ 1.2 (flat)"}.format(1.2))
	assert.Equal(t, "1.204", Target{Want: "≤ 1.2 (flat)"}.format(1.204))
}

// The largest drain is set against the marked chain, its floor, and that
// floor against go-zookeeper's drain, repetition by repetition: what a
// lock that hands over on notifications alone could reach in that run.
func TestResults_SetTheDrainAgainstTheMarkedChainFloor(t *testing.T) {
	c := config{Reps: 2, Impls: []string{"zkrecipes", "gozk"}, Sessions: 8, Drains: []int{50, 200}, ChainLinks: 200}
	r := newResults(c, Machine{CPUs: 2})
	r.Floor = []bench.FloorResult{
		{Throughput: 3000, PerHandoff: 200 * time.Microsecond, MarkedPerHandoff: 240 * time.Microsecond},
		{Throughput: 3000, PerHandoff: 200 * time.Microsecond, MarkedPerHandoff: 360 * time.Microsecond}}
	drains := map[string][]time.Duration{"zkrecipes": {300 * time.Microsecond, 450 * time.Microsecond}, "gozk": {500 * time.Microsecond, 600 * time.Microsecond}}
	for name, ds := range drains {
		ir := r.add(name)
		for _, d := range ds {
			ir.Uncontended = append(ir.Uncontended, bench.UncontendedResult{P50: 500 * time.Microsecond})
			ir.Contended = append(ir.Contended, bench.ContendedResult{Throughput: 1000})
			for _, n := range []string{"50", "200"} {
				ir.Drain[n] = append(ir.Drain[n], bench.DrainResult{PerHandoff: d, BytesPerHandoff: 111})
			}
		}
	}
	r.finish()

	assert.InDelta(t, 300.0/550, r.Ratios["drain200_marked_floor_vs_gozk"], 1e-9, "medians: 300 µs against 550 µs")
	assert.InDelta(t, 375.0/300, r.Ratios["drain200_per_handoff_vs_marked_floor"], 1e-9)
	md := r.markdown()
	assert.Contains(t, md, "| floor (marked chain) | – | – | – | 3333 |")
	assert.Contains(t, md, "Drain 200 against its floor: the marked chain took 300 µs per handoff, 0.55 of go-zookeeper's drain (0.48, 0.60); "+
		"zkrecipes' drain took 1.25 times the marked chain (1.25, 1.25).")
}
