// Package refhost is the reference host's subagent repository after its
// swap for the library: the host's own tables and pool (one connection
// included), its own subagent_context_total map left as it was, its log
// wording, and no dialect switch. This file is all the wiring the host
// writes; its test runs it on SQLite and PostgreSQL.
package refhost

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/subagentctx/subagentctx/adapters/auto"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/migration"
)

// Repository is the host's subagent persistence.
type Repository struct {
	store    *sqlstore.Store
	rec      *core.Recorder
	Counters *core.Counters // the host publishes them under a name of its own, if it likes
}

// Open wires the library onto the host's pool: the store (the driver
// picks the dialect), the migration pass, then the recorder.
func Open(ctx context.Context, db *sql.DB, log *slog.Logger) (*Repository, error) {
	store, err := auto.NewSQL(db)
	if err != nil {
		return nil, err
	}
	if err := migration.New(store, migration.WithLogger(log)).Run(ctx).Err(); err != nil {
		return nil, fmt.Errorf("subagent migration: %w", err)
	}
	counters := core.NewCounters()
	rec, err := core.NewRecorder(store, core.WithCounters(counters), core.WithLogger(log),
		core.WithFailureLog("failed to persist subagent context", "session_id"))
	if err != nil {
		return nil, err
	}
	return &Repository{store: store, rec: rec, Counters: counters}, nil
}

// OnSubagentFrame records a frame of the host's stream; it never waits.
func (r *Repository) OnSubagentFrame(ctx context.Context, f core.Frame) { r.rec.Record(ctx, f) }

// Subagents lists a session's subagents.
func (r *Repository) Subagents(ctx context.Context, session string) ([]core.Subagent, error) {
	return r.store.ListBySession(ctx, session, core.Page{})
}

// Close writes what is queued, then stops.
func (r *Repository) Close(ctx context.Context) error { return r.rec.Close(ctx) }
