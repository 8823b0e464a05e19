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
// SQL provides *core.Recorder, core.Store, core.Reader, *core.Counters and
// *backfill.Runner from the host's *sqlstore.Store. Start returns at once:
// the migration pass runs in the background (retried with backoff while it
// fails), and the recorder queues frames until the table is ready. Stop
// drains the recorder, stops the pass and closes the store (a handle the
// host supplied stays open). Memory is the same graph on the memory store,
// for a host's tests.
package fxmodule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
)

// Config tunes the module; supplying it is optional (fx.Supply).
type Config struct {
	// QueueSize bounds the frames waiting to be written (default
	// core.DefaultQueueSize).
	QueueSize int
	// RetryMin and RetryMax bound the backoff between attempts of the
	// migration pass (default 1s and 1 minute).
	RetryMin, RetryMax time.Duration
}

// Validate checks the config, naming the field at fault.
func (c Config) Validate() error {
	switch {
	case c.QueueSize < 0:
		return fmt.Errorf("fxmodule: Config.QueueSize is %d: want 0 (the default) or more", c.QueueSize)
	case c.RetryMin < 0 || c.RetryMax < 0:
		return fmt.Errorf(
			"fxmodule: Config.RetryMin (%v) and Config.RetryMax (%v) must not be negative", c.RetryMin, c.RetryMax,
		)
	case c.RetryMax > 0 && c.RetryMax < c.RetryMin:
		return fmt.Errorf("fxmodule: Config.RetryMax (%v) is below Config.RetryMin (%v)", c.RetryMax, c.RetryMin)
	}
	return nil
}

type params struct {
	fx.In
	Config Config       `optional:"true"`
	Log    *slog.Logger `optional:"true"`
	LC     fx.Lifecycle
}

func (p params) logger() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}

// SQL wires a *sqlstore.Store that the host provides.
var SQL = fx.Module("subagentctx",
	fx.Provide(
		func(s *sqlstore.Store) core.Store { return s }, func(s *sqlstore.Store) core.Reader { return s }, newRunner,
		newSQLRecorder, core.ProcessCounters,
	),
	fx.Invoke(func(*core.Recorder) {}), // the lifecycle runs even if nothing records yet
)

// Memory wires a memory store, for a host's unit tests: the same types as
// SQL but *backfill.Runner (there is nothing to migrate).
var Memory = fx.Module("subagentctx",
	fx.Provide(
		fx.Private,
		memory.New,
	),
	fx.Provide(
		func(s *memory.Store) core.Store { return s }, func(s *memory.Store) core.Reader { return s }, newMemoryRecorder,
		core.ProcessCounters,
	),
)

func newRunner(p params, s *sqlstore.Store) (*backfill.Runner, error) {
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	var opts []backfill.RunnerOption
	if p.Config.RetryMin > 0 || p.Config.RetryMax > 0 {
		opts = append(opts, backfill.WithRetry(p.Config.RetryMin, p.Config.RetryMax))
	}
	return backfill.NewRunner(backfill.New(s, backfill.WithLogger(p.logger())), opts...), nil
}

func recorderOptions(p params, c *core.Counters) []core.RecorderOption {
	opts := []core.RecorderOption{core.WithCounters(c), core.WithLogger(p.logger())}
	if p.Config.QueueSize > 0 {
		opts = append(opts, core.WithQueue(p.Config.QueueSize))
	}
	return opts
}

func newSQLRecorder(p params, s *sqlstore.Store, runner *backfill.Runner, c *core.Counters) (*core.Recorder, error) {
	rec, err := core.NewRecorder(s, append(recorderOptions(p, c), core.WithReady(runner.Ready()))...)
	if err != nil {
		return nil, err
	}
	p.LC.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			runner.Start(ctx) // returns at once: the pass runs in the background
			return nil
		},
		// Drain the recorder first, then stop the pass, then release the
		// store. While the table is not ready nothing can be written: the
		// queued frames are given up at once (counted failed) rather than
		// waited for until the stop timeout.
		OnStop: func(ctx context.Context) error {
			drain := ctx
			select {
			case <-runner.Ready():
			default:
				var cancel context.CancelFunc
				drain, cancel = context.WithCancel(ctx)
				cancel()
			}
			return errors.Join(rec.Close(drain), runner.Stop(ctx), s.Close())
		},
	})
	return rec, nil
}

func newMemoryRecorder(p params, s *memory.Store, c *core.Counters) (*core.Recorder, error) {
	if err := p.Config.Validate(); err != nil {
		return nil, err
	}
	return core.NewRecorder(s, recorderOptions(p, c)...)
}
