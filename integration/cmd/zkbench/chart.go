package main

import (
	"image/color"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	color.RGBA{R: 0xbc, G: 0xbd, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// rawLockBar names the contended floor's bar (bench.RawLock).
const rawLockBar = "floor (raw lock)"

// drawChart draws one bar panel per workload: uncontended p50, contended
// throughput, and time per handoff in the largest drain, each
// implementation beside the floor (and, for the contended workload, the
// raw lock).
func drawChart(r *Results, path string) error {
	names := append([]string(nil), r.order...)
	names = append(names, "floor")
	contendedNames := names
	if r.FloorMedian.RawLock.Throughput > 0 {
		contendedNames = append(slices.Clone(names), rawLockBar)
	}
	f := r.FloorMedian
	big := r.largestDrain()
	msf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	panels := []struct {
		title, unit string
		names       []string
		value       func(name string) float64
	}{
		{"Uncontended acquire+release, p50", "ms (lower is better)", names, func(n string) float64 {
			if n == "floor" {
				return msf(f.CycleP50)
			}
			return msf(r.Median[n].UncontendedP50)
		}},
		{strconv.Itoa(r.Config.Sessions) + " sessions contending", "acquisitions/s (higher is better)", contendedNames, func(n string) float64 {
			switch n {
			case "floor":
				return f.Throughput
			case rawLockBar:
				return f.RawLock.Throughput
			}
			return r.Median[n].Throughput
		}},
		{big + " queued waiters draining", "ms per handoff (lower is better)", names, func(n string) float64 {
			if n == "floor" {
				return msf(f.PerHandoff)
			}
			return msf(r.Median[n].DrainPerHandoff[big])
		}},
	}
	plots := make([][]*plot.Plot, 1)
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.Y.Label.Text = pn.unit
		p.Y.Min = 0
		w := vg.Points(18)
		for i, n := range pn.names {
			bars, err := plotter.NewBarChart(plotter.Values{pn.value(n)}, w)
			if err != nil {
				return err
			}
			bars.Color = palette[i%len(palette)]
			bars.LineStyle.Width = 0
			bars.Offset = vg.Length(i-len(pn.names)/2) * (w + vg.Points(2))
			p.Add(bars)
			p.Legend.Add(n, bars)
		}
		p.Legend.Top = true
		p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{})
		plots[0] = append(plots[0], p)
	}
	return writePlotRow(plots[0], 15*vg.Inch, 5*vg.Inch, path)
}

// writePlotRow draws row side by side on one width × height canvas and
// writes it to path as a PNG.
func writePlotRow(row []*plot.Plot, width, height vg.Length, path string) error {
	img := vgimg.New(width, height)
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{row}, tiles, draw.New(img))
	for j, p := range row {
		p.Draw(canvases[0][j])
	}
	png := vgimg.PngCanvas{Canvas: img}
	return writeFile(path, png.WriteTo)
}
