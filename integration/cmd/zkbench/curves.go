package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zkrecipes/zkrecipes/integration/bench"
)

// drainer is what the drain curve runs: an implementation, or the marked
// chain.
type drainer interface {
	name() string
	drain(ctx context.Context, env bench.Env, path string, n int) (bench.DrainResult, error)
}

// markedChain is the drain's floor: bench.MarkedChain with as many links
// as the drain has waiters.
type markedChain struct{}

const markedChainName = "floor (marked chain)"

func (markedChain) name() string { return markedChainName }

func (markedChain) drain(ctx context.Context, env bench.Env, path string, n int) (bench.DrainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return bench.MarkedChain(ctx, env, path, n)
}

// curveRun is one run of the curves: what it measures, where, the
// directory it writes into, when it started (RFC 3339), the points so far,
// and the points of an earlier run that this one does not measure again.
type curveRun struct {
	cc      curveConfig
	env     bench.Env
	dir     string
	started string
	points  []CurvePoint
	kept    []CurvePoint
}

// runCurves measures the curves of cc on env and writes their points
// (curves.jsonl, curves.md and one chart per curve) into dir, again after
// every size, so that a run stopped half-way keeps what it measured. The
// points of dir's curves.jsonl at a curve and size that cc does not
// measure are kept (each says which run measured it): a run of one curve
// leaves the others'.
// runners are the implementations (the variants are left out: the curves
// compare zkrecipes with its peers and the floors).
func runCurves(ctx context.Context, env bench.Env, runners []runner, cc curveConfig, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cr := &curveRun{cc: cc, env: env, dir: dir, started: time.Now().UTC().Format(time.RFC3339)}
	earlier, err := readCurves(filepath.Join(dir, "curves.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	cr.kept = keptPoints(earlier, cc)
	var impls []runner
	for _, r := range runners {
		if !isVariant(r.name()) {
			impls = append(impls, r)
		}
	}
	contenders := append(impls, runner(inProcess{impl: bench.RawLock}))
	for _, n := range cc.LockSessions {
		if err := cr.lock(ctx, contenders, n); err != nil {
			return err
		}
	}
	drainers := make([]drainer, 0, len(impls)+1)
	for _, r := range impls {
		drainers = append(drainers, r)
	}
	drainers = append(drainers, markedChain{})
	for _, n := range cc.DrainWaiters {
		if err := cr.drain(ctx, drainers, n); err != nil {
			return err
		}
	}
	for _, n := range cc.MemorySessions {
		if err := cr.memory(ctx, n); err != nil {
			return err
		}
	}
	for _, n := range cc.CacheNodes {
		if err := cr.cache(ctx, hasCurator(impls), n); err != nil {
			return err
		}
	}
	for _, n := range cc.ServiceInstances {
		if err := cr.services(ctx, hasCurator(impls), n); err != nil {
			return err
		}
	}
	// Last: its runs restart the server, whose JIT is then cold again.
	for _, n := range cc.LeaseHeld {
		if err := cr.lease(ctx, n); err != nil {
			return err
		}
	}
	fmt.Print(curvesMarkdown(mergePoints(cr.kept, cr.points)))
	return nil
}

// lock runs the contended lock at n sessions: each contender once per
// repetition, in an order rotating with the repetition. A contender that
// fails at n is not run at n again; its point records why.
func (cr *curveRun) lock(ctx context.Context, contenders []runner, n int) error {
	runs := map[string][]bench.ContendedResult{}
	failed := map[string]error{}
	for rep := range cr.cc.Reps {
		for _, r := range rotate(contenders, rep) {
			if failed[r.name()] != nil {
				continue
			}
			p := fmt.Sprintf("/zkbench/curves/lock%d/r%d/%s", n, rep, r.name())
			k, err := r.contended(ctx, cr.env, p, bench.Load{Sessions: n, Duration: cr.cc.LockDuration})
			if err != nil {
				failed[r.name()] = err
				logf("  curve lock %d: %s failed: %s", n, r.name(), oneLine(err.Error(), 300))
				continue
			}
			runs[r.name()] = append(runs[r.name()], k)
			logf("  curve lock %d: %-9s %.0f acquisitions/s, %.2f requests/acq, %.0f response bytes/acq, handoff p99 %v, server CPU %v/acq, %d violations",
				n, r.name(), k.Throughput, k.ReqPerAcq, k.ResponseBytesPerAcq, k.HandoffP99, k.ServerCPUPerAcq, k.Violations)
		}
	}
	for _, r := range contenders {
		cr.points = append(cr.points, lockPoint(r.name(), n, runs[r.name()], failed[r.name()]))
	}
	return cr.write()
}

// drain runs the drain of n waiters: in each repetition, DrainsPerRep
// rounds, each draining every implementation and the marked chain once
// in an order rotating with the round.
func (cr *curveRun) drain(ctx context.Context, drainers []drainer, n int) error {
	reps := map[string][][]bench.DrainResult{}
	failed := map[string]error{}
	for rep := range cr.cc.Reps {
		for _, d := range drainers {
			reps[d.name()] = append(reps[d.name()], nil)
		}
		for round := range cr.cc.DrainsPerRep {
			for _, d := range rotate(drainers, rep*cr.cc.DrainsPerRep+round) {
				if failed[d.name()] != nil {
					continue
				}
				p := fmt.Sprintf("/zkbench/curves/drain%d/r%d/%d/%s", n, rep, round, d.name())
				res, err := d.drain(ctx, cr.env, p, n)
				if err != nil {
					failed[d.name()] = err
					logf("  curve drain %d: %s failed: %s", n, d.name(), oneLine(err.Error(), 300))
					continue
				}
				rs := reps[d.name()]
				rs[rep] = append(rs[rep], res)
				logf("  curve drain %d, repetition %d, round %d: %-9s %v per handoff, %.2f requests and %.0f response bytes per handoff",
					n, rep+1, round+1, d.name(), res.PerHandoff, res.ReqPerHandoff, res.BytesPerHandoff)
			}
		}
	}
	floor := reps[markedChainName]
	for _, d := range drainers {
		f := floor
		if d.name() == markedChainName {
			f = nil
		}
		cr.points = append(cr.points, drainPoint(d.name(), n, reps[d.name()], f, failed[d.name()]))
	}
	return cr.write()
}

// memory measures the heap and goroutines per session of n zkrecipes
// Sessions and of n bare go-zookeeper connections, in an order rotating
// with the repetition.
func (cr *curveRun) memory(ctx context.Context, n int) error {
	kinds := []string{bench.MemoryZkrecipes, bench.MemoryGozk}
	runs := map[string][]bench.SessionMemoryResult{}
	failed := map[string]error{}
	for rep := range cr.cc.Reps {
		for _, kind := range rotate(kinds, rep) {
			if failed[kind] != nil {
				continue
			}
			mctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			m, err := bench.SessionMemory(mctx, cr.env, kind, n)
			cancel()
			if err != nil {
				failed[kind] = err
				logf("  curve memory %d: %s failed: %s", n, kind, oneLine(err.Error(), 300))
				continue
			}
			runs[kind] = append(runs[kind], m)
			logf("  curve memory %d: %-9s %.0f heap bytes and %.2f goroutines per session", n, kind, m.HeapPerSession, m.GoroutinesPerSession)
		}
	}
	for _, kind := range kinds {
		cr.points = append(cr.points, memoryPoint(kind, n, runs[kind], failed[kind]))
	}
	return cr.write()
}

// write writes the points so far: curves.jsonl, curves.md and the charts.
func (cr *curveRun) write() error {
	for i := range cr.points {
		cr.points[i].Run = cr.started
		if cr.points[i].LoadAvg == "" {
			cr.points[i].LoadAvg = loadavg()
		}
	}
	return writeCurveFiles(cr.dir, mergePoints(cr.kept, cr.points))
}

// writeCurveFiles writes points into dir: curves.jsonl, curves.md and a
// chart per curve that has points.
func writeCurveFiles(dir string, points []CurvePoint) error {
	if err := writeCurves(filepath.Join(dir, "curves.jsonl"), points); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "curves.md"), []byte(curvesMarkdown(points)), 0o644); err != nil {
		return err
	}
	return errors.Join(drawCurveCharts(points, dir)...)
}

// renderCurves re-renders the curves.md and charts of a curves.jsonl into
// dir, measuring nothing.
func renderCurves(path, dir string) error {
	ps, err := readCurves(path)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		return fmt.Errorf("%s: no point", path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCurveFiles(dir, ps); err != nil {
		return err
	}
	fmt.Print(curvesMarkdown(ps))
	return nil
}
