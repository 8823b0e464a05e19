package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// window is an hour of its own for one test, so that a test reading a
// window of a shared database reads only its own rows: a year between
// 2100 and 2899 drawn from the test's namespace, and an hour in it.
func (s *suite) window() time.Time {
	h := fnv.New64a()
	h.Write([]byte(s.ns))
	n := h.Sum64()
	return time.Date(2100+int(n%800), 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n/800%8000) * time.Hour)
}

// seedWindow writes n random rows observed in the test's window (three
// sessions; live and backfilled; statuses, types and models from small
// pools with byte-order traps and unreported values; metrics and the
// run's usage unreported, small, or large enough that their sum passes 64
// bits) and returns them
// as stored.
func (s *suite) seedWindow(t *testing.T, n int) (start time.Time, rows []core.Subagent) {
	t.Helper()
	start = s.window()
	rng := rand.New(rand.NewPCG(uint64(start.Unix()), 7))
	pick := func(pool ...string) string { return pool[rng.IntN(len(pool))] }
	metric := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0 // unreported (AC-7)
		case 1:
			return 1 << 62
		}
		return rng.Int64N(5000) + 1
	}
	sessions := []string{s.session(t, "ov-a"), s.session(t, "ov-B"), s.session(t, "ov-é")}
	for i := range n {
		sess := sessions[rng.IntN(len(sessions))]
		f := core.Frame{
			TaskSessionID: sess,
			TaskID:        s.id("task", "t"),
			TurnID:        s.id("turn", fmt.Sprint(rng.IntN(5))),
			ExecutionID:   "exec-1",
			ToolCallID:    s.id("tool", fmt.Sprint(i)),
			ToolStatus:    pick("completed", "failed", "error", "cancelled", "in_progress", "", "Failed"),
			ObservedAt:    start.Add(time.Duration(rng.Int64N(int64(time.Hour))) / time.Microsecond * time.Microsecond),
			Payload: &core.Payload{
				SubagentType: pick("explorer", "Explorer", "reviewer", "", "b", "é"),
				Model:        pick("opus", "sonnet", "", "haiku"),
				Status:       pick("completed", "running", "", "errored ✗", "failed", "error"),
				TotalTokens:  metric(),
				DurationMs:   metric(),
			},
		}
		if rng.IntN(3) > 0 {
			uses := rng.Int64N(40)
			f.Payload.ToolUseCount = &uses
		}
		f.Usage = s.usage(rng)
		row, _ := core.Normalize(f)
		if rng.IntN(4) == 0 {
			row.AgentExecutionID, row.Source, row.ID = core.UnknownExecution, core.SourceBackfill, s.id("message", fmt.Sprint(i))
		}
		if err := s.Store.Upsert(context.Background(), row); err != nil {
			t.Fatalf("upsert %+v: %v", row.Key(), err)
		}
	}
	for _, sess := range sessions {
		rows = append(rows, s.rows(t, sess)...)
	}
	if len(rows) != n {
		t.Fatalf("%d rows stored, want %d", len(rows), n)
	}
	return start, rows
}

// usage is a run's usage as sources report it: none (nil), some of it
// (an ACP child's input and output alone), or all of it, with values
// whose sum over one row passes 64 bits.
func (s *suite) usage(rng *rand.Rand) *core.Usage {
	n := func() *int64 {
		v := []int64{0, 1 << 62, rng.Int64N(100_000)}[rng.IntN(3)]
		return &v
	}
	switch rng.IntN(3) {
	case 0:
		return nil
	case 1:
		return &core.Usage{InputTokens: n(), OutputTokens: n()}
	}
	return &core.Usage{InputTokens: n(), OutputTokens: n(), CacheReadTokens: n(), CacheWriteTokens: n(), Requests: n()}
}

// testOverview: the overview of a window equals the reference
// (storekit.OverviewOf) over the same rows — breakdowns by tool status, agent
// status, subagent type and model in their order (most invoked, then byte
// order, not reported last), invocations and failures, live and
// backfilled apart, exact metric sums over reported values with the
// unreported counted, the durations' nearest-rank median and 95th
// percentile — for the whole window, a part of it, and a bound on the
// groups listed.
func testOverview(t *testing.T, s *suite) {
	o, ok := s.Store.(report.Overviewer)
	if !ok {
		t.Fatal("the store does not implement report.Overviewer")
	}
	start, rows := s.seedWindow(t, 240)
	for _, q := range []report.OverviewQuery{
		{Since: start, Until: start.Add(time.Hour)},
		{Since: start.Add(10*time.Minute + time.Nanosecond), Until: start.Add(40 * time.Minute)},
		{Since: start, Until: start.Add(time.Hour), Groups: 2},
		{Since: start.Add(59 * time.Minute), Until: start.Add(time.Hour), Groups: 1},
		{Since: start.Add(-time.Hour), Until: start},
		{Since: start, Until: start.Add(time.Hour), Failed: true},
		{Since: start.Add(10 * time.Minute), Until: start.Add(50 * time.Minute), Failed: true, Groups: 2},
	} {
		got, err := o.Overview(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		want := storekit.OverviewOf(rows, q)
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
			t.Errorf("overview of [%s, %s) groups %d failed %v:\n got  %s\n want %s", q.Since, q.Until, q.Groups,
				q.Failed, g, w)
		}
	}
	whole := report.OverviewQuery{Since: start, Until: start.Add(time.Hour)}
	if got, _ := o.Overview(context.Background(), whole); got.Rows != 240 {
		t.Errorf("the window holds %d rows, want 240", got.Rows)
	}
	_, err := o.Overview(context.Background(), report.OverviewQuery{Groups: report.MaxOverviewGroups + 1})
	WantError(t, "too many groups", err, nil)
	_, err = o.Overview(context.Background(), report.OverviewQuery{Since: start, Until: start})
	WantError(t, "an empty window", err, nil)
}

// testOverviewRanks: the nearest ranks of durations that are all distinct,
// in groups whose sizes put ceil(p·m) on either side of a neighbouring
// percentile's (m = 1, 2, 17, 19, 20, 21 and 39), over both sources and
// each, equal the reference; and, spelled out, the 20 durations 1…20 of
// one type give the median 10 and the 95th percentile 19.
func testOverviewRanks(t *testing.T, s *suite) {
	o, ok := s.Store.(report.Overviewer)
	if !ok {
		t.Fatal("the store does not implement report.Overviewer")
	}
	start := s.window()
	sess := s.session(t, "ranks")
	rng := rand.New(rand.NewPCG(uint64(start.Unix()), 11))
	var n int
	for _, m := range []int{1, 2, 17, 19, 20, 21, 39} {
		for _, j := range rng.Perm(m) {
			f := core.Frame{
				TaskSessionID: sess, TaskID: s.id("task", "t"), ExecutionID: "exec-1",
				ToolCallID: s.id("tool", fmt.Sprint(n)), ToolStatus: "completed",
				ObservedAt: start.Add(time.Duration(n) * time.Second),
				Payload:    &core.Payload{SubagentType: fmt.Sprintf("m%02d", m), DurationMs: int64(j + 1)},
			}
			row, _ := core.Normalize(f)
			if j%3 == 1 {
				row.AgentExecutionID, row.Source = core.UnknownExecution, core.SourceBackfill
				row.ID = s.id("message", fmt.Sprint(n))
			}
			if err := s.Store.Upsert(context.Background(), row); err != nil {
				t.Fatalf("upsert %+v: %v", row.Key(), err)
			}
			n++
		}
	}
	q := report.OverviewQuery{Since: start, Until: start.Add(time.Hour)}
	got, err := o.Overview(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := jsonOf(t, got), jsonOf(t, storekit.OverviewOf(s.rows(t, sess), q)); g != w {
		t.Errorf("overview:\n got  %s\n want %s", g, w)
	}
	for _, g := range got.SubagentType.Groups {
		if g.Value == nil || *g.Value != "m20" {
			continue
		}
		if d := g.All.Duration; d == nil || d.Median == nil || d.P95 == nil || *d.Median != 10 || *d.P95 != 19 {
			t.Errorf("durations 1…20: %+v, want median 10 and 95th percentile 19", d)
		}
		return
	}
	t.Errorf("no group m20 among %d", len(got.SubagentType.Groups))
}

// testSessionsWindow: sessions listed for a window and an id prefix equal
// the reference (storekit.SessionsOf) over the same rows, and paging by key
// (SessionQuery.After) walks the same list, none skipped or repeated.
func testSessionsWindow(t *testing.T, s *suite) {
	r, ok := s.Store.(report.Reader)
	if !ok {
		t.Skip("store does not implement report.Reader")
	}
	start, rows := s.seedWindow(t, 60)
	for _, q := range []report.SessionQuery{
		{Since: start, Until: start.Add(time.Hour), Prefix: s.ns},
		{Since: start.Add(20 * time.Minute), Until: start.Add(30 * time.Minute), Prefix: s.ns},
		{Since: start, Prefix: s.id("sess", "ov-")},
		{Since: start, Until: start.Add(time.Hour), Prefix: s.id("sess", "ov-é")},
	} {
		all, err := r.Sessions(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		want := storekit.SessionsOf(rows, report.Activation{}, q)
		if g, w := summaries(all), summaries(want); g != w {
			t.Errorf("sessions of %+v:\n got  %s\n want %s", q, g, w)
		}
		var paged []report.SessionSummary
		for page := q; ; {
			page.Limit = 1
			got, err := r.Sessions(context.Background(), page)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || len(paged) > len(all) {
				break
			}
			paged = append(paged, got...)
			k := got[0].Key()
			page.After = &k
		}
		if g, w := summaries(paged), summaries(all); g != w {
			t.Errorf("paged one by one:\n got  %s\n want %s", g, w)
		}
	}
	_, err := r.Sessions(context.Background(), report.SessionQuery{Prefix: "\xff"})
	WantError(t, "a prefix that is not UTF-8", err, nil)
	_, err = r.Sessions(context.Background(), report.SessionQuery{Limit: -1})
	WantError(t, "a negative limit", err, nil)
}

// summaries shows session summaries without their coverage (which comes
// from each session's whole activity; testSessions checks it).
func summaries(ss []report.SessionSummary) string {
	var out []string
	for _, g := range ss {
		out = append(out, fmt.Sprintf("%s task=%s n=%d turns=%d max=%d open=%d %s..%s",
			g.TaskSessionID, g.TaskID, g.Subagents, g.Turns, g.MaxFanOut, g.Open,
			g.FirstObservedAt.Format(time.RFC3339Nano), g.LastObservedAt.Format(time.RFC3339Nano)))
	}
	return fmt.Sprintf("%q", out)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testTimeline: a window's timeline — invocations, failures and exact token
// sums per bucket, counted from the Unix epoch in UTC — equals the
// reference (storekit.TimelineOf) over the same rows, for buckets of a minute
// and of an hour, a part of the window, and around the epoch itself, where
// a bucket's start is rounded down before 1970.
func testTimeline(t *testing.T, s *suite) {
	tl, ok := s.Store.(report.Timeliner)
	if !ok {
		t.Fatal("the store does not implement report.Timeliner")
	}
	start, rows := s.seedWindow(t, 200)
	epoch := time.Unix(0, 0).UTC()
	sess := s.session(t, "tl-epoch")
	for i, at := range []time.Duration{-1500 * time.Millisecond, -time.Microsecond, 0, 700 * time.Millisecond} {
		row, _ := core.Normalize(core.Frame{TaskSessionID: sess, TaskID: s.id("task", "t"), ExecutionID: "e",
			ToolCallID: s.id("tool", fmt.Sprint("epoch", i)), ToolStatus: "failed", ObservedAt: epoch.Add(at),
			Payload: &core.Payload{TotalTokens: int64(10 + i)}})
		if err := s.Store.Upsert(context.Background(), row); err != nil {
			t.Fatal(err)
		}
	}
	rows = append(rows, s.rows(t, sess)...)
	for _, q := range []report.TimelineQuery{
		{Since: start, Until: start.Add(time.Hour), Bucket: time.Minute},
		{Since: start, Until: start.Add(time.Hour), Bucket: time.Hour},
		{Since: start.Add(10*time.Minute + time.Nanosecond), Until: start.Add(40 * time.Minute), Bucket: 7 * time.Minute},
		{Since: epoch.Add(-2 * time.Second), Until: epoch.Add(2 * time.Second), Bucket: time.Second},
	} {
		got, err := tl.Timeline(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := jsonOf(t, got), jsonOf(t, storekit.TimelineOf(rows, q)); g != w {
			t.Errorf("timeline of [%s, %s) by %v:\n got  %s\n want %s", q.Since, q.Until, q.Bucket, g, w)
		}
	}
	if got, _ := tl.Timeline(context.Background(), report.TimelineQuery{Since: epoch.Add(-2 * time.Second),
		Until: epoch.Add(2 * time.Second), Bucket: time.Second}); len(got.Buckets) != 3 ||
		!got.Buckets[0].Start.Equal(epoch.Add(-2*time.Second)) || got.Buckets[1].Invocations != 1 {
		t.Errorf("around the epoch: %s, want buckets from -2 s, -1 s and 0", jsonOf(t, got))
	}
	_, err := tl.Timeline(context.Background(), report.TimelineQuery{Bucket: time.Millisecond})
	WantError(t, "a bucket under a second", err, nil)
	_, err = tl.Timeline(context.Background(), report.TimelineQuery{Since: start, Until: start.Add(24 * time.Hour),
		Bucket: time.Second})
	WantError(t, "too many buckets", err, nil)
}

// testFailures: a window's failures, newest first, equal the reference
// (storekit.FailuresOf) page by page, paged by key without a row skipped or
// repeated; an unfailed row is never listed.
func testFailures(t *testing.T, s *suite) {
	fl, ok := s.Store.(report.FailureLister)
	if !ok {
		t.Fatal("the store does not implement report.FailureLister")
	}
	start, rows := s.seedWindow(t, 150)
	for _, q := range []report.FailureQuery{
		{Since: start, Until: start.Add(time.Hour), Limit: 1000},
		{Since: start.Add(10 * time.Minute), Until: start.Add(40 * time.Minute), Limit: 7},
	} {
		want := storekit.FailuresOf(rows, report.FailureQuery{Since: q.Since, Until: q.Until, Limit: report.MaxFailures})
		var got []core.Subagent
		for page := q; ; {
			part, err := fl.Failures(context.Background(), page)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := jsonOf(t, part), jsonOf(t, storekit.FailuresOf(rows, page)); g != w {
				t.Fatalf("failures page %+v:\n got  %s\n want %s", page, g, w)
			}
			got = append(got, part...)
			if len(part) < page.LimitOrDefault() {
				break
			}
			k := report.KeyOf(part[len(part)-1])
			page.After = &k
		}
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w || len(want) == 0 {
			t.Errorf("failures paged %d at a time: %d rows, want %d", q.LimitOrDefault(), len(got), len(want))
		}
		for _, r := range got {
			if !canon.Failed(r.ToolStatus, r.AgentStatus) {
				t.Errorf("listed a row that did not fail: %+v", r.Key())
			}
		}
	}
	_, err := fl.Failures(context.Background(), report.FailureQuery{Limit: report.MaxFailures + 1})
	WantError(t, "a page too long", err, nil)
}
