// Command hostapp is a host built like the reference host: its own
// database handle through sqlx over database/sql, zap for logs, fx for
// wiring. It hands its handle and its logger to subagentctx, records a
// realistic frame stream, waits for the migration pass, prints what was
// recorded and stops; no goroutine of the library outlives the stop.
//
//	go -C examples run ./hostapp -db sqlite:/tmp/host.db
//	go -C examples run ./hostapp -db postgres://user@localhost/app
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the host's PostgreSQL driver, "pgx"
	"github.com/jmoiron/sqlx"
	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"

	"github.com/subagentctx/subagentctx/adapters/auto"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/fxmodule"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

func main() {
	db := flag.String("db", "", "sqlite:PATH or a postgres:// URL (default: SQLite in a temporary directory)")
	flag.Parse()
	if *db == "" {
		dir, err := os.MkdirTemp("", "subagentctx-hostapp-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		*db = "sqlite:" + filepath.Join(dir, "host.db")
	}
	if err := run(context.Background(), os.Stdout, os.Stderr, *db); err != nil {
		log.Fatal(err)
	}
}

// openHostDB is the host's own handle, as it opens it today.
func openHostDB(dsn string) (*sqlx.DB, error) {
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		// The settings subagentctx checks for: foreign keys and a busy
		// timeout (sqlite.DSN adds them, with WAL).
		return sqlx.Open("sqlite3", sqlite.DSN(path))
	}
	return sqlx.Open("pgx", dsn)
}

// README: zap
// newLogger is the host's zap logger, and the same logger as a
// *slog.Logger for subagentctx (through zap's slog bridge): the library's
// lines reach the host's sink, fields and all.
func newLogger(w io.Writer) (*zap.Logger, *slog.Logger) {
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(w), zap.InfoLevel)
	z := zap.New(core)
	return z, slog.New(zapslog.NewHandler(core))
}

// README: end

func run(ctx context.Context, stdout, logs io.Writer, dsn string) error {
	hostDB, err := openHostDB(dsn)
	if err != nil {
		return err
	}
	defer hostDB.Close()
	if err := hostSchema(ctx, hostDB); err != nil {
		return err
	}
	zlog, slogger := newLogger(logs)
	defer zlog.Sync()

	var handler *StreamHandler
	var runner *migration.Runner
	var reader report.Reader
	app := fx.New(
		fx.NopLogger,
		// README: hostapp
		fx.Supply(slogger), // subagentctx logs through the host's zap core
		fx.Provide(func() (*sqlstore.Store, error) {
			// The host's own pool, handed over: no connection of the
			// library's own is opened, and its driver picks the adapter.
			return auto.NewSQL(hostDB.DB)
		}),
		fxmodule.SQL,
		fx.Provide(NewStreamHandler),
		// README: end
		fx.Populate(&handler, &runner, &reader),
	)
	if err := app.Start(ctx); err != nil {
		return err
	}
	for _, f := range kandevtest.Stream("", time.Now().UTC()) {
		f.TaskSessionID = "sess-1"
		handler.OnSubagentFrame(ctx, f)
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	report, waitErr := runner.Wait(wait)
	fmt.Fprint(stdout, report)
	stopErr := app.Stop(context.Background()) // drains the recorder
	if err := errors.Join(waitErr, stopErr); err != nil {
		return err
	}
	return summary(ctx, stdout, hostDB)
}

// StreamHandler is the host's tool-call stream handler.
type StreamHandler struct{ rec *core.Recorder }

// NewStreamHandler is the host's constructor; fx injects the Recorder.
func NewStreamHandler(rec *core.Recorder) *StreamHandler { return &StreamHandler{rec: rec} }

// OnSubagentFrame is called for each recognised subagent frame.
func (h *StreamHandler) OnSubagentFrame(ctx context.Context, f core.Frame) { h.rec.Record(ctx, f) }

// hostSchema makes the host's own tables, as the host's schema init would.
func hostSchema(ctx context.Context, db *sqlx.DB) error {
	s, err := store(db)
	if err != nil {
		return err
	}
	if err := kandevtest.CreateTables(ctx, s.DB(), s.Tables()); err != nil {
		return err
	}
	return kandevtest.InsertSession(ctx, s.DB(), s.Tables(), "sess-1", "task-1")
}

// store is the record's store on the host's handle, whichever its database.
func store(db *sqlx.DB) (*sqlstore.Store, error) { return auto.NewSQL(db.DB) }

// summary prints what was recorded, read back after the stop.
func summary(ctx context.Context, w io.Writer, db *sqlx.DB) error {
	s, err := store(db)
	if err != nil {
		return err
	}
	st, err := s.Stats(ctx, report.StatsQuery{TaskSessionID: "sess-1"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "sess-1: %d subagents (%d live), state %s\n", st.Subagents, st.Live, st.Activation.State)
	return nil
}
