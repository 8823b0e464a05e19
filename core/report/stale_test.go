package report_test

import (
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
)

// TestStaleAfterOf (docs/CONTRACT.md §5.8): a type's threshold is three
// times its 95th percentile duration, at least MinStaleAfter and at most
// a week, whatever the durations reported (none, negative, past what a
// time.Duration holds); the default for every other row.
func TestStaleAfterOf(t *testing.T) {
	group := func(typ string, p95 *int64) report.Group {
		g := report.Group{Value: &typ}
		g.All.Duration = &report.Distribution{P95: p95}
		return g
	}
	n := func(v int64) *int64 { return &v }
	o := report.Overview{SubagentType: report.Breakdown{Groups: []report.Group{
		group("minutes", n(20*60_000)), group("quick", n(1)), group("odd", n(-5)), group("huge", n(1<<62)),
		group("none", nil),
	}}}
	a := report.StaleAfterOf(o, 90*time.Minute)
	typ := func(s string) core.Subagent { return core.Subagent{SubagentType: &s} }
	for _, c := range []struct {
		row  core.Subagent
		want time.Duration
	}{
		{typ("minutes"), time.Hour}, {typ("quick"), report.MinStaleAfter}, {typ("odd"), report.MinStaleAfter},
		{typ("huge"), 7 * 24 * time.Hour}, {typ("none"), 90 * time.Minute}, {typ("unlisted"), 90 * time.Minute},
		{core.Subagent{}, 90 * time.Minute},
	} {
		if got := a.For(c.row); got != c.want {
			t.Errorf("%v: %s, want %s", c.row.SubagentType, got, c.want)
		}
	}
	if a.Shortest() != report.MinStaleAfter {
		t.Errorf("shortest %s", a.Shortest())
	}
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	at := func(typ string, ago time.Duration) core.Subagent {
		r := core.Subagent{SubagentType: &typ, ObservedAt: now.Add(-ago)}
		return r
	}
	kept := a.Keep([]core.Subagent{at("minutes", 2*time.Hour), at("minutes", 30*time.Minute),
		at("quick", 6*time.Minute), at("quick", 5*time.Minute)}, now)
	if len(kept) != 2 || *kept[0].SubagentType != "minutes" || *kept[1].SubagentType != "quick" {
		t.Errorf("kept %d rows: %v", len(kept), kept)
	}
}
