package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// The subagent's own lifecycle (docs/CONTRACT.md §3.4): started_at keeps
// the earliest start, ended_at the first end, a start later than the end
// reopens the row, and the tool call's lifecycle stays apart.

// testSynchronousEndsWithItsToolCall: a synchronous run's terminal tool
// status is its end; a duplicated terminal frame moves nothing.
func testSynchronousEndsWithItsToolCall(t *testing.T, s *suite) {
	sess := s.session(t, "sync")
	f := s.bare(sess, "1", 0)
	f.ToolStatus = "in_progress"
	s.write(t, f)
	if got := s.one(t, sess); got.EndedAt != nil || got.StartedAt != nil {
		t.Fatalf("a running tool call: want started_at and ended_at NULL, got %s %s",
			showTime(got.StartedAt), showTime(got.EndedAt))
	}
	f.ToolStatus, f.ObservedAt, f.Payload.Status = "completed", at(30), "completed"
	s.write(t, f)
	f.ObservedAt = at(45) // the same end, delivered again later
	s.write(t, f)
	if got := s.one(t, sess); showTime(got.EndedAt) != showTime(ptrTime(at(30))) {
		t.Fatalf("synchronous run: ended_at %s, want its tool call's end %s", showTime(got.EndedAt),
			showTime(ptrTime(at(30))))
	}
}

// testBackgroundRunEndsWhenReported: an async launch settles its tool call
// but not the agent; the end a source reports later is the row's end.
func testBackgroundRunEndsWhenReported(t *testing.T, s *suite) {
	sess := s.session(t, "async")
	f := s.bare(sess, "1", 0)
	f.ToolStatus, f.Payload.Status, f.Payload.IsAsync = "completed", "async_launched", true
	s.write(t, f)
	got := s.one(t, sess)
	if got.SettledAt == nil || got.EndedAt != nil {
		t.Fatalf("async launch: want the tool call settled and no end, got settled_at %s ended_at %s",
			showTime(got.SettledAt), showTime(got.EndedAt))
	}
	// A source reports the agent's start and, later, its failure.
	end := s.bare(sess, "1", 5)
	end.StartedAt = at(1)
	end.Payload = nil
	s.write(t, end)
	end = s.bare(sess, "1", 600)
	end.EndedAt, end.Payload.Status = at(599), "failed"
	s.write(t, end)
	got = s.one(t, sess)
	if showTime(got.StartedAt) != showTime(ptrTime(at(1))) || showTime(got.EndedAt) != showTime(ptrTime(at(599))) ||
		show(got.AgentStatus) != show(str("failed")) || show(got.ToolStatus) != show(str("completed")) {
		t.Fatalf("background run: got started_at %s ended_at %s agent_status %s tool_status %s, "+
			"want %s %s failed completed", showTime(got.StartedAt), showTime(got.EndedAt), show(got.AgentStatus),
			show(got.ToolStatus), showTime(ptrTime(at(1))), showTime(ptrTime(at(599))))
	}
}

// testWokenAgainReopens: an agent that stopped and was woken again runs
// until its next end; its first start is kept; an earlier start reported
// late moves started_at back, never the end.
func testWokenAgainReopens(t *testing.T, s *suite) {
	sess := s.session(t, "woken")
	frame := func(sec int, start, end time.Time) core.Frame {
		f := s.bare(sess, "1", sec)
		f.Payload, f.StartedAt, f.EndedAt = nil, start, end
		return f
	}
	var none time.Time
	check := func(step string, start, end *time.Time) {
		t.Helper()
		got := s.one(t, sess)
		if showTime(got.StartedAt) != showTime(start) || showTime(got.EndedAt) != showTime(end) {
			t.Fatalf("%s: started_at %s ended_at %s, want %s %s", step, showTime(got.StartedAt),
				showTime(got.EndedAt), showTime(start), showTime(end))
		}
	}
	s.write(t, frame(10, at(10), none))
	s.write(t, frame(20, none, at(20)))
	check("first stop", ptrTime(at(10)), ptrTime(at(20)))
	s.write(t, frame(21, none, at(21))) // a second stop event for the same turn
	check("repeated stop", ptrTime(at(10)), ptrTime(at(20)))
	s.write(t, frame(30, at(30), none)) // woken again
	check("woken again", ptrTime(at(10)), nil)
	s.write(t, frame(40, none, at(40)))
	check("second stop", ptrTime(at(10)), ptrTime(at(40)))
	s.write(t, frame(50, at(5), none)) // an earlier start, reported late
	check("earlier start", ptrTime(at(5)), ptrTime(at(40)))
	s.write(t, frame(60, at(35), at(40))) // a start before the stored end reopens nothing
	check("start before the end", ptrTime(at(5)), ptrTime(at(40)))
}

// testStale (docs/CONTRACT.md §5.8): the rows whose agent may still end and
// has not, started before the threshold, oldest first, equal the reference
// (storekit.StaleOf); an ended agent, a settled synchronous call and a
// recent start are never listed.
func testStale(t *testing.T, s *suite) {
	sl, ok := s.Store.(report.StaleLister)
	if !ok {
		t.Fatal("the store does not implement report.StaleLister")
	}
	sess := s.session(t, "stale")
	// In 1500, before every other test's rows in a shared database, so
	// that a page of the oldest is this test's.
	at := func(sec int) time.Time { return time.Date(1500, 1, 1, 0, 0, sec, 0, time.UTC) }
	var none time.Time
	for i, c := range []struct {
		status         string
		async          bool
		observed       int
		started, ended time.Time
	}{
		{"completed", true, 10, none, none},      // launched, never came back: stale
		{"completed", true, 20, at(5), at(900)},  // launched, ended: not stale
		{"completed", false, 30, none, none},     // synchronous, over: not stale
		{"in_progress", false, 40, none, none},   // a call still open: stale
		{"in_progress", false, 5000, none, none}, // open, but recent: not stale
		{"completed", true, 5000, at(1), none},   // observed late, started early: stale
		{"completed", true, 50, none, none},      // stale
		{"in_progress", false, 10, none, none},   // stale, the same instant as the first
	} {
		f := s.bare(sess, fmt.Sprint(i), 0)
		f.ObservedAt = at(c.observed)
		f.ToolStatus, f.Payload.IsAsync, f.StartedAt, f.EndedAt = c.status, c.async, c.started, c.ended
		s.write(t, f)
	}
	rows := s.rows(t, sess)
	for _, q := range []report.StaleQuery{{Before: at(3600), Limit: report.MaxStale}, {Before: at(3600), Limit: 2},
		{Before: at(10), Limit: report.MaxStale}} {
		got, err := sl.Stale(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		got = slices.DeleteFunc(got, func(r core.Subagent) bool { return r.TaskSessionID != sess })
		want := storekit.StaleOf(rows, q)
		if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
			t.Errorf("stale %+v:\n got  %s\n want %s", q, g, w)
		}
	}
	if got := storekit.StaleOf(rows, report.StaleQuery{Before: at(3600)}); len(got) != 5 ||
		got[0].ToolCallID != s.id("tool", "5") {
		t.Errorf("the reference lists %d rows, first %v; want 5, the one started at 1 s first", len(got),
			describeRows(got))
	}
	_, err := sl.Stale(context.Background(), report.StaleQuery{})
	WantError(t, "no threshold", err, nil)
}

// testUnknownNeverOverAnEnd: a host that lost its agent marks the rows
// unknown; unknown never replaces the status of an agent that ended, is
// no end itself, and a later real state replaces it.
func testUnknownNeverOverAnEnd(t *testing.T, s *suite) {
	sess := s.session(t, "lost")
	for _, tool := range []string{"running", "ended"} {
		f := s.bare(sess, tool, 0)
		f.ToolStatus, f.Payload.Status, f.Payload.IsAsync = "completed", "async_launched", true
		s.write(t, f)
	}
	end := s.bare(sess, "ended", 10)
	end.EndedAt, end.Payload.Status = at(10), "completed"
	s.write(t, end)
	for _, tool := range []string{"running", "ended"} {
		lost := s.bare(sess, tool, 20)
		lost.Payload.Status = storekit.AgentStatusUnknown
		s.write(t, lost)
	}
	status := func() map[string]string {
		out := map[string]string{}
		for _, r := range s.rows(t, sess) {
			out[r.ToolCallID] = fmt.Sprint(show(r.AgentStatus), " ended=", showTime(r.EndedAt))
		}
		return out
	}
	want := map[string]string{
		s.id("tool", "running"): `"unknown" ended=NULL`,
		s.id("tool", "ended"):   `"completed" ended=` + showTime(ptrTime(at(10))),
	}
	if got := status(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the host lost its agent: %v, want %v", got, want)
	}
	later := s.bare(sess, "running", 30)
	later.Payload.Status, later.EndedAt = "failed", at(30)
	s.write(t, later)
	want[s.id("tool", "running")] = `"failed" ended=` + showTime(ptrTime(at(30)))
	if got := status(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a real state: %v, want %v", got, want)
	}
}
