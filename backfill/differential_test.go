package backfill_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/internal/pgtest"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// A history is a script, one line each:
//
//	msg|id|session|task|turn|created|updated|metadata
//	live|session|tool call id|execution id
//
// created and updated are RFC 3339 instants (stored as timestamps on every
// dialect) or, prefixed with "text:", text stored as it is (SQLite only,
// which keeps host timestamps as text). A session named "gone…" does not
// exist in the sessions table. A live line records a frame before the pass.
// Lines that do not parse are ignored, so the fuzzer may mutate freely.
type history struct {
	msgs      []histMsg
	live      []core.Frame
	sqlteOnly bool // something only SQLite can store
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

func parseHistory(script string) history {
	var h history
	for _, line := range strings.Split(script, "\n") {
		f := strings.SplitN(line, "|", 8)
		switch {
		case len(f) == 8 && f[0] == "msg":
			c, ok1 := parseStamp(f[5])
			u, ok2 := parseStamp(f[6])
			if !ok1 || !ok2 || f[1] == "" || f[2] == "" {
				continue
			}
			m := histMsg{id: f[1], session: f[2], task: f[3], turn: f[4], created: c, updated: u, metadata: f[7]}
			if slices.ContainsFunc(h.msgs, func(o histMsg) bool { return o.id == m.id }) {
				continue // the host's message ids are its primary key
			}
			h.msgs = append(h.msgs, m)
			for _, s := range []string{m.id, m.session, m.task, m.turn, m.metadata} {
				h.sqlteOnly = h.sqlteOnly || !utf8.ValidString(s) || strings.ContainsRune(s, 0)
			}
			for _, st := range []stamp{c, u} {
				h.sqlteOnly = h.sqlteOnly || st.text != nil || !st.t.Equal(st.t.Truncate(time.Microsecond))
			}
		case len(f) == 4 && f[0] == "live" && f[1] != "" && f[2] != "" && !strings.HasPrefix(f[1], "gone"):
			fr := core.Frame{TaskSessionID: f[1], TaskID: "task-" + f[1], ToolCallID: f[2], ExecutionID: f[3],
				ObservedAt: time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC), Payload: &core.Payload{Model: "live"}}
			if row, _ := core.Normalize(fr); row.Validate() == nil && core.CheckIdentifier("task-"+f[1]) == nil {
				h.live = append(h.live, fr) // a row the live path could store
			}
		}
	}
	return h
}

// reference is what the pass must produce, from backfill.Pass.
func (h history) reference() ([]core.Subagent, string) {
	var msgs []backfill.Message
	sessions := map[string]bool{}
	str := func(s string) *string { return &s }
	read := func(st stamp) *time.Time {
		if st.text != nil {
			if t, ok := backfill.ParseHostTime(*st.text); ok {
				return &t
			}
			return nil
		}
		if !backfill.ReadableInstant(*st.t) {
			return nil
		}
		return st.t
	}
	for _, m := range h.msgs {
		if !strings.HasPrefix(m.session, "gone") {
			sessions[m.session] = true
		}
		msgs = append(msgs, backfill.Message{ID: str(m.id), TaskSessionID: str(m.session), TaskID: str(m.task), TurnID: str(m.turn),
			Metadata: str(m.metadata), CreatedAt: read(m.created), UpdatedAt: read(m.updated)})
	}
	var stored []core.Subagent
	for _, f := range h.live {
		row, _ := core.Normalize(f)
		stored = append(stored, row)
	}
	rows, through := backfill.Pass(msgs, sessions, stored)
	key := core.BackfillNothing
	if through != nil {
		key = through.UTC().Format(time.RFC3339Nano)
	}
	return rows, key
}

// apply writes the history into an environment and runs a pass.
func (h history) apply(t *testing.T, e *sqltest.Env) backfill.Report {
	t.Helper()
	ctx := context.Background()
	for _, m := range h.msgs {
		if !strings.HasPrefix(m.session, "gone") {
			e.Session(t, m.session)
		}
	}
	for _, f := range h.live {
		e.Session(t, f.TaskSessionID)
		row, _ := core.Normalize(f)
		if err := e.Store.Upsert(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	value := func(st stamp) any {
		if st.text != nil {
			return *st.text
		}
		return *st.t
	}
	// Messages of a missing session need the host's foreign key off.
	e.Exec(t, `ALTER TABLE task_session_messages RENAME TO task_session_messages_fk`)
	e.Exec(t, `CREATE TABLE task_session_messages AS SELECT * FROM task_session_messages_fk WHERE 1 = 0`)
	if e.Name == "citus" { // sharded with the sessions, as a host on Citus has it
		e.Exec(t, `SELECT create_distributed_table('task_session_messages', 'task_session_id', colocate_with => 'task_sessions')`)
	}
	for _, m := range h.msgs {
		e.Exec(t, `INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, author_type, content, type, metadata, created_at, updated_at)
			VALUES (?, ?, ?, ?, 'agent', '', 'tool_call', ?, ?, ?)`, m.id, m.session, m.task, m.turn, m.metadata, value(m.created), value(m.updated))
	}
	return backfill.New(e.Store, backfill.WithLogger(slog.New(slog.DiscardHandler))).Run(ctx)
}

// FuzzBackfill: for any history, the Go reference (backfill.Pass over
// backfill.Recover), SQLite, PostgreSQL, PostgreSQL with an ICU
// collation and a Citus cluster (when provided) insert exactly the same rows and write the same
// backfill_through (docs/CONTRACT.md §4.1, §4.2). Its seed corpus holds
// every odd case the contract names and runs in every go test.
func FuzzBackfill(f *testing.F) {
	for _, seed := range seeds {
		f.Add(seed)
	}
	drivers := []*sqltest.Driver{testenv.SQLite()}
	if pgtest.Available() || pgtest.Required() {
		drivers = append(drivers, testenv.Postgres(), testenv.PostgresICU())
	}
	if pgtest.CitusAvailable() {
		drivers = append(drivers, testenv.Citus())
	}
	f.Fuzz(func(t *testing.T, script string) {
		h := parseHistory(script)
		if len(h.msgs) == 0 || len(h.msgs) > 40 {
			return
		}
		want, through := h.reference()
		for _, d := range drivers {
			if h.sqlteOnly && !d.Features.HostTimeText {
				continue
			}
			e := d.Env(t)
			r := h.apply(t, e)
			if r.Failed() {
				t.Fatalf("%s: the pass failed:\n%s", d.Name, r)
			}
			if got := e.Keys(t)[core.BackfillThroughKey]; got != through {
				t.Errorf("%s: backfill_through %q, reference %q", d.Name, got, through)
			}
			if n := r.Step(backfill.StepBackfill).RowsInserted; n != int64(len(want)) {
				t.Errorf("%s: %d rows inserted, reference %d", d.Name, n, len(want))
			}
			for _, w := range want {
				rows, err := e.Store.ListBySession(context.Background(), w.TaskSessionID, core.Page{})
				if err != nil {
					t.Fatal(err)
				}
				var got *core.Subagent
				for i := range rows {
					if rows[i].Key() == w.Key() {
						got = &rows[i]
					}
				}
				if got == nil {
					t.Errorf("%s: no row for %+v; reference %+v", d.Name, w.Key(), w)
					continue
				}
				if diff := storetest.Diff(w, *got); len(diff) > 0 || got.ID != w.ID {
					t.Errorf("%s: row %+v differs from the reference (id %q, want %q): %v", d.Name, w.Key(), got.ID, w.ID, diff)
				}
			}
		}
	})
}

// meta builds a subagent message's metadata around a payload's JSON text.
func meta(tool, status, task string) string {
	return `{"tool_call_id":"` + tool + `","status":"` + status + `","normalized":{"kind":"subagent_task","subagent_task":` + task + `}}`
}

var seeds = []string{
	// Realistic history: every provider's shape, a duplicate, malformed text.
	"msg|m1|s1|task-s1|turn-1|2026-08-12T09:00:00.123456Z|2026-08-12T09:00:30Z|" + kandevtest.Subagent("toolu_1", "completed", &kandevtest.ClaudeCompleted).JSON() + "\n" +
		"msg|m2|s1|task-s1|turn-1|2026-08-12T09:00:01Z|2026-08-12T09:00:31Z|" + kandevtest.Subagent("toolu_2", "complete", &kandevtest.ClaudeAsyncLaunch).JSON() + "\n" +
		"msg|m3|s1|task-s1||2026-08-12T09:00:02Z|2026-08-12T09:00:32Z|" + kandevtest.Subagent("toolu_2", "in_progress", &kandevtest.OpenCodeTask).JSON() + "\n" +
		"msg|m4|s2|task-s2|turn-2|2026-08-12T09:00:03Z|2026-08-12T09:00:33Z|{\"normalized\": {\"kind\": \"subagent_task\"\n" +
		"msg|m5|gone-1|task-g|turn-3|2026-08-12T09:00:04Z|2026-08-12T09:00:34Z|" + meta("tc-gone", "completed", `{}`),
	// One message keeps PostgreSQL from activating: an identifier of a few
	// thousand characters; and three ids within 1 KiB that together exceed
	// one B-tree entry.
	"msg|m1|s|task-s|turn-1|2026-08-12T09:00:00Z|2026-08-12T09:00:00Z|" + meta(strings.Repeat("x", 3000), "completed", `{}`) + "\n" +
		"msg|" + strings.Repeat("i", 1000) + "|" + strings.Repeat("s", 1000) + "|task|turn|2026-08-12T09:00:01Z|2026-08-12T09:00:01Z|" + meta(strings.Repeat("t", 1000), "completed", `{}`) + "\n" +
		"msg|m3|s|task-s|turn-1|2026-08-12T09:00:02Z|2026-08-12T09:00:02Z|" + meta("ok", "completed", `{"model":"m"}`),
	// An invocation recorded live (under an execution id, or none) gets no
	// second row.
	"live|s|tc-live|exec-1\nlive|s|tc-unknown|\n" +
		"msg|m1|s|task-s|turn-1|2026-08-12T09:00:00Z|2026-08-12T09:00:00Z|" + meta("tc-live", "completed", `{"total_tokens":5}`) + "\n" +
		"msg|m2|s|task-s|turn-1|2026-08-12T09:00:01Z|2026-08-12T09:00:01Z|" + meta("tc-unknown", "completed", `{}`) + "\n" +
		"msg|m3|s|task-s|turn-1|2026-08-12T09:00:02Z|2026-08-12T09:00:02Z|" + meta("tc-new", "completed", `{}`),
	// Duplicated keys: the last occurrence counts, for the kind, the tool
	// call id and the metrics, at every level.
	`msg|m1|s|task-s|turn-1|2026-08-12T09:00:00Z|2026-08-12T09:00:00Z|{"tool_call_id":"first","tool_call_id":"last","normalized":{"kind":"message","kind":"subagent_task","subagent_task":{"total_tokens":1,"total_tokens":2,"model":"a"},"subagent_task":{"duration_ms":7}}}` + "\n" +
		`msg|m2|s|task-s|turn-1|2026-08-12T09:00:01Z|2026-08-12T09:00:01Z|{"tool_call_id":"k","normalized":{"kind":"subagent_task","kind":"message"}}`,
	// Escapes read as what they are: an escaped backslash before u0000 is
	// text; a real \u0000 or a lone surrogate makes the document {}; the
	// kind spelled with escapes counts.
	`msg|m1|s|task-s|turn-1|2026-08-12T09:00:00Z|2026-08-12T09:00:00Z|{"tool_call_id":"bs","normalized":{"kind":"subagent_task","subagent_task":{"description":"a\\u0000b"}}}` + "\n" +
		`msg|m2|s|task-s|turn-1|2026-08-12T09:00:01Z|2026-08-12T09:00:01Z|{"tool_call_id":"nul","normalized":{"kind":"subagent_task","subagent_task":{"description":"a\u0000b"}}}` + "\n" +
		`msg|m3|s|task-s|turn-1|2026-08-12T09:00:02Z|2026-08-12T09:00:02Z|{"tool_call_id":"sur","normalized":{"kind":"subagent_task","subagent_task":{"model":"\ud800"}}}` + "\n" +
		`msg|m4|s|task-s|turn-1|2026-08-12T09:00:03Z|2026-08-12T09:00:03Z|{"tool_call_id":"pair","normalized":{"kind":"subagent\u005ftask","subagent_task":{"model":"\ud83d\ude00 \u00e9"}}}`,
	// Metrics as large reals, exponents, fractions, beyond 64 bits.
	`msg|m1|s|task-s|turn-1|2026-08-12T09:00:00Z|2026-08-12T09:00:00Z|{"tool_call_id":"r1","normalized":{"kind":"subagent_task","subagent_task":{"total_tokens":9223372036854775807.0,"duration_ms":9.2233720368547758e18,"tool_use_count":1e-5,"is_async":10e-1}}}` + "\n" +
		`msg|m2|s|task-s|turn-1|2026-08-12T09:00:01Z|2026-08-12T09:00:01Z|{"tool_call_id":"r2","normalized":{"kind":"subagent_task","subagent_task":{"total_tokens":4503599627370496.5,"duration_ms":1.0000000000000000001,"tool_use_count":-0.0}}}` + "\n" +
		`msg|m3|s|task-s|turn-1|2026-08-12T09:00:02Z|2026-08-12T09:00:02Z|{"tool_call_id":"r3","normalized":{"kind":"subagent_task","subagent_task":{"total_tokens":1e400,"duration_ms":0.5e1}},"x":1e-16384}`,
	// Newest wins on the full precision; equal times break on the greatest
	// id in byte order ("a" > "B" in bytes; a linguistic collation disagrees).
	"msg|B|s|task-s|turn-1|2026-08-12T09:00:00Z|2026-08-12T09:00:00Z|" + meta("tie", "failed", `{"model":"B"}`) + "\n" +
		"msg|a|s|task-s|turn-1|2026-08-12T09:00:00Z|2026-08-12T09:00:00Z|" + meta("tie", "completed", `{"model":"a"}`) + "\n" +
		"msg|é|s|task-s|turn-1|2026-08-12T09:00:00.000001Z|2026-08-12T09:00:00Z|" + meta("tie2", "completed", `{"model":"é"}`) + "\n" +
		"msg|z|s|task-s|turn-1|2026-08-12T09:00:00.000001Z|2026-08-12T09:00:00Z|" + meta("tie2", "completed", `{"model":"z"}`),
	// SQLite keeps host timestamps as text: offsets, nanoseconds (newest
	// wins on them), an unparsable one, invalid UTF-8 in the metadata.
	"msg|m1|s|task-s|turn-1|text:2026-08-12 09:00:00.000001100+00:00|text:2026-08-12 09:00:01|" + meta("ns", "pending", `{"model":"earlier"}`) + "\n" +
		"msg|m2|s|task-s|turn-1|text:2026-08-12T11:00:00.000001999+02:00|text:2026-08-12T09:00:02Z|" + meta("ns", "completed", `{"model":"later"}`) + "\n" +
		"msg|m3|s|task-s|turn-1|text:yesterday|text:2026-08-12 09:00|" + meta("bad-time", "completed", `{}`) + "\n" +
		"msg|m4|s|task-s|turn-1|text:2026-08-12 09:00:03|text:garbage|" + meta("unsettled", "completed", "{\"model\":\"x\xff\"}") + "\n" +
		"msg|m5|s|task-s|turn-1|2026-08-12T09:00:04.0000005Z|2026-08-12T09:00:04Z|" + meta("sub-micro", "completed", `{}`),
}
