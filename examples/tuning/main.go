// Command tuning records a burst of subagent frames into embedded SQLite
// through a recorder tuned for a host's traffic, without fx: the pass runs
// in the background while the recorder already queues, an observer sees
// every batch, frames without an identity are refused at the edge, a
// session is read back page by page, and retention prunes what is old.
//
//	go -C examples run ./tuning
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

func main() {
	path := flag.String("db", "", "SQLite file (default: a new temporary directory)")
	flag.Parse()
	if *path == "" {
		dir, err := os.MkdirTemp("", "subagentctx-tuning-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		*path = filepath.Join(dir, "host.db")
	}
	if err := run(context.Background(), os.Stdout, *path); err != nil {
		log.Fatal(err)
	}
}

// batches is the host's view of the recorder's writes (core.Observer):
// each attempt's outcome, counted, as a metrics exporter would.
type batches struct {
	mu       sync.Mutex
	outcomes map[core.BatchOutcome]int
	frames   int
}

func (b *batches) Batch(frames int, _ time.Duration, outcome core.BatchOutcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outcomes[outcome]++
	if outcome == core.BatchWritten {
		b.frames += frames
	}
}

// refused says why the host turns a frame away before recording it, or "":
// one without an identity would be skipped (and counted) by the record.
func refused(v core.Verdict) string {
	if v.NoIdentity {
		return "a frame without a session, task or tool call id"
	}
	return ""
}

func run(ctx context.Context, w io.Writer, path string) error {
	db, err := sqlite.OpenDB(path)
	if err != nil {
		return err
	}
	if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
		return err
	}
	if err := kandevtest.InsertSession(ctx, db, sqlstore.Tables{}, "sess-1", "task-1"); err != nil {
		return err
	}
	store, err := sqlite.New(db)
	if err != nil {
		return err
	}
	defer store.Close()

	// The pass runs in the background; the recorder queues from the first
	// frame and writes once the table is ready (WithReady).
	runner := migration.NewRunner(migration.New(store))
	runner.Start(ctx)
	defer runner.Stop(ctx)
	seen := &batches{outcomes: map[core.BatchOutcome]int{}}
	clock := func() time.Time { return time.Now().UTC() } // the host's own clock, for frames without a time
	rec, err := core.NewRecorder(store,
		core.WithManualStart(), // the writers start below, where the host starts what runs
		core.WithReady(runner.Ready()),
		core.WithQueue(4*core.DefaultQueueSize), // a fan-out burst never drops a frame
		core.WithQueueBytes(256<<20),            // nor a burst of long descriptions
		core.WithBatch(64),                      // one transaction per 64 frames
		core.WithWriters(1),                     // SQLite serialises writers anyway
		core.WithRetry(20*time.Millisecond, time.Second),
		core.WithWriteTimeout(2*time.Second),
		core.WithClock(clock),
		core.WithObserver(seen),
		// The host's own wording, which its log alerts key on.
		core.WithFailureLog("failed to persist subagent context", "session_id"),
	)
	if err != nil {
		return err
	}
	rec.Start()

	frames := []core.Frame{{TaskSessionID: "sess-1", TaskID: "task-1", ToolCallID: ""}} // no tool call id
	for i := range 10 {
		frames = append(frames, core.Frame{TaskSessionID: "sess-1", TaskID: "task-1", TurnID: "turn-1",
			ExecutionID: "exec-1", ToolCallID: fmt.Sprintf("toolu_%02d", i), ToolStatus: "completed",
			Payload: &core.Payload{SubagentType: "explorer", TotalTokens: int64(1000 + i)}})
	}
	for _, f := range frames {
		// Refuse at the edge what the record would skip anyway, saying why.
		if _, verdict := core.Normalize(f); refused(verdict) != "" {
			fmt.Fprintf(w, "refused: %s\n", refused(verdict))
			continue
		}
		rec.Record(ctx, f)
	}
	// A long-running host closes at shutdown, long after the table became
	// ready; this short program waits for it first, or Close would give the
	// queued frames up.
	<-runner.Ready()
	if err := rec.Flush(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "recorder: %s\n", readiness(rec.State()))
	if err := rec.Close(ctx); err != nil {
		return err
	}
	seen.mu.Lock()
	fmt.Fprintf(w, "batches written: %d, frames written: %d\n", seen.outcomes[core.BatchWritten], seen.frames)
	seen.mu.Unlock()

	// A session read back four rows at a time, resuming after the last
	// row's cursor (rows written meanwhile are neither skipped nor repeated).
	var after *core.Cursor
	for page := 1; ; page++ {
		rows, err := store.ListBySession(ctx, "sess-1", core.Page{Limit: 4, After: after})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		bySource := map[core.Source]int{}
		for _, r := range rows {
			bySource[r.Source]++
		}
		fmt.Fprintf(w, "page %d: %d rows (%d live), %s … %s\n", page, len(rows), bySource[core.SourceLive],
			rows[0].ToolCallID,
			rows[len(rows)-1].ToolCallID)
		cursor := rows[len(rows)-1].Cursor()
		after = &cursor
	}

	// Retention: rows last written before a boundary go; the boundary
	// never moves back. A prune needs the whole pass done (its backfill
	// would recover what a prune deletes).
	<-runner.Done()
	var pruned core.PruneResult
	if pruned, err = store.Prune(ctx, time.Now().Add(-30*24*time.Hour)); err != nil {
		return err
	}
	fmt.Fprintf(w, "pruned %d rows (boundary advanced: %v)\n", pruned.Deleted, pruned.Advanced)
	return nil
}

// readiness is what a host's readiness probe says of the recorder: whether
// it can write now, and when it last did.
func readiness(st core.RecorderState) string {
	if !st.Ready || !st.Reachable {
		return "not ready"
	}
	if st.LastWrite.IsZero() {
		return "ready, nothing written yet"
	}
	return "ready, last write " + st.LastWrite.Format(time.RFC3339)
}
