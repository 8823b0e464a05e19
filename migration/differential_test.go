package migration_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/history"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
	"github.com/subagentctx/subagentctx/migration"
)

// A script is a history of the host and the library, one step a line,
// applied in order:
//
//	msg|id|session|task|turn|created|updated|metadata
//	live|session|tool call id|execution id[|tool status|model|total tokens|turn]
//	pass
//	fail
//
// A msg line writes a host message. created and updated are RFC 3339
// instants (stored as timestamps on every dialect) or, prefixed with
// "text:", text stored as it is (SQLite only, which keeps host timestamps
// as text). A session named "gone…" does not exist in the sessions table.
// A live line records a frame. pass runs the migration pass; fail runs one
// whose backfill fails just before it commits. A script without a pass
// ends with one. Lines that do not parse are ignored, so the fuzzer may
// mutate freely.
type script struct {
	steps      []step
	sqliteOnly bool // something only SQLite can store
}

type step struct {
	kind  string // "msg", "live", "pass", "fail"
	msg   histMsg
	frame core.Frame
}

type histMsg struct {
	id, session, task, turn, metadata string
	created, updated                  stamp
}

// stamp is a host timestamp as written: an instant, or text (SQLite).
type stamp struct {
	t    *time.Time
	text *string
}

func parseStamp(s string) (stamp, bool) {
	if text, ok := strings.CutPrefix(s, "text:"); ok {
		return stamp{text: &text}, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 1 || t.Year() > 9999 {
		return stamp{}, false
	}
	t = t.UTC()
	return stamp{t: &t}, true
}

// frameTime is when a script's first line's frame is observed; each
// later line is a second later.
var frameTime = time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)

func parseScript(text string) script {
	var sc script
	ids := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		f := strings.SplitN(line, "|", 8)
		switch {
		case len(f) == 8 && f[0] == "msg":
			c, ok1 := parseStamp(f[5])
			u, ok2 := parseStamp(f[6])
			if !ok1 || !ok2 || f[1] == "" || f[2] == "" || ids[f[1]] {
				continue // the host's message ids are its primary key
			}
			ids[f[1]] = true
			m := histMsg{id: f[1], session: f[2], task: f[3], turn: f[4], created: c, updated: u, metadata: f[7]}
			sc.steps = append(sc.steps, step{kind: "msg", msg: m})
			for _, s := range []string{m.id, m.session, m.task, m.turn, m.metadata} {
				sc.sqliteOnly = sc.sqliteOnly || !utf8.ValidString(s) || strings.ContainsRune(s, 0)
			}
			for _, st := range []stamp{c, u} {
				sc.sqliteOnly = sc.sqliteOnly || st.text != nil || !st.t.Equal(st.t.Truncate(time.Microsecond))
			}
		case (len(f) == 4 || len(f) == 8) && f[0] == "live" && f[1] != "" && f[2] != "" && !strings.HasPrefix(f[1], "gone"):
			fr := core.Frame{TaskSessionID: f[1], TaskID: "task-" + f[1], ToolCallID: f[2], ExecutionID: f[3],
				ObservedAt: frameTime.Add(time.Duration(i) * time.Second), Payload: &core.Payload{Model: "live"}}
			if len(f) == 8 {
				tokens, _ := strconv.ParseInt(f[6], 10, 64)
				fr.ToolStatus, fr.Payload.Model, fr.Payload.TotalTokens, fr.TurnID = f[4], f[5], tokens, f[7]
			}
			if row, _ := core.Normalize(fr); storekit.Validate(&row) == nil && storekit.CheckIdentifier("task-"+f[1]) == nil {
				sc.steps = append(sc.steps, step{kind: "live", frame: fr}) // a row the live path could store
			}
		case line == "pass" || line == "fail":
			sc.steps = append(sc.steps, step{kind: line})
		}
	}
	if !slices.ContainsFunc(sc.steps, func(s step) bool { return s.kind == "pass" }) {
		sc.steps = append(sc.steps, step{kind: "pass"})
	}
	return sc
}

// sessions are the host sessions a script's lines name (but "gone…").
func (sc script) sessions() []string {
	var out []string
	for _, s := range sc.steps {
		id := s.msg.session + s.frame.TaskSessionID
		if id != "" && !strings.HasPrefix(id, "gone") && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// message is a script's message as the pass reads it (history.Message).
func (m histMsg) message() history.Message {
	str := func(s string) *string { return &s }
	read := func(st stamp) *time.Time {
		if st.text != nil {
			if t, ok := history.ParseHostTime(*st.text); ok {
				return &t
			}
			return nil
		}
		if !history.ReadableInstant(*st.t) {
			return nil
		}
		return st.t
	}
	return history.Message{ID: str(m.id), TaskSessionID: str(m.session), TaskID: str(m.task), TurnID: str(m.turn),
		Metadata: str(m.metadata), CreatedAt: read(m.created), UpdatedAt: read(m.updated)}
}

// model is the Go reference of a store and its host: storekit.Merge and the
// seam's absorption (storekit.Absorbs) for live frames, history.Pass for the
// pass, which acts once, like the migration pass (it is skipped once
// activated).
type model struct {
	rows      map[core.RowKey]core.Subagent
	sessions  map[string]bool
	msgs      []history.Message
	activated bool
	through   string
}

func newModel(sessions []string) *model {
	m := &model{rows: map[core.RowKey]core.Subagent{}, sessions: map[string]bool{}}
	for _, s := range sessions {
		m.sessions[s] = true
	}
	return m
}

// upsert is one live frame's write.
func (m *model) upsert(f core.Frame) {
	row, _ := core.Normalize(f)
	row.ID = uuid.NewString() // never a message's id, as the store's UUIDs (kept only when inserted)
	storekit.Write(m.rows, row)
}

func (m *model) pass() {
	if m.activated {
		return
	}
	stored := make([]core.Subagent, 0, len(m.rows))
	for _, r := range m.rows {
		stored = append(stored, r)
	}
	after, res := history.Pass(m.msgs, m.sessions, stored)
	m.rows = map[core.RowKey]core.Subagent{}
	for _, r := range after {
		m.rows[r.Key()] = r
	}
	m.activated, m.through = true, storekit.BackfillNothing
	if res.Through != nil {
		m.through = res.Through.UTC().Format(time.RFC3339Nano)
	}
}

// reference runs a script on the model.
func (sc script) reference() *model {
	m := newModel(sc.sessions())
	for _, s := range sc.steps {
		switch s.kind {
		case "msg":
			m.msgs = append(m.msgs, s.msg.message())
		case "live":
			m.upsert(s.frame)
		case "pass":
			m.pass()
		}
	}
	return m
}

// host prepares an environment for a script: its sessions, and a messages
// table without the foreign key to sessions (a message of a missing
// session must be storable).
func (sc script) host(t *testing.T, e *sqltest.Env) {
	t.Helper()
	for _, s := range sc.sessions() {
		e.Session(t, s)
	}
	e.Exec(t, `ALTER TABLE task_session_messages RENAME TO task_session_messages_fk`)
	e.Exec(t, `CREATE TABLE task_session_messages AS SELECT * FROM task_session_messages_fk WHERE 1 = 0`)
	if e.Name == "citus" { // sharded with the sessions, as a host on Citus has it
		e.Exec(t, `SELECT create_distributed_table('task_session_messages', 'task_session_id', colocate_with =>
				'task_sessions')`)
	}
}

func insertMessage(t *testing.T, e *sqltest.Env, m histMsg) {
	t.Helper()
	value := func(st stamp) any {
		if st.text != nil {
			return *st.text
		}
		return *st.t
	}
	e.Exec(t, `INSERT INTO task_session_messages
			(id, task_session_id, task_id, turn_id, author_type, content, type, metadata, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'agent', '', 'tool_call', ?, ?, ?)`,
		m.id, m.session, m.task, m.turn, m.metadata, value(m.created), value(m.updated))
}

// failBeforeCommit fails the backfill just before it commits.
func failBeforeCommit(stage string) error {
	if stage == "wrote "+storekit.CaptureSinceKey {
		return errors.New("injected before the commit")
	}
	return nil
}

// apply runs a script on an environment, step by step.
func (sc script) apply(t *testing.T, e *sqltest.Env) {
	t.Helper()
	ctx := context.Background()
	sc.host(t, e)
	quiet := migration.WithLogger(testlog.Discard)
	for _, s := range sc.steps {
		switch s.kind {
		case "msg":
			insertMessage(t, e, s.msg)
		case "live":
			row, _ := core.Normalize(s.frame)
			if err := e.Store.Upsert(ctx, row); err != nil {
				t.Fatal(err)
			}
		case "pass":
			if r := migration.New(e.Store, quiet).Run(ctx); r.Failed() {
				t.Fatalf("%s: the pass failed:\n%s", e.Name, r)
			}
		case "fail":
			r := migration.New(e.Store, quiet, migration.WithHook(failBeforeCommit)).Run(ctx)
			if st := r.Step(migration.StepBackfill); st.Status != migration.Failed && st.Status != migration.Skipped {
				t.Fatalf("%s: the failing pass: %s", e.Name, r)
			}
		}
	}
}

// compare checks the store against the model: the same rows, column by
// column (but the id and updated_at, the store's own), the same
// backfill_through, and the same statistics (counts, fan-out, sums).
func (m *model) compare(t *testing.T, e *sqltest.Env) {
	t.Helper()
	ctx := context.Background()
	var want []core.Subagent
	for _, r := range m.rows {
		want = append(want, r)
	}
	var got []core.Subagent
	for s := range m.sessions {
		rows, err := e.Store.ListBySession(ctx, s, core.Page{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rows...)
	}
	sortRows(want)
	sortRows(got)
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, the reference %d:%s\nreference:%s", e.Name, len(got), len(want), keys(got), keys(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i].Key() != want[i].Key() {
			t.Errorf("%s: row %d is %+v, the reference's %+v", e.Name, i, got[i].Key(), want[i].Key())
		} else if diff := storetest.Diff(want[i], got[i]); len(diff) > 0 {
			t.Errorf("%s: row %+v differs from the reference: %v", e.Name, got[i].Key(), diff)
		}
	}
	if m.activated {
		if k := e.Keys(t)[storekit.BackfillThroughKey]; k != m.through {
			t.Errorf("%s: backfill_through %q, the reference %q", e.Name, k, m.through)
		}
	}
	ref := memory.New()
	slices.SortFunc(want, func(a, b core.Subagent) int { // a backfilled row after its pair's others: nothing to absorb
		return strings.Compare(
			strconv.FormatBool(a.AgentExecutionID == core.UnknownExecution),
			strconv.FormatBool(b.AgentExecutionID == core.UnknownExecution),
		)
	})
	for _, r := range want {
		if err := ref.Upsert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	gs, err := e.Store.Stats(ctx, report.StatsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := ref.Stats(ctx, report.StatsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := statsOf(gs), statsOf(ws); g != w {
		t.Errorf("%s: statistics\n%s\nthe reference's\n%s", e.Name, g, w)
	}
}

// statsOf renders what statistics derive from the rows alone.
func statsOf(s report.Stats) string {
	var b strings.Builder
	fmt.Fprintf(
		&b, "subagents %d (live %d, backfill %d), without turn %d, unknown execution %d, fan-out %v", s.Subagents, s.Live,
		s.Backfill, s.RowsWithoutTurn, s.UnknownExecutionRows, s.FanOutPerTurn,
	)
	for _, m := range storekit.StatsMetrics(&s) {
		for _, part := range []report.Metric{m.Stats.All, m.Stats.Live, m.Stats.Backfill} {
			fmt.Fprintf(&b, "; %s %d/%d sum %v", m.Column, part.Reported, part.Unreported, part.Sum)
		}
	}
	return b.String()
}

func sortRows(rows []core.Subagent) {
	slices.SortFunc(rows, func(a, b core.Subagent) int {
		ka, kb := a.Key(), b.Key()
		return strings.Compare(
			ka.TaskSessionID+"\x00"+ka.ToolCallID+"\x00"+ka.AgentExecutionID,
			kb.TaskSessionID+"\x00"+kb.ToolCallID+"\x00"+kb.AgentExecutionID,
		)
	})
}

func keys(rows []core.Subagent) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "\n  %s/%s/%s", r.TaskSessionID, r.AgentExecutionID, r.ToolCallID)
	}
	return b.String()
}

// drivers are the SQL dialects the differential tests compare, each
// against the reference.
func drivers() []*sqltest.Driver {
	d := []*sqltest.Driver{testenv.SQLite()}
	if pgtest.Available() || pgtest.Required() {
		d = append(d, testenv.Postgres(), testenv.PostgresICU(), testenv.PostgresPartitioned())
	}
	if pgtest.CitusAvailable() {
		d = append(d, testenv.Citus())
	}
	return d
}

// FuzzBackfill: for any history of host messages, live frames and
// migration passes (failed ones included), in any order, the Go reference
// (history.Pass, storekit.Merge and the seam's absorption, docs/CONTRACT.md
// §4.1, §8.5) and every SQL dialect end with exactly the same rows, the
// same backfill_through and the same statistics. Its seed corpus holds
// every odd case the contract names and runs in every go test.
func FuzzBackfill(f *testing.F) {
	for _, seed := range seeds {
		f.Add(seed)
	}
	ds := drivers()
	f.Fuzz(func(t *testing.T, text string) {
		sc := parseScript(text)
		if len(sc.steps) > 60 {
			return
		}
		ref := sc.reference()
		for _, d := range ds {
			if sc.sqliteOnly && !d.Dialect.HostTimeText() {
				continue
			}
			e := d.Env(t)
			sc.apply(t, e)
			ref.compare(t, e)
		}
	})
}

// meta builds a subagent message's metadata around a payload's JSON text.
func meta(tool, status, task string) string {
	return `{"tool_call_id":"` + tool + `","status":"` + status + `",` +
		`"normalized":{"kind":"subagent_task","subagent_task":` + task + `}}`
}

// lines joins a script's lines.
func lines(l ...string) string { return strings.Join(l, "\n") }

// msgLine is a script's line for one host message.
func msgLine(id, sess, task, turn, created, updated, metadata string) string {
	return strings.Join([]string{"msg", id, sess, task, turn, created, updated, metadata}, "|")
}

// msgS is a message of session "s" in its turn-1 at the given times.
func msgS(id, created, updated, metadata string) string {
	return msgLine(id, "s", "task-s", "turn-1", created, updated, metadata)
}

var seeds = []string{
	// Realistic history: every provider's shape, a duplicate, malformed text.
	lines(
		msgLine("m1", "s1", "task-s1", "turn-1", "2026-08-12T09:00:00.123456Z", "2026-08-12T09:00:30Z",
			kandevtest.Subagent("toolu_1", "completed", &kandevtest.ClaudeCompleted).JSON()),
		msgLine("m2", "s1", "task-s1", "turn-1", "2026-08-12T09:00:01Z", "2026-08-12T09:00:31Z",
			kandevtest.Subagent("toolu_2", "complete", &kandevtest.ClaudeAsyncLaunch).JSON()),
		msgLine("m3", "s1", "task-s1", "", "2026-08-12T09:00:02Z", "2026-08-12T09:00:32Z",
			kandevtest.Subagent("toolu_2", "in_progress", &kandevtest.OpenCodeTask).JSON()),
		msgLine("m4", "s2", "task-s2", "turn-2", "2026-08-12T09:00:03Z", "2026-08-12T09:00:33Z",
			`{"normalized": {"kind": "subagent_task"`),
		msgLine("m5", "gone-1", "task-g", "turn-3", "2026-08-12T09:00:04Z", "2026-08-12T09:00:34Z",
			meta("tc-gone", "completed", `{}`)),
	),
	// One message keeps PostgreSQL from activating: an identifier of a few
	// thousand characters; and three ids within 1 KiB that together exceed
	// one B-tree entry.
	lines(
		msgS("m1", "2026-08-12T09:00:00Z", "2026-08-12T09:00:00Z", meta(strings.Repeat("x", 3000), "completed", `{}`)),
		msgLine(strings.Repeat("i", 1000), strings.Repeat("s", 1000), "task", "turn", "2026-08-12T09:00:01Z",
			"2026-08-12T09:00:01Z", meta(strings.Repeat("t", 1000), "completed", `{}`)),
		msgS("m3", "2026-08-12T09:00:02Z", "2026-08-12T09:00:02Z", meta("ok", "completed", `{"model":"m"}`)),
	),
	// An invocation recorded live (under an execution id, or none) gets no
	// second row: history merges into it.
	lines(
		"live|s|tc-live|exec-1",
		"live|s|tc-unknown|",
		msgS("m1", "2026-08-12T09:00:00Z", "2026-08-12T09:00:00Z", meta("tc-live", "completed", `{"total_tokens":5}`)),
		msgS("m2", "2026-08-12T09:00:01Z", "2026-08-12T09:00:01Z", meta("tc-unknown", "completed", `{}`)),
		msgS("m3", "2026-08-12T09:00:02Z", "2026-08-12T09:00:02Z", meta("tc-new", "completed", `{}`)),
	),
	// The deploy (docs/CONTRACT.md §8.5): subagents in flight when the pass
	// runs, their later frames live under the execution id; one row each.
	lines(
		msgS("m1", "2026-08-12T08:59:00Z", "2026-08-12T08:59:10Z",
			meta("inflight", "in_progress", `{"subagent_type":"explorer","description":"d"}`)),
		msgS("m2", "2026-08-12T08:59:01Z", "2026-08-12T08:59:11Z",
			meta("async", "completed", `{"status":"async_launched","is_async":true}`)),
		"pass",
		"live|s|inflight|exec-1|completed|claude|1200|turn-2",
		"live|s|async|exec-1|completed||900|",
		"live|s|inflight|exec-1|failed|later|5|turn-3",
	),
	// Frames before the pass, during a failed one and after: the pair is
	// one invocation whatever came first; the frame of another execution
	// reusing a tool call id after history was absorbed keeps a row apart.
	lines(
		"live|s|a|exec-1|in_progress|m||turn-9",
		msgS("m1", "2026-08-12T08:59:00Z", "2026-08-12T08:59:10Z",
			meta("a", "completed", `{"total_tokens":7,"model":"hist"}`)),
		msgS("m2", "2026-08-12T08:59:02Z", "2026-08-12T08:59:12Z", meta("b", "pending", `{"agent_id":"x"}`)),
		"fail",
		"live|s|b||in_progress|||",
		"live|s|b|exec-2|completed|||",
		"pass",
		"live|s|b|exec-3|completed|other|3|",
		"live|s|a|exec-1|failed|||",
	),
	// Duplicated keys: the last occurrence counts, for the kind, the tool
	// call id and the metrics, at every level.
	lines(
		msgS("m1", "2026-08-12T09:00:00Z", "2026-08-12T09:00:00Z", `{"tool_call_id":"first","tool_call_id":"last",`+
			`"normalized":{"kind":"message","kind":"subagent_task",`+
			`"subagent_task":{"total_tokens":1,"total_tokens":2,"model":"a"},"subagent_task":{"duration_ms":7}}}`),
		msgS("m2", "2026-08-12T09:00:01Z", "2026-08-12T09:00:01Z",
			`{"tool_call_id":"k","normalized":{"kind":"subagent_task","kind":"message"}}`),
	),
	// Escapes read as what they are: an escaped backslash before u0000 is
	// text; a real \u0000 or a lone surrogate makes the document {}; the
	// kind spelled with escapes counts.
	lines(
		msgS("m1", "2026-08-12T09:00:00Z", "2026-08-12T09:00:00Z",
			`{"tool_call_id":"bs","normalized":{"kind":"subagent_task","subagent_task":{"description":"a\\u0000b"}}}`),
		msgS("m2", "2026-08-12T09:00:01Z", "2026-08-12T09:00:01Z",
			`{"tool_call_id":"nul","normalized":{"kind":"subagent_task","subagent_task":{"description":"a\u0000b"}}}`),
		msgS("m3", "2026-08-12T09:00:02Z", "2026-08-12T09:00:02Z",
			`{"tool_call_id":"sur","normalized":{"kind":"subagent_task","subagent_task":{"model":"\ud800"}}}`),
		msgS("m4", "2026-08-12T09:00:03Z", "2026-08-12T09:00:03Z", `{"tool_call_id":"pair",`+
			`"normalized":{"kind":"subagent\u005ftask","subagent_task":{"model":"\ud83d\ude00 \u00e9"}}}`),
	),
	// Metrics as large reals, exponents, fractions, beyond 64 bits.
	lines(
		msgS("m1", "2026-08-12T09:00:00Z", "2026-08-12T09:00:00Z",
			`{"tool_call_id":"r1","normalized":{"kind":"subagent_task","subagent_task":`+
				`{"total_tokens":9223372036854775807.0,"duration_ms":9.2233720368547758e18,`+
				`"tool_use_count":1e-5,"is_async":10e-1}}}`),
		msgS("m2", "2026-08-12T09:00:01Z", "2026-08-12T09:00:01Z",
			`{"tool_call_id":"r2","normalized":{"kind":"subagent_task","subagent_task":`+
				`{"total_tokens":4503599627370496.5,"duration_ms":1.0000000000000000001,"tool_use_count":-0.0}}}`),
		msgS("m3", "2026-08-12T09:00:02Z", "2026-08-12T09:00:02Z",
			`{"tool_call_id":"r3","normalized":{"kind":"subagent_task","subagent_task":`+
				`{"total_tokens":1e400,"duration_ms":0.5e1}},"x":1e-16384}`),
	),
	// Newest wins on the full precision; equal times break on the greatest
	// id in byte order ("a" > "B" in bytes; a linguistic collation disagrees).
	lines(
		msgS("B", "2026-08-12T09:00:00Z", "2026-08-12T09:00:00Z", meta("tie", "failed", `{"model":"B"}`)),
		msgS("a", "2026-08-12T09:00:00Z", "2026-08-12T09:00:00Z", meta("tie", "completed", `{"model":"a"}`)),
		msgS("é", "2026-08-12T09:00:00.000001Z", "2026-08-12T09:00:00Z", meta("tie2", "completed", `{"model":"é"}`)),
		msgS("z", "2026-08-12T09:00:00.000001Z", "2026-08-12T09:00:00Z", meta("tie2", "completed", `{"model":"z"}`)),
	),
	// SQLite keeps host timestamps as text: offsets, nanoseconds (newest
	// wins on them), an unparsable one, invalid UTF-8 in the metadata.
	lines(
		msgS("m1", "text:2026-08-12 09:00:00.000001100+00:00", "text:2026-08-12 09:00:01",
			meta("ns", "pending", `{"model":"earlier"}`)),
		msgS("m2", "text:2026-08-12T11:00:00.000001999+02:00", "text:2026-08-12T09:00:02Z",
			meta("ns", "completed", `{"model":"later"}`)),
		msgS("m3", "text:yesterday", "text:2026-08-12 09:00", meta("bad-time", "completed", `{}`)),
		msgS("m4", "text:2026-08-12 09:00:03", "text:garbage", meta("unsettled", "completed", "{\"model\":\"x\xff\"}")),
		msgS("m5", "2026-08-12T09:00:04.0000005Z", "2026-08-12T09:00:04Z", meta("sub-micro", "completed", `{}`)),
	),
}

// randomSeam is a random history of sessions and their subagents: host
// messages (some pairs in flight, some done, some reported twice) and live
// frames for some of the pairs, each pair's frames under one execution id
// (or none), in an order that interleaves the pairs.
func randomSeam(rng *rand.Rand) (msgs []histMsg, frames []core.Frame) {
	statuses := []string{"pending", "in_progress", "completed", "failed"}
	for s := range 4 {
		sess := fmt.Sprintf("s%d", s)
		for p := range 25 {
			tool := fmt.Sprintf("tc-%d-%d", s, p)
			for n := range rng.IntN(3) { // 0, 1 or 2 messages
				created := frameTime.Add(-time.Hour + time.Duration(rng.IntN(3000))*time.Second)
				updated := created.Add(time.Duration(rng.IntN(60)) * time.Second)
				task := fmt.Sprintf(
					`{"subagent_type":"t%d","total_tokens":%d,"model":"hist-%d","is_async":%v}`, rng.IntN(3), rng.IntN(3)*100, n,
					rng.IntN(4) == 0,
				)
				msgs = append(
					msgs,
					histMsg{
						id:       fmt.Sprintf("m-%s-%d", tool, n),
						session:  sess,
						task:     "task-" + sess,
						turn:     fmt.Sprintf("turn-%d", rng.IntN(3)),
						metadata: meta(tool, statuses[rng.IntN(len(statuses))], task),
						created:  stamp{t: &created},
						updated:  stamp{t: &updated},
					},
				)
			}
			if rng.IntN(10) < 6 {
				exec := []string{"exec-1", "exec-2", ""}[rng.IntN(3)]
				for i := range 1 + rng.IntN(4) {
					frames = append(
						frames,
						core.Frame{TaskSessionID: sess, TaskID: "task-" + sess, ExecutionID: exec, ToolCallID: tool,
							TurnID: []string{"", "turn-live"}[rng.IntN(2)], ToolStatus: statuses[min(i+rng.IntN(2), len(statuses)-1)],
							Payload: &core.Payload{
								Model:       []string{"", "live"}[rng.IntN(2)],
								TotalTokens: int64(rng.IntN(3)) * 7,
								AgentID:     fmt.Sprint("a", i),
							}},
					)
				}
			}
		}
	}
	// Interleave the pairs, each pair's frames kept in order.
	rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
	byKey := map[string][]int{}
	for i, f := range frames {
		byKey[f.TaskSessionID+f.ToolCallID] = append(byKey[f.TaskSessionID+f.ToolCallID], i)
	}
	ordered := make([]core.Frame, len(frames))
	copy(ordered, frames)
	for _, idx := range byKey {
		sorted := slices.Clone(idx)
		slices.SortFunc(sorted, func(a, b int) int {
			return strings.Compare(
				frames[a].ToolStatus+frames[a].Payload.AgentID,
				frames[b].ToolStatus+frames[b].Payload.AgentID,
			)
		})
		for n, i := range idx {
			ordered[i] = frames[sorted[n]]
		}
	}
	for i := range ordered {
		ordered[i].ObservedAt = frameTime.Add(time.Duration(i) * time.Second)
	}
	return msgs, ordered
}

// TestSeamConcurrent: live frames written by a Recorder while migration
// passes run concurrently — one failing, then one that completes — on
// every SQL dialect. Each pair's frames have one key, so the order in
// which the pass meets them does not change the outcome (docs/CONTRACT.md
// §8.5; checked here on the reference itself, frames before and after the
// pass): the rows, backfill_through and statistics equal the reference's,
// whatever the interleaving.
func TestSeamConcurrent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, d := range drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			for round := range 3 {
				rng := rand.New(rand.NewPCG(seed, uint64(round)))
				msgs, frames := randomSeam(rng)
				var sc, after script
				for _, m := range msgs {
					sc.steps = append(sc.steps, step{kind: "msg", msg: m})
				}
				after.steps = append(slices.Clone(sc.steps), step{kind: "pass"})
				for _, f := range frames {
					sc.steps = append(sc.steps, step{kind: "live", frame: f})
					after.steps = append(after.steps, step{kind: "live", frame: f})
				}
				sc.steps = append(sc.steps, step{kind: "pass"})
				ref := sc.reference()
				if other := after.reference(); !reflect.DeepEqual(rowsOf(ref), rowsOf(other)) {
					t.Fatalf(
						"round %d: the reference depends on the order: frames first %v, the pass first %v", round, rowsOf(ref),
						rowsOf(other),
					)
				}
				e := d.Env(t)
				sc.host(t, e)
				for _, m := range msgs {
					insertMessage(t, e, m)
				}
				rec, err := core.NewRecorder(
					e.Store, core.WithWriters(4), core.WithBatch(8), core.WithLogger(testlog.Discard),
				)
				if err != nil {
					t.Fatal(err)
				}
				passes := make(chan migration.Report, 2)
				var during atomic.Int64 // frames written when the pass completed
				start := rng.IntN(len(frames)/2 + 1)
				for i, f := range frames {
					if i == start { // the passes begin while frames are being written, and go on meanwhile
						go func() {
							quiet := migration.WithLogger(testlog.Discard)
							passes <- migration.New(e.Store, quiet, migration.WithHook(failBeforeCommit)).Run(context.Background())
							r := migration.New(e.Store, quiet).Run(context.Background())
							during.Store(rec.Counters().Values().Persisted)
							passes <- r
						}()
					}
					rec.Record(context.Background(), f)
					if i%2 == 0 {
						time.Sleep(time.Duration(rng.IntN(5000)) * time.Microsecond)
					}
				}
				for range 2 {
					select {
					case r := <-passes:
						if st := r.Step(migration.StepBackfill); st.Status == migration.Ran ||
							st.Status == migration.Failed && strings.Contains(st.Detail, "injected") {
							continue
						}
						t.Fatalf("round %d: a pass: %s", round, r)
					case <-time.After(time.Minute):
						t.Fatal("the passes did not end within a minute")
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err = rec.Close(ctx)
				cancel()
				if v := rec.Counters().Values(); err != nil || v.Failed != 0 || v.Persisted != int64(len(frames)) {
					t.Fatalf("round %d: recorder: %v, counters %+v", round, err, v)
				}
				t.Logf(
					"round %d: %d messages, %d frames, %d written before the pass completed", round, len(msgs), len(frames),
					during.Load(),
				)
				ref.compare(t, e)
			}
		})
	}
}

// rowsOf is a model's rows, comparable: every column but the id and
// updated_at.
func rowsOf(m *model) []string {
	var out []string
	for _, r := range m.rows {
		r.ID, r.UpdatedAt = "", time.Time{}
		out = append(out, fmt.Sprintf("%+v", r.Key())+strings.Join(columnsOf(r), " "))
	}
	slices.Sort(out)
	return out
}

func columnsOf(r core.Subagent) []string {
	var out []string
	for _, c := range storekit.Columns() {
		out = append(out, c.Name+"="+c.Format(&r))
	}
	return out
}
