package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/bench"
	"github.com/zkrecipes/zkrecipes/integration/peers"
)

// The cache curve (issue 45): a TreeCache over trees of about 10,000 to
// 1,000,000 nodes, beside the raw floor of its load and Curator's
// CuratorCache (integration/bench/cachecurve*.go measure them).

// The implementations of the cache curve.
const (
	cacheZkrecipes = "zkrecipes"
	cacheFloor     = "floor (raw reads)"
	cacheCurator   = "curator"
)

// curatorCacheLimit is how long Curator's CuratorCache may take to load a
// tree before its point records that it did not.
const curatorCacheLimit = 120 * time.Second

// cacheImpl is one implementation a cache-like curve (cache, services)
// runs at one size, on what that size loads.
type cacheImpl struct {
	name string
	run  func(ctx context.Context, env bench.Env, rep int) (bench.CacheRun, error)
}

// cacheImpls are the zkrecipes TreeCache, the raw floor and, withCurator,
// Curator's CuratorCache, each bounded in time, on t.
func cacheImpls(t bench.CacheTree, withCurator bool) []cacheImpl {
	return boundedCacheImpls(withCurator,
		func(ctx context.Context, env bench.Env, rep int) (bench.CacheRun, error) {
			return bench.TreeCacheRun(ctx, env, t.Root, rep)
		},
		func(ctx context.Context, env bench.Env) (bench.CacheRun, error) {
			return bench.RawTreeLoad(ctx, env, t.Root)
		},
		func(ctx context.Context, env bench.Env) (bench.CacheRun, error) {
			return bench.CuratorCacheRun(ctx, env, t.Root, t.Nodes, curatorCacheLimit)
		})
}

// boundedCacheImpls are zkrecipes (20 minutes at most), the floor (10
// minutes) and, withCurator, Curator (bounded by its own limit) of a
// cache-like curve at one size.
func boundedCacheImpls(withCurator bool, zkrecipes func(context.Context, bench.Env, int) (bench.CacheRun, error),
	floor, curator func(context.Context, bench.Env) (bench.CacheRun, error)) []cacheImpl {
	is := []cacheImpl{
		{cacheZkrecipes, func(ctx context.Context, env bench.Env, rep int) (bench.CacheRun, error) {
			ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
			defer cancel()
			return zkrecipes(ctx, env, rep)
		}},
		{cacheFloor, func(ctx context.Context, env bench.Env, _ int) (bench.CacheRun, error) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			defer cancel()
			return floor(ctx, env)
		}},
	}
	if withCurator {
		is = append(is, cacheImpl{cacheCurator, func(ctx context.Context, env bench.Env, _ int) (bench.CacheRun, error) {
			return curator(ctx, env)
		}})
	}
	return is
}

// cache runs the cache curve at a tree of about n nodes (loadCurve).
func (cr *curveRun) cache(ctx context.Context, withCurator bool, n int) error {
	t := bench.NewCacheTree(fmt.Sprintf("/zkbench/curves/cache%d", n), n)
	return cr.loadCurve(ctx, loadSubject{
		curve: curveCache, size: n, nodes: t.Nodes, root: t.Root,
		what: fmt.Sprintf("%s, %d nodes (K = %d)", t.Root, t.Nodes, t.K),
		build: func(ctx context.Context, env bench.Env) (time.Duration, error) {
			return bench.BuildCacheTree(ctx, env.Observer, t)
		},
		impls: cacheImpls(t, withCurator),
	})
}

// loadSubject is what a cache-like curve loads at one size: the nodes
// (or instances) under root, made by build, and the implementations
// loading them.
type loadSubject struct {
	curve       string
	size, nodes int
	root, what  string // what: root and its shape, for the log
	build       func(ctx context.Context, env bench.Env) (time.Duration, error)
	impls       []cacheImpl
}

// loadCurve runs a cache-like curve at one size: it builds s
// (unmeasured; what a run stopped half-way left at its root is deleted
// first), runs each implementation once per repetition in an order
// rotating with the repetition (one that fails is not run at that size
// again; its point says why), then deletes s. Every point records the
// exact node count and how long building and deleting took.
func (cr *curveRun) loadCurve(ctx context.Context, s loadSubject) error {
	conn := cr.env.Observer
	tctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	if _, err := bench.DeleteCacheTree(tctx, conn, s.root); err != nil {
		return err
	}
	build, err := s.build(tctx, cr.env)
	if err != nil {
		return err
	}
	logf("  curve %s %d: built %s in %v", s.curve, s.size, s.what, build.Round(time.Millisecond))
	runs := map[string]map[int]bench.CacheRun{}
	failed := map[string]error{}
	for rep := range cr.cc.Reps {
		for _, im := range rotate(s.impls, rep) {
			if failed[im.name] != nil {
				continue
			}
			r, err := im.run(ctx, cr.env, rep)
			if err != nil {
				failed[im.name] = err
				logf("  curve %s %d: %s failed: %s", s.curve, s.size, im.name, oneLine(err.Error(), 400))
				continue
			}
			if runs[im.name] == nil {
				runs[im.name] = map[int]bench.CacheRun{}
			}
			runs[im.name][rep] = r
			logf("  curve %s %d, repetition %d: %-17s %d loaded in %v, %.0f heap bytes each, %d server watches, %d mismatches, resync %v, %d missed",
				s.curve, s.size, rep+1, im.name, r.Nodes, r.Load.Round(time.Millisecond), r.HeapPerNode, r.ServerWatches, r.Mismatches, r.Resync.Round(time.Millisecond), r.EventsMissed)
		}
	}
	del, err := bench.DeleteCacheTree(tctx, conn, s.root)
	if err != nil {
		return err
	}
	logf("  curve %s %d: deleted %s in %v", s.curve, s.size, s.root, del.Round(time.Millisecond))
	for _, im := range s.impls {
		p := cachePoint(s.curve, im.name, s.size, s.nodes, runs[im.name], runs[cacheFloor], failed[im.name])
		p.TreeBuild, p.TreeDelete = build, del
		cr.points = append(cr.points, p)
	}
	return cr.write()
}

// hasCurator reports whether the runners include Curator, which the cache
// curve then runs too.
func hasCurator(runners []runner) bool {
	return slices.ContainsFunc(runners, func(r runner) bool { return r.name() == peers.Curator })
}

// CachePoint is a cache point: one implementation loading a tree of about
// Size nodes (Nodes exactly), in each repetition once; on the services
// curve, a service of Size instances (Nodes: the instances; heap per
// instance; EventsMissed: the drop's changes the copy did not show when
// the resync's wait ended). Its figures are the medians of its runs, but for
// ServerWatches (the most of any run) and Mismatches and EventsMissed
// (summed); they are absent where the implementation is not measured for
// them (only zkrecipes' cache has server watches, mismatches, a resync
// and events), and every figure is absent from a point with no run.
type CachePoint struct {
	Nodes int `json:"nodes"`
	// Load is the time to load the tree: for a cache from its start until
	// it reports itself initialized, for the floor its reads.
	Load    time.Duration   `json:"load_ns,omitempty"`
	RepLoad []time.Duration `json:"rep_load_ns,omitempty"`
	// VsFloor is the median over the repetitions of RepVsFloor: each
	// repetition's load over the floor's in the same repetition (absent
	// for the floor, or when it failed).
	VsFloor     float64   `json:"load_vs_floor,omitempty"`
	RepVsFloor  []float64 `json:"rep_load_vs_floor,omitempty"`
	HeapPerNode float64   `json:"heap_bytes_per_node,omitempty"`
	// ServerWatches is what the cache adds to the server's zk_watch_count.
	ServerWatches *int64 `json:"server_watches,omitempty"`
	// Mismatches is the nodes in which the loaded cache and a fresh
	// listing differed.
	Mismatches *int `json:"mismatches,omitempty"`
	// Resync is the time from a connection drop's end until the cache
	// holds what changed during it and the server's watches are back;
	// EventsMissed is the events of those changes not delivered.
	Resync       time.Duration `json:"resync_ns,omitempty"`
	EventsMissed *int          `json:"events_missed,omitempty"`
	// TreeBuild and TreeDelete are how long building the tree (multis of
	// creates) and deleting it (multis of deletes) took; unmeasured.
	TreeBuild  time.Duration `json:"tree_build_ns,omitempty"`
	TreeDelete time.Duration `json:"tree_delete_ns,omitempty"`
}

// cachePoint aggregates the runs of impl on curve (cache, or services) at
// about size nodes (nodes exactly), by repetition, against floor, the
// floor's runs by repetition; err is the failure of a run that did not
// finish, if any.
func cachePoint(curve, impl string, size, nodes int, runs, floor map[int]bench.CacheRun, err error) CurvePoint {
	p := CurvePoint{Curve: curve, Size: size, Impl: impl, Runs: len(runs), Error: errText(err), CachePoint: &CachePoint{Nodes: nodes}}
	if len(runs) == 0 {
		return p
	}
	reps := make([]int, 0, len(runs))
	for rep := range runs {
		reps = append(reps, rep)
	}
	slices.Sort(reps)
	ordered := make([]bench.CacheRun, len(reps))
	cp := p.CachePoint
	for i, rep := range reps {
		r := runs[rep]
		ordered[i] = r
		cp.RepLoad = append(cp.RepLoad, r.Load)
		if f, ok := floor[rep]; ok && impl != cacheFloor && f.Load > 0 {
			cp.RepVsFloor = append(cp.RepVsFloor, bench.Ratio(float64(r.Load), float64(f.Load)))
		}
	}
	cp.Load = medD(ordered, func(r bench.CacheRun) time.Duration { return r.Load })
	cp.VsFloor = bench.Median(cp.RepVsFloor)
	cp.HeapPerNode = med(ordered, func(r bench.CacheRun) float64 { return r.HeapPerNode })
	if impl == cacheZkrecipes {
		var watches int64
		var mismatches, missed int
		for _, r := range ordered {
			watches = max(watches, r.ServerWatches)
			mismatches += r.Mismatches
			missed += r.EventsMissed
		}
		cp.ServerWatches, cp.Mismatches, cp.EventsMissed = &watches, &mismatches, &missed
		cp.Resync = medD(ordered, func(r bench.CacheRun) time.Duration { return r.Resync })
	}
	return p
}

// cacheTable is the cache curve's table in curves.md.
func cacheTable() curveTable {
	return curveTable{curveCache,
		"Cache (a root, K children, K−1 grandchildren each, 32 B a node; medians; load against the raw floor of the same repetition; watches: the most of any run; mismatches and events missed: summed):",
		"| nodes (about) | implementation | runs | nodes | load ms | × floor (each repetition) | heap B/node | server watches | mismatches | resync ms | events missed |",
		cacheCells}
}

// cacheCells are a cache or services point's cells in its table.
func cacheCells(p CurvePoint) (string, bool) {
	if p.CachePoint == nil || p.Runs == 0 {
		return "", false
	}
	vs := medianAndEach(p.VsFloor, p.RepVsFloor)
	heap, resync := "–", "–"
	if p.HeapPerNode > 0 {
		heap = fmt.Sprintf("%.0f", p.HeapPerNode)
	}
	if p.Resync > 0 {
		resync = ms(p.Resync)
	}
	return fmt.Sprintf("%d | %d | %s | %s | %s | %s | %s | %s | %s |", p.Runs, p.Nodes, ms(p.Load), vs, heap,
		optInt(p.ServerWatches), optInt(p.Mismatches), resync, optInt(p.EventsMissed)), true
}

// ms renders d in milliseconds, to one decimal.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// optInt renders a figure that may be absent ("–").
func optInt[T int | int64](v *T) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprint(*v)
}

// cachePanels are the panels of curve-cache.png (per: "node") and
// curve-services.png ("instance"); heapRef, when above 0, is the heap
// target drawn.
func cachePanels(per string, heapRef float64) []curvePanel {
	cache := func(f func(*CachePoint) (float64, bool)) func(CurvePoint) (float64, bool) {
		return func(p CurvePoint) (float64, bool) {
			if p.CachePoint == nil || p.Runs == 0 {
				return 0, false
			}
			return f(p.CachePoint)
		}
	}
	return []curvePanel{
		panel("Load time", "s (lower is better)", cache(func(c *CachePoint) (float64, bool) { return c.Load.Seconds(), true })),
		{title: "Load against the raw floor", unit: "× the floor's time, same repetition", value: cache(func(c *CachePoint) (float64, bool) {
			return c.VsFloor, c.VsFloor > 0
		}), ref: 1, refName: "target: the floor (1×)"},
		{title: "Heap per cached " + per, unit: "bytes (live heap after a GC)", value: cache(func(c *CachePoint) (float64, bool) {
			return c.HeapPerNode, c.HeapPerNode > 0
		}), ref: heapRef, refName: fmt.Sprintf("target: %.0f B/%s", heapRef, per)},
		panel("Server watches", "added to zk_watch_count", cache(func(c *CachePoint) (float64, bool) {
			if c.ServerWatches == nil {
				return 0, false
			}
			return float64(*c.ServerWatches), true
		})),
		panel("Resync after a connection drop", "s (lower is better)", cache(func(c *CachePoint) (float64, bool) {
			return c.Resync.Seconds(), c.Resync > 0
		})),
	}
}
