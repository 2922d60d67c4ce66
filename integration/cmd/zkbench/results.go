package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

// Results is everything one run measured, repetition by repetition, with
// the medians, the ratios and the targets.
type Results struct {
	Machine Machine             `json:"machine"`
	Config  config              `json:"config"`
	Floor   []bench.FloorResult `json:"floor"`
	// RawLock is the contended floor (bench.RawLock), one run per
	// repetition.
	RawLock []bench.ContendedResult `json:"floor_raw_lock_contended"`
	// RawLockExclusion is the raw lock's exclusion check, one run per
	// repetition.
	RawLockExclusion []bench.ContendedResult `json:"floor_raw_lock_exclusion"`
	Impls            map[string]*ImplRuns    `json:"implementations"`
	Median           map[string]Summary      `json:"median"`
	// FloorMedian is the median floor; Ratios and Targets compare zkrecipes
	// with each peer and with it.
	FloorMedian FloorSummary       `json:"floor_median"`
	Ratios      map[string]float64 `json:"ratios"`
	Targets     []Target           `json:"targets"`
	order       []string
}

// ImplRuns holds one implementation's results, one entry per repetition.
type ImplRuns struct {
	Uncontended []bench.UncontendedResult      `json:"uncontended"`
	Contended   []bench.ContendedResult        `json:"contended"`
	Exclusion   []bench.ContendedResult        `json:"exclusion"`
	Drain       map[string][]bench.DrainResult `json:"drain"`
	// WorkQueue holds the work queue runs by consumer count.
	WorkQueue map[string][]bench.WorkQueueResult `json:"workqueue,omitempty"`
}

// Summary is one implementation's medians.
type Summary struct {
	UncontendedP50   time.Duration            `json:"uncontended_p50_ns"`
	UncontendedP99   time.Duration            `json:"uncontended_p99_ns"`
	ReqPerCycle      float64                  `json:"requests_per_cycle"`
	Throughput       float64                  `json:"contended_throughput_per_s"`
	HandoffP50       time.Duration            `json:"contended_handoff_p50_ns"`
	HandoffP99       time.Duration            `json:"contended_handoff_p99_ns"`
	Violations       int                      `json:"contended_violations"`
	Exclusion        Exclusion                `json:"exclusion"`
	ReqPerAcq        float64                  `json:"contended_requests_per_acquisition"`
	ServerCPUPerAcq  time.Duration            `json:"contended_server_cpu_per_acquisition_ns"`
	ClientCPUPerAcq  time.Duration            `json:"contended_client_cpu_per_acquisition_ns"`
	RespBytesPerAcq  float64                  `json:"contended_response_bytes_per_acquisition"`
	SentPerAcq       float64                  `json:"contended_packets_sent_per_acquisition"`
	NotifsPerAcq     float64                  `json:"contended_notifications_per_acquisition"`
	DrainPerHandoff  map[string]time.Duration `json:"drain_per_handoff_ns"`
	DrainBytes       map[string]float64       `json:"drain_response_bytes_per_handoff"`
	DrainReqPerHndof map[string]float64       `json:"drain_requests_per_handoff"`
	// WorkQueuePerS and WorkQueueReqPerItem are the work queue's items
	// consumed per second and requests per item, by consumer count.
	WorkQueuePerS       map[string]float64 `json:"workqueue_items_per_s,omitempty"`
	WorkQueueReqPerItem map[string]float64 `json:"workqueue_requests_per_item,omitempty"`
}

// FloorSummary is the median floor.
type FloorSummary struct {
	SequentialP50   time.Duration `json:"sequential_cycle_p50_ns"`
	CycleP50        time.Duration `json:"cycle_p50_ns"`
	CycleP99        time.Duration `json:"cycle_p99_ns"`
	ReqPerCycle     float64       `json:"requests_per_cycle"`
	HandoffP50      time.Duration `json:"handoff_p50_ns"`
	HandoffP99      time.Duration `json:"handoff_p99_ns"`
	PerHandoff      time.Duration `json:"per_handoff_ns"`
	Throughput      float64       `json:"throughput_per_s"`
	BytesPerHandoff float64       `json:"response_bytes_per_handoff"`
	ServerCPU       time.Duration `json:"server_cpu_per_handoff_ns"`
	ClientCPU       time.Duration `json:"client_cpu_per_handoff_ns"`
	// The marked chain (bench.FloorResult.MarkedPerHandoff): the drain's
	// floor for a lock that hands over on notifications alone.
	MarkedHandoffP50 time.Duration `json:"marked_handoff_p50_ns"`
	MarkedHandoffP99 time.Duration `json:"marked_handoff_p99_ns"`
	MarkedPerHandoff time.Duration `json:"marked_per_handoff_ns"`
	// RawLock is the median of the raw lock's contended runs (field by
	// field; Violations is their sum).
	RawLock          bench.ContendedResult `json:"raw_lock_contended"`
	RawLockExclusion Exclusion             `json:"raw_lock_exclusion"`
}

// Exclusion sums one implementation's exclusion checks over the
// repetitions: the contended workload with each holder staying Hold
// inside its critical section, long enough for two holders at once to
// overlap in the log.
type Exclusion struct {
	Hold         time.Duration `json:"hold_ns"`
	Acquisitions int           `json:"acquisitions"`
	Violations   int           `json:"violations"`
}

func sumExclusion(ks []bench.ContendedResult) Exclusion {
	var x Exclusion
	for _, k := range ks {
		x.Hold = k.Hold
		x.Acquisitions += k.Acquisitions
		x.Violations += k.Violations
	}
	return x
}

// cell renders x for the table: "0 of 1234", or "–" when not run.
func (x Exclusion) cell() string {
	if x.Acquisitions == 0 {
		return "–"
	}
	return fmt.Sprintf("%d of %d", x.Violations, x.Acquisitions)
}

// Target is one of the targets, as measured in this run: Ratio
// from the medians, which Met judges; PerRep the same ratio within each
// repetition (from that repetition's runs), to show how far it moves.
type Target struct {
	What   string    `json:"what"`
	Ratio  float64   `json:"ratio"`
	PerRep []float64 `json:"per_repetition,omitempty"`
	Want   string    `json:"want"`
	Met    bool      `json:"met"`
}

// format renders a ratio of t with two decimals, or three when two would
// round it onto its bound (1.002 would read as a "1.00" that misses "≤ 1.0").
func (t Target) format(v float64) string {
	if bound, err := strconv.ParseFloat(strings.Fields(t.Want + " x x")[1], 64); err == nil &&
		fmt.Sprintf("%.2f", v) == fmt.Sprintf("%.2f", bound) && v != bound {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func newResults(c config, m Machine) *Results {
	return &Results{Machine: m, Config: c, Impls: map[string]*ImplRuns{}, order: c.Impls}
}

func (r *Results) add(name string) *ImplRuns {
	ir := r.Impls[name]
	if ir == nil {
		ir = &ImplRuns{Drain: map[string][]bench.DrainResult{}, WorkQueue: map[string][]bench.WorkQueueResult{}}
		r.Impls[name] = ir
	}
	return ir
}

// addContended records one contended run of implementation name (the
// raw lock included): a throughput run, or with held an exclusion check.
func (r *Results) addContended(name string, held bool, k bench.ContendedResult) {
	raw := name == bench.RawLock.Name
	switch {
	case raw && held:
		r.RawLockExclusion = append(r.RawLockExclusion, k)
	case raw:
		r.RawLock = append(r.RawLock, k)
	case held:
		ir := r.add(name)
		ir.Exclusion = append(ir.Exclusion, k)
	default:
		ir := r.add(name)
		ir.Contended = append(ir.Contended, k)
	}
}

func med[T any](xs []T, f func(T) float64) float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	return bench.Median(vs)
}

func medD[T any](xs []T, f func(T) time.Duration) time.Duration {
	return time.Duration(med(xs, func(x T) float64 { return float64(f(x)) }))
}

func (r *Results) finish() {
	r.Median = map[string]Summary{}
	for name, ir := range r.Impls {
		s := Summary{
			UncontendedP50:  medD(ir.Uncontended, func(u bench.UncontendedResult) time.Duration { return u.P50 }),
			UncontendedP99:  medD(ir.Uncontended, func(u bench.UncontendedResult) time.Duration { return u.P99 }),
			ReqPerCycle:     med(ir.Uncontended, func(u bench.UncontendedResult) float64 { return u.ReqPerCycle }),
			Throughput:      med(ir.Contended, func(k bench.ContendedResult) float64 { return k.Throughput }),
			HandoffP50:      medD(ir.Contended, func(k bench.ContendedResult) time.Duration { return k.HandoffP50 }),
			HandoffP99:      medD(ir.Contended, func(k bench.ContendedResult) time.Duration { return k.HandoffP99 }),
			ReqPerAcq:       med(ir.Contended, func(k bench.ContendedResult) float64 { return k.ReqPerAcq }),
			ServerCPUPerAcq: medD(ir.Contended, func(k bench.ContendedResult) time.Duration { return k.ServerCPUPerAcq }),
			ClientCPUPerAcq: medD(ir.Contended, func(k bench.ContendedResult) time.Duration { return k.ClientCPUPerAcq }),
			RespBytesPerAcq: med(ir.Contended, func(k bench.ContendedResult) float64 { return k.ResponseBytesPerAcq }),
			SentPerAcq:      med(ir.Contended, func(k bench.ContendedResult) float64 { return k.PacketsSentPerAcq }),
			NotifsPerAcq:    med(ir.Contended, func(k bench.ContendedResult) float64 { return k.NotificationsPerAcq }),
			DrainPerHandoff: map[string]time.Duration{}, DrainBytes: map[string]float64{}, DrainReqPerHndof: map[string]float64{},
		}
		for _, k := range ir.Contended {
			s.Violations += k.Violations
		}
		s.Exclusion = sumExclusion(ir.Exclusion)
		for n, ds := range ir.Drain {
			s.DrainPerHandoff[n] = medD(ds, func(d bench.DrainResult) time.Duration { return d.PerHandoff })
			s.DrainBytes[n] = med(ds, func(d bench.DrainResult) float64 { return d.BytesPerHandoff })
			s.DrainReqPerHndof[n] = med(ds, func(d bench.DrainResult) float64 { return d.ReqPerHandoff })
		}
		for n, ws := range ir.WorkQueue {
			if s.WorkQueuePerS == nil {
				s.WorkQueuePerS, s.WorkQueueReqPerItem = map[string]float64{}, map[string]float64{}
			}
			s.WorkQueuePerS[n] = med(ws, func(w bench.WorkQueueResult) float64 { return w.PerSecond })
			s.WorkQueueReqPerItem[n] = med(ws, func(w bench.WorkQueueResult) float64 { return w.ReqPerItem })
		}
		r.Median[name] = s
	}
	fl := r.Floor
	r.FloorMedian = FloorSummary{
		SequentialP50:    medD(fl, func(f bench.FloorResult) time.Duration { return f.SequentialP50 }),
		CycleP50:         medD(fl, func(f bench.FloorResult) time.Duration { return f.CycleP50 }),
		CycleP99:         medD(fl, func(f bench.FloorResult) time.Duration { return f.CycleP99 }),
		ReqPerCycle:      med(fl, func(f bench.FloorResult) float64 { return f.ReqPerCycle }),
		HandoffP50:       medD(fl, func(f bench.FloorResult) time.Duration { return f.HandoffP50 }),
		HandoffP99:       medD(fl, func(f bench.FloorResult) time.Duration { return f.HandoffP99 }),
		PerHandoff:       medD(fl, func(f bench.FloorResult) time.Duration { return f.PerHandoff }),
		Throughput:       med(fl, func(f bench.FloorResult) float64 { return f.Throughput }),
		BytesPerHandoff:  med(fl, func(f bench.FloorResult) float64 { return f.BytesPerHandoff }),
		ServerCPU:        medD(fl, func(f bench.FloorResult) time.Duration { return f.ServerCPUPerHandoff }),
		ClientCPU:        medD(fl, func(f bench.FloorResult) time.Duration { return f.ClientCPUPerHandoff }),
		MarkedHandoffP50: medD(fl, func(f bench.FloorResult) time.Duration { return f.MarkedHandoffP50 }),
		MarkedHandoffP99: medD(fl, func(f bench.FloorResult) time.Duration { return f.MarkedHandoffP99 }),
		MarkedPerHandoff: medD(fl, func(f bench.FloorResult) time.Duration { return f.MarkedPerHandoff }),
	}
	if rl := r.RawLock; len(rl) > 0 {
		r.FloorMedian.RawLock = bench.ContendedResult{
			Sessions:        r.Config.Sessions,
			Duration:        r.Config.Contended,
			Acquisitions:    int(med(rl, func(k bench.ContendedResult) float64 { return float64(k.Acquisitions) })),
			Handoffs:        int(med(rl, func(k bench.ContendedResult) float64 { return float64(k.Handoffs) })),
			Throughput:      med(rl, func(k bench.ContendedResult) float64 { return k.Throughput }),
			HandoffP50:      medD(rl, func(k bench.ContendedResult) time.Duration { return k.HandoffP50 }),
			HandoffP99:      medD(rl, func(k bench.ContendedResult) time.Duration { return k.HandoffP99 }),
			ReqPerAcq:       med(rl, func(k bench.ContendedResult) float64 { return k.ReqPerAcq }),
			ServerCPUPerAcq: medD(rl, func(k bench.ContendedResult) time.Duration { return k.ServerCPUPerAcq }),
			ClientCPUPerAcq: medD(rl, func(k bench.ContendedResult) time.Duration { return k.ClientCPUPerAcq }),
		}
		for _, k := range rl {
			r.FloorMedian.RawLock.Violations += k.Violations
		}
	}
	r.FloorMedian.RawLockExclusion = sumExclusion(r.RawLockExclusion)
	r.ratios()
}

// ratios compares zkrecipes with every peer, the best peer and the floor,
// and checks the targets. Every ratio is "zkrecipes / other" for
// throughput and "zkrecipes / other" for times: above 1 is better for a
// throughput, below 1 better for a time.
func (r *Results) ratios() {
	r.Ratios, r.Targets = map[string]float64{}, nil
	z, ok := r.Median["zkrecipes"]
	if !ok {
		return
	}
	big, small := r.largestDrain(), r.smallestDrain()
	r.Ratios = ratioSet(z, r.Median, r.FloorMedian, big, small)
	reps := r.perRepRatios()

	target := func(what, key, want string, ok func(float64) bool) {
		v, present := r.Ratios[key]
		if !present || v == 0 {
			return
		}
		t := Target{What: what, Ratio: v, Want: want, Met: ok(v)}
		for _, rep := range reps {
			t.PerRep = append(t.PerRep, rep[key])
		}
		r.Targets = append(r.Targets, t)
	}
	// Issue 33's targets: the server is what every client on it shares,
	// so the contended ones are the server's work per acquisition against
	// go-zookeeper's zk.Lock, counts no machine changes, and ratios taken
	// within one run. The raw lock, Curator and the bare
	// delete→notification chain stay in Ratios as references.
	notAbove := func(w float64) func(float64) bool { return func(v float64) bool { return v <= w } }
	target("contended: throughput / go-zookeeper's", "throughput_vs_gozk", "≥ 1.0", func(v float64) bool { return v >= 1.0 })
	target("contended: requests per acquisition / go-zookeeper's", "requests_vs_gozk", "≤ 1.0", notAbove(1))
	target("contended: server CPU per acquisition / go-zookeeper's", "server_cpu_vs_gozk", "≤ 1.0", notAbove(1))
	target("contended: response bytes per acquisition / go-zookeeper's", "response_bytes_vs_gozk", "≤ 1.0", notAbove(1))
	target("contended: handoff p99 / go-zookeeper's", "handoff_p99_vs_gozk", "≤ 1.2", notAbove(1.2))
	target("drain "+big+": time per handoff / go-zookeeper's", "drain"+big+"_per_handoff_vs_gozk", "≤ 0.6", notAbove(0.6))
	target("uncontended p50 / go-zookeeper's", "uncontended_p50_vs_gozk", "≤ 1.0", notAbove(1))
	target("drain: response bytes per handoff, "+big+" waiters / "+small, "drain_bytes_per_handoff_"+big+"_over_"+small, "≤ 1.2 (flat)", notAbove(1.2))
}

// isVariant reports whether name is zkrecipes with an optimisation off
// ("zkrecipes-plain", ...): compared with zkrecipes, not a peer.
func isVariant(name string) bool { return strings.HasPrefix(name, "zkrecipes-") }

// ratioSet computes the ratios of z against each summary in all (z's own
// entry skipped), the best of them and the floor fl.
func ratioSet(z Summary, all map[string]Summary, fl FloorSummary, big, small string) map[string]float64 {
	rs := map[string]float64{}
	bestTP, bestP50, bestDrain := 0.0, time.Duration(0), time.Duration(0)
	for name, s := range all {
		if name == "zkrecipes" {
			continue
		}
		rs["throughput_vs_"+name] = bench.Ratio(z.Throughput, s.Throughput)
		rs["handoff_p50_vs_"+name] = bench.Ratio(float64(z.HandoffP50), float64(s.HandoffP50))
		rs["handoff_p99_vs_"+name] = bench.Ratio(float64(z.HandoffP99), float64(s.HandoffP99))
		rs["requests_vs_"+name] = bench.Ratio(z.ReqPerAcq, s.ReqPerAcq)
		rs["server_cpu_vs_"+name] = bench.Ratio(float64(z.ServerCPUPerAcq), float64(s.ServerCPUPerAcq))
		rs["response_bytes_vs_"+name] = bench.Ratio(z.RespBytesPerAcq, s.RespBytesPerAcq)
		rs["uncontended_p50_vs_"+name] = bench.Ratio(float64(z.UncontendedP50), float64(s.UncontendedP50))
		rs["drain"+big+"_per_handoff_vs_"+name] = bench.Ratio(float64(z.DrainPerHandoff[big]), float64(s.DrainPerHandoff[big]))
		if isVariant(name) {
			continue
		}
		bestTP = max(bestTP, s.Throughput)
		if bestP50 == 0 || s.UncontendedP50 < bestP50 {
			bestP50 = s.UncontendedP50
		}
		if d := s.DrainPerHandoff[big]; d > 0 && (bestDrain == 0 || d < bestDrain) {
			bestDrain = d
		}
	}
	rs["throughput_vs_best_peer"] = bench.Ratio(z.Throughput, bestTP)
	rs["uncontended_p50_vs_best_peer"] = bench.Ratio(float64(z.UncontendedP50), float64(bestP50))
	rs["drain"+big+"_per_handoff_vs_best_peer"] = bench.Ratio(float64(z.DrainPerHandoff[big]), float64(bestDrain))
	rs["throughput_floor_over_zkrecipes"] = bench.Ratio(fl.Throughput, z.Throughput)
	rs["throughput_raw_lock_over_zkrecipes"] = bench.Ratio(fl.RawLock.Throughput, z.Throughput)
	rs["uncontended_p50_vs_floor"] = bench.Ratio(float64(z.UncontendedP50), float64(fl.CycleP50))
	rs["drain"+big+"_per_handoff_vs_floor"] = bench.Ratio(float64(z.DrainPerHandoff[big]), float64(fl.PerHandoff))
	if fl.MarkedPerHandoff > 0 {
		// How near the drain comes to its floor, and where that floor
		// stands against go-zookeeper's drain: no lock that hands over on
		// notifications alone can be below the latter.
		rs["drain"+big+"_per_handoff_vs_marked_floor"] = bench.Ratio(float64(z.DrainPerHandoff[big]), float64(fl.MarkedPerHandoff))
		if g, ok := all["gozk"]; ok {
			rs["drain"+big+"_marked_floor_vs_gozk"] = bench.Ratio(float64(fl.MarkedPerHandoff), float64(g.DrainPerHandoff[big]))
		}
	}
	rs["drain_bytes_per_handoff_"+big+"_over_"+small] = bench.Ratio(z.DrainBytes[big], z.DrainBytes[small])
	return rs
}

// repetition returns repetition i's figures, as summaries the ratios
// take: false when some implementation or the floor lacks that
// repetition.
func (r *Results) repetition(i int) (map[string]Summary, FloorSummary, bool) {
	all := map[string]Summary{}
	for name, ir := range r.Impls {
		if i >= len(ir.Uncontended) || i >= len(ir.Contended) {
			return nil, FloorSummary{}, false
		}
		k := ir.Contended[i]
		s := Summary{UncontendedP50: ir.Uncontended[i].P50, Throughput: k.Throughput, HandoffP50: k.HandoffP50, HandoffP99: k.HandoffP99,
			ReqPerAcq: k.ReqPerAcq, ServerCPUPerAcq: k.ServerCPUPerAcq, RespBytesPerAcq: k.ResponseBytesPerAcq,
			DrainPerHandoff: map[string]time.Duration{}, DrainBytes: map[string]float64{}}
		for n, ds := range ir.Drain {
			if i >= len(ds) {
				return nil, FloorSummary{}, false
			}
			s.DrainPerHandoff[n], s.DrainBytes[n] = ds[i].PerHandoff, ds[i].BytesPerHandoff
		}
		all[name] = s
	}
	if i >= len(r.Floor) {
		return nil, FloorSummary{}, false
	}
	f := r.Floor[i]
	fl := FloorSummary{CycleP50: f.CycleP50, PerHandoff: f.PerHandoff, Throughput: f.Throughput, MarkedPerHandoff: f.MarkedPerHandoff}
	if i < len(r.RawLock) {
		fl.RawLock.Throughput = r.RawLock[i].Throughput
	}
	return all, fl, true
}

func (r *Results) drainKeys() []int {
	ns := slices.Clone(r.Config.Drains)
	slices.Sort(ns)
	return ns
}

func (r *Results) largestDrain() string {
	ns := r.drainKeys()
	if len(ns) == 0 {
		return ""
	}
	return strconv.Itoa(ns[len(ns)-1])
}

func (r *Results) smallestDrain() string {
	ns := r.drainKeys()
	if len(ns) == 0 {
		return ""
	}
	return strconv.Itoa(ns[0])
}

func (r *Results) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }

// markdown renders the medians, the floor, the ratios and the targets.
func (r *Results) markdown() string {
	var b strings.Builder
	m := r.Machine
	server := "one standalone ZooKeeper 3.8"
	if r.Config.Servers > 1 {
		placement := "the Go clients given every server, the Java and Python peers the first"
		if r.Config.Pinned {
			placement = fmt.Sprintf("session i of every implementation given server i mod %d, the same placement for all", r.Config.Servers)
		}
		server = fmt.Sprintf("a %d-server ZooKeeper 3.8 ensemble (%s; requests summed over the servers)", r.Config.Servers, placement)
	}
	fmt.Fprintf(&b, "Measured %s on %d × %s, %s RAM, Linux %s, %s, %s; %s on 127.0.0.1, its JVM on default flags as Debian's package runs it "+
		"(load average %s at the start, %s at the end; the machine's 2 cores were shared with other work). "+
		"Medians of %d repetitions, implementation order rotating.\n\n",
		m.Date, m.CPUs, m.CPUModel, m.Memory, m.Kernel, m.Go, m.Java, server, m.LoadAvgStart, m.LoadAvgEnd, r.Config.Reps)
	ns := r.drainKeys()
	b.WriteString("| implementation | uncontended p50 µs | p99 µs | requests/cycle | 8 sessions: acquisitions/s | handoff p50 µs | p99 µs | violations | exclusion check: violations of acquisitions |")
	for _, n := range ns {
		fmt.Fprintf(&b, " drain %d: µs/handoff | bytes/handoff |", n)
	}
	b.WriteString("\n|---|---|---|---|---|---|---|---|---|")
	for range ns {
		b.WriteString("---|---|")
	}
	b.WriteString("\n")
	for _, name := range r.order {
		s, ok := r.Median[name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %.0f | %s | %s | %d | %s |", name, us(s.UncontendedP50), us(s.UncontendedP99), s.ReqPerCycle,
			s.Throughput, us(s.HandoffP50), us(s.HandoffP99), s.Violations, s.Exclusion.cell())
		for _, n := range ns {
			k := strconv.Itoa(n)
			fmt.Fprintf(&b, " %s | %.0f |", us(s.DrainPerHandoff[k]), s.DrainBytes[k])
		}
		b.WriteString("\n")
	}
	f := r.FloorMedian
	fmt.Fprintf(&b, "| floor (raw requests) | %s | %s | %.2f | %.0f | %s | %s | – | – |", us(f.CycleP50), us(f.CycleP99), f.ReqPerCycle, f.Throughput, us(f.HandoffP50), us(f.HandoffP99))
	for range ns {
		fmt.Fprintf(&b, " %s | %.0f |", us(f.PerHandoff), f.BytesPerHandoff)
	}
	if f.MarkedPerHandoff > 0 {
		fmt.Fprintf(&b, "\n| floor (marked chain) | – | – | – | %.0f | %s | %s | – | – |", float64(time.Second)/float64(f.MarkedPerHandoff),
			us(f.MarkedHandoffP50), us(f.MarkedHandoffP99))
		for range ns {
			fmt.Fprintf(&b, " %s | – |", us(f.MarkedPerHandoff))
		}
	}
	if rl := f.RawLock; rl.Throughput > 0 {
		fmt.Fprintf(&b, "\n| floor (raw lock) | – | – | – | %.0f | %s | %s | %d | %s |", rl.Throughput, us(rl.HandoffP50), us(rl.HandoffP99), rl.Violations,
			f.RawLockExclusion.cell())
		for range ns {
			b.WriteString(" – | – |")
		}
	}
	b.WriteString("\n\n")
	b.WriteString("Floor, uncontended: create, then getChildren sent as soon as the create's frame is written (one session's requests run in order, " +
		"so it lists the new node), then delete, on one raw go-zookeeper session: two round trips (the three in sequence, each waiting for its reply: " +
		us(f.SequentialP50) + " µs p50). Floor, handoff: a chain of " +
		strconv.Itoa(r.Config.ChainLinks) + " sessions, each getData-watching the node before it and deleting its own on the notification " +
		"(handoff: delete request → successor's notification; throughput and µs/handoff: the whole chain's time per link); its nodes and watches " +
		"are all in place before the clock starts. Floor (marked chain): the same chain releasing as zkrecipes' Mutex does, each link after the first watching the node " +
		"before it with getData and getChildren and, once its data change and its deletion have both been notified, releasing its own node in one " +
		"multi that sets its data and deletes it (the holder, which did not wait, deletes plainly, and the first link watches only that): a drain of zkrecipes' Mutex makes exactly these requests, so no lock that hands over on " +
		"notifications alone drains faster. Floor (raw lock): the same " + strconv.Itoa(r.Config.Sessions) + "-session workload as the locks on raw " +
		"go-zookeeper sessions making the fewest requests any queueing lock can (create with the getChildren right behind it, a getData watch on " +
		"the node before, a plain delete: " + fmt.Sprintf("%.2f", f.RawLock.ReqPerAcq) + " requests per acquisition), holding on every deletion " +
		"notification without checking why the node went (safe only because no contender gives up): the next acquisitions' requests run beside " +
		"each handoff, as for any lock.\n" +
		"Requests are the server's zk_packets_received, bytes its zk_response_bytes (replies to requests; notifications and pings are not counted).\n\n")
	b.WriteString("Violations: a holder's ENTER line while another holder's EXIT is still to come, in the contenders' shared log (summed over the repetitions). " +
		"In the throughput run the critical section is those two log writes, too short for two holders at once to overlap in the log often, so that column " +
		"can read 0 for a lock that does not exclude.")
	if r.Config.ExclusionHold > 0 {
		b.WriteString(" The exclusion check is the same workload with each holder staying " + r.Config.ExclusionHold.String() +
			" inside, for " + r.Config.ExclusionDuration.String() + " per repetition: there any two holders at once overlap.")
	} else {
		b.WriteString(" The exclusion check was not run (-exclusion-hold 0).")
	}
	b.WriteString("\n\n")
	r.workQueueTable(&b)
	r.serverWorkTable(&b)
	r.cpuTable(&b)
	if len(r.Targets) > 0 {
		b.WriteString("| target (zkrecipes, same run) | measured (medians) | each repetition | wanted | met |\n|---|---|---|---|---|\n")
		for _, t := range r.Targets {
			met := "yes"
			if !t.Met {
				met = "**no**"
			}
			reps := make([]string, len(t.PerRep))
			for i, v := range t.PerRep {
				reps[i] = t.format(v)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", t.What, t.format(t.Ratio), cmp.Or(strings.Join(reps, ", "), "–"), t.Want, met)
		}
		b.WriteString("\nEach repetition's ratio is taken from that repetition's own runs; whether a target is met is judged on the medians.\n\n")
		r.drainFloorNote(&b, r.perRepRatios())
	}
	return b.String()
}

// workQueueTable renders the work queue workload's medians, if it ran.
func (r *Results) workQueueTable(b *strings.Builder) {
	ns := r.Config.WorkQueueConsumers
	var names []string
	for _, name := range r.order {
		if s, ok := r.Median[name]; ok && len(s.WorkQueuePerS) > 0 {
			names = append(names, name)
		}
	}
	if len(ns) == 0 || len(names) == 0 {
		return
	}
	b.WriteString("| work queue |")
	for _, n := range ns {
		fmt.Fprintf(b, " %d consumers: items/s | requests/item |", n)
	}
	b.WriteString("\n|---|")
	for range ns {
		b.WriteString("---|---|")
	}
	b.WriteString("\n")
	for _, name := range names {
		s := r.Median[name]
		fmt.Fprintf(b, "| %s |", name)
		for _, n := range ns {
			k := strconv.Itoa(n)
			fmt.Fprintf(b, " %.0f | %.2f |", s.WorkQueuePerS[k], s.WorkQueueReqPerItem[k])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "\nWork queue: %d items of 16 bytes put beforehand (one node each), then consumed by that many consumers, each its own session, "+
		"each item taken under its lock and acked (zkrecipes' WorkQueue: Take, then Ack; Curator's DistributedQueue built with a lockPath, "+
		"its consumers started on the clock's start, which stops once the queue is empty: the Curator peer lists it every millisecond "+
		"after its last consumeMessage, a few requests more). Requests are the server's zk_packets_received per item over the run.\n\n", r.Config.WorkQueueItems)
}

// drainFloorNote says where the largest drain stands against the marked
// chain, its floor, and where that floor stands against go-zookeeper's
// drain (reps: each repetition's ratios).
func (r *Results) drainFloorNote(b *strings.Builder, reps []map[string]float64) {
	big := r.largestDrain()
	floorVsGozk, ok := r.Ratios["drain"+big+"_marked_floor_vs_gozk"]
	if !ok || floorVsGozk == 0 {
		return
	}
	each := func(key string) string {
		var vs []string
		for _, rep := range reps {
			vs = append(vs, fmt.Sprintf("%.2f", rep[key]))
		}
		return cmp.Or(strings.Join(vs, ", "), "–")
	}
	fmt.Fprintf(b, "Drain %s against its floor: the marked chain took %s µs per handoff, %.2f of go-zookeeper's drain (%s); "+
		"zkrecipes' drain took %.2f times the marked chain (%s).\n\n",
		big, us(r.FloorMedian.MarkedPerHandoff), floorVsGozk, each("drain"+big+"_marked_floor_vs_gozk"),
		r.Ratios["drain"+big+"_per_handoff_vs_marked_floor"], each("drain"+big+"_per_handoff_vs_marked_floor"))
}

// cpuTable renders where the CPU of the 8-session run goes: the server's
// and the clients' per acquisition, and how much of the machine that is at
// the measured throughput.
func (r *Results) cpuTable(b *strings.Builder) {
	if r.FloorMedian.ServerCPU == 0 {
		return // not measured (no /proc, or the server not found)
	}
	cores := float64(r.Machine.CPUs)
	b.WriteString("Requests and CPU per acquisition, " + strconv.Itoa(r.Config.Sessions) + " sessions contending (requests: zk_packets_received, as above; server: the ZooKeeper process; " +
		"clients: this process for zkrecipes and gozk, the peer process for Curator and kazoo; the benchmark's log writes included):\n\n")
	b.WriteString("| implementation | requests/acquisition | server CPU µs | client CPU µs | total µs | acquisitions/s | cores busy |\n|---|---|---|---|---|---|---|\n")
	for _, name := range r.order {
		s, ok := r.Median[name]
		if !ok || s.ServerCPUPerAcq == 0 {
			continue
		}
		total := s.ServerCPUPerAcq + s.ClientCPUPerAcq
		fmt.Fprintf(b, "| %s | %.2f | %s | %s | %s | %.0f | %.2f of %.0f |\n", name, s.ReqPerAcq, us(s.ServerCPUPerAcq), us(s.ClientCPUPerAcq), us(total),
			s.Throughput, total.Seconds()*s.Throughput, cores)
	}
	f := r.FloorMedian
	ft := f.ServerCPU + f.ClientCPU
	fmt.Fprintf(b, "| floor chain (per handoff: one delete, one notification) | – | %s | %s | %s | %.0f | %.2f of %.0f |\n",
		us(f.ServerCPU), us(f.ClientCPU), us(ft), f.Throughput, ft.Seconds()*f.Throughput, cores)
	if rl := f.RawLock; rl.ServerCPUPerAcq > 0 {
		rt := rl.ServerCPUPerAcq + rl.ClientCPUPerAcq
		fmt.Fprintf(b, "| floor (raw lock) | %.2f | %s | %s | %s | %.0f | %.2f of %.0f |\n",
			rl.ReqPerAcq, us(rl.ServerCPUPerAcq), us(rl.ClientCPUPerAcq), us(rt), rl.Throughput, rt.Seconds()*rl.Throughput, cores)
	}
	b.WriteString("\n")
}

// serverWorkTable renders issue 33's table: the server's work per
// contended acquisition (summed over the servers) and the handoff times,
// one row per implementation, then zkrecipes' ratio to go-zookeeper's lock
// and to each of its variants with an optimisation off (above 1: that
// column is higher for zkrecipes), each ratio's repetitions in brackets.
func (r *Results) serverWorkTable(b *strings.Builder) {
	z, ok := r.Median["zkrecipes"]
	if !ok {
		return
	}
	load := "a quiet machine"
	if loaded(r.Machine.LoadAvgStart) || loaded(r.Machine.LoadAvgEnd) {
		load = "a loaded machine"
	}
	fmt.Fprintf(b, "Server work per contended acquisition, %d sessions contending (requests: zk_packets_received; response bytes: zk_response_bytes; "+
		"packets sent: zk_packets_sent, of which notifications: packets sent less packets received; each summed over the servers; "+
		"server CPU: the ZooKeeper processes, summed). Counts hold on any machine; the CPU and handoff times were measured on %s "+
		"(load average %s at the start, %s at the end):\n\n", r.Config.Sessions, load, r.Machine.LoadAvgStart, r.Machine.LoadAvgEnd)
	b.WriteString("| implementation | requests/acq | server CPU µs/acq | response bytes/acq | handoff p50 µs | handoff p99 µs | notifications/acq | packets sent/acq |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range r.order {
		s, ok := r.Median[name]
		if !ok {
			continue
		}
		fmt.Fprintf(b, "| %s | %.2f | %s | %.0f | %s | %s | %.2f | %.2f |\n", name, s.ReqPerAcq, us(s.ServerCPUPerAcq), s.RespBytesPerAcq,
			us(s.HandoffP50), us(s.HandoffP99), s.NotifsPerAcq, s.SentPerAcq)
	}
	reps := r.perRepRatios()
	for _, name := range r.order {
		s, ok := r.Median[name]
		if !ok || name == "zkrecipes" || (name != "gozk" && !isVariant(name)) {
			continue
		}
		cell := func(key string) string {
			if len(reps) < 2 {
				return fmt.Sprintf("%.2f", r.Ratios[key+"_vs_"+name])
			}
			each := make([]float64, len(reps))
			for i, rep := range reps {
				each[i] = rep[key+"_vs_"+name]
			}
			return medianAndEach(r.Ratios[key+"_vs_"+name], each)
		}
		fmt.Fprintf(b, "| zkrecipes / %s | %s | %s | %s | %s | %s | %s | %s |\n", name, cell("requests"), cell("server_cpu"), cell("response_bytes"),
			cell("handoff_p50"), cell("handoff_p99"), ratioCell(z.NotifsPerAcq, s.NotifsPerAcq), ratioCell(z.SentPerAcq, s.SentPerAcq))
	}
	b.WriteString("\n")
}

func ratioCell(a, b float64) string { return fmt.Sprintf("%.2f", bench.Ratio(a, b)) }

// perRepRatios is ratioSet within each repetition (nil when some
// repetition is missing a figure).
func (r *Results) perRepRatios() []map[string]float64 {
	big, small := r.largestDrain(), r.smallestDrain()
	var reps []map[string]float64
	for i := range r.Config.Reps {
		all, fl, ok := r.repetition(i)
		if !ok {
			return nil
		}
		reps = append(reps, ratioSet(all["zkrecipes"], all, fl, big, small))
	}
	return reps
}

// loaded reports whether a load average line ("1.23 0.98 0.80") shows the
// machine's cores busy with other work before or after a run: a 1-minute
// load of 1 or more.
func loaded(loadavg string) bool {
	f := strings.Fields(loadavg)
	if len(f) == 0 {
		return false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return err == nil && v >= 1
}
