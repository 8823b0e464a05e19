package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
)

// TestOutageLosesNothing: PostgreSQL stops for a few seconds under a steady
// stream of frames with distinct keys. Record never waits; the writers keep
// the frames and retry; once the server is back every frame is stored, and
// the counters say so: all persisted, none failed (docs/CONTRACT.md §6).
func TestOutageLosesNothing(t *testing.T) {
	srv := pgtest.StartServer(t)
	const secret = "0utageS3cret"
	ctx := context.Background()
	db, err := postgres.OpenDB(srv.DSN(secret))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sqlDB, _ := db.DB(); sqlDB.Close() }()
	if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	kandevtest.InsertSession(ctx, db, sqlstore.Tables{}, "s", "t")
	store, err := postgres.New(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureSchema(ctx); err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	rec, _ := core.NewRecorder(
		store,
		core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		core.WithRetry(20*time.Millisecond, 200*time.Millisecond),
	)
	const frames = 600
	var slowest time.Duration
	stopped, restarted := make(chan struct{}), make(chan struct{})
	go func() {
		if _, err := await.Within(stopped, await.Limit); err != nil {
			t.Errorf("the server's stop: %v", err)
			return
		}
		time.Sleep(3 * time.Second) // the outage, while frames keep coming
		if err := srv.Start(); err != nil {
			t.Error(err)
		}
		close(restarted)
	}()
	for i := range frames {
		if i == 150 {
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			close(stopped)
		}
		start := time.Now()
		rec.Record(
			ctx,
			core.Frame{
				TaskSessionID: "s",
				TaskID:        "t",
				ExecutionID:   "e",
				ToolCallID:    fmt.Sprint("k", i),
				ToolStatus:    "completed",
				ObservedAt:    time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond),
				Payload:       &core.Payload{TotalTokens: int64(1000 + i)},
			},
		)
		slowest = max(slowest, time.Since(start))
		time.Sleep(7 * time.Millisecond) // a steady stream across the outage
	}
	await.Recv(t, restarted, "the server's restart")
	drain, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := rec.Close(drain); err != nil {
		t.Fatalf("close: %v (%+v)", err, rec.Counters().Values())
	}
	if v := rec.Counters().Values(); v.Persisted != frames || v.Failed != 0 || v.Pending != 0 {
		t.Errorf("counters after the outage: %+v; want all %d persisted", v, frames)
	}
	// A call that waited for the database would last the outage (3 s); the
	// bound leaves a loaded machine's scheduling pauses room.
	if slowest > 500*time.Millisecond {
		t.Errorf("a Record call took %v during the outage: it waited for the database", slowest)
	}
	rows, err := store.ListBySession(ctx, "s", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != frames {
		t.Errorf("%d rows in the database, want %d", len(rows), frames)
	}
	for _, r := range rows {
		var i int
		fmt.Sscanf(r.ToolCallID, "k%d", &i)
		if r.TotalTokens == nil || *r.TotalTokens != int64(1000+i) || r.SettledAt == nil {
			t.Errorf("row %s: %+v", r.ToolCallID, r)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n == 0 || n > 100 {
		t.Errorf("%d WARN lines over a 3 s outage", n)
	}
	if strings.Contains(out, secret) {
		t.Error("a log line contains the DSN's password")
	}
}
