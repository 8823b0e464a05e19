package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// cmdDemo shows the library end to end on embedded SQLite in a fresh
// temporary directory: a Kandev-shaped host with message history, the
// migration pass with its backfill, a realistic live frame stream, then the
// rows, statistics, activation and health.
func cmdDemo(ctx context.Context, e *env, _ *noFlags) error {
	dir, err := os.MkdirTemp("", "subagentctl-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e.dsn = dsn{value: filepath.Join(dir, "kandev.db")}
	e.tables = sqlstore.Tables{}.WithDefaults()
	out := e.stdout
	section := func(title string) { fmt.Fprintf(out, "\n== %s\n", title) }

	// The host: its tables and a history of 6 sessions before this library
	// was installed.
	db, err := sqlite.OpenDB(e.dsn.value)
	if err != nil {
		return err
	}
	if err := kandevtest.CreateTables(ctx, db, e.tables); err != nil {
		return err
	}
	if sqlDB, err := db.DB(); err == nil {
		sqlDB.Close()
	}
	s, err := e.open(ctx, migrating)
	if err != nil {
		return err
	}
	defer s.Close()
	db = s.DB()
	history := time.Now().UTC().Add(-72 * time.Hour)
	ids, msgs := kandevtest.History("", 6, 120, history)
	for _, id := range ids {
		if err := kandevtest.InsertSession(ctx, db, e.tables, id, id+"-task"); err != nil {
			return err
		}
	}
	if err := kandevtest.InsertMessages(ctx, db, e.tables, msgs); err != nil {
		return err
	}
	fmt.Fprintf(
		out, "host database %s: %d sessions, %d messages of history (some subagent, some malformed)\n", e.dsn.value, len(ids),
		len(msgs),
	)

	section("migration pass (at boot)")
	fmt.Fprint(out, e.migrate(ctx, s))

	// Live: a session after activation; the host writes its messages and
	// hands every subagent frame to the Recorder.
	section("live frames")
	rec, err := core.NewRecorder(s, core.WithLogger(e.logger()))
	if err != nil {
		return err
	}
	live := time.Now().UTC()
	frames := kandevtest.Stream("demo-", live)
	sess := frames[0].TaskSessionID
	if err := kandevtest.InsertSession(ctx, db, e.tables, sess, frames[0].TaskID); err != nil {
		return err
	}
	var liveMsgs []kandevtest.Message
	seen := map[string]bool{}
	for _, f := range frames {
		if f.ToolCallID == "" || seen[f.ToolCallID] {
			continue
		}
		seen[f.ToolCallID] = true
		meta := kandevtest.Subagent(f.ToolCallID, f.ToolStatus, f.Payload).JSON()
		liveMsgs = append(
			liveMsgs,
			kandevtest.Message{ID: "live-" + f.ToolCallID, TaskSessionID: sess, TaskID: f.TaskID,
				TurnID: f.TurnID, Metadata: &meta, CreatedAt: f.ObservedAt},
		)
	}
	if err := kandevtest.InsertMessages(ctx, db, e.tables, liveMsgs); err != nil {
		return err
	}
	for _, f := range frames {
		rec.Record(ctx, f)
	}
	if err := rec.Close(ctx); err != nil { // drain: every frame written
		return err
	}
	v := rec.Counters().Values()
	fmt.Fprintf(out, "%d frames (out of order, duplicated, nested, async, 8-way fan-out, "+
		"a tool call id reused by a second execution, one without identity)\n", len(frames))
	fmt.Fprintf(out, "counters: attempted %d = persisted %d + skipped_no_identity %d + failed %d; "+
		"anomalous_value %d, unknown_execution %d\n",
		v.Attempted, v.Persisted, v.SkippedNoIdentity, v.Failed, v.AnomalousValue, v.UnknownExecution)

	section("rows of " + sess)
	rows, err := s.ListBySession(ctx, sess, core.Page{})
	if err != nil {
		return err
	}
	printTree(out, rows)

	section("statistics")
	for _, q := range []report.StatsQuery{{TaskSessionID: sess}, {TaskSessionID: ids[0]}, {}} {
		st, err := s.Stats(ctx, q)
		if err != nil {
			return err
		}
		printStats(out, st)
	}

	section("activation")
	a, err := s.Activation(ctx)
	if err != nil {
		return err
	}
	printActivation(out, a)

	section("health")
	h, err := s.Health(ctx, report.HealthQuery{})
	if err != nil {
		return err
	}
	printHealth(out, h)
	return nil
}
