package history_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/history"
	"github.com/subagentctx/subagentctx/internal/rowmaps"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
)

// FuzzRecover: for any metadata document, each dialect's view of one
// message (MessageView.SubagentMessages) reads exactly what
// history.Recover reads: whether it is a subagent message, whether it is recoverable, and
// every column of its row. One message at a time, so the fuzzer explores
// JSON itself quickly.
func FuzzRecover(f *testing.F) {
	for _, doc := range []string{
		`{"tool_call_id":"a","status":"completed","normalized":{"kind":"subagent_task","subagent_task":{"total_tokens":5,` +
			`"model":"m"}}}`,
		`{"tool_call_id":"a","tool_call_id":"b","normalized":{"kind":"subagent_task","kind":"x"}}`,
		`{"tool_call_id":"a","normalized":{"kind":"x","kind":"subagent_task","subagent_task":{"is_async":1.0,` +
			`"duration_ms":1e3}}}`,
		`{"tool_call_id":"\\u0000","normalized":{"kind":"subagent_task"}}`,
		`{"tool_call_id":"\u0000","normalized":{"kind":"subagent_task"}}`,
		`{"tool_call_id":"\ud800","normalized":{"kind":"subagent_task"}}`,
		`{"tool_call_id":"\ud83d\ude00","normalized":{"kind":"sub\u0061gent_task"}}`,
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task",` +
			`"subagent_task":{"total_tokens":9.9999999999999999999e18}}}`,
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task","subagent_task":{"tool_use_count":-0,` +
			`"total_tokens":12345678901234567890e-1}}}`,
		` {"tool_call_id":"x","normalized":{"kind":"subagent_task"}} `,
		"\t{\"tool_call_id\":\"x\",\"normalized\":{\"kind\":\"subagent_task\"}}\r\n",
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task"}}x`,
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task"},"n":01}`,
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task"},"a":[1,2,[3,{"b":null}]],"t":true,"f":false}`,
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task"},"deep":` +
			strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task"},"deep":` +
			strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}`,
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task"},"n":1e131072}`,
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task"},"n":0.0e-16383}`,
		`[{"normalized":{"kind":"subagent_task"}}]`, `null`, ``, `"subagent_task"`,
		// A NUL after the document: no JSON, though a C string would end
		// before it (SQLite's drivers hand a function's text over so).
		`{"tool_call_id":"x","normalized":{"kind":"subagent_task"}}` + "\x00",
		"{\"tool_call_id\":\"x\x00y\",\"normalized\":{\"kind\":\"subagent_task\"}}",
	} {
		f.Add(doc, "2026-08-12T09:00:00.123456Z")
	}
	f.Add(`{"tool_call_id":"x","status":"failed","normalized":{"kind":"subagent_task"}}`, "0001-01-01T00:00:00Z")
	f.Add(`{"tool_call_id":"x","status":"failed","normalized":{"kind":"subagent_task"}}`, "9999-12-31T23:59:59.999999Z")
	type probe struct {
		d *sqltest.Driver
		e *sqltest.Env
	}
	var probes []probe
	drivers := []*sqltest.Driver{testenv.SQLite()}
	if pgtest.Available() || pgtest.Required() {
		drivers = append(drivers, testenv.Postgres())
	}
	if pgtest.CitusAvailable() {
		drivers = append(drivers, testenv.Citus())
	}
	for _, d := range drivers {
		e := d.Env(f)
		e.Session(f, "s")
		probes = append(probes, probe{d, e})
	}
	f.Fuzz(func(t *testing.T, doc, created string) {
		at, err := time.Parse(time.RFC3339Nano, created)
		if err != nil || at.Year() < 1 || at.Year() > 9999 || !at.Equal(at.Truncate(time.Microsecond)) {
			at = time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC) // a time both dialects store exactly
		}
		at = at.UTC()
		id, sess, task, turn := "m", "s", "task-s", "turn"
		r := history.Recover(
			history.Message{ID: &id, TaskSessionID: &sess, TaskID: &task, TurnID: &turn, Metadata: &doc,
				CreatedAt: readable(at), UpdatedAt: readable(at)},
		)
		want := describe(r.Subagent, r.Recoverable, r.Row)
		for _, p := range probes {
			if !p.d.Dialect.HostTimeText() && (!utf8.ValidString(doc) || strings.ContainsRune(doc, 0)) {
				continue // PostgreSQL cannot store this text
			}
			p.e.Exec(t, `DELETE FROM task_session_messages`)
			p.e.Exec(
				t,
				`INSERT INTO task_session_messages
					(id, task_session_id, task_id, turn_id, content, metadata, created_at, updated_at)
				VALUES (?, ?, ?, ?, '', ?, ?, ?)`,
				id,
				sess,
				task,
				turn,
				doc,
				at,
				at,
			)
			whole := read(t, p.e, p.e.Dialect.SubagentMessages(p.e.Tables, ""))
			if got := describeView(whole); got != want {
				t.Errorf("%s reads %q created %s as\n%s\nthe reference as\n%s", p.d.Name, doc, created, got, want)
			}
			if got, want := keys(read(t, p.e, p.e.Dialect.SubagentKeys(p.e.Tables, ""))), keys(whole); got != want {
				t.Errorf("%s's keys view reads %q created %s as\n%s\nits whole view as\n%s", p.d.Name, doc, created, got,
					want)
			}
		}
	})
}

func readable(t time.Time) *time.Time {
	if !history.ReadableInstant(t) {
		return nil
	}
	return &t
}

// read reads the messages through a view of the dialect's (a
// MessageView's SELECT).
func read(t *testing.T, e *sqltest.Env, view string) []map[string]any {
	t.Helper()
	var out []map[string]any
	err := e.Dialect.WithConn(context.Background(), e.DB, func(db *gorm.DB) (err error) {
		out, err = rowmaps.Query(db, `SELECT * FROM (`+view+`) v`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// keys renders the views' rows, sqldialect.MessageKeyColumns of each.
func keys(rows []map[string]any) string {
	var b strings.Builder
	for _, r := range rows {
		for _, c := range sqldialect.MessageKeyColumns() {
			fmt.Fprintf(&b, "%s=%#v ", c, r[c])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// describeView describes the one message SubagentMessages read, each of
// sqldialect.MessageColumns decoded as its declared column's type.
func describeView(out []map[string]any) string {
	if len(out) == 0 {
		return describe(false, false, core.Subagent{})
	}
	v := out[0]
	text := func(name string) *string {
		switch x := v[name].(type) {
		case string:
			return &x
		case []byte:
			s := string(x)
			return &s
		}
		return nil
	}
	num := func(name string) *int64 {
		if x, ok := v[name].(int64); ok {
			return &x
		}
		return nil
	}
	row := core.Subagent{
		ID:            deref(text("message_id")),
		TaskSessionID: deref(text("task_session_id")),
		TaskID:        deref(text("task_id")),
		ToolCallID:    deref(text("tool_call_id")),
	}
	for _, c := range sqldialect.HistoryColumns() {
		switch c.Type {
		case storekit.Text:
			if p := text(c.Name); p != nil {
				c.Set(&row, *p)
			}
		case storekit.Int64:
			if p := num(c.Name); p != nil {
				c.Set(&row, *p)
			}
		case storekit.Bool:
			c.Set(&row, deref64(num(c.Name)) == 1)
		case storekit.Time:
			switch x := v[c.Name].(type) {
			case time.Time:
				c.Set(&row, x.UTC())
			case string:
				if tm, ok := history.ParseHostTime(x); ok {
					c.Set(&row, tm)
				}
			}
		}
	}
	return describe(true, deref64(num("recoverable")) == 1, row)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// describe renders what a reading decides, column by column.
func describe(subagent, recoverable bool, r core.Subagent) string {
	if !subagent {
		return "not a subagent message"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "recoverable=%v", recoverable)
	for _, c := range storekit.Columns() {
		switch c.Name {
		case "agent_execution_id", "source", "updated_at":
			continue // constants of the insert, not of the reading
		}
		fmt.Fprintf(&b, " %s=%s", c.Name, c.Format(&r))
	}
	return b.String()
}
