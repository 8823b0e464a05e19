package sqlstore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/pgtest"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestPostgresOutage: the server stops and starts again while frames are
// recorded. Record never panics, never outlives its context, counts each
// lost write as failed (with a bounded number of WARN lines), resumes on
// its own, and every row committed before the outage is intact.
func TestPostgresOutage(t *testing.T) {
	srv := pgtest.StartServer(t)
	const secret = "0utageS3cret"
	ctx := context.Background()
	db, err := postgres.OpenDB(srv.DSN(secret))
	if err != nil {
		t.Fatal(err)
	}
	if err := kandevtest.CreateTables(ctx, db, core.HostTables{}); err != nil {
		t.Fatal(err)
	}
	kandevtest.InsertSession(ctx, db, core.HostTables{}, "s", "t")
	store, err := postgres.New(ctx, db, core.HostTables{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sqlDB, _ := db.DB(); sqlDB.Close() }()
	var logs syncBuffer
	rec, _ := core.NewRecorder(store, core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), core.WithTimeout(2*time.Second))
	frame := func(i int) core.Frame {
		return core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e", ToolCallID: fmt.Sprint("k", i), ToolStatus: "completed",
			ObservedAt: time.Date(2026, 8, 12, 9, 0, i, 0, time.UTC), Payload: &core.Payload{TotalTokens: int64(1000 + i)}}
	}
	for i := range 50 {
		rec.Record(ctx, frame(i))
	}
	if v := rec.Counters().Values(); v.Persisted != 50 {
		t.Fatalf("before the outage: %+v", v)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		callCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		start := time.Now()
		rec.Record(callCtx, frame(100+i))
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("Record blocked %v during the outage", d)
		}
		cancel()
	}
	if v := rec.Counters().Values(); v.Failed != 30 || v.Persisted != 50 || v.Attempted != 80 {
		t.Errorf("during the outage: %+v", v)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; rec.Counters().Values().Persisted == 50; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("recording did not resume: %+v", rec.Counters().Values())
		}
		rec.Record(ctx, frame(200+i))
		time.Sleep(50 * time.Millisecond)
	}
	rows, err := store.ListBySession(ctx, "s", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, r := range rows {
		var i int
		if _, err := fmt.Sscanf(r.ToolCallID, "k%d", &i); err == nil && i < 50 {
			if r.TotalTokens == nil || *r.TotalTokens != int64(1000+i) || r.SettledAt == nil {
				t.Errorf("row %s changed: %+v", r.ToolCallID, r)
			}
			kept++
		}
	}
	if kept != 50 {
		t.Errorf("%d of the 50 rows committed before the outage survive", kept)
	}
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n == 0 || n > 30 {
		t.Errorf("%d WARN lines for 30 failed writes", n)
	}
	if strings.Contains(out, secret) {
		t.Error("a log line contains the DSN's password")
	}
}

// TestSQLiteKilledWhileRecordingHelper is the child of
// TestSQLiteKilledWhileRecording, not a test of its own.
func TestSQLiteKilledWhileRecordingHelper(t *testing.T) {
	path := os.Getenv("SUBAGENTCTX_RECORD_DB")
	if path == "" {
		t.Skip("child process of TestSQLiteKilledWhileRecording")
	}
	store, err := sqlite.Open(context.Background(), path, core.HostTables{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e", ToolCallID: fmt.Sprint("k", i%300),
			ObservedAt: time.Now(), Payload: &core.Payload{TotalTokens: int64(i + 1), Description: strings.Repeat("d", i%4096)}})
		if err := store.Upsert(context.Background(), row); err != nil {
			fmt.Println("ERROR", err)
			continue
		}
		fmt.Printf("COMMITTED k%d %d\n", i%300, i+1) // acknowledged only after the commit returned
	}
}

// TestSQLiteKilledWhileRecording: SIGKILL in the middle of writes leaves a
// database that opens cleanly with every acknowledged write intact.
func TestSQLiteKilledWhileRecording(t *testing.T) {
	e := testenv.SQLite(t)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s", "t")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteKilledWhileRecordingHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "SUBAGENTCTX_RECORD_DB="+e.DSN)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int64{}
	acks := 0
	sc := bufio.NewScanner(out)
	for acks < 3000 && sc.Scan() {
		var key string
		var v int64
		if _, err := fmt.Sscanf(sc.Text(), "COMMITTED %s %d", &key, &v); err == nil {
			acked[key] = v
			acks++
		}
	}
	cmd.Process.Kill() // SIGKILL, mid-write
	cmd.Wait()
	if acks < 3000 {
		t.Fatalf("child acknowledged only %d writes", acks)
	}
	db, err := sqlite.OpenDB(e.DSN) // a fresh open after the crash
	if err != nil {
		t.Fatal(err)
	}
	var check string
	db.Raw(`PRAGMA integrity_check`).Scan(&check)
	if check != "ok" {
		t.Fatalf("integrity_check: %s", check)
	}
	store, err := sqlite.New(context.Background(), db, core.HostTables{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := store.ListBySession(context.Background(), "s", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range rows {
		got[r.ToolCallID] = *r.TotalTokens
	}
	for k, v := range acked {
		if got[k] < v {
			t.Errorf("%s: acknowledged total_tokens %d, found %d after the crash", k, v, got[k])
		}
	}
}

// TestHammerOneKey: 64 goroutines write one key at once on each dialect:
// exactly one row, its invariants hold, and no write fails.
func TestHammerOneKey(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s", "t")
		rec, _ := core.NewRecorder(e.Store, core.WithTimeout(30*time.Second))
		t0 := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Go(func() {
				for i := range 20 {
					status := "in_progress"
					if i == 19 && g%8 == 0 {
						status = "completed"
					}
					rec.Record(context.Background(), core.Frame{TaskSessionID: "s", TaskID: "t", TurnID: fmt.Sprint("turn-", g),
						ExecutionID: "e", ToolCallID: "the-key", ToolStatus: status, ObservedAt: t0.Add(time.Duration(g*20+i) * time.Millisecond),
						Payload: &core.Payload{TotalTokens: int64(g*20 + i + 1), IsAsync: g == 63 && i == 0}})
				}
			})
		}
		wg.Wait()
		if v := rec.Counters().Values(); v.Failed != 0 || v.Persisted != 64*20 {
			t.Fatalf("counters %+v", v)
		}
		rows, err := e.Store.ListBySession(context.Background(), "s", core.Page{})
		if err != nil || len(rows) != 1 {
			t.Fatalf("rows %d, %v", len(rows), err)
		}
		r := rows[0]
		if !r.IsAsync || r.TurnID == nil || r.SettledAt == nil || *r.ToolStatus != "completed" || r.Source != core.SourceLive ||
			r.ObservedAt.Before(t0) || r.ObservedAt.After(t0.Add(64*20*time.Millisecond)) {
			t.Errorf("invariants: %+v", r)
		}
	})
}
