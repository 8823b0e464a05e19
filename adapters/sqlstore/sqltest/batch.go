package sqltest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storetest"
)

// testBatchesEndAsFrames (AC-14, AC-31, AC-32, docs/CONTRACT.md §8.5):
// the same frames written one Upsert each and in batches (UpsertBatch,
// which on a sharded table writes multi-row waves, and on PostgreSQL
// absorbs history before the batch's upserts) leave the same rows — over
// backfilled pairs that executions absorb, a pair an earlier build doubled
// (history and an execution's row), executions reusing a tool call id,
// frames without one, frames naming their own id (history's, another
// pair's history's, one another frame takes first), and a frame the
// database refuses — and a refused frame fails alone in its batch.
func testBatchesEndAsFrames(t *testing.T, d *Driver) {
	e := d.Env(t)
	mustRun(t, e) // activated: the rows below are history
	ctx := context.Background()
	const sessions, pairs = 4, 8
	for _, g := range []string{"one", "batch"} {
		for i := range sessions {
			s := fmt.Sprintf("%s-%d", g, i)
			e.Session(t, s)
			for p := range pairs - 2 { // the last two pairs have no history
				h := row(s, fmt.Sprint("tc-", p), core.UnknownExecution, core.SourceBackfill, at(p))
				h.TaskID, h.TotalTokens = fmt.Sprint("task-", i), ptr(int64(100*p+1))
				e.insertRaw(t, h)
			}
			doubled := row(s, "tc-0", "e1", core.SourceLive, at(1))
			doubled.TaskID = fmt.Sprint("task-", i)
			e.insertRaw(t, doubled)
		}
	}
	r := rand.New(rand.NewPCG(14, 32))
	pick := func(opts ...string) string { return opts[r.IntN(len(opts))] }
	frames := make([]core.Frame, 600)
	ids := make([]string, len(frames)) // a frame's own id; "" for the store's
	for n := range frames {
		f := core.Frame{
			TaskSessionID: fmt.Sprint(r.IntN(sessions)),
			TaskID:        "task-?",
			TurnID:        pick("", "turn-1", "turn-2"),
			ExecutionID:   pick("", "e1", "e2"),
			ToolCallID:    fmt.Sprint("tc-", r.IntN(pairs)),
			ToolStatus:    pick("", "pending", "in_progress", "completed", "error"),
			ObservedAt:    at(10 + r.IntN(100)),
			Payload: &core.Payload{Model: pick("", "m1", "m2"), Status: pick("", "running", "async_launched"),
				TotalTokens: int64(r.IntN(50)), IsAsync: r.IntN(5) == 0},
		}
		if n == 300 {
			f.TaskSessionID = "missing" // no such session: the database refuses it
		}
		f.TaskID = "task-" + f.TaskSessionID
		frames[n] = f
		switch r.IntN(12) {
		case 0:
			ids[n] = "backfill-unknown-" + f.ToolCallID // its pair's history's
		case 1:
			ids[n] = fmt.Sprint("backfill-unknown-tc-", r.IntN(pairs)) // maybe another pair's history's
		case 2:
			ids[n] = fmt.Sprint("own-", r.IntN(3))
		}
	}
	in := func(g string, n int) core.Subagent {
		f := frames[n]
		if f.TaskSessionID != "missing" {
			f.TaskSessionID = g + "-" + f.TaskSessionID
		}
		row, _ := core.Normalize(f)
		row.ID = ids[n]
		return row
	}
	var refused [2]int
	for n := range frames {
		if err := e.Store.Upsert(ctx, in("one", n)); err != nil {
			if !errors.Is(err, core.ErrConstraint) {
				t.Fatal(err)
			}
			refused[0]++
		}
	}
	for start := 0; start < len(frames); {
		end := min(len(frames), start+1+r.IntN(250))
		batch := make([]core.Subagent, 0, end-start)
		for n := start; n < end; n++ {
			batch = append(batch, in("batch", n))
		}
		rowErrs, err := e.Store.UpsertBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range rowErrs {
			if err != nil {
				if !errors.Is(err, core.ErrConstraint) {
					t.Fatal(err)
				}
				refused[1]++
			}
		}
		start = end
	}
	if refused[0] != refused[1] || refused[0] < 2 {
		t.Errorf("refused one by one %d, in batches %d; want the same, the missing session's and a taken id's",
			refused[0], refused[1])
	}
	for i := range sessions {
		one, batch := rows(t, e, fmt.Sprint("one-", i)), rows(t, e, fmt.Sprint("batch-", i))
		if len(one) != len(batch) {
			t.Errorf("session %d: %d rows one by one, %d in batches", i, len(one), len(batch))
		}
		for k, want := range one {
			got, ok := batch[k]
			if !ok {
				t.Errorf("session %d: %s written one by one only", i, k)
				continue
			}
			got.TaskSessionID = want.TaskSessionID
			if diff := storetest.Diff(want, got); len(diff) > 0 {
				t.Errorf("session %d, %s: batches differ from frame by frame: %v", i, k, diff)
			}
			if _, generated := uuid.Parse(want.ID); generated != nil && got.ID != want.ID {
				t.Errorf("session %d, %s: id %s in batches, %s frame by frame", i, k, got.ID, want.ID)
			}
		}
	}
}

// testAbsorbsOnAHostHandle (AC-32, docs/CONTRACT.md §8.5): a host may hand
// the store a *gorm.DB that is its own transaction, or one that prepares
// its statements (each a transaction of its own); live frames absorb their
// pairs' history there as on a pool — one row each, under the first
// execution, history's id and values kept — and in the host's transaction
// the planner's settings are, after the store's writes, what the host had
// set (PostgreSQL absorbs under settings of its own).
func testAbsorbsOnAHostHandle(t *testing.T, d *Driver) {
	e := d.Env(t)
	ctx := context.Background()
	settings := func(db *gorm.DB) string {
		if !strings.HasPrefix(d.Name, "postgres") && d.Name != "citus" {
			return ""
		}
		var got string
		if err := db.Raw(`SELECT concat_ws(',', current_setting('enable_seqscan'), current_setting('enable_hashjoin'),
			current_setting('plan_cache_mode'))`).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, handle := range []string{"transaction", "prepared"} {
		t.Run(handle, func(t *testing.T) {
			s := "host-" + handle
			e.Session(t, s)
			for _, tool := range []string{"a", "b"} {
				h := row(s, tool, core.UnknownExecution, core.SourceBackfill, at(1))
				h.Model = ptr("history-model")
				e.insertRaw(t, h)
			}
			db := e.DB.Session(&gorm.Session{PrepareStmt: true})
			if handle == "transaction" {
				db = e.DB.Begin()
				defer db.Rollback()
				if settings(db) != "" {
					for _, q := range []string{`SET LOCAL enable_hashjoin = off`, `SET LOCAL plan_cache_mode = force_generic_plan`} {
						if err := db.Exec(q).Error; err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			before := settings(db)
			store, err := d.New(db)
			if err != nil {
				t.Fatal(err)
			}
			frame := func(tool, exec string) core.Subagent {
				r, _ := core.Normalize(core.Frame{TaskSessionID: s, TaskID: "task-" + s, ExecutionID: exec, ToolCallID: tool,
					ToolStatus: "completed", ObservedAt: at(60)})
				return r
			}
			rowErrs, err := store.UpsertBatch(ctx, []core.Subagent{frame("a", "e1"), frame("a", "e2")})
			if err = errors.Join(append(rowErrs, err)...); err != nil {
				t.Fatal(err)
			}
			if err := store.Upsert(ctx, frame("b", "e1")); err != nil {
				t.Fatal(err)
			}
			if after := settings(db); after != before {
				t.Errorf("the host's planner settings after the store's writes: %s, want %s", after, before)
			}
			got, err := store.ListBySession(ctx, s, core.Page{})
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]core.Subagent{}
			for _, r := range got {
				byKey[r.ToolCallID+"/"+r.AgentExecutionID] = r
			}
			for _, k := range []string{"a/e1", "b/e1"} {
				r, ok := byKey[k]
				if !ok || r.ID != "backfill-unknown-"+r.ToolCallID || show(r.Model) != "history-model" ||
					show(r.ToolStatus) != "completed" || r.Source != core.SourceBackfill {
					t.Errorf("%s: %+v, want history absorbed (its id, model and source; the frame's status)", k, r)
				}
			}
			if r, ok := byKey["a/e2"]; len(got) != 3 || !ok || r.Source != core.SourceLive || r.Model != nil {
				t.Errorf("rows %v: want a/e1 and b/e1 (history absorbed) and a/e2 apart", slices.Collect(maps.Keys(byKey)))
			}
		})
	}
}
