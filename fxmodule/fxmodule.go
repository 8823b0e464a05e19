// Package fxmodule wires subagentctx into a go.uber.org/fx application:
//
//	fx.New(
//		fx.Supply(fxmodule.Config{Adapter: fxmodule.SQLite, SQLitePath: "kandev.db"}),
//		fxmodule.Module,
//		fx.Invoke(func(rec *core.Recorder) { … }),
//	)
//
// It provides *core.Recorder, core.Store, core.Reader and *core.Counters,
// built by the library's plain constructors (usable without fx). On start
// the table is made ready before start returns, so the first Record finds
// it; the backfill scan then runs in the background and never delays or
// fails start. On stop a running pass is cancelled and awaited, and
// connections the module opened are closed (a *gorm.DB the host supplied is
// left open).
package fxmodule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
)

// Adapter selects the store.
type Adapter string

// Adapters.
const (
	// SQLite: embedded SQLite at Config.SQLitePath (the default).
	SQLite Adapter = "sqlite"
	// Postgres: PostgreSQL at Config.PostgresDSN.
	Postgres Adapter = "postgres"
	// Memory: in memory, for tests; nothing to migrate.
	Memory Adapter = "memory"
	// GORM: the host's own *gorm.DB (Config.DB), SQLite or PostgreSQL.
	GORM Adapter = "gorm"
)

// DefaultSQLitePath is the database file used when SQLitePath is empty.
const DefaultSQLitePath = "subagents.db"

// Config selects and configures the store. Supply it with fx.Supply.
type Config struct {
	Adapter     Adapter  // default SQLite
	SQLitePath  string   // for SQLite; default DefaultSQLitePath
	PostgresDSN string   // for Postgres
	DB          *gorm.DB // for GORM; left open on stop
	// Tables names the host's tables (default Kandev's).
	Tables core.HostTables
	// RecordTimeout bounds one write (default core.DefaultRecordTimeout).
	RecordTimeout time.Duration
	// PrepareRetry is the first delay before retrying a failed table step
	// in the background (doubling up to a minute; default 1s).
	PrepareRetry time.Duration
}

// Validate checks the config, naming the field at fault.
func (c Config) Validate() error {
	switch c.Adapter {
	case "", SQLite, Memory:
	case Postgres:
		if c.PostgresDSN == "" {
			return errors.New("fxmodule: Config.PostgresDSN is empty (required by the postgres adapter)")
		}
	case GORM:
		if c.DB == nil {
			return errors.New("fxmodule: Config.DB is nil (required by the gorm adapter)")
		}
		if _, err := attach(c.DB, core.HostTables{}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("fxmodule: Config.Adapter %q is unknown: want %q, %q, %q or %q", c.Adapter, SQLite, Postgres, Memory, GORM)
	}
	if err := c.Tables.Validate(); err != nil {
		return fmt.Errorf("fxmodule: Config.Tables: %w", err)
	}
	if c.RecordTimeout < 0 || c.PrepareRetry < 0 {
		return errors.New("fxmodule: Config.RecordTimeout and Config.PrepareRetry must not be negative")
	}
	return nil
}

// sqlStore is what both SQL adapters' stores are.
type sqlStore interface {
	core.Store
	core.Reader
	backfill.Target
	CloseStatements() error
}

// attach returns the store for a handle by its GORM dialect, without
// touching the database.
func attach(db *gorm.DB, tables core.HostTables) (sqlStore, error) {
	switch name := db.Dialector.Name(); name {
	case "sqlite":
		return sqlite.Attach(db, tables)
	case "postgres":
		return postgres.Attach(db, tables)
	default:
		return nil, fmt.Errorf("fxmodule: Config.DB uses the %q dialect: want sqlite or postgres", name)
	}
}

// Module provides *core.Recorder, core.Store, core.Reader and *core.Counters
// from a Config.
var Module = fx.Module("subagentctx",
	fx.Provide(fx.Private, newBackend),
	fx.Provide(
		func(b *backend) core.Store { return b.store },
		func(b *backend) core.Reader { return b.reader },
		func() *core.Counters { return core.ProcessCounters() },
		newRecorder,
	),
	fx.Invoke(func(*backend) {}), // the lifecycle runs even if nothing records yet
)

// backend is the store with its lifecycle.
type backend struct {
	store    core.Store
	reader   core.Reader
	migrator *backfill.Migrator // nil for memory
	close    func() error
	log      *slog.Logger
	retry    time.Duration

	cancel context.CancelFunc
	done   sync.WaitGroup
}

type backendIn struct {
	fx.In
	Config Config
	Log    *slog.Logger `optional:"true"`
	LC     fx.Lifecycle
}

func newBackend(in backendIn) (*backend, error) {
	c := in.Config
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b := &backend{log: in.Log, retry: c.PrepareRetry, close: func() error { return nil }}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.retry == 0 {
		b.retry = time.Second
	}
	var db *gorm.DB
	var err error
	switch c.Adapter {
	case Memory:
		m := memory.New()
		b.store, b.reader = m, m
		return b, nil
	case Postgres:
		if db, err = postgres.OpenDB(c.PostgresDSN); err != nil {
			return nil, err
		}
	case GORM:
		db = c.DB
	default:
		path := c.SQLitePath
		if path == "" {
			path = DefaultSQLitePath
		}
		if db, err = sqlite.OpenDB(path); err != nil {
			return nil, err
		}
	}
	if c.Adapter != GORM {
		sqlDB, err := db.DB()
		if err != nil {
			return nil, err
		}
		b.close = sqlDB.Close
	}
	s, err := attach(db, c.Tables)
	if err != nil {
		_ = b.close()
		return nil, err
	}
	b.store, b.reader = s, s
	owned := b.close
	b.close = func() error { return errors.Join(s.CloseStatements(), owned()) }
	if b.migrator, err = backfill.New(s, backfill.WithLogger(b.log)); err != nil {
		return nil, err
	}
	in.LC.Append(fx.Hook{OnStart: b.start, OnStop: b.stop})
	return b, nil
}

// start makes the table ready (the pass's quick steps) before returning,
// then backfills in the background. A failed step is logged at WARN by the
// migrator and retried in the background; start itself never fails.
func (b *backend) start(ctx context.Context) error {
	bg, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	prepared := !b.migrator.Prepare(ctx).Failed()
	b.done.Add(1)
	go func() {
		defer b.done.Done()
		delay := b.retry
		for !prepared {
			select {
			case <-bg.Done():
				return
			case <-time.After(delay):
			}
			prepared = !b.migrator.Prepare(bg).Failed()
			delay = min(2*delay, time.Minute)
		}
		b.migrator.Backfill(bg) // a failure is logged; the next boot retries
	}()
	return nil
}

// stop cancels a running pass and waits for it, then closes what the module
// opened.
func (b *backend) stop(ctx context.Context) error {
	b.cancel()
	waited := make(chan struct{})
	go func() { b.done.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		return fmt.Errorf("fxmodule: the migration pass did not stop in time: %w", ctx.Err())
	}
	return b.close()
}

type recorderIn struct {
	fx.In
	Config   Config
	Store    core.Store
	Counters *core.Counters
	Log      *slog.Logger `optional:"true"`
}

func newRecorder(in recorderIn) (*core.Recorder, error) {
	opts := []core.RecorderOption{core.WithCounters(in.Counters)}
	if in.Log != nil {
		opts = append(opts, core.WithLogger(in.Log))
	}
	if in.Config.RecordTimeout > 0 {
		opts = append(opts, core.WithTimeout(in.Config.RecordTimeout))
	}
	return core.NewRecorder(in.Store, opts...)
}
