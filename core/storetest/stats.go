package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
)

// testStats: statistics over reported values only, unreported counted
// beside them; 'unknown' excluded from distinct executions; live and
// backfill apart; coverage of a store the suite never activated is unknown,
// never zero (AC-25, docs/CONTRACT.md §5.3).
func testStats(t *testing.T, s *suite) {
	r, ok := s.Store.(report.Reader)
	if !ok {
		t.Skip("store does not implement report.Reader")
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

	st, err := r.Stats(context.Background(), report.StatsQuery{TaskSessionID: sess})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf(
		"%d %d %d %d %v | %s | %s | %s | %s %d %d %d",
		st.Subagents,
		st.Live,
		st.Backfill,
		st.RowsWithoutTurn,
		st.FanOutPerTurn,
		showMetrics(
			st.TotalTokens,
		),
		showMetrics(st.ToolUseCount),
		showMetrics(st.DurationMs),
		show(st.DistinctExecutions),
		st.UnknownExecutionRows,
		st.KnownSessions,
		st.UnknownSessions,
	)
	want := "8 7 1 1 [{1 1} {3 2}] | all {2 6 400 200} live {1 6 100 100} backfill {1 0 300 300} | " +
		"all {2 6 4 2} live {1 6 0 0} backfill {1 0 4 4} | " +
		"all {0 8 NULL NULL} live {0 7 NULL NULL} backfill {0 1 NULL NULL} | NULL 1 0 1"
	if got != want {
		t.Errorf("stats (not activated: distinct executions not reported):\n got  %s\n want %s", got, want)
	}
	if len(st.Sessions) != 1 || st.Sessions[0].TaskSessionID != sess || st.Sessions[0].Coverage != report.Unknown ||
		st.Activation.State != report.NotActivated {
		t.Errorf("coverage: %+v, state %s; want %s unknown (not activated)", st.Sessions, st.Activation.State, sess)
	}
	// A session with no rows at all: unknown, never zero-and-known.
	empty := s.session(t, "empty")
	st, err = r.Stats(context.Background(), report.StatsQuery{TaskSessionID: empty})
	if err != nil {
		t.Fatal(err)
	}
	if st.Subagents != 0 || len(st.Sessions) != 1 || st.Sessions[0].Coverage != report.Unknown ||
		st.TotalTokens.All.Average != nil || st.TotalTokens.All.Sum != nil || st.FanOutPerTurn == nil {
		t.Errorf(
			"empty session: %d subagents, coverage %+v, tokens %s, fan-out %v", st.Subagents, st.Sessions,
			showMetrics(st.TotalTokens), st.FanOutPerTurn,
		)
	}
	_, err = r.Stats(context.Background(), report.StatsQuery{TaskSessionID: sess, TaskID: "t"})
	WantError(t, "both scopes", err, nil)
	h, err := r.Health(context.Background(), report.HealthQuery{})
	if err != nil || h.Ran || h.Reason == "" || h.State != report.NotActivated {
		t.Errorf("health on a store never activated: %+v %v; want not run, with a reason", h, err)
	}
}

// testStatsSums: a statistic never fails because of the values stored:
// sums past 64 bits are exact, on every adapter alike, also the run's
// tokens, whose four columns pass 64 bits within one row (§3.5).
func testStatsSums(t *testing.T, s *suite) {
	r, ok := s.Store.(report.Reader)
	if !ok {
		t.Skip("store does not implement report.Reader")
	}
	sess := s.session(t, "sums")
	for i, v := range []int64{1 << 62, 1 << 62, math.MaxInt64, 1} {
		f := s.bare(sess, fmt.Sprint(i), 0)
		f.Payload.TotalTokens, f.Payload.DurationMs = v, v
		f.Usage = &core.Usage{InputTokens: &v, CacheReadTokens: &v}
		row, _ := core.Normalize(f)
		if i == 3 {
			row.Source = core.SourceBackfill
		}
		if err := s.Store.Upsert(context.Background(), row); err != nil {
			t.Fatal(err)
		}
	}
	st, err := r.Stats(context.Background(), report.StatsQuery{TaskSessionID: sess})
	if err != nil {
		t.Fatalf("stats over sums past 64 bits: %v", err)
	}
	live := new(big.Int).Lsh(big.NewInt(1), 63)
	live.Add(live, big.NewInt(math.MaxInt64))
	all := new(big.Int).Add(live, big.NewInt(1))
	for _, m := range []report.MetricStats{st.TotalTokens, st.DurationMs} {
		if m.All.Sum == nil || m.All.Sum.Cmp(all) != 0 || m.Live.Sum.Cmp(live) != 0 ||
			m.Backfill.Sum.Cmp(big.NewInt(1)) != 0 {
			t.Errorf("exact sums: %s, want all %s live %s backfill 1", showMetrics(m), all, live)
		}
		avg, _ := new(big.Rat).SetFrac(all, big.NewInt(4)).Float64()
		if m.All.Average == nil || *m.All.Average != avg {
			t.Errorf("average %v, want %v", m.All.Average, avg)
		}
	}
	twice := func(v *big.Int) string { return new(big.Int).Lsh(v, 1).String() }
	if got, want := showMetrics(st.RunTokens), fmt.Sprintf("all {4 0 %s %s} live {3 0 %s %s} backfill {1 0 2 2}",
		twice(all), fmt.Sprint(2*avgOf(all, 4)), twice(live), fmt.Sprint(2*avgOf(live, 3))); got != want {
		t.Errorf("run tokens: %s, want %s", got, want)
	}
}

func avgOf(sum *big.Int, n int64) float64 {
	avg, _ := new(big.Rat).SetFrac(sum, big.NewInt(n)).Float64()
	return avg
}

func showMetrics(m report.MetricStats) string {
	return fmt.Sprintf("all %s live %s backfill %s", showMetric(m.All), showMetric(m.Live), showMetric(m.Backfill))
}

func showMetric(m report.Metric) string {
	sum, avg := "NULL", "NULL"
	if m.Sum != nil {
		sum = m.Sum.String()
	}
	if m.Average != nil {
		avg = fmt.Sprint(*m.Average)
	}
	return fmt.Sprintf("{%d %d %s %s}", m.Reported, m.Unreported, sum, avg)
}

// testSessions: the sessions on record, the most recently observed first,
// ties in byte order of the session id, each summarised (subagents, turns,
// most in one turn, open ones, first and last observation) with the same
// coverage verdict Stats gives it; a limit keeps the first ones.
func testSessions(t *testing.T, s *suite) {
	r, ok := s.Store.(report.Reader)
	if !ok {
		t.Skip("store does not implement report.Reader")
	}
	// Far after every other test's rows, so these sessions come first.
	base := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	busy, upper, lower := s.session(t, "sum-busy"), s.session(t, "sum-Zeta"), s.session(t, "sum-alpha")
	write := func(sess, tool, turn, status string, sec int) {
		f := s.bare(sess, tool, 0)
		f.TurnID, f.ToolStatus, f.ObservedAt = turn, status, base.Add(time.Duration(sec)*time.Second+time.Microsecond)
		s.write(t, f)
	}
	for i, turn := range []string{"t1", "t1", "t1", "t2", ""} {
		status := "in_progress"
		if i == 0 {
			status = "completed"
		}
		if turn != "" {
			turn = s.id("turn", turn)
		}
		write(busy, fmt.Sprint(i), turn, status, i+1)
	}
	write(upper, "1", s.id("turn", "z"), "", 10)
	write(lower, "1", s.id("turn", "a"), "", 10)
	// The database is shared with the suite's other tests (one of which
	// writes in the year 9999): this test's sessions are read out of the
	// whole list.
	all, err := r.Sessions(context.Background(), report.SessionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []report.SessionSummary
	last := -1
	for i, g := range all {
		if strings.HasPrefix(g.TaskSessionID, s.ns) {
			got, last = append(got, g), i
		}
	}
	var lines []string
	for _, g := range got {
		lines = append(lines, fmt.Sprintf("%s task=%s n=%d turns=%d max=%d open=%d %s..%s",
			g.TaskSessionID, g.TaskID, g.Subagents, g.Turns, g.MaxFanOut, g.Open,
			g.FirstObservedAt.Format(time.RFC3339Nano), g.LastObservedAt.Format(time.RFC3339Nano)))
	}
	task := s.id("task", "t")
	want := []string{
		upper + " task=" + task + " n=1 turns=1 max=1 open=1 2999-01-01T00:00:10.000001Z..2999-01-01T00:00:10.000001Z",
		lower + " task=" + task + " n=1 turns=1 max=1 open=1 2999-01-01T00:00:10.000001Z..2999-01-01T00:00:10.000001Z",
		busy + " task=" + task + " n=5 turns=2 max=3 open=4 2999-01-01T00:00:01.000001Z..2999-01-01T00:00:05.000001Z",
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("sessions:\n got  %q\n want %q", lines, want)
	}
	for _, g := range got {
		st, err := r.Stats(context.Background(), report.StatsQuery{TaskSessionID: g.TaskSessionID})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Sessions) != 1 || st.Sessions[0] != g.Coverage {
			t.Errorf("%s: coverage %+v, Stats says %+v", g.TaskSessionID, g.Coverage, st.Sessions)
		}
	}
	// A limit keeps the first sessions of the whole list (read around it:
	// a concurrent test's write between the reads is retried).
	for attempt := 0; ; attempt++ {
		before, err1 := r.Sessions(context.Background(), report.SessionQuery{})
		some, err2 := r.Sessions(context.Background(), report.SessionQuery{Limit: last})
		after, err3 := r.Sessions(context.Background(), report.SessionQuery{})
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(before[:last], after[:last]) && attempt < 3 {
			continue
		}
		if !slices.Equal(some, before[:last]) {
			t.Errorf("limit %d: %d sessions, want the first %d of the whole list", last, len(some), last)
		}
		break
	}
	_, err = r.Sessions(context.Background(), report.SessionQuery{Limit: -1})
	WantError(t, "a negative limit", err, nil)
}
