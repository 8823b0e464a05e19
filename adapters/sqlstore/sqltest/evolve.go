package sqltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// The table's evolution (docs/CONTRACT.md §4 step 2) and the seam between
// history and live capture (§8.5), on every dialect.
var evolveTests = []test{
	{"AC33_EveryEarlierShapeReachesTheDeclaredOne", testEveryEarlierShape},
	{"MissingColumnsAddedFromTheDeclaration", testAddsMissingColumns},
	{"AC33a_FailedAdditionKeepsTheShape", testAddColumnFailure},
	{"NonAdditiveDifferenceRefused", testNonAdditive},
	{"Seam_DoubledPairsRepaired", testRepair},
	{"Seam_DeployWhileSubagentsRun", testDeploy},
	{"Seam_OneAnswerWhateverCameFirst", testEitherOrder},
}

// row is a complete row of the table, for raw inserts.
func row(sess, tool, exec string, source core.Source, observed time.Time) core.Subagent {
	r, _ := core.Normalize(
		core.Frame{TaskSessionID: sess, TaskID: "task-" + sess, TurnID: "turn-1", ExecutionID: exec, ToolCallID: tool,
			ToolStatus: "in_progress", ObservedAt: observed,
			Payload: &core.Payload{
				SubagentType: "explorer",
				Description:  "d-" + tool,
				Model:        "m-" + string(source),
				TotalTokens:  10,
			}},
	)
	r.ID, r.Source, r.UpdatedAt = fmt.Sprintf("%s-%s-%s", source, exec, tool), source, observed
	return r
}

// insertRaw writes rows as an earlier build did: a plain INSERT of the
// columns the table has, each row's values from storekit.Columns (no seam).
func (e *Env) insertRaw(t testing.TB, rows ...core.Subagent) {
	t.Helper()
	info := e.describe(t, sqlstore.Table)
	for _, r := range rows {
		var cols, marks []string
		var args []any
		for _, c := range storekit.Columns() {
			if info.Column(c.Name) != nil {
				cols, marks, args = append(cols, c.Name), append(marks, "?"), append(args, c.Value(&r))
			}
		}
		e.Exec(
			t,
			`INSERT INTO task_session_subagents (`+strings.Join(cols, ", ")+`) VALUES (`+strings.Join(marks, ", ")+`)`,
			args...)
	}
}

// versions are the schema versions recorded in the meta table.
func (e *Env) versions(t testing.TB) []string {
	t.Helper()
	var out []string
	for k := range e.Keys(t) {
		if strings.HasPrefix(k, "subagent_context_schema_v") {
			out = append(out, strings.TrimPrefix(k, "subagent_context_schema_v"))
		}
	}
	slices.Sort(out)
	return out
}

// wantVersions are the versions a table in its declared shape has
// recorded on this dialect: every numbered step's.
func wantVersions(d *Driver) []string {
	out := []string{"4", "5"} // the seam repair and its column, on every dialect
	for _, st := range d.Dialect.Steps() {
		out = append(out, fmt.Sprint(st.Version))
	}
	slices.Sort(out)
	return out
}

// testEveryEarlierShape: a table of every shape an earlier build left —
// the first draft's, one with its primary key on id alone, and the one the
// previous release created — reaches the declared shape with its rows,
// records every version, and takes writes and reads.
func testEveryEarlierShape(t *testing.T, d *Driver) {
	for _, shape := range []struct {
		name  string
		make  func(t testing.TB, e *Env)
		rows  int
		check func(t *testing.T, e *Env)
	}{
		{"first draft", func(t testing.TB, e *Env) { d.legacyTable(t, e.DB); legacyRows(t, e) }, 3, nil},
		{"primary key on id", func(t testing.TB, e *Env) {
			e.Session(t, "s")
			e.insertRaw(t, row("s", "tc-1", "e1", core.SourceLive, at(1)),
				row("s", "tc-2", "unknown", core.SourceBackfill, at(2)))
			d.earlierTable(t, e.DB)
		}, 2, nil},
		{"previous release", func(t testing.TB, e *Env) {
			d.previousRelease(t, e.DB)
			e.Session(t, "s")
			e.insertRaw(t, row("s", "tc-1", "e1", core.SourceLive, at(1)),
				row("s", "tc-2", "unknown", core.SourceBackfill, at(2)))
		}, 2, func(t *testing.T, e *Env) {
			want := row("s", "tc-1", "e1", core.SourceLive, at(1))
			if got := rows(t, e, "s")["tc-1/e1"]; len(storetest.Diff(want, got)) > 0 || got.ID != want.ID {
				t.Errorf("a row of the previous release changed: %v", storetest.Diff(want, got))
			}
		}},
	} {
		t.Run(shape.name, func(t *testing.T) {
			e := d.Env(t)
			shape.make(t, e)
			if e.shapeHolds(t) && len(e.versions(t)) > 0 {
				t.Fatalf("the earlier table is already declared and versioned")
			}
			mustRun(t, e)
			if !e.shapeHolds(t) {
				t.Errorf("not in its declared shape: %+v", e.describe(t, sqlstore.Table))
			}
			if got, want := e.versions(t), wantVersions(d); !slices.Equal(got, want) {
				t.Errorf("versions %v, want %v", got, want)
			}
			if n := e.Count(t); n != int64(shape.rows) {
				t.Errorf("%d rows, want the %d it had", n, shape.rows)
			}
			if shape.check != nil {
				shape.check(t, e)
			}
			record(t, e, "s", "tc-new", "e9", at(9))
			if got := rows(t, e, "s"); len(got) != shape.rows+1 {
				t.Errorf("a write after the upgrade: %d rows", len(got))
			}
			before := snapshot(t, e)
			mustRun(t, e)
			if after := snapshot(t, e); after != before {
				t.Errorf("a second pass changed the table:\n%s\nvs\n%s", before, after)
			}
		})
	}
}

// dropColumn removes a column from the table, as a table created before
// the column was declared lacks it (an index on it goes first, as SQLite
// wants).
func (e *Env) dropColumn(t testing.TB, c string) {
	t.Helper()
	for _, x := range e.describe(t, sqlstore.Table).Indexes {
		// The history index names columns in its predicate.
		if !x.Key() && (slices.Contains(x.Columns, c) || x.Name == "idx_subagents_history") {
			e.Exec(t, `DROP INDEX `+x.Name)
		}
	}
	e.Exec(t, `ALTER TABLE task_session_subagents DROP COLUMN `+c)
}

// additiveColumns are the declared columns a pass can add to a table with
// rows (nullable or defaulted) and a test can drop (in no key).
func additiveColumns() []storekit.Column {
	var out []storekit.Column
	for _, c := range storekit.Columns() {
		if (c.Nullable || c.Default != nil) && !slices.Contains(storekit.KeyColumns(), c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// testAddsMissingColumns: a declared column a deployed table lacks — the
// table created before the column was declared, its versions recorded —
// is added by the shape step from the declaration, every row kept (the
// new column NULL, or its default), and the table takes writes and reads.
func testAddsMissingColumns(t *testing.T, d *Driver) {
	// One table for every column (a fresh database each took most of the
	// suite's time on Citus): each pass brings it back to its declared
	// shape, and each column's case starts from an empty table.
	e := d.Env(t)
	e.Session(t, "s")
	for _, c := range additiveColumns() {
		t.Run(c.Name, func(t *testing.T) {
			e.Exec(t, `DELETE FROM task_session_subagents`)
			old := row("s", "tc-1", "e1", core.SourceLive, at(1))
			e.insertRaw(t, old)
			e.dropColumn(t, c.Name)
			// A store made on the table as it now is, as a host booting on it.
			s, err := d.New(e.DB)
			if err != nil {
				t.Fatal(err)
			}
			previous := e.Store
			e.Store = s
			if err := previous.Close(); err != nil {
				t.Fatal(err)
			}
			r := mustRun(t, e)
			if st := r.Step(migration.StepShape); st.Status != migration.Ran ||
				!strings.Contains(st.Detail, "added "+c.Name) {
				t.Errorf("shape step: %+v", st)
			}
			if !e.shapeHolds(t) {
				t.Fatalf("not in its declared shape: %+v", e.describe(t, sqlstore.Table))
			}
			got := rows(t, e, "s")["tc-1/e1"]
			want := old
			c.Set(&want, c.Default) // what the table cannot remember: NULL, or the default
			if diff := storetest.Diff(want, got); len(diff) > 0 {
				t.Errorf("the row after the addition: %v", diff)
			}
			f := core.Frame{
				TaskSessionID: "s",
				TaskID:        "task-s",
				TurnID:        "turn-2",
				ExecutionID:   "e1",
				ToolCallID:    "tc-1",
				ToolStatus:    "completed",
				ObservedAt:    at(5),
				Settled:       true,
				Payload: &core.Payload{Model: "m2", TotalTokens: 20, DurationMs: 3, IsAsync: true, Status: "done",
					SubagentType: "t", Description: "d", AgentID: "a", ChildSessionID: "c"},
			}
			f.ParentToolCallID = "p"
			next, _ := core.Normalize(f)
			if err := e.Store.Upsert(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			merged := storekit.Merge(&want, next)
			if diff := storetest.Diff(merged, rows(t, e, "s")["tc-1/e1"]); len(diff) > 0 {
				t.Errorf("a write into the added column: %v", diff)
			}
		})
	}
}

// testAddColumnFailure: a failure while the shape step adds a column (AC-33a)
// leaves the table as it was, and the next pass completes it.
func testAddColumnFailure(t *testing.T, d *Driver) {
	e := d.Env(t)
	e.Session(t, "s")
	e.insertRaw(t, row("s", "tc-1", "e1", core.SourceLive, at(1)))
	e.dropColumn(t, "model")
	e.dropColumn(t, "agent_id")
	before := snapshot(t, e)
	r := run(t, e, migration.WithHook(func(stage string) error {
		if stage == "add column agent_id" {
			return errors.New("injected at " + stage)
		}
		return nil
	}))
	if st := r.Step(migration.StepShape); st.Status != migration.Failed || !strings.Contains(st.Detail, "injected") {
		t.Errorf("shape step: %+v", st)
	}
	if after := snapshot(t, e); after != before {
		t.Errorf("a failed addition changed the table:\n%s\nvs\n%s", before, after)
	}
	if st := r.Step(migration.StepBackfill); st.Status != migration.Skipped {
		t.Errorf("backfill on a table short of its columns: %+v", st)
	}
	mustRun(t, e)
	if !e.shapeHolds(t) {
		t.Errorf("the next pass: %+v", e.describe(t, sqlstore.Table))
	}
}

// testNonAdditive: a difference no numbered step of this build makes — a
// column of another type — is refused by the shape step, naming it, with
// the table unchanged; the backfill and the execution key wait.
func testNonAdditive(t *testing.T, d *Driver) {
	e := d.Env(t)
	d.previousRelease(t, e.DB)
	e.dropColumn(t, "model")
	e.Exec(t, `ALTER TABLE task_session_subagents ADD COLUMN model INTEGER`)
	before := snapshot(t, e)
	r := run(t, e)
	st := r.Step(migration.StepShape)
	if st.Status != migration.Failed || !errors.Is(st.Err, sqlstore.ErrShape) ||
		!strings.Contains(st.Detail, "column model is INTEGER, declared TEXT") {
		t.Errorf("shape step: %+v", st)
	}
	if after := snapshot(t, e); after != before {
		t.Errorf("a refused shape changed the table:\n%s\nvs\n%s", before, after)
	}
	if r.Step(migration.StepBackfill).Status != migration.Skipped ||
		r.Step(migration.StepExecutionKey).Status != migration.Skipped {
		t.Errorf("steps after a refused shape: %s", r)
	}
}

// testRepair: a table the previous release left with both rows of one
// invocation — the backfill's under 'unknown' and the live one under an
// execution id, the seam doubled — is repaired by the shape step (step 4),
// every doubled pair merged into one row as storekit.MergeHistory says, in one
// transaction, once; health and statistics then count each invocation
// once.
func testRepair(t *testing.T, d *Driver) {
	e := d.Env(t)
	d.previousRelease(t, e.DB)
	e.Session(t, "s")
	b1 := row("s", "tc-1", core.UnknownExecution, core.SourceBackfill, at(1))
	l1 := row("s", "tc-1", "e1", core.SourceLive, at(5))
	b1.ToolStatus, b1.SettledAt, b1.TurnID = ptr("completed"), ptr(at(3)), ptr("turn-h")
	l1.TurnID, l1.Model = ptr("turn-l"), nil
	// A pair reused by two executions after the seam: history goes to the
	// first one recorded, the other keeps apart (AC-32).
	b2 := row("s", "tc-2", core.UnknownExecution, core.SourceBackfill, at(1))
	l2a, l2b := row("s", "tc-2", "e1", core.SourceLive, at(7)), row("s", "tc-2", "e2", core.SourceLive, at(6))
	alone := row("s", "tc-3", core.UnknownExecution, core.SourceBackfill, at(1))
	live := row("s", "tc-4", "e1", core.SourceLive, at(8))
	e.insertRaw(t, b1, l1, b2, l2a, l2b, alone, live)
	r := mustRun(t, e)
	// 7 rows, 2 pairs merged: the report counts what remains.
	if st := r.Step(migration.StepShape); st.RowsMerged != 2 || !strings.Contains(st.Detail, "2 doubled pairs merged") ||
		!strings.Contains(st.Detail, "; 5 rows remain") {
		t.Errorf("shape step: %+v", st)
	}
	want := map[string]core.Subagent{
		"tc-1/e1":      storekit.MergeHistory(l1, b1),
		"tc-2/e2":      storekit.MergeHistory(l2b, b2),
		"tc-2/e1":      l2a,
		"tc-3/unknown": alone,
		"tc-4/e1":      live,
	}
	got := rows(t, e, "s")
	if len(got) != len(want) {
		t.Errorf("rows %v, want %d", got, len(want))
	}
	for k, w := range want {
		if diff := storetest.Diff(w, got[k]); len(diff) > 0 || got[k].ID != w.ID {
			t.Errorf("%s: %v (id %s, want %s)", k, diff, got[k].ID, w.ID)
		}
	}
	st, err := e.Store.Stats(context.Background(), report.StatsQuery{TaskSessionID: "s"})
	if err != nil || st.Subagents != 5 || st.TotalTokens.All.Sum.Int64() != 50 {
		t.Errorf("stats: %d subagents, tokens %v, %v; want 5, 50", st.Subagents, st.TotalTokens.All.Sum, err)
	}
	before := snapshot(t, e)
	if r := mustRun(t, e); r.Step(migration.StepShape).Status != migration.Skipped || snapshot(t, e) != before {
		t.Errorf("a second pass: %s", r)
	}
}

// testDeploy is the deploy of the issue that found the seam: a subagent
// in flight when the pass reads history (its message still in progress),
// its completion recorded live under the execution id afterwards, is one
// row: history's observation, description and turn, the live completion;
// statistics count it once, its turn's fan-out is 1.
func testDeploy(t *testing.T, d *Driver) {
	e := d.Env(t)
	inflight := kandevtest.Subagent(
		"toolu_1", "in_progress", &core.Payload{SubagentType: "explorer", Description: "map the repo"},
	)
	insert(t, e, msg("m1", "s", "turn-1", at(1), inflight))
	mustRun(t, e)
	uses := int64(12)
	done, _ := core.Normalize(
		core.Frame{TaskSessionID: "s", TaskID: "task-s", TurnID: "turn-1", ExecutionID: "exec-1", ToolCallID: "toolu_1",
			ToolStatus: "completed", ObservedAt: at(90),
			Payload: &core.Payload{Status: "completed", TotalTokens: 5000, ToolUseCount: &uses, Model: "claude"}},
	)
	if err := e.Store.Upsert(context.Background(), done); err != nil {
		t.Fatal(err)
	}
	got := rows(t, e, "s")
	r, ok := got["toolu_1/exec-1"]
	if len(got) != 1 || !ok || r.Source != core.SourceBackfill || !r.ObservedAt.Equal(at(1)) ||
		show(r.Description) != "map the repo" ||
		show(r.TotalTokens) != "5000" || show(r.ToolStatus) != "completed" || r.SettledAt == nil ||
		!r.SettledAt.Equal(at(90)) {
		t.Errorf("rows %v: want one, under exec-1 with its history", got)
	}
	st, err := e.Store.Stats(context.Background(), report.StatsQuery{})
	if err != nil || st.Subagents != 1 || len(st.FanOutPerTurn) != 1 ||
		st.FanOutPerTurn[0] != (report.FanOut{Subagents: 1, Turns: 1}) {
		t.Errorf("stats: %d subagents, fan-out %v, %v", st.Subagents, st.FanOutPerTurn, err)
	}
	if h := health(t, e); h.Shortfall != 0 || h.Excess != 0 {
		t.Errorf("health: %+v", h)
	}
}

// testEitherOrder: the pass before the live frames, or after them, gives
// the same row (docs/CONTRACT.md §8.5): history counts as the first write
// either way. Only the id differs: the row's own.
func testEitherOrder(t *testing.T, d *Driver) {
	frames := []core.Frame{
		{
			TaskSessionID: "s",
			TaskID:        "task-s",
			TurnID:        "turn-2",
			ExecutionID:   "exec-1",
			ToolCallID:    "tc",
			ToolStatus:    "in_progress",
			ObservedAt:    at(60),
			Payload:       &core.Payload{AgentID: "agent-1"},
		},
		{
			TaskSessionID: "s",
			TaskID:        "task-s",
			TurnID:        "turn-2",
			ExecutionID:   "exec-1",
			ToolCallID:    "tc",
			ToolStatus:    "completed",
			ObservedAt:    at(70),
			Payload:       &core.Payload{TotalTokens: 42, Model: "live"},
		},
	}
	history := msg(
		"m1", "s", "turn-1", at(1),
		kandevtest.Subagent("tc", "in_progress", &core.Payload{SubagentType: "explorer", Model: "hist", DurationMs: 9}),
	)
	live := func(e *Env) {
		for _, f := range frames {
			r, _ := core.Normalize(f)
			if err := e.Store.Upsert(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	passFirst, framesFirst := d.Env(t), d.Env(t)
	insert(t, passFirst, history)
	mustRun(t, passFirst)
	live(passFirst)
	framesFirst.Session(t, "s")
	live(framesFirst)
	insert(t, framesFirst, history)
	mustRun(t, framesFirst)
	a, b := rows(t, passFirst, "s"), rows(t, framesFirst, "s")
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("rows %v and %v: want one each", a, b)
	}
	if diff := storetest.Diff(a["tc/exec-1"], b["tc/exec-1"]); len(diff) > 0 {
		t.Errorf("the order changed the row: %v", diff)
	}
	if r := a["tc/exec-1"]; r.Source != core.SourceBackfill || show(r.Model) != "live" || show(r.DurationMs) != "9" ||
		show(r.TurnID) != "turn-1" {
		t.Errorf("the row: %+v", r)
	}
}
