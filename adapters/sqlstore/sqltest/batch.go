package sqltest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storetest"
)

// testBatchesEndAsFrames (AC-14, AC-31, AC-32, docs/CONTRACT.md §8.5):
// the same frames written one Upsert each and in batches (UpsertBatch,
// which on a sharded table writes multi-row waves) leave the same rows —
// over backfilled pairs that executions absorb, executions reusing a
// tool call id, frames without one, and a frame the database refuses —
// and the refused frame fails alone in its batch.
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
		}
	}
	r := rand.New(rand.NewPCG(14, 32))
	pick := func(opts ...string) string { return opts[r.IntN(len(opts))] }
	frames := make([]core.Frame, 600)
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
	}
	in := func(g string, f core.Frame) core.Subagent {
		if f.TaskSessionID != "missing" {
			f.TaskSessionID = g + "-" + f.TaskSessionID
		}
		row, _ := core.Normalize(f)
		return row
	}
	var refused [2]int
	for _, f := range frames {
		if err := e.Store.Upsert(ctx, in("one", f)); err != nil {
			if !errors.Is(err, core.ErrConstraint) {
				t.Fatal(err)
			}
			refused[0]++
		}
	}
	for start := 0; start < len(frames); {
		end := min(len(frames), start+1+r.IntN(250))
		batch := make([]core.Subagent, 0, end-start)
		for _, f := range frames[start:end] {
			batch = append(batch, in("batch", f))
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
	if refused != [2]int{1, 1} {
		t.Errorf("refused one by one %d, in batches %d; want 1 each", refused[0], refused[1])
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
		}
	}
}
