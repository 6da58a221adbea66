package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"github.com/bikerental/bikerental/tools/chartkit"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The chart's size: 900 by 560 pixels at vgimg's default 96 dpi.
const (
	chartWidth  = 9.375 * vg.Inch
	chartHeight = 5.833 * vg.Inch
)

var (
	scanColor  = color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff} // red: the baseline
	sweepColor = color.RGBA{R: 0x1f, G: 0x6f, B: 0xb4, A: 0xff} // blue: the index
)

// Render draws points as a PNG: pending rows across, items read up, both on log
// scales, one series for the scan-and-filter baseline and one for the sweep, each
// point labelled with its count. It returns an error, and writes nothing, for no
// points or for a count below 1, which a log scale cannot show.
func Render(w io.Writer, points []Point) error {
	if len(points) == 0 {
		return errors.New("no results to chart")
	}
	for _, p := range points {
		if p.Pending < 1 || p.Sweep < 1 || p.Scan < 1 {
			return fmt.Errorf("pending=%d: counts must be at least 1 on a log scale (%+v)", p.Pending, p)
		}
	}
	p := plot.New()
	p.Title.Text = title(points)
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(8)
	// Both axes are logarithmic, which the title says: gonum/plot centres a vertical
	// axis label by the linear midpoint of the range, near the top of a log axis, and
	// makes room for it there, so the label is kept short.
	p.X.Label.Text = "outstanding rows in the Deadlines table"
	p.Y.Label.Text = "items read"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = chartkit.Decades{}, chartkit.Decades{}
	p.X.Padding, p.Y.Padding = vg.Points(4), vg.Points(4)

	minX, maxX := float64(points[0].Pending), float64(points[len(points)-1].Pending)
	maxY := 1.0
	for _, pt := range points {
		maxY = math.Max(maxY, float64(max(pt.Scan, pt.Sweep)))
	}
	// Half a decade of room either side, and up to the next decade above the
	// highest count, or the one after when that is too close for its label.
	p.X.Min, p.X.Max = minX/math.Sqrt(10), maxX*math.Sqrt(10)
	p.Y.Min, p.Y.Max = 1, math.Pow10(int(math.Floor(math.Log10(maxY*math.Sqrt(10))))+1)

	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 0xdd}
	grid.Horizontal.Color = color.Gray{Y: 0xdd}
	p.Add(grid)

	scan, sweep := make(plotter.XYs, len(points)), make(plotter.XYs, len(points))
	scanLabels, sweepLabels := make([]string, len(points)), make([]string, len(points))
	for i, pt := range points {
		scan[i] = plotter.XY{X: float64(pt.Pending), Y: float64(pt.Scan)}
		sweep[i] = plotter.XY{X: float64(pt.Pending), Y: float64(pt.Sweep)}
		scanLabels[i] = chartkit.Thousands(float64(pt.Scan))
		sweepLabels[i] = chartkit.Thousands(float64(pt.Sweep))
	}
	series := []struct {
		name   string
		xys    plotter.XYs
		labels []string
		color  color.Color
		shape  draw.GlyphDrawer
	}{
		{"scan and filter over the whole table (baseline)", scan, scanLabels, scanColor, draw.BoxGlyph{}},
		{"sweep: query of the DueByKind index", sweep, sweepLabels, sweepColor, draw.CircleGlyph{}},
	}
	for _, s := range series {
		line, dots, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		line.Color, line.Width = s.color, vg.Points(2)
		dots.Color, dots.Shape, dots.Radius = s.color, s.shape, vg.Points(4)
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: s.xys, Labels: s.labels})
		if err != nil {
			return err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Color = s.color
			labels.TextStyle[i].Font.Size = vg.Points(10)
			labels.TextStyle[i].XAlign = draw.XCenter
		}
		labels.Offset = vg.Point{Y: vg.Points(9)}
		p.Add(line, dots, labels)
		p.Legend.Add(s.name, line, dots)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(10), -vg.Points(10)
	p.Legend.TextStyle.Font.Size = vg.Points(11)

	c := vgimg.New(chartWidth, chartHeight)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(dc)
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

const logScales = "(both axes on log scales)"

// title names what the chart compares, with the overdue rows of every size.
func title(points []Point) string {
	overdue := points[0].Overdue
	for _, p := range points[1:] {
		if p.Overdue != overdue {
			counts := make([]string, len(points))
			for i, q := range points {
				counts[i] = chartkit.Thousands(float64(q.Overdue))
			}
			return "Items read to find the overdue payments (" + strings.Join(counts, ", ") + " overdue)\n" + logScales
		}
	}
	return fmt.Sprintf("Items read to find %s overdue payments among all pending ones\n%s", chartkit.Thousands(float64(overdue)), logScales)
}
