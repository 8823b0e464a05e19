package sqltest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// testExportMissesNoCommittedRow (docs/CONTRACT.md §3.3, §8.16): while
// writers record and a migration pass backfills, back-to-back "changed
// since" windows — each starting where the one before said (NextSince) —
// together hold the final version of every row.
func testExportMissesNoCommittedRow(t *testing.T, d *Driver) {
	e := d.Env(t)
	ctx := context.Background()
	const sessions, keys = 4, 60
	var history []kandevtest.Message
	for s := range sessions {
		e.Session(t, fmt.Sprint("s", s))
		for k := range 20 {
			history = append(history, msg(fmt.Sprintf("m%d_%d", s, k), fmt.Sprint("s", s), "turn-1", at(k),
				kandevtest.Subagent(fmt.Sprintf("toolu_h%d", k), "in_progress", &kandevtest.ClaudeAsyncLaunch)))
		}
	}
	insert(t, e, history...)
	// A short horizon, so that the windows are short and a wrong rule shows.
	s, err := d.New(e.DB, sqlstore.WithWriteHorizon(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// A short queue holds the writers to the pace of the store (RecordWaiting
	// waits for room), so that what is still queued at Close drains within
	// its minute even where writes are slow (Citus under -race on two cores
	// once had 1,243 frames queued, more than a minute's writes).
	rec, err := core.NewRecorder(s, core.WithLogger(testlog.Discard), core.WithBatch(8), core.WithQueue(32),
		core.WithDrain(0))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					if i >= keys { // every key of its own once, however slow the store
						return
					}
				default:
				}
				tokens := int64(i + 1)
				_ = rec.RecordWaiting(ctx, core.Frame{
					TaskSessionID: fmt.Sprint("s", (i+w)%sessions), TaskID: "task", ExecutionID: fmt.Sprint("exec-", w),
					ToolCallID: fmt.Sprintf("toolu_%d", i%keys), ToolStatus: "in_progress",
					Payload: &core.Payload{TotalTokens: tokens},
				})
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	seen := map[report.ExportKey]core.Subagent{}
	var since time.Time
	window := func() {
		q := report.ExportQuery{Since: since}
		next, err := s.NextSince(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for r, err := range s.Export(ctx, q) {
			if err != nil {
				t.Fatal(err)
			}
			k := report.ExportKey{TaskSessionID: r.TaskSessionID, ID: r.ID}
			if old, ok := seen[k]; !ok || !r.UpdatedAt.Before(old.UpdatedAt) {
				seen[k] = r
			}
		}
		if next.Before(since) {
			t.Fatalf("next since %v before since %v", next, since)
		}
		since = next
	}
	pass := make(chan migration.Report, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		pass <- migration.New(s, migration.WithLogger(testlog.Discard)).Run(ctx)
	}()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		window()
	}
	close(stop)
	writers.Wait()
	drain, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := rec.Close(drain); err != nil {
		t.Fatal(err)
	}
	if r := await.Recv(t, pass, "the pass"); r.Failed() {
		t.Fatalf("the pass during the export:\n%s", r)
	}
	time.Sleep(400 * time.Millisecond) // past the horizon: the last window is whole
	window()
	final := 0
	for r, err := range s.Export(ctx, report.ExportQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		final++
		got, ok := seen[report.ExportKey{TaskSessionID: r.TaskSessionID, ID: r.ID}]
		switch {
		case !ok:
			t.Errorf("row %s/%s (updated_at %v) in no window", r.TaskSessionID, r.ToolCallID, r.UpdatedAt)
		case len(storetest.Diff(r, got)) > 0:
			t.Errorf("row %s/%s: the windows hold an earlier version: %v", r.TaskSessionID, r.ToolCallID,
				storetest.Diff(r, got))
		}
	}
	if final < sessions*keys {
		t.Errorf("%d rows at the end, want at least %d", final, sessions*keys)
	}
}
