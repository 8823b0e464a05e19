package sqltest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// t0 has a microsecond part, so precision loss shows.
var t0 = time.Date(2026, 8, 12, 9, 0, 0, 123456000, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func ptr[T any](v T) *T { return &v }

func run(t *testing.T, e *Env, opts ...migration.Option) migration.Report {
	t.Helper()
	return migration.New(e.Store, append([]migration.Option{migration.WithLogger(testlog.Discard)},
		opts...)...).Run(context.Background())
}

func mustRun(t *testing.T, e *Env, opts ...migration.Option) migration.Report {
	t.Helper()
	r := run(t, e, opts...)
	if r.Failed() {
		t.Fatalf("pass failed:\n%s", r)
	}
	return r
}

// Keys returns the meta table's keys and values.
func (e *Env) Keys(t testing.TB) map[string]string {
	t.Helper()
	var kv []struct{ Key, Value string }
	if err := e.DB.Raw(`SELECT "key", value FROM ` + e.meta(t)).Scan(&kv).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range kv {
		out[p.Key] = p.Value
	}
	return out
}

// ActivationKeys are the meta table's activation keys and their values
// (docs/CONTRACT.md §4.3), without the schema's version keys.
func (e *Env) ActivationKeys(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range e.Keys(t) {
		if k == storekit.CaptureSinceKey || k == storekit.ExecutionSinceKey || k == storekit.BackfillThroughKey {
			out[k] = v
		}
	}
	return out
}

// Session creates a host session (its task is "task-" + id).
func (e *Env) Session(t testing.TB, id string) {
	t.Helper()
	if err := kandevtest.InsertSession(context.Background(), e.DB, e.Tables, id, "task-"+id); err != nil {
		t.Fatal(err)
	}
}

// insert writes messages, creating their sessions.
func insert(t *testing.T, e *Env, msgs ...kandevtest.Message) {
	t.Helper()
	for _, m := range msgs {
		e.Session(t, m.TaskSessionID)
	}
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, msgs); err != nil {
		t.Fatal(err)
	}
}

// msg is a subagent message in session s with the given metadata.
func msg(id, s, turn string, created time.Time, meta kandevtest.Metadata) kandevtest.Message {
	return kandevtest.Message{ID: id, TaskSessionID: s, TaskID: "task-" + s, TurnID: turn,
		Metadata: ptr(meta.JSON()), CreatedAt: created, UpdatedAt: created.Add(30 * time.Second)}
}

func raw(id, s string, created time.Time, metadata *string) kandevtest.Message {
	return kandevtest.Message{
		ID:            id,
		TaskSessionID: s,
		TaskID:        "task-" + s,
		TurnID:        "turn-1",
		Metadata:      metadata,
		CreatedAt:     created,
	}
}

// rows returns a session's rows by "tool_call_id/agent_execution_id".
func rows(t *testing.T, e *Env, s string) map[string]core.Subagent {
	t.Helper()
	list, err := e.Store.ListBySession(context.Background(), s, core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]core.Subagent{}
	for _, r := range list {
		out[r.ToolCallID+"/"+r.AgentExecutionID] = r
	}
	return out
}

// meta is the meta table the store uses, quoted.
func (e *Env) meta(t testing.TB) string {
	t.Helper()
	s := e.Store
	if s == nil { // an environment whose store its test makes
		var err error
		if s, err = e.New(e.DB); err != nil {
			t.Fatal(err)
		}
	}
	name, err := s.MetaTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return `"` + name + `"`
}

// describe reads a table from the catalog.
func (e *Env) describe(t testing.TB, table string) sqldialect.TableInfo {
	t.Helper()
	info, err := e.Dialect.Describe(context.Background(), e.DB, table)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// shapeHolds reports whether the table has its declared shape.
func (e *Env) shapeHolds(t testing.TB) bool {
	t.Helper()
	return e.shapeDiff(t) == ""
}

// shapeDiff says how the table differs from its declaration, as a pass
// reads it ("" when its shape holds).
func (e *Env) shapeDiff(t testing.TB) string {
	t.Helper()
	p, err := e.Store.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	diff, err := p.ShapeDiff(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return diff
}

// Count is the number of rows in the table.
func (e *Env) Count(t testing.TB) int64 {
	t.Helper()
	var n int64
	if err := e.DB.Raw(`SELECT count(*) FROM task_session_subagents`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// snapshot renders shape, rows and keys, to compare passes.
func snapshot(t *testing.T, e *Env) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "shape %+v\n", e.describe(t, "task_session_subagents"))
	var all []map[string]any
	e.DB.Raw(`SELECT * FROM task_session_subagents ORDER BY id`).Scan(&all)
	for _, r := range all {
		delete(r, "updated_at")
		fmt.Fprintf(&b, "%v\n", r)
	}
	fmt.Fprintf(&b, "keys %v\n", e.Keys(t))
	return b.String()
}

func show[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}

// record writes one live frame through the store.
func record(t *testing.T, e *Env, s, tool, exec string, observed time.Time) {
	t.Helper()
	row, _ := core.Normalize(
		core.Frame{
			TaskSessionID: s,
			TaskID:        "task-" + s,
			TurnID:        "turn-1",
			ExecutionID:   exec,
			ToolCallID:    tool,
			ObservedAt:    observed,
		},
	)
	if err := e.Store.Upsert(context.Background(), row); err != nil {
		t.Fatal(err)
	}
}
