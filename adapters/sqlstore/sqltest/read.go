package sqltest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

var readTests = []test{
	{"AC24b_ActivationStates", testActivationStates},
	{"AC25_EveryReaderInEveryState", testReadersByState},
	{"AC24e_TimestampComparisons", testTimestampComparisons},
	{"AC24e_KeysWithNanoseconds", testNanosecondKeys},
	{"AC28_Health", testHealth},
	{"AC28_HealthWindowsAgreeWithTheReference", testHealthWindows},
	{"AC24e_AC28_HealthWindowsFindEveryHostTimeForm", testHealthWindowHostForms},
	{"AC28_AHealthyRecordIsOneStatement", testHealthyIsOneStatement},
	{"AC28_NoFalseAlarmAfterAMergeIntoABackfilledRow", testMergeIntoBackfilledRow},
	{"AC28_DoubledPairsNamedThenMergedByTheNextPass", testDoubledPairs},
	{"AC25_StatsCoverage", testStatsCoverage},
	{"AC25_WholeStoreCountsEachSessionsVerdict", testWholeStoreCoverage},
	{"ExportMissesNoCommittedRow", testExportMissesNoCommittedRow},
}

// capture is the activation instant most tests here use: late in its UTC
// calendar day, with a microsecond part.
var capture = time.Date(2026, 8, 12, 23, 10, 0, 500001000, time.UTC)

// activate runs a pass whose clock reads c, so capture_since = c.
func activate(t *testing.T, e *Env, c time.Time) {
	t.Helper()
	mustRun(t, e, migration.WithClock(func() time.Time { return c }))
}

func message(t *testing.T, e *Env, id, s, tool string, created time.Time) {
	t.Helper()
	insert(t, e, kandevtest.Message{ID: id, TaskSessionID: s, TaskID: "task-" + s, TurnID: "turn-1",
		Metadata: ptr(kandevtest.Subagent(tool, "completed", &kandevtest.ClaudeCompleted).JSON()), CreatedAt: created})
}

func health(t *testing.T, e *Env) report.Health {
	t.Helper()
	h, err := e.Store.Health(context.Background(), report.HealthQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// setKeys replaces the meta table's keys.
func setKeys(t *testing.T, e *Env, kv map[string]string) report.Activation {
	t.Helper()
	e.Exec(t, `DELETE FROM `+e.meta(t))
	for k, v := range kv {
		e.Exec(t, `INSERT INTO `+e.meta(t)+` ("key", value) VALUES (?, ?)`, k, v)
	}
	a, err := e.Store.Activation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testActivationStates(t *testing.T, d *Driver) {
	e := d.Env(t)
	sec, nano := "2026-01-01T00:00:00Z", "2026-08-12T23:10:00.500001Z"
	for _, c := range []struct {
		keys map[string]string
		want report.ActivationState
	}{
		{map[string]string{storekit.CaptureSinceKey: nano, storekit.ExecutionSinceKey: sec}, report.Activated},
		{map[string]string{storekit.CaptureSinceKey: sec}, report.CaptureOnly},
		{map[string]string{storekit.ExecutionSinceKey: nano}, report.NoBoundary},
		{map[string]string{storekit.BackfillThroughKey: ""}, report.NotActivated},
	} {
		if a := setKeys(t, e, c.keys); a.State != c.want {
			t.Errorf("keys %v: state %s, want %s", c.keys, a.State, c.want)
		}
	}
	a := setKeys(
		t, e, map[string]string{storekit.CaptureSinceKey: sec, storekit.ExecutionSinceKey: nano,
			storekit.BackfillThroughKey: ""},
	)
	if !a.CaptureSince.Usable() || !a.CaptureSince.Time.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) ||
		!a.ExecutionSince.Time.Equal(capture) || !a.NothingToRecover || a.BackfillThrough.Time != nil {
		t.Errorf("parsed keys: %+v", a)
	}
	a = setKeys(t, e, map[string]string{storekit.CaptureSinceKey: "yesterday", storekit.BackfillThroughKey: "2026-13-01"})
	if a.State != report.CaptureOnly || a.CaptureSince.Usable() || a.CaptureSince.ParseError == "" ||
		a.BackfillThrough.ParseError == "" || a.NothingToRecover {
		t.Errorf("unparsable keys must be reported as such: %+v", a)
	}
	if h := health(t, e); h.Ran || h.Reason == "" {
		t.Errorf("health with an unparsable capture_since: %+v", h)
	}
	setKeys(t, e, nil)
	if h := health(t, e); h.Ran || h.Reason == "" {
		t.Errorf("AC-29: health without capture_since must not run: %+v", h)
	}
}

// testReadersByState: what each reader returns in each of the four states
// (docs/CONTRACT.md §5.1): lists always; health only with capture_since,
// collisions only with execution_since; distinct executions only with
// execution_since; coverage known only with capture_since.
func testReadersByState(t *testing.T, d *Driver) {
	e := d.Env(t)
	message(t, e, "m1", "s", "tc-1", capture.Add(time.Second))
	record(t, e, "s", "tc-1", "e1", capture.Add(2*time.Second))
	record(t, e, "s", "tc-1", "e2", capture.Add(3*time.Second)) // a collision between two executions
	key := capture.Format(time.RFC3339Nano)
	for _, c := range []struct {
		state                report.ActivationState
		keys                 map[string]string
		healthRuns           bool
		collisions, distinct string
		coverage             report.Coverage
	}{
		{report.Activated, map[string]string{storekit.CaptureSinceKey: key, storekit.ExecutionSinceKey: key}, true, "1", "2",
			report.Known},
		{report.CaptureOnly, map[string]string{storekit.CaptureSinceKey: key}, true, "NULL", "NULL", report.Known},
		{report.NoBoundary, map[string]string{storekit.ExecutionSinceKey: key}, false, "NULL", "2", report.Unknown},
		{report.NotActivated, nil, false, "NULL", "NULL", report.Unknown},
	} {
		if a := setKeys(t, e, c.keys); a.State != c.state {
			t.Fatalf("state %s, want %s", a.State, c.state)
		}
		rows, err := e.Store.ListBySession(context.Background(), "s", core.Page{})
		if err != nil || len(rows) != 2 {
			t.Errorf("%s: list %d rows, %v; rows are valid in every state", c.state, len(rows), err)
		}
		h := health(t, e)
		if h.Ran != c.healthRuns || show(h.Collisions) != c.collisions || h.State != c.state ||
			(h.Ran && h.Shortfall != 0) || (!h.Ran && h.Reason == "") {
			t.Errorf(
				"%s: health ran=%v collisions=%s shortfall=%d reason %q; want ran=%v collisions=%s", c.state, h.Ran,
				show(h.Collisions), h.Shortfall, h.Reason, c.healthRuns, c.collisions,
			)
		}
		st, err := e.Store.Stats(context.Background(), report.StatsQuery{TaskSessionID: "s"})
		if err != nil || st.Subagents != 2 || show(st.DistinctExecutions) != c.distinct || len(st.Sessions) != 1 ||
			st.Sessions[0].Coverage != c.coverage {
			t.Errorf(
				"%s: stats %d subagents, distinct executions %s, coverage %+v, %v; want 2, %s, %s", c.state, st.Subagents,
				show(st.DistinctExecutions), st.Sessions, err, c.distinct, c.coverage,
			)
		}
	}
}

// testTimestampComparisons: AC-24e, at microsecond and (for text host
// timestamps) nanosecond precision.
func testTimestampComparisons(t *testing.T, d *Driver) {
	e := d.Env(t)
	activate(t, e, capture)
	message(t, e, "before", "s", "tc-before", capture.Add(-time.Microsecond)) // before the key
	message(t, e, "at", "s", "tc-at", capture)                                // at it
	message(t, e, "late", "s", "tc-late", capture.Add(49*time.Minute))        // later on the key's calendar day
	want := int64(2)                                                          // at and late; not before
	if d.Dialect.HostTimeText() {
		// Host created_at in other text forms the driver and other writers store.
		for i, text := range []string{
			"2026-08-13 08:40:00.500001+09:30", // = capture, written with an offset
			"2026-08-12T23:10:00.500000Z",      // one microsecond before
			"2026-08-12 23:10:00.5000009",      // 100 ns before: before
			"2026-08-12 23:10:00.500001001",    // 1 ns after: at or after
		} {
			meta := kandevtest.Subagent(fmt.Sprint("tc-text-", i), "completed", &kandevtest.ClaudeCompleted).JSON()
			e.Exec(
				t,
				`INSERT INTO task_session_messages
					(id, task_session_id, task_id, turn_id, content, metadata, created_at, updated_at)
				VALUES (?, 's', 'task-s', 'turn-1', '', ?, ?, ?)`,
				fmt.Sprint("text-", i),
				meta,
				text,
				text,
			)
		}
		want += 2 // the offset form and the one a nanosecond after
	}
	h := health(t, e)
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
}

// testNanosecondKeys: a key with digits below the microsecond (the
// reference host writes time.RFC3339Nano) is compared exactly by every
// reader: a message and its row strictly before it are neither shortfall
// nor excess, and coverage agrees per session and store-wide.
func testNanosecondKeys(t *testing.T, d *Driver) {
	e := d.Env(t)
	key := capture.Add(1) // …:00.500001001Z
	message(t, e, "m-before", "s-before", "tc-1", capture)
	record(t, e, "s-before", "tc-1", "e1", capture)
	message(t, e, "m-after", "s-after", "tc-2", capture.Add(time.Microsecond))
	record(t, e, "s-after", "tc-2", "e1", capture.Add(time.Microsecond))
	setKeys(
		t,
		e,
		map[string]string{
			storekit.CaptureSinceKey:   key.Format(time.RFC3339Nano),
			storekit.ExecutionSinceKey: key.Format(time.RFC3339Nano),
		},
	)
	h := health(t, e)
	if !h.Healthy() || h.Shortfall != 0 || h.Excess != 0 || h.LastObservedAt == nil ||
		!h.LastObservedAt.Equal(capture.Add(time.Microsecond)) {
		t.Errorf("health with a nanosecond key: %+v", h)
	}
	for sess, want := range map[string]report.Coverage{"s-before": report.Unknown, "s-after": report.Known} {
		st, err := e.Store.Stats(context.Background(), report.StatsQuery{TaskSessionID: sess})
		if err != nil || st.Sessions[0].Coverage != want {
			t.Errorf("%s: coverage %+v, want %s (%v)", sess, st.Sessions, want, err)
		}
	}
	st, err := e.Store.Stats(context.Background(), report.StatsQuery{})
	if err != nil || st.KnownSessions != 1 || st.UnknownSessions != 1 {
		t.Errorf(
			"store-wide coverage %d known %d unknown, want 1 and 1 (%v)", st.KnownSessions, st.UnknownSessions, err,
		)
	}
}

func testHealth(t *testing.T, d *Driver) {
	e := d.Env(t)
	old := capture.Add(-time.Hour)
	message(t, e, "old", "s0", "tc-old", old) // history: backfilled, before the boundary
	activate(t, e, capture)
	after := func(d int) time.Time { return capture.Add(time.Duration(d) * time.Second) }

	// Healthy: every message after the boundary has its row.
	message(t, e, "m1", "s1", "tc-1", after(1))
	message(t, e, "m2", "s1", "tc-2", after(2))
	record(t, e, "s1", "tc-1", "e1", after(3))
	record(t, e, "s1", "tc-2", "e1", after(4))
	h := health(t, e)
	if !h.Healthy() || h.Shortfall != 0 || h.Excess != 0 || h.LastObservedAt == nil ||
		!h.LastObservedAt.Equal(after(4)) || h.WriterSilent() {
		t.Errorf("healthy store: %+v", h)
	}
	// One message the writer never saw: shortfall 1.
	message(t, e, "m3", "s1", "tc-3", after(5))
	if h := health(t, e); h.Shortfall != 1 || h.Healthy() {
		t.Errorf("one unseen message: %+v", h)
	}
	// A stopped writer while messages continue: shortfall grows, the last
	// observation stays where the writer stopped.
	message(t, e, "m4", "s2", "tc-4", after(60))
	message(t, e, "m5", "s2", "tc-5", after(61))
	if h := health(t, e); h.Shortfall != 3 || !h.LastObservedAt.Equal(after(4)) {
		t.Errorf("stopped writer: %+v", h)
	}
	// Banked excess (rows without messages) never hides a shortfall.
	e.Session(t, "s3")
	for i := range 5 {
		record(t, e, "s3", fmt.Sprint("orphan-", i), "e1", after(70+i))
	}
	if h := health(t, e); h.Shortfall != 3 || h.Excess != 5 {
		t.Errorf("banked excess: shortfall %d excess %d, want 3 and 5", h.Shortfall, h.Excess)
	}
	// Messages without identity are not shortfall (but are messages, so a
	// row for one is not excess); malformed metadata is {}.
	noTool := kandevtest.Subagent("", "completed", &kandevtest.ClaudeCompleted).JSON()
	noTask := kandevtest.Subagent("tc-nt", "completed", &kandevtest.ClaudeCompleted).JSON()
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, []kandevtest.Message{
		{ID: "no-tool", TaskSessionID: "s1", TaskID: "task-s1", TurnID: "t", Metadata: &noTool, CreatedAt: after(80)},
		{ID: "no-task", TaskSessionID: "s1", TaskID: "", TurnID: "t", Metadata: &noTask, CreatedAt: after(80)},
		{ID: "bad-1", TaskSessionID: "s1", TaskID: "task-s1", TurnID: "t",
			Metadata: ptr(`{"normalized":{"kind":"subagent_task"`), CreatedAt: after(80)},
		{ID: "bad-2", TaskSessionID: "s1", TaskID: "task-s1", TurnID: "t", Metadata: ptr(`subagent_task`),
			CreatedAt: after(80)},
		{ID: "bad-3", TaskSessionID: "s1", TaskID: "task-s1", TurnID: "t", Metadata: nil, CreatedAt: after(80)},
	}); err != nil {
		t.Fatal(err)
	}
	record(t, e, "s1", "tc-nt", "e1", after(81))
	if h := health(t, e); h.Shortfall != 3 || h.Excess != 5 {
		t.Errorf("identity-less and malformed messages: shortfall %d excess %d, want 3 and 5", h.Shortfall, h.Excess)
	}
	// A cross-execution collision is counted, not netted; 'unknown' is not
	// an execution.
	record(t, e, "s1", "tc-1", "e2", after(90))
	record(t, e, "s1", "tc-2", "", after(91))
	if h := health(t, e); h.Collisions == nil || *h.Collisions != 1 || h.Shortfall != 3 {
		t.Errorf("collision: %+v", h)
	}
}

// testHealthyIsOneStatement: a health check of a healthy record, over the
// whole record and over a window, is one statement on every SQL store
// (on a sharded table the lists of missing and excess pairs are
// statements of their own, run only when their count is not zero, since
// each costs a pass over the window on every shard); with a shortfall the
// missing pair is listed all the same.
func testHealthyIsOneStatement(t *testing.T, d *Driver) {
	e := d.Env(t)
	activate(t, e, capture)
	message(t, e, "m1", "s1", "tc-1", capture.Add(time.Second))
	record(t, e, "s1", "tc-1", "e1", capture.Add(2*time.Second))
	var log StatementLog
	s, err := d.New(e.DB.Session(&gorm.Session{Logger: &log}), sqlstore.WithTables(e.Tables))
	if err != nil {
		t.Fatal(err)
	}
	check := func(q report.HealthQuery, shortfall int64, missing []string) {
		t.Helper()
		log.Start()
		h, err := s.Health(context.Background(), q)
		log.Stop()
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, p := range h.Missing {
			listed = append(listed, p.TaskSessionID+"/"+p.ToolCallID)
		}
		if h.Shortfall != shortfall || h.Excess != 0 || !slices.Equal(listed, missing) {
			t.Errorf("health since %v: shortfall %d, excess %d, missing %v; want %d, 0, %v", q.Since, h.Shortfall,
				h.Excess, listed, shortfall, missing)
		}
		n := 0
		for _, q := range log.Statements() {
			if strings.Contains(q, "shortfall") {
				n++
			}
		}
		if shortfall == 0 && n != 1 {
			t.Errorf("health since %v of a healthy record: %d statements, want 1", q.Since, n)
		}
	}
	for _, since := range []time.Time{{}, capture.Add(time.Second)} {
		check(report.HealthQuery{Since: since}, 0, nil)
	}
	message(t, e, "m2", "s1", "tc-2", capture.Add(3*time.Second))
	for _, since := range []time.Time{{}, capture.Add(time.Second)} {
		check(report.HealthQuery{Since: since}, 1, []string{"s1/tc-2"})
	}
}

// testMergeIntoBackfilledRow: a live frame without an execution id for a
// tool call the backfill recovered merges into that row, whose observed_at
// stays before capture_since. The message has its row, so it is no
// shortfall, and the write counts as the writer's.
func testMergeIntoBackfilledRow(t *testing.T, d *Driver) {
	e := d.Env(t)
	message(t, e, "m-old", "s", "tc-1", capture.Add(-time.Minute))
	activate(t, e, capture)
	message(t, e, "m-new", "s", "tc-1", capture.Add(time.Second)) // the same invocation, reported again
	record(t, e, "s", "tc-1", "", capture.Add(2*time.Second))
	h := health(t, e)
	if h.Shortfall != 0 || h.WriterSilent() || h.LastWriteAt == nil || h.LastObservedAt != nil {
		t.Errorf("merge into a backfilled row: %+v; want no shortfall and a last write", h)
	}
}

func testStatsCoverage(t *testing.T, d *Driver) {
	e := d.Env(t)
	message(t, e, "old", "s-old", "tc-old", capture.Add(-time.Hour))
	activate(t, e, capture) // backfills s-old's row
	message(t, e, "new", "s-new", "tc-new", capture.Add(time.Second))
	record(t, e, "s-new", "tc-new", "e1", capture.Add(2*time.Second))
	e.Session(t, "s-none")
	want := map[string]report.Coverage{"s-old": report.Unknown, "s-new": report.Known, "s-none": report.Unknown}
	for sess, want := range want {
		st, err := e.Store.Stats(context.Background(), report.StatsQuery{TaskSessionID: sess})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Sessions) != 1 || st.Sessions[0].Coverage != want {
			t.Errorf("%s: coverage %+v, want %s", sess, st.Sessions, want)
		}
		if st.DistinctExecutions == nil || st.Activation.State != report.Activated {
			t.Errorf("%s: activation %s distinct executions %v", sess, st.Activation.State, st.DistinctExecutions)
		}
	}
	st, err := e.Store.Stats(context.Background(), report.StatsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Subagents != 2 || st.Live != 1 || st.Backfill != 1 || st.KnownSessions != 1 || st.UnknownSessions != 1 ||
		show(st.DistinctExecutions) != "1" || st.UnknownExecutionRows != 1 || st.TotalTokens.All.Sum.Int64() != 275717 ||
		st.TotalTokens.All.Unreported != 1 || st.TotalTokens.Backfill.Sum.Int64() != 275717 ||
		st.TotalTokens.Live.Sum != nil {
		t.Errorf("whole store: %+v", st)
	}
	st, err = e.Store.Stats(context.Background(), report.StatsQuery{TaskID: "task-s-new"})
	if err != nil || st.Subagents != 1 || len(st.Sessions) != 1 || st.Sessions[0].Coverage != report.Known {
		t.Errorf("by task: %+v %v", st, err)
	}
	// The listing gives each session Stats' verdict, from activity before
	// the bound however narrow its window: s-mixed's message precedes
	// capture_since, its rows do not.
	message(t, e, "mixed", "s-mixed", "tc-mixed", capture.Add(-time.Minute))
	record(t, e, "s-mixed", "tc-late", "e1", capture.Add(3*time.Second))
	for _, q := range []report.SessionQuery{{}, {Since: capture.Add(time.Second)}} {
		list, err := e.Store.Sessions(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]report.Coverage{"s-old": report.Unknown, "s-new": report.Known, "s-mixed": report.Unknown}
		for _, g := range list {
			st, err := e.Store.Stats(context.Background(), report.StatsQuery{TaskSessionID: g.TaskSessionID})
			if err != nil {
				t.Fatal(err)
			}
			if g.Coverage != st.Sessions[0] || g.Coverage.Coverage != want[g.TaskSessionID] {
				t.Errorf("window from %s: %s listed %+v; Stats says %+v, want %s", q.Since, g.TaskSessionID,
					g.Coverage, st.Sessions[0], want[g.TaskSessionID])
			}
			delete(want, g.TaskSessionID)
		}
		if q.Since.IsZero() && len(want) != 0 {
			t.Errorf("not listed: %v", want)
		}
	}
}

// testWholeStoreCoverage: the whole store's verdict counts, which the
// database counts where the sessions are, equal the verdicts each session
// gets on its own (storekit.CoverageOf of its first activity): activity
// before capture_since or before the retention boundary, a first message
// or a first row, and a session whose only message has no instant.
func testWholeStoreCoverage(t *testing.T, d *Driver) {
	e := d.Env(t)
	pruned := capture.Add(10 * time.Minute)
	message(t, e, "m-early", "s-early-message", "tc-1", capture.Add(-time.Minute))
	record(t, e, "s-early-message", "tc-1", "e1", capture.Add(20*time.Minute))
	for _, sess := range []string{"s-early-row", "s-before-prune", "s-row-only", "s-undated"} {
		e.Session(t, sess)
	}
	record(t, e, "s-early-row", "tc-1", "e1", capture.Add(-time.Second))
	message(t, e, "m-late", "s-early-row", "tc-1", capture.Add(20*time.Minute))
	record(t, e, "s-before-prune", "tc-1", "e1", capture.Add(5*time.Minute))
	message(t, e, "m-known", "s-known", "tc-1", pruned)
	record(t, e, "s-known", "tc-1", "e1", pruned.Add(time.Minute))
	message(t, e, "m-only", "s-message-only", "tc-1", capture.Add(30*time.Minute))
	record(t, e, "s-row-only", "tc-1", "e1", capture.Add(40*time.Minute))
	undated := any("not a time")
	if !d.Dialect.HostTimeText() {
		undated = "infinity"
	}
	e.Exec(t, `INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, content, metadata, created_at,
		updated_at) VALUES ('m-undated', 's-undated', 'task-s-undated', 'turn-1', '', '{}', ?, ?)`, undated, undated)
	setKeys(t, e, map[string]string{
		storekit.CaptureSinceKey:   capture.Format(time.RFC3339Nano),
		storekit.ExecutionSinceKey: capture.Format(time.RFC3339Nano),
		storekit.PrunedBeforeKey:   pruned.Format(time.RFC3339Nano),
	})
	want := map[string]report.Coverage{"s-early-message": report.Unknown, "s-early-row": report.Unknown,
		"s-before-prune": report.Unknown, "s-known": report.Known, "s-message-only": report.Known,
		"s-row-only": report.Known, "s-undated": report.Unknown}
	var known, unknown int64
	for sess, want := range want {
		st, err := e.Store.Stats(context.Background(), report.StatsQuery{TaskSessionID: sess})
		if err != nil || len(st.Sessions) != 1 || st.Sessions[0].Coverage != want {
			t.Errorf("%s: coverage %+v, want %s (%v)", sess, st.Sessions, want, err)
		}
		if want == report.Known {
			known++
		} else {
			unknown++
		}
	}
	st, err := e.Store.Stats(context.Background(), report.StatsQuery{})
	if err != nil || st.KnownSessions != known || st.UnknownSessions != unknown {
		t.Errorf("whole store: %d known, %d unknown, want %d and %d (%v)", st.KnownSessions, st.UnknownSessions,
			known, unknown, err)
	}
	// Without a usable capture_since no verdict is known, however late the
	// activity.
	setKeys(t, e, map[string]string{storekit.CaptureSinceKey: "not an instant"})
	if st, err := e.Store.Stats(context.Background(), report.StatsQuery{}); err != nil || st.KnownSessions != 0 ||
		st.UnknownSessions != known+unknown {
		t.Errorf("capture_since unusable: %d known, %d unknown, want 0 and %d (%v)", st.KnownSessions,
			st.UnknownSessions, known+unknown, err)
	}
}

// testDoubledPairs: a pair holding the backfill's row beside a row under
// an execution id — written as an earlier release's writer does, without
// absorbing it — is counted and listed as doubled (never an alarm); a
// pair whose history this build's upsert absorbed is not, nor is a pair
// with history only. The next pass's seam check merges it (docs/CONTRACT.md
// §4 step 2): one row, history under live, and no doubled pair; the pass
// after finds nothing to merge.
func testDoubledPairs(t *testing.T, d *Driver) {
	e := d.Env(t)
	before := capture.Add(-time.Hour)
	message(t, e, "m-doubled", "s1", "tc-doubled", before)
	message(t, e, "m-absorbed", "s1", "tc-absorbed", before.Add(time.Second))
	message(t, e, "m-history", "s1", "tc-history", before.Add(2*time.Second))
	activate(t, e, capture) // the backfill writes the three pairs' history
	message(t, e, "m-live", "s1", "tc-live", capture.Add(time.Second))
	record(t, e, "s1", "tc-live", "e1", capture.Add(2*time.Second))
	record(t, e, "s1", "tc-absorbed", "e1", capture.Add(3*time.Second))
	// Where a trigger absorbs (a sharded table), the earlier release's
	// write is made while it is gone, as during a rolling deploy; the pass
	// puts it back.
	if d.Name == "citus" {
		e.Exec(t, `DO $$ BEGIN
	PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
	DROP TRIGGER subagentctx_absorb ON task_session_subagents;
END $$`)
	}
	e.insertRaw(t, row("s1", "tc-doubled", "e1", core.SourceLive, capture.Add(4*time.Second)))
	rows, err := e.Store.ListBySession(context.Background(), "s1", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var first time.Time
	for _, r := range rows {
		if r.ToolCallID == "tc-doubled" && r.Source == core.SourceBackfill {
			first = r.ObservedAt
		}
	}
	h := health(t, e)
	if ps := h.DoubledPairs; h.Doubled != 1 || len(ps) != 1 || ps[0].TaskSessionID != "s1" ||
		ps[0].ToolCallID != "tc-doubled" || !ps[0].FirstSeen.Equal(first) || first.IsZero() {
		t.Errorf("doubled %d %+v, want 1: s1 tc-doubled first seen %v", h.Doubled, ps, first)
	}
	if !h.Healthy() || h.Shortfall != 0 || h.Excess != 0 {
		t.Errorf("a doubled pair is no alarm and no excess: %+v", h)
	}
	for i, want := range []int64{1, 0} {
		r := mustRun(t, e)
		if got := r.Step(migration.StepShape).RowsMerged; got != want {
			t.Errorf("pass %d merged %d pairs, want %d:\n%s", i+1, got, want, r)
		}
		if rows, err = e.Store.ListBySession(context.Background(), "s1", core.Page{}); err != nil {
			t.Fatal(err)
		}
		var doubled []core.Subagent
		for _, r := range rows {
			if r.ToolCallID == "tc-doubled" {
				doubled = append(doubled, r)
			}
		}
		if len(doubled) != 1 || doubled[0].AgentExecutionID != "e1" || doubled[0].Source != core.SourceBackfill ||
			!doubled[0].ObservedAt.Equal(first) {
			t.Errorf("after pass %d: %+v, want one row under e1 holding history (backfill, observed %v)", i+1, doubled,
				first)
		}
		if h := health(t, e); h.Doubled != 0 || len(h.DoubledPairs) != 0 {
			t.Errorf("after pass %d: doubled %d %+v, want none", i+1, h.Doubled, h.DoubledPairs)
		}
	}
}
