package webview

import (
	"fmt"
	"math/big"
	"time"

	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// A chart is one measure of the overview's window over time — its
// invocations, its failures or its tokens per bucket — drawn as inline SVG
// bars with no script, each bar labelled (a title with its bucket and
// value), the value axis at zero and at the tallest bar, and the time axis
// labelled in the window's own unit (the minute, the hour, the day), so
// that it reads without colour and without hovering.
type chart struct {
	Title  string
	Max    string // the tallest bar's value, as the axis says it
	Bars   []column
	Ticks  []tick // the time axis's labels, at their bucket's middle
	First  string // the first bucket's start and the last's, to the minute
	Last   string
	Bucket string // the bucket's size, as text
	Rows   bool   // whether any row is in the window
	G      chartGeometry
}

// chartGeometry is where the template draws a chart's frame.
type chartGeometry struct {
	Width, Height int // the SVG's
	Left, Right   int // the plot's edges
	Top, Base     int // the tallest bar's top, and zero's line
	LabelX        int // where the value axis's labels end
	TicksY        int // the time axis's labels' baseline
}

var geometry = chartGeometry{Width: chartLeft + chartWidth + 10, Height: chartTop + chartHeight + chartAxis,
	Left: chartLeft, Right: chartLeft + chartWidth, Top: chartTop, Base: chartTop + chartHeight, LabelX: chartLeft - 6,
	TicksY: chartTop + chartHeight + 16}

// column is one bucket's bar.
type column struct {
	X, Y, W, H int
	Label      string
}

// The charts' geometry, in pixels: the value axis's labels on the left,
// the plot, the time axis's labels below.
const (
	chartLeft   = 56
	chartTop    = 6   // room for the tallest bar's label
	chartWidth  = 720 // the plot's
	chartHeight = 160 // the bars' at their tallest
	chartAxis   = 22
	chartTicks  = 8 // time labels at most
)

// maxBars bounds a chart's buckets: a window of more (all time) shows its
// latest ones.
const maxBars = 120

// bucketFor is the bucket a window is counted in: minutes for an hour,
// hours for a day, days for a week or a month — for any window the
// smallest of minute, hour, day, week that cuts it in at most 120 buckets
// (30 days past that); days for all time.
func bucketFor(w window, now time.Time) time.Duration {
	if w.Since.IsZero() {
		return 24 * time.Hour
	}
	until := w.Until
	if until.IsZero() {
		until = now
	}
	for _, b := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour} {
		if until.Sub(w.Since)/b <= maxBars {
			return b
		}
	}
	return 30 * 24 * time.Hour
}

// charts draws a timeline's three measures over the window's buckets —
// from since's to until's (now's), empty ones included, so that the bars
// stand where their time is; the latest maxBars of them, and for a window
// open at its start, from the first bucket with a row.
func charts(t report.Timeline, now time.Time) []chart {
	size := t.Query.Bucket
	last := storekit.BucketOf(now, size)
	if !t.Query.Until.IsZero() {
		last = storekit.BucketOf(t.Query.Until.Add(-time.Microsecond), size)
	}
	first := last
	switch {
	case !t.Query.Since.IsZero():
		first = storekit.BucketOf(t.Query.Since, size)
	case len(t.Buckets) > 0:
		first = storekit.BucketOf(t.Buckets[0].Start, size)
	}
	first = max(first, last-maxBars+1)
	at := map[int64]report.Bucket{}
	for _, b := range t.Buckets {
		at[storekit.BucketOf(b.Start, size)] = b
	}
	measures := []struct {
		title string
		value func(report.Bucket) *big.Int
	}{
		{"Subagents", func(b report.Bucket) *big.Int { return big.NewInt(b.Invocations) }},
		{"Failed", func(b report.Bucket) *big.Int { return big.NewInt(b.Failed) }},
		{"Final-request tokens (reported)", func(b report.Bucket) *big.Int {
			if b.TotalTokens.Sum == nil {
				return new(big.Int)
			}
			return b.TotalTokens.Sum
		}},
	}
	start := func(k int64) time.Time { return time.UnixMicro(k * size.Microseconds()).UTC() }
	n := int(last - first + 1)
	step := chartWidth / n // each bucket's slot, a gap between bars
	every := tickEvery(n, size)
	var ticks []tick
	for k := first; k <= last; k++ {
		if k%every == 0 { // on the clock's own marks: every 4 hours from midnight, not from the window's start
			i := int(k - first)
			ticks = append(ticks, tick{X: float64(chartLeft + i*step + step/2), Label: tickLabel(start(k), size)})
		}
	}
	var out []chart
	for _, m := range measures {
		c := chart{Title: m.title, Bucket: bucketName(size), Ticks: ticks,
			First: start(first).Format("2006-01-02 15:04"), Last: start(last).Format("2006-01-02 15:04 UTC"),
			Rows: len(t.Buckets) > 0, G: geometry}
		top := new(big.Int)
		for k := first; k <= last; k++ {
			if v := m.value(at[k]); v.Cmp(top) > 0 {
				top = v
			}
		}
		c.Max = human(top)
		for k := first; k <= last; k++ {
			b, ok := at[k]
			if !ok {
				continue
			}
			v, h := m.value(b), 0
			if top.Sign() > 0 {
				f, _ := new(big.Rat).SetFrac(new(big.Int).Mul(v, big.NewInt(chartHeight)), top).Float64()
				h = int(f + 0.5)
				if v.Sign() > 0 && h == 0 {
					h = 1 // a value, however small, shows
				}
			}
			c.Bars = append(c.Bars, column{X: chartLeft + int(k-first)*step + 1, Y: chartTop + chartHeight - h,
				W: max(step-2, 1), H: h, Label: fmt.Sprintf("%s: %s", when(b.Start), num(v))})
		}
		out = append(out, c)
	}
	return out
}

// tickEvery is how many buckets apart the time labels stand: the
// smallest of the clock's own steps for the bucket's unit (5 minutes, 3
// hours, a week…) that leaves at most chartTicks labels over n buckets.
func tickEvery(n int, bucket time.Duration) int64 {
	steps := map[time.Duration][]int64{time.Minute: {1, 2, 5, 10, 15, 30, 60}, time.Hour: {1, 2, 3, 4, 6, 12, 24},
		24 * time.Hour: {1, 2, 7, 14, 28}, 7 * 24 * time.Hour: {1, 2, 4, 8, 13, 26, 52}}[bucket]
	for _, e := range steps {
		if int64(n) <= e*chartTicks {
			return e
		}
	}
	return (int64(n) + chartTicks - 1) / chartTicks
}

// tickLabel is a bucket's start as the time axis says it, in the unit of
// the bucket: the minute within the hour's day, the hour (a day's first
// hour by its date), the day, the month.
func tickLabel(t time.Time, bucket time.Duration) string {
	switch {
	case bucket < time.Hour:
		return t.Format("15:04")
	case bucket < 24*time.Hour && t.Hour() != 0:
		return t.Format("15:00")
	case bucket < 30*24*time.Hour:
		return t.Format("Jan 2")
	}
	return t.Format("Jan 2006")
}

// bucketName says a bucket's size in words.
func bucketName(d time.Duration) string {
	names := map[time.Duration]string{time.Minute: "minute", time.Hour: "hour", 24 * time.Hour: "day",
		7 * 24 * time.Hour: "week", 30 * 24 * time.Hour: "30 days"}
	if n, ok := names[d]; ok {
		return n
	}
	return d.String()
}
