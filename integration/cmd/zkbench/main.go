// Command zkbench compares zkrecipes' Mutex with go-zookeeper's zk.Lock,
// Apache Curator 5.4's InterProcessMutex and kazoo 2.8's Lock on one fresh
// local ZooKeeper server, and with the raw floor of that server. `make
// bench` runs it.
//
// Every client is its own session. zkrecipes and go-zookeeper run
// in-process; Curator (Java) and kazoo (Python) run as the peer programs of
// integration/peers in their synchronised bench modes, so the server's
// counters are read around the measured phase only. The order of the
// implementations rotates from one repetition to the next; the reported
// figure is the median of the repetitions. Each repetition ends with the
// work queue workload (-workqueue): zkrecipes' WorkQueue beside Curator's
// DistributedQueue built with a lock path, consuming items put beforehand.
//
// It writes results.json, results.md and chart.png into -out:
//
//	cd integration && go run ./cmd/zkbench -out bench
//
// With -curves full (make bench) or quick, it then measures the scale
// curves: the contended lock at 8 to 512 sessions, the drain of 10 to
// 1,000 waiters against the marked chain of as many links, the memory of
// 1 to 1,000 Sessions, a TreeCache of trees of 10,000 to 1,000,000
// nodes against the raw reads its load must make and Curator's
// CuratorCache (curve_cache.go), a discovery ServiceCache of one service
// of 10,000 to 1,000,000 instances against the same floor (a listing and
// a getData each) and Curator's ServiceCache (curve_service.go), and
// 1,000 to 100,000 leases held on one
// session through a loopback proxy, with its recovery from a connection
// drop and from a restart of the server (curve_lease.go; run last, since
// it restarts the server) (quick: the smallest sizes, one repetition). It
// writes curves.jsonl (one JSON line a point), curves.md and
// curve-lock.png, curve-drain.png, curve-memory.png, curve-cache.png,
// curve-services.png and curve-lease.png into -out; with -curves-only it measures the curves
// alone:
//
//	cd integration && go run ./cmd/zkbench -curves quick -curves-only -out /tmp/curves
//
// An empty size list leaves a curve out (-curve-drains ""), and the points
// of -out's curves.jsonl that a run does not measure again are kept, so
// that one curve can be measured again alone.
//
// Every server and client is on 127.0.0.1.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/bench"
	"github.com/zkrecipes/zkrecipes/integration/peers"
	"github.com/zkrecipes/zkrecipes/zktest"
)

type config struct {
	Out       string        `json:"-"`
	Reps      int           `json:"repetitions"`
	Impls     []string      `json:"implementations"`
	Cycles    int           `json:"uncontended_cycles"`
	Warmup    int           `json:"warmup_cycles"`
	Sessions  int           `json:"contended_sessions"`
	Contended time.Duration `json:"contended_duration_ns"`
	// The exclusion check: the contended workload again, each holder
	// staying ExclusionHold inside, for ExclusionDuration.
	ExclusionHold     time.Duration `json:"exclusion_hold_ns"`
	ExclusionDuration time.Duration `json:"exclusion_duration_ns"`
	Drains            []int         `json:"drain_waiters"`
	// The work queue workload (zkrecipes' WorkQueue and Curator's
	// DistributedQueue with a lock path): WorkQueueItems items put
	// beforehand, consumed by each count of WorkQueueConsumers.
	WorkQueueItems     int   `json:"workqueue_items,omitempty"`
	WorkQueueConsumers []int `json:"workqueue_consumers,omitempty"`
	ChainLinks         int   `json:"floor_chain_links"`
	// CurvesOnly: the curves were measured alone.
	CurvesOnly bool `json:"-"`
	// Servers is 1 for a standalone server, 3 (or more) for an ensemble on
	// 127.0.0.1.
	Servers int `json:"servers"`
	// Pinned: on an ensemble, session i of every implementation was given
	// server i mod Servers (runs before 2026-11-25 17:10 UTC gave the
	// in-process clients every server, and the peers the first).
	Pinned bool `json:"pinned_sessions,omitempty"`
	// Curves are the scale curves measured after the repetitions.
	Curves curveConfig `json:"curves"`
}

func main() {
	var c config
	var impls, drains, workQueues string
	flag.StringVar(&c.Out, "out", "bench", "directory for results.json, results.md and chart.png")
	flag.IntVar(&c.Reps, "reps", 3, "repetitions (medians are reported)")
	flag.StringVar(&impls, "impls", "zkrecipes,gozk,curator,kazoo,zkrecipes-plain,zkrecipes-nowire",
		"implementations, comma-separated (zkrecipes-plain: the fast handoff off; zkrecipes-nowire: the wire layer off, so no listing behind the create)")
	flag.IntVar(&c.Cycles, "cycles", 1000, "uncontended: measured cycles")
	flag.IntVar(&c.Warmup, "warmup", 200, "uncontended: unmeasured cycles first")
	flag.IntVar(&c.Sessions, "sessions", 8, "contended: sessions")
	flag.DurationVar(&c.Contended, "duration", 5*time.Second, "contended: measured time")
	flag.DurationVar(&c.ExclusionHold, "exclusion-hold", time.Millisecond, "exclusion check: time each holder stays inside (0 skips the check)")
	flag.DurationVar(&c.ExclusionDuration, "exclusion-duration", 2*time.Second, "exclusion check: time per implementation and repetition")
	flag.StringVar(&drains, "drain", "50,200", "queue drain: waiter counts, comma-separated")
	flag.StringVar(&workQueues, "workqueue", "1,8", "work queue: consumer counts, comma-separated (empty: skip the workload)")
	flag.IntVar(&c.WorkQueueItems, "workqueue-items", 500, "work queue: items consumed per run")
	flag.IntVar(&c.ChainLinks, "links", 200, "floor: delete→notification chain links")
	c.Pinned = true
	flag.IntVar(&c.Servers, "servers", 1, "1: one standalone server; 3: a 3-server ensemble on 127.0.0.1 (its servers share this machine's cores with the clients)")
	rerender := flag.String("render", "", "measure nothing: re-render this results.json (or curves.jsonl) into -out")
	curves := flag.String("curves", "off", "scale curves after the workloads: full (make bench), quick (the smallest sizes, one repetition) or off")
	flag.BoolVar(&c.CurvesOnly, "curves-only", false, "measure the curves alone (no results.json, results.md or chart.png)")
	flag.String("curve-locks", "", "curves: contended-lock session counts, comma-separated (default: -curves' preset)")
	flag.String("curve-drains", "", "curves: drain waiter counts (default: -curves' preset)")
	flag.String("curve-memory", "", "curves: Session counts for memory per Session (default: -curves' preset)")
	flag.String("curve-caches", "", "curves: TreeCache tree sizes in nodes, each rounded up to 1 + K² (default: -curves' preset)")
	flag.String("curve-services", "", "curves: ServiceCache instances of one service (default: -curves' preset)")
	flag.String("curve-leases", "", "curves: leases held on one session (default: -curves' preset)")
	flag.Int("curve-reps", 0, "curves: repetitions (default: -curves' preset, 3 for full)")
	flag.Int("curve-drains-per-rep", 0, "curves: interleaved drains of each implementation per size and repetition (default 5)")
	flag.Duration("curve-duration", 0, "curves: measured time of each contended run (default: -curves' preset, 5s for full)")
	flag.Parse()
	if *rerender != "" {
		r := render
		if strings.HasSuffix(*rerender, ".jsonl") {
			r = renderCurves
		}
		if err := r(*rerender, c.Out); err != nil {
			fatalf("%v", err)
		}
		return
	}
	given := map[string]string{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
	var err error
	if c.Curves, err = curveFlags(*curves, given, c.CurvesOnly); err != nil {
		fatalf("%v", err)
	}
	if c.Servers != 1 && (c.Servers < 3 || c.Servers%2 == 0) {
		fatalf("bad -servers %d: 1 (standalone) or an odd number from 3 (an ensemble)", c.Servers)
	}
	c.Impls = strings.Split(impls, ",")
	if c.CurvesOnly {
		// The curves leave the variants out: do not build or warm them.
		c.Impls = slices.DeleteFunc(c.Impls, isVariant)
	}
	for _, d := range strings.Split(drains, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil || n < 1 {
			fatalf("bad -drain %q", drains)
		}
		c.Drains = append(c.Drains, n)
	}
	for _, d := range strings.Split(workQueues, ",") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil || n < 1 {
			fatalf("bad -workqueue %q", workQueues)
		}
		c.WorkQueueConsumers = append(c.WorkQueueConsumers, n)
	}
	if len(c.WorkQueueConsumers) > 0 && c.WorkQueueItems < 1 {
		fatalf("bad -workqueue-items %d", c.WorkQueueItems)
	}
	if err := run(c); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "zkbench: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(c config) error {
	runners := make([]runner, 0, len(c.Impls))
	for _, name := range c.Impls {
		r, err := newRunner(name, c)
		if err != nil {
			return err
		}
		runners = append(runners, r)
	}
	ctx := context.Background()
	// Build the peers before the server starts, so that javac does not run
	// beside a measurement.
	for _, name := range c.Impls {
		if name == peers.Curator {
			bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			_, err := peers.BuildJava(bctx)
			cancel()
			if err != nil {
				return err
			}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	// The server runs as Debian's package runs it (JVM defaults, the full
	// JIT), not with the harness's quick-start flags for tests.
	cluster, err := zktest.StartCluster(sctx, zktest.WithJVMFlags(), zktest.WithSize(c.Servers))
	cancel()
	if err != nil {
		return err
	}
	defer cluster.Close()
	logf("server %s (%s backend) up in %v", cluster.ConnectString(), cluster.Backend(), cluster.StartDuration().Round(time.Millisecond))

	env := bench.Env{Servers: cluster.Servers()}
	if env.Observer, err = bench.ConnectRaw(ctx, env.Servers); err != nil {
		return err
	}
	defer env.Observer.Close()
	if env.Meter, err = bench.NewMeter(ctx, env.Servers...); err != nil {
		return err
	}

	// Warm the server up (its JIT, which compiles a method fully only after
	// some ten thousand calls, and its caches) before anything is measured.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	_, err = bench.Floor(wctx, env, "/zkbench/warmup", c.Warmup, 5*c.Cycles, c.ChainLinks)
	cancel()
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	// Warm the server's contended paths too (watches and their
	// notifications, multi, setData), with every implementation's
	// contended workload, unmeasured: otherwise whichever runs first in
	// the first repetition meets a server still compiling them.
	// The raw lock (the contended floor) is warmed up and measured with
	// the implementations, in their rotation.
	contenders := append(slices.Clone(runners), runner(inProcess{impl: bench.RawLock, c: c}))
	for _, r := range contenders {
		if _, err := r.contended(ctx, env, "/zkbench/warmup/contended/"+r.name(), c.throughputLoad()); err != nil {
			return fmt.Errorf("warm-up: %s contended: %w", r.name(), err)
		}
		logf("warm-up: %s contended", r.name())
	}

	if !c.CurvesOnly {
		if err := workloads(ctx, c, env, runners, contenders); err != nil {
			return err
		}
	}
	if c.Curves.enabled() {
		logf("curves (%s): lock %v sessions, drain %v waiters, memory %v sessions, cache %v nodes, services %v instances, leases %v, %d repetitions", c.Curves.Mode,
			c.Curves.LockSessions, c.Curves.DrainWaiters, c.Curves.MemorySessions, c.Curves.CacheNodes, c.Curves.ServiceInstances, c.Curves.LeaseHeld, c.Curves.Reps)
		if cluster.Backend() != zktest.BackendServers { // ZK_SERVERS' servers are not ours to restart
			c.Curves.restart = func() error { return cluster.Restart(0) }
		}
		return runCurves(ctx, env, runners, c.Curves, c.Out)
	}
	return nil
}

// workloads runs the repetitions of every workload and writes their
// results into c.Out.
func workloads(ctx context.Context, c config, env bench.Env, runners, contenders []runner) error {
	res := newResults(c, machine())
	for rep := range c.Reps {
		order := rotate(runners, rep)
		names := make([]string, len(order))
		for i, r := range order {
			names[i] = r.name()
		}
		logf("repetition %d/%d, order %v", rep+1, c.Reps, names)
		fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		f, err := bench.Floor(fctx, env, fmt.Sprintf("/zkbench/r%d/floor", rep), c.Warmup, c.Cycles, c.ChainLinks)
		cancel()
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		logf("  floor: cycle p50 %v (in sequence %v), handoff p50 %v, %v per chained handoff, %v per marked one", f.CycleP50, f.SequentialP50, f.HandoffP50, f.PerHandoff, f.MarkedPerHandoff)
		res.Floor = append(res.Floor, f)
		for _, r := range order {
			p := fmt.Sprintf("/zkbench/r%d/uncontended/%s", rep, r.name())
			u, err := r.uncontended(ctx, env, p)
			if err != nil {
				return fmt.Errorf("%s uncontended: %w", r.name(), err)
			}
			logf("  %-9s uncontended: p50 %v p99 %v, %.2f requests/cycle", r.name(), u.P50, u.P99, u.ReqPerCycle)
			res.add(r.name()).Uncontended = append(res.add(r.name()).Uncontended, u)
		}
		for _, ph := range c.contendedPhases() {
			for _, r := range rotate(contenders, rep) {
				p := fmt.Sprintf("/zkbench/r%d/%s/%s", rep, ph.dir, r.name())
				k, err := r.contended(ctx, env, p, ph.load)
				if err != nil {
					return fmt.Errorf("%s %s: %w", r.name(), ph.what, err)
				}
				logf("  %-9s %s: %.0f acquisitions/s, handoff p50 %v p99 %v, %d violations in %d acquisitions",
					r.name(), ph.what, k.Throughput, k.HandoffP50, k.HandoffP99, k.Violations, k.Acquisitions)
				res.addContended(r.name(), ph.load.Hold > 0, k)
			}
		}
		for _, n := range c.Drains {
			for _, r := range order {
				p := fmt.Sprintf("/zkbench/r%d/drain%d/%s", rep, n, r.name())
				d, err := r.drain(ctx, env, p, n)
				if err != nil {
					return fmt.Errorf("%s drain %d: %w", r.name(), n, err)
				}
				logf("  %-9s drain %d: %v per handoff, %.0f response bytes/handoff", r.name(), n, d.PerHandoff, d.BytesPerHandoff)
				key := strconv.Itoa(n)
				ir := res.add(r.name())
				ir.Drain[key] = append(ir.Drain[key], d)
			}
		}
		for _, n := range c.WorkQueueConsumers {
			for _, r := range order {
				wq, ok := r.(workQueuer)
				if !ok || !wq.hasWorkQueue() {
					continue
				}
				p := fmt.Sprintf("/zkbench/r%d/workqueue%d/%s", rep, n, r.name())
				fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				err := bench.FillWorkQueue(fctx, env, p, c.WorkQueueItems)
				cancel()
				if err != nil {
					return fmt.Errorf("%s work queue: %w", r.name(), err)
				}
				w, err := wq.workQueue(ctx, env, p, c.WorkQueueItems, n)
				if err != nil {
					return fmt.Errorf("%s work queue, %d consumers: %w", r.name(), n, err)
				}
				logf("  %-9s work queue, %d consumers: %.0f items/s, %.2f requests/item", r.name(), n, w.PerSecond, w.ReqPerItem)
				ir := res.add(r.name())
				ir.WorkQueue[strconv.Itoa(n)] = append(ir.WorkQueue[strconv.Itoa(n)], w)
			}
		}
	}
	res.Machine.LoadAvgEnd = loadavg()
	return write(res, c.Out)
}

// write derives the medians, ratios and targets of res and writes
// results.json, results.md and chart.png into dir.
func write(res *Results, dir string) error {
	res.finish()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := res.writeJSON(filepath.Join(dir, "results.json")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(res.markdown()), 0o644); err != nil {
		return err
	}
	if err := drawChart(res, filepath.Join(dir, "chart.png")); err != nil {
		return err
	}
	fmt.Print(res.markdown())
	return nil
}

// render re-renders a run's results.json into dir, measuring nothing: the
// measured runs are kept as they are and the medians, ratios, targets,
// table and chart derived from them again (after a change to how they are
// derived or shown).
func render(path, dir string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(res.Impls) == 0 {
		return fmt.Errorf("%s: no implementation's results", path)
	}
	res.order = res.Config.Impls
	res.Median, res.Ratios, res.Targets = nil, nil, nil
	return write(&res, dir)
}

// throughputLoad is the contended workload measured for throughput.
func (c config) throughputLoad() bench.Load {
	return bench.Load{Sessions: c.Sessions, Duration: c.Contended}
}

// phase is one run of the contended workload in every repetition.
type phase struct {
	what, dir string
	load      bench.Load
}

// contendedPhases are the throughput run, then, unless -exclusion-hold
// is 0, the exclusion check: the same workload with a critical section
// long enough for two holders at once to overlap in the log.
func (c config) contendedPhases() []phase {
	ps := []phase{{"contended", "contended", c.throughputLoad()}}
	if c.ExclusionHold > 0 {
		ps = append(ps, phase{"exclusion check (held " + c.ExclusionHold.String() + ")", "exclusion",
			bench.Load{Sessions: c.Sessions, Duration: c.ExclusionDuration, Hold: c.ExclusionHold}})
	}
	return ps
}

// rotate returns rs begun at its k-th element (mod its length), the
// elements before it at the end.
func rotate[T any](rs []T, k int) []T {
	if len(rs) == 0 {
		return nil
	}
	k %= len(rs)
	return append(append([]T(nil), rs[k:]...), rs[:k]...)
}
