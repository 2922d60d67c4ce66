package main

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

// The service curve (issue 45): a discovery ServiceCache of one service
// with 10,000 to 1,000,000 instances in Curator's layout and JSON, beside
// the raw floor of its load and Curator's ServiceCache
// (integration/bench/servicecurve*.go measure them). Its points are cache
// points (CachePoint): Nodes is the instances, HeapPerNode the heap per
// instance, TreeBuild and TreeDelete the registration and deletion of the
// instances.

// curatorServiceLimit is how long Curator's ServiceCache may take to
// start before its point records that it did not.
const curatorServiceLimit = 120 * time.Second

// serviceImpls are the zkrecipes ServiceCache, the raw floor and,
// withCurator, Curator's ServiceCache, each bounded in time, on s.
func serviceImpls(s bench.ServiceSet, withCurator bool) []cacheImpl {
	return boundedCacheImpls(withCurator,
		func(ctx context.Context, env bench.Env, rep int) (bench.CacheRun, error) {
			return bench.ServiceCacheRun(ctx, env, s, rep)
		},
		func(ctx context.Context, env bench.Env) (bench.CacheRun, error) {
			return bench.RawServiceLoad(ctx, env, s)
		},
		func(ctx context.Context, env bench.Env) (bench.CacheRun, error) {
			return bench.CuratorServiceCacheRun(ctx, env, s, curatorServiceLimit)
		})
}

// services runs the service curve at n instances (loadCurve).
func (cr *curveRun) services(ctx context.Context, withCurator bool, n int) error {
	s := bench.NewServiceSet(fmt.Sprintf("/zkbench/curves/services%d", n), n)
	return cr.loadCurve(ctx, loadSubject{
		curve: curveServices, size: n, nodes: n, root: s.Base,
		what: fmt.Sprintf("%s, %d instances", s.Path(), n),
		build: func(ctx context.Context, env bench.Env) (time.Duration, error) {
			return bench.BuildServiceSet(ctx, env.Observer, s)
		},
		impls: serviceImpls(s, withCurator),
	})
}

// serviceTable is the service curve's table in curves.md.
func serviceTable() curveTable {
	return curveTable{curveServices,
		"Service cache (one service, its instances in Curator's layout and JSON, some 400 B each with a URI spec, IDs as long as a UUID; medians; load against the raw floor of the same repetition: one listing and a getData per instance; watches: the most of any run; mismatches against a fresh listing after the load and after the resync, and changes of the drop not shown once the resync's wait ended: summed (runs to 2026-11-29 14:40 counted them 10 s after the drop's end)):",
		"| instances | implementation | runs | instances | load ms | × floor (each repetition) | heap B/instance | server watches | mismatches | resync ms | changes missed |",
		cacheCells}
}

// serviceChart is the service curve's chart: the cache curve's panels,
// per instance, with no heap target (an instance's JSON alone is some
// 400 bytes).
func serviceChart() curveChart {
	return curveChart{curveServices, "curve-services.png", "instances of the service", cachePanels("instance", 0)}
}
