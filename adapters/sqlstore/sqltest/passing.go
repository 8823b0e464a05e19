package sqltest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// Kept brings a condition about (hold, which returns what clears it),
// records frames while it holds and checks that the recorder keeps them
// (retried, none failed), then clears it and checks that every one is
// written (docs/CONTRACT.md §6.1).
func (e *Env) Kept(t *testing.T, store *sqlstore.Store, hold func() (clear func())) {
	t.Helper()
	var logs testlog.Buffer
	rec, err := core.NewRecorder(store, core.WithRetry(10*time.Millisecond, 50*time.Millisecond),
		core.WithWriteTimeout(2*time.Second), core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	sess := "s-" + uuid.NewString()[:8]
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, sess, "t")
	clear := hold()
	for i := range n {
		rec.Record(context.Background(), core.Frame{TaskSessionID: sess, TaskID: "t", ExecutionID: "e",
			ToolCallID: fmt.Sprint("c", i), ToolStatus: "completed", Payload: &core.Payload{TotalTokens: 5}})
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "frames kept and retried") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if v := rec.Counters().Values(); v.Failed != 0 || v.Pending != n {
		t.Fatalf("while the condition holds: %+v; want all %d kept\n%s", v, n, logs.String())
	}
	clear()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rec.Flush(ctx); err != nil {
		t.Fatalf("after clearing it: %v\n%s", err, logs.String())
	}
	if v := rec.Counters().Values(); v.Persisted != n || v.Failed != 0 {
		t.Errorf("after clearing it: %+v\n%s", v, logs.String())
	}
	var stored int64
	e.DB.Raw(`SELECT count(*) FROM task_session_subagents WHERE task_session_id = ?`, sess).Scan(&stored)
	if stored != n {
		t.Errorf("%d rows stored, want %d", stored, n)
	}
	if err := rec.Close(ctx); err != nil {
		t.Error(err)
	}
}
