package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// curvePanel is one panel of a curve's chart: a figure of each point
// against its size.
type curvePanel struct {
	title, unit string
	value       func(p CurvePoint) (float64, bool) // false: the point has no such figure
	// ref, when above 0, is drawn as a dashed line named refName: a target.
	ref     float64
	refName string
}

func panel(title, unit string, value func(CurvePoint) (float64, bool)) curvePanel {
	return curvePanel{title: title, unit: unit, value: value}
}

// curveChart is one curve's chart: its file, its size axis and its panels.
type curveChart struct {
	curve, file, xLabel string
	panels              []curvePanel
}

// drawCurveCharts draws one chart per curve that has points into dir:
// curve-lock.png, curve-drain.png, curve-memory.png, curve-cache.png,
// curve-services.png, curve-lease.png. Every implementation
// is a line over the sizes (a logarithmic axis); a point that failed is a
// cross on the size axis, so a peer that cannot run a size shows it.
func drawCurveCharts(points []CurvePoint, dir string) []error {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	usf := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	lock := func(f func(*LockPoint) float64) func(CurvePoint) (float64, bool) {
		return func(p CurvePoint) (float64, bool) {
			if p.LockPoint == nil {
				return 0, false
			}
			return f(p.LockPoint), true
		}
	}
	drain := func(f func(*DrainPoint) (float64, bool)) func(CurvePoint) (float64, bool) {
		return func(p CurvePoint) (float64, bool) {
			if p.DrainPoint == nil {
				return 0, false
			}
			return f(p.DrainPoint)
		}
	}
	mem := func(f func(*MemoryPoint) float64) func(CurvePoint) (float64, bool) {
		return func(p CurvePoint) (float64, bool) {
			if p.MemoryPoint == nil {
				return 0, false
			}
			return f(p.MemoryPoint), true
		}
	}
	charts := []curveChart{
		{curveLock, "curve-lock.png", "sessions contending", []curvePanel{
			panel("Throughput", "acquisitions/s (higher is better)", lock(func(l *LockPoint) float64 { return l.Throughput })),
			panel("Requests per acquisition", "zk_packets_received / acquisition", lock(func(l *LockPoint) float64 { return l.ReqPerAcq })),
			panel("Response bytes per acquisition", "bytes (lower is better)", lock(func(l *LockPoint) float64 { return l.BytesPerAcq })),
			panel("Handoff p99", "ms (lower is better)", lock(func(l *LockPoint) float64 { return ms(l.HandoffP99) })),
			panel("Server CPU per acquisition", "µs (lower is better)", func(p CurvePoint) (float64, bool) {
				if p.LockPoint == nil || p.ServerCPUPerAcq == 0 {
					return 0, false
				}
				return usf(p.ServerCPUPerAcq), true
			}),
		}},
		{curveDrain, "curve-drain.png", "waiters queued", []curvePanel{
			panel("Time per handoff", "µs (lower is better)", drain(func(d *DrainPoint) (float64, bool) { return usf(d.PerHandoff), true })),
			{title: "Against the marked chain, same run", unit: "× the chain's time per handoff", value: drain(func(d *DrainPoint) (float64, bool) {
				return d.VsMarkedFloor, d.VsMarkedFloor > 0
			}), ref: 1.3, refName: "zkrecipes' target: 1.3×"},
			panel("Response bytes per handoff", "bytes (lower is better)", drain(func(d *DrainPoint) (float64, bool) { return d.BytesPerHandoff, true })),
		}},
		{curveMemory, "curve-memory.png", "sessions open", []curvePanel{
			panel("Heap per session", "KB (live heap after a GC)", mem(func(m *MemoryPoint) float64 { return m.HeapPerSession / 1024 })),
			panel("Goroutines per session", "goroutines", mem(func(m *MemoryPoint) float64 { return m.GoroutinesPerSession })),
		}},
		{curveCache, "curve-cache.png", "nodes in the tree", cachePanels("node", 300)},
		serviceChart(),
		leaseChart(),
	}
	var errs []error
	for _, c := range charts {
		if len(pointsOf(points, c.curve)) == 0 {
			continue
		}
		if err := drawCurveChart(points, c.curve, c.xLabel, c.panels, filepath.Join(dir, c.file)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.file, err))
		}
	}
	return errs
}

func drawCurveChart(points []CurvePoint, curve, xLabel string, panels []curvePanel, path string) error {
	impls := curveImpls(points, curve)
	sizes := curveSizes(points, curve)
	ticks := make([]plot.Tick, len(sizes))
	for i, n := range sizes {
		ticks[i] = plot.Tick{Value: float64(n), Label: strconv.Itoa(n)}
	}
	row := make([]*plot.Plot, 0, len(panels)+1)
	// The legend has a panel of its own, after the figures, so that it
	// hides no line.
	legend := plot.New()
	legend.HideAxes()
	legend.Legend.Top, legend.Legend.Left = true, true
	var failedAny []string
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.Y.Label.Text = pn.unit
		p.X.Label.Text = xLabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		if len(sizes) > 0 {
			// A margin either side, so that the end points are not on the frame.
			p.X.Min, p.X.Max = float64(sizes[0])/1.5, float64(sizes[len(sizes)-1])*1.5
		}
		p.Y.Min = 0
		for i, impl := range impls {
			var ok, failed plotter.XYs
			for _, pt := range pointsOf(points, curve) {
				if pt.Impl != impl {
					continue
				}
				if v, has := pn.value(pt); has {
					ok = append(ok, plotter.XY{X: float64(pt.Size), Y: v})
				} else if pt.Runs == 0 && pt.Error != "" {
					failed = append(failed, plotter.XY{X: float64(pt.Size), Y: 0})
				}
			}
			col := palette[i%len(palette)]
			if len(ok) > 0 {
				line, marks, err := plotter.NewLinePoints(ok)
				if err != nil {
					return err
				}
				line.Color, marks.Color = col, col
				marks.Shape = draw.CircleGlyph{}
				p.Add(line, marks)
				if len(row) == 0 {
					legend.Legend.Add(impl, line, marks)
				}
			}
			if len(failed) > 0 {
				marks, err := plotter.NewScatter(failed)
				if err != nil {
					return err
				}
				marks.Color = col
				marks.Shape = draw.CrossGlyph{}
				marks.Radius = vg.Points(5)
				p.Add(marks)
				if !slices.Contains(failedAny, impl) {
					failedAny = append(failedAny, impl)
					legend.Legend.Add(impl+" failed (curves.jsonl says why)", marks)
				}
			}
		}
		if pn.ref > 0 && len(sizes) > 0 {
			ref, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: pn.ref}, {X: p.X.Max, Y: pn.ref}})
			if err != nil {
				return err
			}
			ref.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(ref)
			legend.Legend.Add(pn.refName, ref)
		}
		row = append(row, p)
	}
	row = append(row, legend)
	return writePlotRow(row, vg.Length(len(row))*4*vg.Inch, 5*vg.Inch, path)
}
