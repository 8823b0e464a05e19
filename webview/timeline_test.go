package webview

import (
	"math/big"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
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
