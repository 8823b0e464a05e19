package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/subagentctx/subagentctx/core"
)

// testStats: statistics over reported values only, unreported counted
// beside them; 'unknown' excluded from distinct executions; live and
// backfill apart; coverage of a store the suite never activated is unknown,
// never zero (AC-25).
func testStats(t *testing.T, s *suite) {
	r, ok := s.Store.(core.Reader)
	if !ok {
		t.Skip("store does not implement core.Reader")
	}
	sess := s.session(t, "stats")
	other := s.session(t, "other")
	write := func(tool, turn, exec string, tokens int64, uses *int64, source core.Source) {
		f := s.bare(sess, tool, 0)
		f.TurnID, f.ExecutionID = turn, exec
		f.Payload.TotalTokens, f.Payload.ToolUseCount = tokens, uses
		row, _ := core.Normalize(f)
		row.Source = source
		if err := s.Store.Upsert(context.Background(), row); err != nil {
			t.Fatal(err)
		}
	}
	// Turn a: 1 subagent; turns b and c: 3 each; one row with no turn.
	write("1", s.id("turn", "a"), s.id("exec", "1"), 100, i64(0), core.SourceLive)
	for i, turn := range []string{"b", "b", "b", "c", "c", "c"} {
		write(fmt.Sprint("x", i), s.id("turn", turn), s.id("exec", "2"), 0, nil, core.SourceLive)
	}
	write("noturn", "", "", 300, i64(4), core.SourceBackfill)
	s.write(t, s.frame(other, "1")) // another session's row stays out of scope

	st, err := r.Stats(context.Background(), core.StatsQuery{TaskSessionID: sess})
	if err != nil {
		t.Fatal(err)
	}
	avgTokens, avgUses := 200.0, 2.0
	want := core.Stats{Subagents: 8, Live: 7, Backfill: 1, RowsWithoutTurn: 1,
		FanOutPerTurn:      []core.FanOut{{Subagents: 1, Turns: 1}, {Subagents: 3, Turns: 2}},
		TotalTokens:        core.Metric{Reported: 2, Unreported: 6, Sum: 400, Average: &avgTokens},
		ToolUseCount:       core.Metric{Reported: 2, Unreported: 6, Sum: 4, Average: &avgUses},
		DurationMs:         core.Metric{Reported: 0, Unreported: 8},
		DistinctExecutions: 2, UnknownExecutionRows: 1, UnknownSessions: 1}
	got := fmt.Sprintf("%d %d %d %d %v %s %s %s %d %d %d %d %v", st.Subagents, st.Live, st.Backfill, st.RowsWithoutTurn, st.FanOutPerTurn,
		showMetric(st.TotalTokens), showMetric(st.ToolUseCount), showMetric(st.DurationMs), st.DistinctExecutions, st.UnknownExecutionRows,
		st.KnownSessions, st.UnknownSessions, st.ExecutionIdentities)
	exp := fmt.Sprintf("%d %d %d %d %v %s %s %s %d %d %d %d %v", want.Subagents, want.Live, want.Backfill, want.RowsWithoutTurn, want.FanOutPerTurn,
		showMetric(want.TotalTokens), showMetric(want.ToolUseCount), showMetric(want.DurationMs), want.DistinctExecutions, want.UnknownExecutionRows,
		want.KnownSessions, want.UnknownSessions, false)
	if got != exp {
		t.Errorf("stats:\n got  %s\n want %s", got, exp)
	}
	if len(st.Sessions) != 1 || st.Sessions[0].TaskSessionID != sess || st.Sessions[0].Coverage != core.Unknown || st.Activation.State != core.NotActivated {
		t.Errorf("coverage: %+v, state %s; want %s unknown (not activated)", st.Sessions, st.Activation.State, sess)
	}
	// A session with no rows at all: unknown, never zero-and-known.
	empty := s.session(t, "empty")
	st, err = r.Stats(context.Background(), core.StatsQuery{TaskSessionID: empty})
	if err != nil {
		t.Fatal(err)
	}
	if st.Subagents != 0 || len(st.Sessions) != 1 || st.Sessions[0].Coverage != core.Unknown || st.TotalTokens.Average != nil {
		t.Errorf("empty session: %d subagents, coverage %+v", st.Subagents, st.Sessions)
	}
	if _, err := r.Stats(context.Background(), core.StatsQuery{TaskSessionID: sess, TaskID: "t"}); err == nil {
		t.Error("both scopes: want an error")
	}
	h, err := r.Health(context.Background())
	if err != nil || h.Ran || h.Reason == "" {
		t.Errorf("health on a store never activated: %+v %v; want not run, with a reason", h, err)
	}
}

func showMetric(m core.Metric) string {
	avg := "nil"
	if m.Average != nil {
		avg = fmt.Sprint(*m.Average)
	}
	return fmt.Sprintf("{%d %d %d %s}", m.Reported, m.Unreported, m.Sum, avg)
}
