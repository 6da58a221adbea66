package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	"github.com/bikerental/bikerental/tools/chartkit"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The chart's size: 1,100 by 520 pixels at vgimg's default 96 dpi.
const (
	chartWidth  = 11.458 * vg.Inch
	chartHeight = 5.417 * vg.Inch
)

// dueColors colour the series by the share of rows due.
var dueColors = map[int]color.Color{
	0:   color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	1:   color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	10:  color.RGBA{R: 0x1f, G: 0x6f, B: 0xb4, A: 0xff},
	100: color.RGBA{R: 0xc0, G: 0x39, B: 0x2b, A: 0xff},
}

// Chart draws the sweep's reads as a PNG of two panels, rows open across both on
// a log scale: the items read (log scale; a sweep with nothing due reads none,
// which the legend says) and the queries made, one series per share of rows due.
// It returns an error, and writes nothing, for no points.
func Chart(w io.Writer, points []SweepPoint) error {
	if len(points) == 0 {
		return errors.New("no sweep results to chart")
	}
	var dues []int
	for _, p := range points {
		if !slices.Contains(dues, p.DuePct) {
			dues = append(dues, p.DuePct)
		}
	}
	slices.Sort(dues)
	minX, maxX := math.Inf(1), 0.0
	maxItems, maxQueries := 1.0, 1.0
	for _, p := range points {
		minX, maxX = math.Min(minX, float64(p.Open)), math.Max(maxX, float64(p.Open))
		maxItems, maxQueries = math.Max(maxItems, p.Items), math.Max(maxQueries, p.Queries)
	}
	items, queries := plot.New(), plot.New()
	items.Title.Text = fmt.Sprintf("Items one sweep reads (%d shards)", points[0].Shards)
	queries.Title.Text = "Queries one sweep makes: one a shard, whatever is due"
	for _, p := range []*plot.Plot{items, queries} {
		p.Title.TextStyle.Font.Size = vg.Points(13)
		p.X.Label.Text = "rows open (log scale)"
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, chartkit.Decades{}
		p.X.Min, p.X.Max = minX/math.Sqrt(10), maxX*math.Sqrt(10)
		p.Add(grid())
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = vg.Points(10)
	}
	items.Y.Label.Text = "items read (log scale)"
	items.Y.Scale, items.Y.Tick.Marker = plot.LogScale{}, chartkit.Decades{}
	items.Y.Min, items.Y.Max = 1, math.Pow10(int(math.Ceil(math.Log10(maxItems*10))))
	queries.Y.Label.Text = "queries"
	queries.Y.Min, queries.Y.Max = 0, maxQueries*1.5
	for _, due := range dues {
		var itemXYs, queryXYs plotter.XYs
		for _, p := range points {
			if p.DuePct != due {
				continue
			}
			if p.Items > 0 {
				itemXYs = append(itemXYs, plotter.XY{X: float64(p.Open), Y: p.Items})
			}
			queryXYs = append(queryXYs, plotter.XY{X: float64(p.Open), Y: p.Queries})
		}
		name := fmt.Sprintf("%d%% of them due", due)
		if len(itemXYs) > 0 {
			if err := series(items, itemXYs, name, dueColors[due], true); err != nil {
				return err
			}
		} else {
			items.Legend.Add(name + ": none read")
		}
		if err := series(queries, queryXYs, name, dueColors[due], false); err != nil {
			return err
		}
	}
	c := vgimg.New(chartWidth, chartHeight)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20), PadY: vg.Points(10), PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	canvases := plot.Align([][]*plot.Plot{{items, queries}}, tiles, dc)
	items.Draw(canvases[0][0])
	queries.Draw(canvases[0][1])
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

func grid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xdd}
	g.Horizontal.Color = color.Gray{Y: 0xdd}
	return g
}

// series adds a line with points, labelled with their values if labelled.
func series(p *plot.Plot, xys plotter.XYs, name string, c color.Color, labelled bool) error {
	line, dots, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color, line.Width = c, vg.Points(2)
	dots.Color, dots.Shape, dots.Radius = c, draw.CircleGlyph{}, vg.Points(3.5)
	p.Add(line, dots)
	p.Legend.Add(name, line, dots)
	if !labelled {
		return nil
	}
	texts := make([]string, len(xys))
	for i, xy := range xys {
		texts[i] = chartkit.Thousands(xy.Y)
	}
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Color = c
		labels.TextStyle[i].Font.Size = vg.Points(9)
		labels.TextStyle[i].XAlign = draw.XCenter
	}
	labels.Offset = vg.Point{Y: vg.Points(7)}
	p.Add(labels)
	return nil
}
