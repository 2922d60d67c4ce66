package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

// The scale curves (issue 45): how each cost grows with the work. Every
// point is one implementation at one size of one curve, aggregated over
// the curve's repetitions, and is written as one JSON line of curves.jsonl.

// The curves.
const (
	curveLock   = "lock"   // the contended lock: size is the sessions contending
	curveDrain  = "drain"  // the drain: size is the waiters queued behind a holder
	curveMemory = "memory" // memory per Session: size is the sessions open at once
	curveCache  = "cache"  // the cache: size is about the nodes in the tree (curve_cache.go)
	curveLease  = "lease"  // leases held on one session: size is the leases (curve_lease.go)
	// curveServices is the service cache: size is the instances of one
	// service (curve_service.go).
	curveServices = "services"
)

// curveOrder is the order of the curves in curves.jsonl and curves.md.
var curveOrder = []string{curveLock, curveDrain, curveMemory, curveCache, curveServices, curveLease}

// curveConfig is the shape of the curves of one run.
type curveConfig struct {
	// Mode is the preset the sizes came from: "full" or "quick".
	Mode           string `json:"mode"`
	LockSessions   []int  `json:"lock_sessions"`
	DrainWaiters   []int  `json:"drain_waiters"`
	MemorySessions []int  `json:"memory_sessions"`
	CacheNodes     []int  `json:"cache_nodes,omitempty"`
	LeaseHeld      []int  `json:"lease_held,omitempty"`
	// ServiceInstances are the service curve's sizes: instances of one
	// service.
	ServiceInstances []int `json:"service_instances,omitempty"`
	Reps             int   `json:"repetitions"`
	// DrainsPerRep is the drains of each implementation (and of the
	// marked chain) at each size in each repetition, interleaved: the
	// first drain of each, then the second of each, ...
	DrainsPerRep int `json:"drains_per_repetition"`
	// LockDuration is each contended run's measured time.
	LockDuration time.Duration `json:"lock_duration_ns"`
	// restart restarts the server for the lease curve (nil: not run).
	restart func() error
}

// sizes returns the sizes of curve that c measures.
func (c curveConfig) sizes(curve string) []int {
	switch curve {
	case curveLock:
		return c.LockSessions
	case curveDrain:
		return c.DrainWaiters
	case curveMemory:
		return c.MemorySessions
	case curveCache:
		return c.CacheNodes
	case curveLease:
		return c.LeaseHeld
	case curveServices:
		return c.ServiceInstances
	}
	return nil
}

// keptPoints returns the points of earlier at a curve and size that c
// does not measure.
func keptPoints(earlier []CurvePoint, c curveConfig) []CurvePoint {
	var kept []CurvePoint
	for _, p := range earlier {
		if !slices.Contains(c.sizes(p.Curve), p.Size) {
			kept = append(kept, p)
		}
	}
	return kept
}

// mergePoints returns kept and points in one list, ordered by curve (as
// curveOrder lists them) and size; points of one curve and size keep
// their order.
func mergePoints(kept, points []CurvePoint) []CurvePoint {
	all := slices.Concat(kept, points)
	slices.SortStableFunc(all, func(a, b CurvePoint) int {
		if c := slices.Index(curveOrder, a.Curve) - slices.Index(curveOrder, b.Curve); c != 0 {
			return c
		}
		return a.Size - b.Size
	})
	return all
}

// enabled reports whether any curve is to be measured.
func (c curveConfig) enabled() bool {
	return len(c.LockSessions)+len(c.DrainWaiters)+len(c.MemorySessions)+len(c.CacheNodes)+len(c.LeaseHeld)+len(c.ServiceInstances) > 0
}

// curvePreset returns the sizes, repetitions and durations of mode:
// "full" (make bench: 8 to 512 sessions, 10 to 1,000 waiters, 1 to 1,000
// sessions' memory, trees of 10,000 to 1,000,000 nodes, services of
// 10,000 to 1,000,000 instances, 1,000 to 100,000 held leases, 3
// repetitions), "quick" (the smallest sizes, one
// repetition: a check that the curves run end to end) or "off" (none).
func curvePreset(mode string) (curveConfig, error) {
	switch mode {
	case "full":
		return curveConfig{Mode: mode, LockSessions: []int{8, 32, 128, 512}, DrainWaiters: []int{10, 100, 1000},
			MemorySessions: []int{1, 100, 1000}, CacheNodes: []int{10000, 100000, 1000000}, ServiceInstances: []int{10000, 100000, 1000000},
			LeaseHeld: []int{1000, 10000, 100000}, Reps: 3, DrainsPerRep: 5, LockDuration: 5 * time.Second}, nil
	case "quick":
		return curveConfig{Mode: mode, LockSessions: []int{8, 32}, DrainWaiters: []int{10},
			MemorySessions: []int{1, 100}, CacheNodes: []int{10000}, ServiceInstances: []int{10000}, LeaseHeld: []int{1000},
			Reps: 1, DrainsPerRep: 5, LockDuration: 2 * time.Second}, nil
	case "off", "":
		return curveConfig{Mode: "off"}, nil
	}
	return curveConfig{}, fmt.Errorf("bad -curves %q: full, quick or off", mode)
}

// curveFlags returns the curves of mode's preset (curvePreset) with the
// curve flags given applied (given: a flag's name, its value, for the
// flags on the command line): -curve-locks, -curve-drains,
// -curve-memory, -curve-caches, -curve-services and -curve-leases set
// a curve's sizes (parseSizes; empty: the curve is left out), and
// -curve-reps, -curve-drains-per-rep and -curve-duration, when above 0,
// the repetitions and times. It fails for a bad value, for curves to
// measure without repetitions, drains or duration, and, curvesOnly, for
// no curve to measure.
func curveFlags(mode string, given map[string]string, curvesOnly bool) (curveConfig, error) {
	cc, err := curvePreset(mode)
	if err != nil {
		return cc, err
	}
	for _, f := range []struct {
		name string
		dst  *[]int
	}{
		{"curve-locks", &cc.LockSessions}, {"curve-drains", &cc.DrainWaiters}, {"curve-memory", &cc.MemorySessions},
		{"curve-caches", &cc.CacheNodes}, {"curve-services", &cc.ServiceInstances}, {"curve-leases", &cc.LeaseHeld},
	} {
		if v, ok := given[f.name]; ok {
			if *f.dst, err = parseSizes(v); err != nil {
				return cc, fmt.Errorf("-%s: %w", f.name, err)
			}
		}
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"curve-reps", &cc.Reps}, {"curve-drains-per-rep", &cc.DrainsPerRep}} {
		if n, err := strconv.Atoi(given[f.name]); err == nil && n > 0 {
			*f.dst = n
		}
	}
	if d, err := time.ParseDuration(given["curve-duration"]); err == nil && d > 0 {
		cc.LockDuration = d
	}
	if cc.enabled() && (cc.Reps < 1 || cc.DrainsPerRep < 1 || cc.LockDuration <= 0) {
		return cc, fmt.Errorf("-curves %s: set -curve-reps, -curve-drains-per-rep and -curve-duration", cc.Mode)
	}
	if curvesOnly && !cc.enabled() {
		return cc, errors.New("-curves-only with no curve to measure: set -curves full or quick")
	}
	return cc, nil
}

// parseSizes reads a comma-separated list of sizes ("8,32,128"): positive
// integers, returned ascending without repeats. An empty list is nil (the
// curve is skipped).
func parseSizes(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad size %q in %q: want positive integers, comma-separated", f, s)
		}
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return slices.Compact(ns), nil
}

// CurvePoint is one implementation at one size of one curve. Exactly one
// of LockPoint, DrainPoint, MemoryPoint, CachePoint (the cache and
// services curves) and LeasePoint is set, by Curve; Error says
// why some run of the point failed (Runs counts those that did not, and
// the figures are theirs; a point with no run has no figures).
type CurvePoint struct {
	Curve string `json:"curve"`
	Size  int    `json:"size"`
	Impl  string `json:"impl"`
	// Run is when the run that measured the point started (RFC 3339).
	Run string `json:"run"`
	// LoadAvg is the machine's load average (1, 5, 15 minutes) when the
	// point was done: the curves' times mean little on a loaded machine.
	LoadAvg string `json:"loadavg,omitempty"`
	Runs    int    `json:"runs"`
	Error   string `json:"error,omitempty"`
	*LockPoint
	*DrainPoint
	*MemoryPoint
	*CachePoint
	*LeasePoint
}

// LockPoint is a contended-lock point: the medians of its runs, each
// Size sessions contending for one path for the run's duration.
type LockPoint struct {
	Throughput   float64       `json:"throughput_per_s"`
	ReqPerAcq    float64       `json:"requests_per_acquisition"`
	BytesPerAcq  float64       `json:"response_bytes_per_acquisition"`
	NotifsPerAcq float64       `json:"notifications_per_acquisition"`
	HandoffP50   time.Duration `json:"handoff_p50_ns"`
	HandoffP99   time.Duration `json:"handoff_p99_ns"`
	// ServerCPUPerAcq is absent when the server's CPU time could not be
	// read; ClientCPUPerAcq when the clients' could not.
	ServerCPUPerAcq time.Duration `json:"server_cpu_per_acquisition_ns,omitempty"`
	ClientCPUPerAcq time.Duration `json:"client_cpu_per_acquisition_ns,omitempty"`
	// Acquisitions and Violations are summed over the runs.
	Acquisitions int `json:"acquisitions"`
	Violations   int `json:"violations"`
	// RepThroughput is each run's throughput, in order.
	RepThroughput []float64 `json:"rep_throughput_per_s"`
}

// DrainPoint is a drain point: Size waiters queued behind a holder,
// drained DrainsPerRep times in each repetition, interleaved with the
// other implementations and with the marked chain of Size links.
type DrainPoint struct {
	// Medians over every drain of the point.
	PerHandoff      time.Duration `json:"per_handoff_ns"`
	BytesPerHandoff float64       `json:"response_bytes_per_handoff"`
	ReqPerHandoff   float64       `json:"requests_per_handoff"`
	// RepPerHandoff is the median time per handoff of each repetition's
	// drains.
	RepPerHandoff []time.Duration `json:"rep_per_handoff_ns"`
	// VsMarkedFloor is the median over the repetitions of RepVsMarkedFloor:
	// each repetition's median drain over that repetition's median marked
	// chain of as many links (absent for the chain itself, or when the
	// chain failed).
	VsMarkedFloor    float64   `json:"vs_marked_floor,omitempty"`
	RepVsMarkedFloor []float64 `json:"rep_vs_marked_floor,omitempty"`
}

// MemoryPoint is a memory point: what Size sessions open at once cost
// this process, per session (medians of the repetitions).
type MemoryPoint struct {
	HeapPerSession       float64 `json:"heap_bytes_per_session"`
	GoroutinesPerSession float64 `json:"goroutines_per_session"`
}

// lockPoint aggregates the contended runs of impl at n sessions; err is
// the failure of a run that did not finish, if any.
func lockPoint(impl string, n int, runs []bench.ContendedResult, err error) CurvePoint {
	p := CurvePoint{Curve: curveLock, Size: n, Impl: impl, Runs: len(runs), Error: errText(err)}
	if len(runs) == 0 {
		return p
	}
	lp := &LockPoint{
		Throughput:      med(runs, func(k bench.ContendedResult) float64 { return k.Throughput }),
		ReqPerAcq:       med(runs, func(k bench.ContendedResult) float64 { return k.ReqPerAcq }),
		BytesPerAcq:     med(runs, func(k bench.ContendedResult) float64 { return k.ResponseBytesPerAcq }),
		NotifsPerAcq:    med(runs, func(k bench.ContendedResult) float64 { return k.NotificationsPerAcq }),
		HandoffP50:      medD(runs, func(k bench.ContendedResult) time.Duration { return k.HandoffP50 }),
		HandoffP99:      medD(runs, func(k bench.ContendedResult) time.Duration { return k.HandoffP99 }),
		ServerCPUPerAcq: medD(runs, func(k bench.ContendedResult) time.Duration { return k.ServerCPUPerAcq }),
		ClientCPUPerAcq: medD(runs, func(k bench.ContendedResult) time.Duration { return k.ClientCPUPerAcq }),
	}
	for _, k := range runs {
		lp.Acquisitions += k.Acquisitions
		lp.Violations += k.Violations
		lp.RepThroughput = append(lp.RepThroughput, k.Throughput)
	}
	p.LockPoint = lp
	return p
}

// drainPoint aggregates the drains of impl at n waiters, reps[i] being
// repetition i's drains, against floor[i], the marked chain's drains of
// the same repetition (nil for the chain itself); err is the failure of a
// drain that did not finish, if any.
func drainPoint(impl string, n int, reps, floor [][]bench.DrainResult, err error) CurvePoint {
	var all []bench.DrainResult
	for _, ds := range reps {
		all = append(all, ds...)
	}
	p := CurvePoint{Curve: curveDrain, Size: n, Impl: impl, Runs: len(all), Error: errText(err)}
	if len(all) == 0 {
		return p
	}
	dp := &DrainPoint{
		PerHandoff:      medD(all, func(d bench.DrainResult) time.Duration { return d.PerHandoff }),
		BytesPerHandoff: med(all, func(d bench.DrainResult) float64 { return d.BytesPerHandoff }),
		ReqPerHandoff:   med(all, func(d bench.DrainResult) float64 { return d.ReqPerHandoff }),
	}
	perHandoff := func(d bench.DrainResult) time.Duration { return d.PerHandoff }
	for i, ds := range reps {
		if len(ds) == 0 {
			continue
		}
		m := medD(ds, perHandoff)
		dp.RepPerHandoff = append(dp.RepPerHandoff, m)
		if i < len(floor) && len(floor[i]) > 0 {
			dp.RepVsMarkedFloor = append(dp.RepVsMarkedFloor, bench.Ratio(float64(m), float64(medD(floor[i], perHandoff))))
		}
	}
	dp.VsMarkedFloor = bench.Median(dp.RepVsMarkedFloor)
	p.DrainPoint = dp
	return p
}

// memoryPoint aggregates the memory runs of kind at n sessions.
func memoryPoint(kind string, n int, runs []bench.SessionMemoryResult, err error) CurvePoint {
	p := CurvePoint{Curve: curveMemory, Size: n, Impl: kind, Runs: len(runs), Error: errText(err)}
	if len(runs) == 0 {
		return p
	}
	p.MemoryPoint = &MemoryPoint{
		HeapPerSession:       med(runs, func(m bench.SessionMemoryResult) float64 { return m.HeapPerSession }),
		GoroutinesPerSession: med(runs, func(m bench.SessionMemoryResult) float64 { return m.GoroutinesPerSession }),
	}
	return p
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// writeCurves writes points to path, one JSON line each.
func writeCurves(path string, points []CurvePoint) error {
	var b bytes.Buffer
	for _, p := range points {
		line, err := json.Marshal(p)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// readCurves reads the points of a curves.jsonl.
func readCurves(path string) ([]CurvePoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ps []CurvePoint
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p CurvePoint
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		ps = append(ps, p)
	}
	return ps, sc.Err()
}

// curveImpls returns the implementations with a point on curve, in the
// order they first appear in points.
func curveImpls(points []CurvePoint, curve string) []string {
	var names []string
	for _, p := range points {
		if p.Curve == curve && !slices.Contains(names, p.Impl) {
			names = append(names, p.Impl)
		}
	}
	return names
}

// curveSizes returns the sizes of curve's points, ascending.
func curveSizes(points []CurvePoint, curve string) []int {
	var ns []int
	for _, p := range points {
		if p.Curve == curve {
			ns = append(ns, p.Size)
		}
	}
	slices.Sort(ns)
	return slices.Compact(ns)
}

// curvesMarkdown renders the points as one table per curve; a point that
// failed shows its error beneath the tables.
func curvesMarkdown(points []CurvePoint) string {
	tables := []curveTable{
		{curveLock, "Contended lock (medians of the repetitions; server CPU absent where it could not be read):",
			"| sessions | implementation | runs | acquisitions/s | requests/acq | response bytes/acq | handoff p99 µs | server CPU µs/acq | violations |",
			func(p CurvePoint) (string, bool) {
				if p.LockPoint == nil {
					return "", false
				}
				return fmt.Sprintf("%d | %.0f | %.2f | %.0f | %s | %s | %d |", p.Runs, p.Throughput, p.ReqPerAcq,
					p.BytesPerAcq, us(p.HandoffP99), cpuCell(p.ServerCPUPerAcq), p.Violations), true
			}},
		{curveDrain, "Drain (medians; against the marked chain of as many links in the same repetition):",
			"| waiters | implementation | drains | µs/handoff | × marked chain (each repetition) | requests/handoff | response bytes/handoff |",
			func(p CurvePoint) (string, bool) {
				if p.DrainPoint == nil {
					return "", false
				}
				vs := medianAndEach(p.VsMarkedFloor, p.RepVsMarkedFloor)
				return fmt.Sprintf("%d | %s | %s | %.2f | %.0f |", p.Runs, us(p.PerHandoff), vs, p.ReqPerHandoff, p.BytesPerHandoff), true
			}},
		{curveMemory, "Memory per session (live heap after a GC, and goroutines, added by that many idle sessions open at once; medians):",
			"| sessions | kind | runs | heap KB/session | goroutines/session |",
			func(p CurvePoint) (string, bool) {
				if p.MemoryPoint == nil {
					return "", false
				}
				return fmt.Sprintf("%d | %.1f | %.2f |", p.Runs, p.HeapPerSession/1024, p.GoroutinesPerSession), true
			}},
		cacheTable(),
		serviceTable(),
		leaseTable(),
	}
	var b strings.Builder
	var failures []string
	for _, t := range tables {
		ps := pointsOf(points, t.curve)
		if len(ps) == 0 {
			continue
		}
		cols := strings.Count(t.header, "|") - 1
		b.WriteString(t.title + "\n\n" + t.header + "\n|" + strings.Repeat("---|", cols) + "\n")
		for _, p := range ps {
			if p.Error != "" {
				failures = append(failures, fmt.Sprintf("- %s, %s at %d (%d runs measured): %s", p.Curve, p.Impl, p.Size, p.Runs, oneLine(p.Error, 300)))
			}
			cells, ok := t.cells(p)
			if !ok {
				cells = "0 | **failed** |" + strings.Repeat(" |", cols-4)
			}
			fmt.Fprintf(&b, "| %d | %s | %s\n", p.Size, p.Impl, cells)
		}
		b.WriteString("\n")
	}
	if len(failures) > 0 {
		b.WriteString("Failures:\n\n" + strings.Join(failures, "\n") + "\n")
	}
	return b.String()
}

// curveTable is one curve's table in curves.md.
type curveTable struct {
	curve, title, header string
	// cells are the point's cells after its size and implementation;
	// false: the point has no figures (no run finished).
	cells func(p CurvePoint) (string, bool)
}

// pointsOf returns curve's points, by size, in their order within a size.
func pointsOf(points []CurvePoint, curve string) []CurvePoint {
	var ps []CurvePoint
	for _, p := range points {
		if p.Curve == curve {
			ps = append(ps, p)
		}
	}
	slices.SortStableFunc(ps, func(a, b CurvePoint) int { return a.Size - b.Size })
	return ps
}

func cpuCell(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return us(d)
}

// oneLine flattens s to one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// medianAndEach is a ratio's table cell: its median, then each repetition's in
// brackets; "–" when there is none.
func medianAndEach(median float64, each []float64) string {
	if len(each) == 0 {
		return "–"
	}
	parts := make([]string, len(each))
	for i, v := range each {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.2f (%s)", median, strings.Join(parts, ", "))
}
