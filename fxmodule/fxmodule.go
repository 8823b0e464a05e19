// Package fxmodule wires subagentctx into a go.uber.org/fx application. It
// only wires the library's plain constructors (everything works without
// fx) and imports no adapter, so a host links only the database driver it
// chooses (a PostgreSQL-only host builds with CGO_ENABLED=0):
//
//	fx.New(
//		fx.Provide(func() (*sqlstore.Store, error) {
//			db, err := postgres.OpenDB(dsn) // no connection yet
//			if err != nil {
//				return nil, err
//			}
//			return postgres.New(db)
//		}),
//		fxmodule.SQL,
//		fx.Invoke(func(rec *core.Recorder) { … }),
//	)
//
// SQL provides *core.Recorder, core.Store, report.Reader, report.StaleLister, *core.Counters and
// *migration.Runner from the host's *sqlstore.Store. Start returns at once:
// the migration pass runs in the background (retried with backoff while it
// fails), and the recorder queues frames until the table is ready. Stop
// drains the recorder for at most Config.Drain, stops the pass and closes
// the store (a handle the host supplied stays open). Stop never fails the
// host's stop: what could not be written is given up, counted failed and
// logged at WARN with the cause, and so is a pass or a store that did not
// stop cleanly. Memory is the same graph on the memory store, for a host's
// tests.
//
// The counters are the process's (core.ProcessCounters, published on
// expvar once). A test that starts several apps and wants each to count
// from zero gives each its own:
//
//	fx.Decorate(func(*core.Counters) *core.Counters { return core.NewCounters() })
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package fxmodule

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/liberr"
	"github.com/subagentctx/subagentctx/migration"
)

// Config tunes the module; supplying it is optional (fx.Supply).
type Config struct {
	// QueueSize bounds the frames waiting to be written (default
	// core.DefaultQueueSize).
	QueueSize int
	// RetryMin and RetryMax bound the backoff between attempts of the
	// migration pass (default 1s and 1 minute).
	RetryMin, RetryMax time.Duration
	// Drain bounds how long Stop waits for queued frames to be written
	// (default core.DefaultDrain, a third of fx's default stop timeout).
	Drain time.Duration
	// WriteTimeout bounds one batch's write (default
	// core.DefaultWriteTimeout).
	WriteTimeout time.Duration
}

// Validate checks the config, naming the field at fault.
func (c Config) Validate() error {
	switch {
	case c.QueueSize < 0:
		return liberr.Errorf("fxmodule: Config.QueueSize is %d: want 0 (the default) or more", c.QueueSize)
	case c.RetryMin < 0 || c.RetryMax < 0:
		return liberr.Errorf("fxmodule: Config.RetryMin (%v) and Config.RetryMax (%v) must not be negative",
			c.RetryMin, c.RetryMax)
	case c.RetryMax > 0 && c.RetryMax < c.RetryMin:
		return liberr.Errorf("fxmodule: Config.RetryMax (%v) is below Config.RetryMin (%v)", c.RetryMax, c.RetryMin)
	case c.Drain < 0:
		return liberr.Errorf("fxmodule: Config.Drain is %v: want 0 (the default) or more", c.Drain)
	case c.WriteTimeout < 0:
		return liberr.Errorf("fxmodule: Config.WriteTimeout is %v: want 0 (the default) or more", c.WriteTimeout)
	}
	return nil
}

type params struct {
	fx.In
	Config Config       `optional:"true"`
	Log    *slog.Logger `optional:"true"`
	LC     fx.Lifecycle
	// Options are the host's own recorder options, given to the group
	// RecorderOptions names (fx.ResultTags), after the module's.
	Options []core.RecorderOption `group:"subagentctx.recorder"`
}

// RecorderOptions is the fx value group a host adds recorder options to,
// applied after the module's own — core.WithWritten for the OpenTelemetry
// bridge, say:
//
//	fx.Provide(fx.Annotate(func(b *otelbridge.Bridge) core.RecorderOption { return core.WithWritten(b.Written) },
//		fx.ResultTags(`group:"subagentctx.recorder"`)))
const RecorderOptions = "subagentctx.recorder"

func (p params) logger() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}

// SQL wires a *sqlstore.Store that the host provides.
var SQL = fx.Module("subagentctx",
	fx.Provide(
		func(s *sqlstore.Store) core.Store { return s }, func(s *sqlstore.Store) report.Reader { return s },
		func(s *sqlstore.Store) report.StaleLister { return s }, newRunner, newSQLRecorder, core.ProcessCounters,
	),
	fx.Invoke(func(*core.Recorder) {}), // the lifecycle runs even if nothing records yet
)

// Memory wires a memory store, for a host's unit tests: the same types as
// SQL but *migration.Runner (there is nothing to migrate).
var Memory = fx.Module("subagentctx",
	fx.Provide(
		fx.Private,
		memory.New,
	),
	fx.Provide(
		func(s *memory.Store) core.Store { return s }, func(s *memory.Store) report.Reader { return s },
		func(s *memory.Store) report.StaleLister { return s }, newMemoryRecorder, core.ProcessCounters,
	),
)

func newRunner(p params, s *sqlstore.Store) (*migration.Runner, error) {
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	var opts []migration.RunnerOption
	if p.Config.RetryMin > 0 || p.Config.RetryMax > 0 {
		opts = append(opts, migration.WithRetry(p.Config.RetryMin, p.Config.RetryMax))
	}
	return migration.NewRunner(migration.New(s, migration.WithLogger(p.logger())), opts...), nil
}

func recorderOptions(p params, c *core.Counters) []core.RecorderOption {
	opts := []core.RecorderOption{core.WithCounters(c), core.WithLogger(p.logger()), core.WithManualStart()}
	if p.Config.QueueSize > 0 {
		opts = append(opts, core.WithQueue(p.Config.QueueSize))
	}
	if p.Config.Drain > 0 {
		opts = append(opts, core.WithDrain(p.Config.Drain))
	}
	if p.Config.WriteTimeout > 0 {
		opts = append(opts, core.WithWriteTimeout(p.Config.WriteTimeout))
	}
	return append(opts, p.Options...)
}

func newSQLRecorder(p params, s *sqlstore.Store, runner *migration.Runner, c *core.Counters) (*core.Recorder, error) {
	rec, err := core.NewRecorder(s, append(recorderOptions(p, c), core.WithReady(runner.Ready()))...)
	if err != nil {
		return nil, err
	}
	p.LC.Append(fx.Hook{
		// Nothing runs before the application starts: if it never does
		// (another constructor failed), nothing is left behind.
		OnStart: func(ctx context.Context) error {
			rec.Start()
			runner.Start(ctx) // returns at once: the pass runs in the background
			return nil
		},
		// Drain the recorder first (for at most its budget; while the table
		// is not ready nothing is waited for), then stop the pass, then
		// release the store. Telemetry never fails the host's stop: the
		// recorder logs what it gave up; the rest is logged here.
		OnStop: func(ctx context.Context) error {
			_ = rec.Close(ctx) // its WARN says what was given up and why
			log := p.logger()
			if err := runner.Stop(ctx); err != nil {
				log.WarnContext(ctx, "subagentctx: the migration pass did not stop cleanly", slog.Any("error", err))
			}
			if err := s.Close(); err != nil {
				log.WarnContext(ctx, "subagentctx: closing the store failed", slog.Any("error", err))
			}
			return nil
		},
	})
	return rec, nil
}

func newMemoryRecorder(p params, s *memory.Store, c *core.Counters) (*core.Recorder, error) {
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	rec, err := core.NewRecorder(s, recorderOptions(p, c)...)
	if err != nil {
		return nil, err
	}
	// As on SQL: the writers start with the application, and after Stop a
	// frame is counted failed, not written.
	p.LC.Append(fx.StartStopHook(rec.Start, func(ctx context.Context) { _ = rec.Close(ctx) }))
	return rec, nil
}
