package sqltest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// FuzzMerge drives a dialect's store with frame sequences decoded from the
// fuzzer's bytes and checks every stored row against storekit.Merge folded over
// the same sequence: the SQL SET list against the Go rules (AC-1 … AC-12).
// Each input writes into a session of its own in one database.
func FuzzMerge(f *testing.F, d *Driver) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{255, 0, 255, 0, 3, 3, 3, 3, 9, 9, 9, 9, 1, 2, 4, 8, 16, 32, 64, 128})
	f.Add([]byte("settle then refill: the quick brown fox jumps over the lazy dog"))
	f.Add([]byte{3, 1, 1, 0, 0, 3, 1, 0, 0, 2, 1, 0, 1, 1, 2, 9, 0x80, 0x41, 2, 0, 0, 2, 3, 1})
	e := d.Env(f)
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		sess := fmt.Sprintf("fuzz-%d", n.Add(1))
		if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, sess, "t1"); err != nil {
			t.Fatal(err)
		}
		model := map[core.RowKey]*core.Subagent{}
		pick := func(b byte, opts ...string) string { return opts[int(b)%len(opts)] }
		t0 := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
		for i := 0; i+8 <= len(data) && i < 8*64; i += 8 {
			b := data[i : i+8]
			uses := int64(b[6]%4) - 1
			fr := core.Frame{
				TaskSessionID:    sess,
				TaskID:           pick(b[0], "t1", "t2"),
				TurnID:           pick(b[1], "", "turn-1", "turn-2"),
				ExecutionID:      pick(b[2], "", "e1", "e2"),
				ToolCallID:       pick(b[3], "c1", "c2"),
				ParentToolCallID: pick(b[4], "", "p"),
				ToolStatus:       pick(b[5], "", "pending", "in_progress", "completed", "error", "weird"),
				ObservedAt:       t0.Add(time.Duration(b[7])*time.Second + time.Duration(b[6])*time.Nanosecond),
				Payload: &core.Payload{
					Model:       pick(b[6], "", "m1", "m2"),
					Status:      pick(b[7], "", "running", "async_launched"),
					TotalTokens: int64(b[4]) - 100,
					DurationMs:  int64(b[5]),
					IsAsync:     b[0]&0x80 != 0,
				},
			}
			if b[1]&0x40 != 0 {
				fr.Payload.ToolUseCount = &uses
			}
			// The agent's own start and end, in the same minute as the
			// observations: reopening and earliest-start cases arise.
			if b[3]&0x02 != 0 {
				fr.StartedAt = t0.Add(time.Duration(b[3]>>2) * 4 * time.Second)
			}
			if b[1]&0x20 != 0 {
				fr.EndedAt = t0.Add(time.Duration(b[6]>>2)*4*time.Second + time.Duration(b[0])*time.Microsecond)
			}
			// A reading of the run's usage, smaller or larger than the last.
			if b[4]&0x40 != 0 {
				in, requests := int64(b[5])-10, int64(b[6]%5)
				fr.Usage = &core.Usage{InputTokens: &in, Requests: &requests}
				if b[4]&0x01 != 0 {
					fr.Usage.OutputTokens = &requests
				}
			}
			if b[2]&0x80 != 0 {
				fr.Payload = nil
			}
			row, _ := core.Normalize(fr)
			if err := e.Store.Upsert(ctx, row); err != nil {
				t.Fatal(err)
			}
			merged := storekit.Merge(model[row.Key()], row)
			model[row.Key()] = &merged
		}
		rows, err := e.Store.ListBySession(ctx, sess, core.Page{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(model) {
			t.Fatalf("store %d rows, storekit.Merge %d", len(rows), len(model))
		}
		for _, r := range rows {
			if diff := storetest.Diff(*model[r.Key()], r); len(diff) > 0 {
				t.Fatalf("the store and storekit.Merge disagree on %+v: %v", r.Key(), diff)
			}
		}
	})
}
