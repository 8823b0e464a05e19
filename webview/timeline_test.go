package webview

import (
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/fanout"
)

// TestTicksAnySpan: the axis and the bars stay right from a turn of a few
// microseconds to one of millennia (a time.Duration overflows past 292
// years, a quarter of one past 73).
func TestTicksAnySpan(t *testing.T) {
	start := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		span time.Duration
		end  time.Time
		last string
	}{
		{span: 200 * time.Microsecond, last: "+200µs"},
		{span: 1500 * time.Millisecond, last: "+1.5s"},
		{span: 90 * time.Minute, last: "+1.5h"},
		{end: start.AddDate(100, 0, 0), last: "+100y"},
		{end: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), last: "+9999y"},
	} {
		end := c.end
		if end.IsZero() {
			end = start.Add(c.span)
		}
		rows := []core.Subagent{
			{ToolCallID: "a", ObservedAt: start, SettledAt: &end},
			{ToolCallID: "b", ObservedAt: end},
		}
		v := layout(fanout.Build(rows)[0], 0)
		if got := v.Ticks[4].Label; got != c.last {
			t.Errorf("span to %v: last tick %q, want %q", end, got, c.last)
		}
		for i := 1; i < len(v.Ticks); i++ {
			if v.Ticks[i].X <= v.Ticks[i-1].X {
				t.Errorf("span to %v: ticks %+v do not advance", end, v.Ticks)
			}
		}
		if b := v.Bars[1]; b.X < labelWidth || b.X > labelWidth+plotWidth {
			t.Errorf("span to %v: a bar at %v, outside the plot", end, b.X)
		}
	}
}

// TestHumanUnits: sums read at a glance, the exact value beside them.
func TestHumanUnits(t *testing.T) {
	var none *big.Int
	for in, want := range map[any]string{
		big.NewInt(11194147): "11.2 M", big.NewInt(999): "999", big.NewInt(1500): "1.5 k",
		new(big.Int).Lsh(big.NewInt(1), 70): "1180592 P", none: "not reported",
	} {
		if got := human(in); got != want {
			t.Errorf("human(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestChartsReadAtAGlance: the overview's charts are drawn to be read —
// the plot 720 px wide and 160 px tall whatever the window, each bucket's
// bar in a slot of its own — with at most eight time labels in the
// window's own unit (minutes for an hour, hours for a day, a day's first
// hour by its date, dates for a week or a month), on the clock's own marks
// (every 10 minutes, 4 hours, a week), never raw instants.
func TestChartsReadAtAGlance(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		since  time.Duration
		bucket time.Duration
		labels []string
	}{
		{time.Hour, time.Minute, []string{"09:30", "09:40", "09:50", "10:00", "10:10", "10:20", "10:30"}},
		{24 * time.Hour, time.Hour, []string{"12:00", "16:00", "20:00", "Dec 4", "04:00", "08:00"}},
		{7 * 24 * time.Hour, 24 * time.Hour, []string{"Nov 27", "Nov 28", "Nov 29", "Nov 30", "Dec 1", "Dec 2",
			"Dec 3", "Dec 4"}},
		{30 * 24 * time.Hour, 24 * time.Hour, []string{"Nov 5", "Nov 12", "Nov 19", "Nov 26", "Dec 3"}},
	} {
		q := report.TimelineQuery{Since: now.Add(-c.since), Bucket: c.bucket}
		one := big.NewInt(5)
		tl := report.Timeline{Query: q, Buckets: []report.Bucket{{Start: now.Truncate(c.bucket), Invocations: 5,
			Failed: 5, TotalTokens: report.Metric{Sum: one}}}}
		for _, ch := range charts(tl, now) {
			var labels []string
			for _, tk := range ch.Ticks {
				labels = append(labels, tk.Label)
			}
			if fmt.Sprint(labels) != fmt.Sprint(c.labels) {
				t.Errorf("%v by %v: labels %v, want %v", c.since, c.bucket, labels, c.labels)
			}
			if ch.G.Right-ch.G.Left != 720 || ch.G.Base-ch.G.Top != 160 || len(ch.Bars) != 1 {
				t.Errorf("%v: plot %dx%d, %d bars", c.since, ch.G.Right-ch.G.Left, ch.G.Base-ch.G.Top, len(ch.Bars))
			}
			if b := ch.Bars[0]; b.H != 160 || b.X+b.W > ch.G.Right || b.W < 720/(int(c.since/c.bucket)+1)-2 {
				t.Errorf("%v: the only bar %+v", c.since, b)
			}
		}
	}
}
