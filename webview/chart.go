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
// value) and the axis labelled in text, so that it reads without colour.
type chart struct {
	Title  string
	Max    string // the tallest bar's value, as the axis says it
	Bars   []column
	Width  int
	First  string // the first bucket's start and the last's, as text
	Last   string
	Bucket string // the bucket's size, as text
	Rows   bool   // whether any row is in the window
}

// column is one bucket's bar.
type column struct {
	X, Y, W, H int
	Label      string
}

// chartHeight is the bars' height at their tallest, in pixels.
const chartHeight = 60

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
		{"Tokens (reported)", func(b report.Bucket) *big.Int {
			if b.TotalTokens.Sum == nil {
				return new(big.Int)
			}
			return b.TotalTokens.Sum
		}},
	}
	start := func(k int64) time.Time { return time.UnixMicro(k * size.Microseconds()).UTC() }
	var out []chart
	for _, m := range measures {
		c := chart{Title: m.title, Bucket: bucketName(size), Width: int(last-first+1) * 8,
			First: when(start(first)), Last: when(start(last)), Rows: len(t.Buckets) > 0}
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
			c.Bars = append(c.Bars, column{X: int(k-first) * 8, Y: chartHeight - h, W: 6, H: h,
				Label: fmt.Sprintf("%s: %s", when(b.Start), num(v))})
		}
		out = append(out, c)
	}
	return out
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
