package sqlstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

func TestMain(m *testing.M) {
	time.Local = time.FixedZone("UTC+09:30", 9*3600+1800) // nothing may depend on TZ
	os.Exit(m.Run())
}

// capture is the activation instant every test here uses: late in its UTC
// calendar day, with a microsecond part.
var capture = time.Date(2026, 8, 12, 23, 10, 0, 500001000, time.UTC)

func ptr[T any](v T) *T { return &v }

// activate runs a pass whose clock reads capture, so capture_since = capture.
func activate(t *testing.T, e *testenv.Env) {
	t.Helper()
	m, _ := backfill.New(e.Store, backfill.WithLogger(slog.New(slog.DiscardHandler)), backfill.WithClock(func() time.Time { return capture }))
	if r := m.Run(context.Background()); r.Failed() {
		t.Fatalf("pass failed:\n%s", r)
	}
}

func message(t *testing.T, e *testenv.Env, id, s, tool string, created time.Time) {
	t.Helper()
	if err := kandevtest.InsertSession(context.Background(), e.DB, e.Tables, s, "task-"+s); err != nil {
		t.Fatal(err)
	}
	meta := kandevtest.Subagent(tool, "completed", &kandevtest.ClaudeCompleted).JSON()
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, []kandevtest.Message{
		{ID: id, TaskSessionID: s, TaskID: "task-" + s, TurnID: "turn-1", Metadata: &meta, CreatedAt: created}}); err != nil {
		t.Fatal(err)
	}
}

func record(t *testing.T, e *testenv.Env, s, tool, exec string, observed time.Time) {
	t.Helper()
	row, _ := core.Normalize(core.Frame{TaskSessionID: s, TaskID: "task-" + s, TurnID: "turn-1", ExecutionID: exec, ToolCallID: tool, ObservedAt: observed})
	if err := e.Store.Upsert(context.Background(), row); err != nil {
		t.Fatal(err)
	}
}

func health(t *testing.T, e *testenv.Env) core.Health {
	t.Helper()
	h, err := e.Store.(core.Reader).Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestActivationStates(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		r := e.Store.(core.Reader)
		set := func(kv map[string]string) core.Activation {
			e.Exec(t, `DELETE FROM kandev_meta`)
			for k, v := range kv {
				e.Exec(t, `INSERT INTO kandev_meta ("key", value) VALUES (?, ?)`, k, v)
			}
			a, err := r.Activation(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		sec, nano := "2026-01-01T00:00:00Z", "2026-08-12T23:10:00.500001Z"
		for _, c := range []struct {
			keys map[string]string
			want core.ActivationState
		}{
			{map[string]string{core.KeyCaptureSince: nano, core.KeyExecutionSince: sec}, core.Activated},
			{map[string]string{core.KeyCaptureSince: sec}, core.CaptureOnly},
			{map[string]string{core.KeyExecutionSince: nano}, core.NoBoundary},
			{map[string]string{core.KeyBackfillThrough: ""}, core.NotActivated},
		} {
			if a := set(c.keys); a.State != c.want {
				t.Errorf("keys %v: state %s, want %s", c.keys, a.State, c.want)
			}
		}
		a := set(map[string]string{core.KeyCaptureSince: sec, core.KeyExecutionSince: nano, core.KeyBackfillThrough: ""})
		if !a.CaptureSince.Usable() || !a.CaptureSince.Time.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) ||
			!a.ExecutionSince.Time.Equal(capture) || !a.NothingToRecover || a.BackfillThrough.Time != nil {
			t.Errorf("parsed keys: %+v", a)
		}
		a = set(map[string]string{core.KeyCaptureSince: "yesterday", core.KeyBackfillThrough: "2026-13-01"})
		if a.State != core.CaptureOnly || a.CaptureSince.Usable() || a.CaptureSince.ParseError == "" || a.BackfillThrough.ParseError == "" || a.NothingToRecover {
			t.Errorf("unparsable keys must be reported as such: %+v", a)
		}
		if h := health(t, e); h.Ran || h.Reason == "" {
			t.Errorf("health with an unparsable capture_since: %+v", h)
		}
		set(nil)
		if h := health(t, e); h.Ran || h.Reason == "" {
			t.Errorf("AC-29: health without capture_since must not run: %+v", h)
		}
	})
}

// TestTimestampComparisons: AC-24e on both dialects.
func TestTimestampComparisons(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		activate(t, e)
		message(t, e, "before", "s", "tc-before", capture.Add(-time.Microsecond)) // before the key
		message(t, e, "at", "s", "tc-at", capture)                                // at it
		message(t, e, "late", "s", "tc-late", capture.Add(49*time.Minute))        // later on the key's calendar day
		if e.Dialect == "sqlite" {
			// Host created_at in other text forms the driver and other writers store.
			for i, text := range []string{
				"2026-08-13 08:40:00.500001+09:30", // = capture, written with an offset
				"2026-08-12T23:10:00.500000Z",      // one microsecond before
				"2026-08-12 23:10:00.5000011",      // beyond microseconds: truncated to capture
			} {
				meta := kandevtest.Subagent(fmt.Sprint("tc-text-", i), "completed", &kandevtest.ClaudeCompleted).JSON()
				e.Exec(t, `INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, content, metadata, created_at, updated_at)
					VALUES (?, 's', 'task-s', 'turn-1', '', ?, ?, ?)`, fmt.Sprint("text-", i), meta, text, text)
			}
		}
		h := health(t, e)
		want := int64(2) // at and late; not before
		if e.Dialect == "sqlite" {
			want += 2 // the offset form and the truncated form
		}
		if !h.Ran || h.Shortfall != want {
			t.Errorf("shortfall %d, want %d (messages at or after capture_since, none recorded): %+v", h.Shortfall, want, h)
		}
		// Rows one microsecond before the key are before it; at it, at/after.
		record(t, e, "s", "tc-before", "e1", capture.Add(-time.Microsecond))
		if h := health(t, e); h.LastObservedAt != nil {
			t.Errorf("a row observed before capture_since counts: last_observed_at %v", h.LastObservedAt)
		}
		record(t, e, "s", "tc-at", "e1", capture)
		h = health(t, e)
		if h.LastObservedAt == nil || !h.LastObservedAt.Equal(capture) || h.Shortfall != want-1 {
			t.Errorf("a row at capture_since: last %v shortfall %d", h.LastObservedAt, h.Shortfall)
		}
		rows, err := e.Store.ListBySession(context.Background(), "s", core.Page{})
		if err != nil || len(rows) != 2 || rows[0].ToolCallID != "tc-before" || !rows[1].ObservedAt.Equal(capture) {
			t.Errorf("order/round trip: %v %v", rows, err)
		}
	})
}

func TestHealth(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		old := capture.Add(-time.Hour)
		message(t, e, "old", "s0", "tc-old", old) // history: backfilled, before the boundary
		activate(t, e)
		after := func(d int) time.Time { return capture.Add(time.Duration(d) * time.Second) }

		// Healthy: every message after the boundary has its row.
		message(t, e, "m1", "s1", "tc-1", after(1))
		message(t, e, "m2", "s1", "tc-2", after(2))
		record(t, e, "s1", "tc-1", "e1", after(3))
		record(t, e, "s1", "tc-2", "e1", after(4))
		h := health(t, e)
		if !h.Healthy() || h.Shortfall != 0 || h.Excess != 0 || h.LastObservedAt == nil || !h.LastObservedAt.Equal(after(4)) {
			t.Errorf("healthy store: %+v", h)
		}
		// One message the writer never saw: shortfall 1.
		message(t, e, "m3", "s1", "tc-3", after(5))
		if h := health(t, e); h.Shortfall != 1 || h.Healthy() {
			t.Errorf("one unseen message: %+v", h)
		}
		// A stopped writer while messages continue: shortfall grows, the
		// last observation stays where the writer stopped.
		message(t, e, "m4", "s2", "tc-4", after(60))
		message(t, e, "m5", "s2", "tc-5", after(61))
		if h := health(t, e); h.Shortfall != 3 || !h.LastObservedAt.Equal(after(4)) {
			t.Errorf("stopped writer: %+v", h)
		}
		// Banked excess (rows without messages) never hides a shortfall.
		if err := kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s3", "task-s3"); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			record(t, e, "s3", fmt.Sprint("orphan-", i), "e1", after(70+i))
		}
		if h := health(t, e); h.Shortfall != 3 || h.Excess != 5 {
			t.Errorf("banked excess: shortfall %d excess %d, want 3 and 5", h.Shortfall, h.Excess)
		}
		// Messages without identity are not shortfall (but are messages,
		// so a row for one is not excess); malformed metadata is {}.
		noTool := kandevtest.Subagent("", "completed", &kandevtest.ClaudeCompleted).JSON()
		noTask := kandevtest.Subagent("tc-nt", "completed", &kandevtest.ClaudeCompleted).JSON()
		if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, []kandevtest.Message{
			{ID: "no-tool", TaskSessionID: "s1", TaskID: "task-s1", TurnID: "t", Metadata: &noTool, CreatedAt: after(80)},
			{ID: "no-task", TaskSessionID: "s1", TaskID: "", TurnID: "t", Metadata: &noTask, CreatedAt: after(80)},
			{ID: "bad-1", TaskSessionID: "s1", TaskID: "task-s1", TurnID: "t", Metadata: ptr(`{"normalized":{"kind":"subagent_task"`), CreatedAt: after(80)},
			{ID: "bad-2", TaskSessionID: "s1", TaskID: "task-s1", TurnID: "t", Metadata: ptr(`subagent_task`), CreatedAt: after(80)},
			{ID: "bad-3", TaskSessionID: "s1", TaskID: "task-s1", TurnID: "t", Metadata: nil, CreatedAt: after(80)},
		}); err != nil {
			t.Fatal(err)
		}
		record(t, e, "s1", "tc-nt", "e1", after(81))
		if h := health(t, e); h.Shortfall != 3 || h.Excess != 5 {
			t.Errorf("identity-less and malformed messages: shortfall %d excess %d, want 3 and 5", h.Shortfall, h.Excess)
		}
		// A cross-execution collision is counted, not netted.
		record(t, e, "s1", "tc-1", "e2", after(90))
		if h := health(t, e); h.Collisions != 1 || h.Shortfall != 3 {
			t.Errorf("collision: %+v", h)
		}
	})
}

func TestStatsCoverage(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		message(t, e, "old", "s-old", "tc-old", capture.Add(-time.Hour))
		activate(t, e) // backfills s-old's row
		message(t, e, "new", "s-new", "tc-new", capture.Add(time.Second))
		record(t, e, "s-new", "tc-new", "e1", capture.Add(2*time.Second))
		if err := kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s-none", "task-s-none"); err != nil {
			t.Fatal(err)
		}
		r := e.Store.(core.Reader)
		for sess, want := range map[string]core.Coverage{"s-old": core.Unknown, "s-new": core.Known, "s-none": core.Unknown} {
			st, err := r.Stats(context.Background(), core.StatsQuery{TaskSessionID: sess})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Sessions) != 1 || st.Sessions[0].Coverage != want {
				t.Errorf("%s: coverage %+v, want %s", sess, st.Sessions, want)
			}
			if !st.ExecutionIdentities || st.Activation.State != core.Activated {
				t.Errorf("%s: activation %s identities %v", sess, st.Activation.State, st.ExecutionIdentities)
			}
		}
		st, err := r.Stats(context.Background(), core.StatsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Subagents != 2 || st.Live != 1 || st.Backfill != 1 || st.KnownSessions != 1 || st.UnknownSessions != 1 ||
			st.DistinctExecutions != 1 || st.UnknownExecutionRows != 1 || st.TotalTokens.Sum != 275717 || st.TotalTokens.Unreported != 1 {
			t.Errorf("whole store: %+v", st)
		}
		st, err = r.Stats(context.Background(), core.StatsQuery{TaskID: "task-s-new"})
		if err != nil || st.Subagents != 1 || len(st.Sessions) != 1 || st.Sessions[0].Coverage != core.Known {
			t.Errorf("by task: %+v %v", st, err)
		}
	})
}
