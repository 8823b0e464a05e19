package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
)

func cmdMigrate(ctx context.Context, e *env, args []string) error {
	fs, err := commandFlags("migrate", args, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	if err := noArgs("migrate", fs); err != nil {
		return err
	}
	s, err := e.open(ctx, migrating)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := migrate(ctx, e, s)
	if err != nil {
		return err
	}
	fmt.Fprint(e.stdout, e.dsn.redact(r.String()))
	if r.Failed() {
		return exitError{exitFail}
	}
	return nil
}

// migrate runs a pass; its WARN lines go to stderr (redacted), and on a
// terminal a ticker shows it is alive.
func migrate(ctx context.Context, e *env, s store) (backfill.Report, error) {
	log := slog.New(slog.NewTextHandler(redactingWriter{e}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := backfill.New(s, backfill.WithLogger(log))
	if err != nil {
		return backfill.Report{}, err
	}
	stop := e.ticker(func(elapsed time.Duration) string {
		return fmt.Sprintf("migrating… %s", elapsed.Truncate(time.Second))
	})
	defer stop()
	return m.Run(ctx), nil
}

type redactingWriter struct{ e *env }

func (w redactingWriter) Write(p []byte) (int, error) {
	_, err := io.WriteString(w.e.stderr, w.e.dsn.redact(string(p)))
	return len(p), err
}

// ticker prints a status line on stderr every second while work runs, when
// stderr is a terminal; the returned function stops it and clears the line.
func (e *env) ticker(status func(elapsed time.Duration) string) func() {
	if !e.progress {
		return func() {}
	}
	start, done, finished := time.Now(), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(e.stderr, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(e.stderr, "\r\033[K%s", status(time.Since(start)))
			}
		}
	}()
	return func() { close(done); <-finished }
}

func cmdRecord(ctx context.Context, e *env, args []string) error {
	fs, err := commandFlags("record", args, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("record: one input at most, got %d", fs.NArg())
	}
	in := e.stdin
	if name := fs.Arg(0); name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	s, err := e.open(ctx, writing)
	if err != nil {
		return err
	}
	defer s.Close()
	log := slog.New(slog.NewTextHandler(redactingWriter{e}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rec, err := core.NewRecorder(s, core.WithLogger(log))
	if err != nil {
		return err
	}
	bad, err := recordLines(ctx, e, in, rec)
	v := rec.Counters().Values()
	fmt.Fprintf(e.stdout, "attempted %d  persisted %d  skipped_no_identity %d  failed %d  anomalous_value %d  unknown_execution %d\n",
		v.Attempted, v.Persisted, v.SkippedNoIdentity, v.Failed, v.AnomalousValue, v.UnknownExecution)
	if err != nil {
		return err
	}
	if bad > 0 || v.Failed > 0 {
		return exitError{exitFail}
	}
	return nil
}

// recordLines records each line in order; a bad line is reported with its
// number and skipped.
func recordLines(ctx context.Context, e *env, in io.Reader, rec *core.Recorder) (bad int, err error) {
	var lines atomic.Int64
	stop := e.ticker(func(elapsed time.Duration) string {
		n := lines.Load()
		return fmt.Sprintf("recorded %d lines (%.0f/s)", n, float64(n)/elapsed.Seconds())
	})
	defer stop()
	r := bufio.NewReader(in)
	for n := 1; ; n++ {
		line, readErr := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			f, err := core.DecodeFrame(line)
			if err != nil {
				fmt.Fprintf(e.stderr, "line %d: %v (skipped)\n", n, err)
				bad++
			} else {
				rec.Record(ctx, f)
			}
			lines.Add(1)
		}
		if errors.Is(readErr, io.EOF) {
			return bad, nil
		}
		if readErr != nil {
			return bad, readErr
		}
		if ctx.Err() != nil {
			return bad, ctx.Err()
		}
	}
}

func cmdList(ctx context.Context, e *env, args []string) error {
	var session, turn string
	var limit int
	var asJSON *bool
	fs, err := commandFlags("list", args, func(fs *flag.FlagSet) {
		fs.StringVar(&session, "session", "", "")
		fs.StringVar(&turn, "turn", "", "")
		fs.IntVar(&limit, "limit", 0, "")
		asJSON = jsonFlag(fs)
	})
	if err != nil {
		return err
	}
	if err := noArgs("list", fs); err != nil {
		return err
	}
	if (session == "") == (turn == "") {
		return usagef("list: give exactly one of --session ID and --turn ID")
	}
	if limit < 0 {
		return usagef("list: --limit %d is negative", limit)
	}
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	var rows []core.Subagent
	if session != "" {
		rows, err = s.ListBySession(ctx, session, core.Page{Limit: limit})
	} else {
		rows, err = s.ListByTurn(ctx, turn, core.Page{Limit: limit})
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, rowsJSON(rows))
	}
	printRows(e.stdout, rows)
	return nil
}

func cmdStats(ctx context.Context, e *env, args []string) error {
	var q core.StatsQuery
	var asJSON *bool
	fs, err := commandFlags("stats", args, func(fs *flag.FlagSet) {
		fs.StringVar(&q.TaskSessionID, "session", "", "")
		fs.StringVar(&q.TaskID, "task", "", "")
		asJSON = jsonFlag(fs)
	})
	if err != nil {
		return err
	}
	if err := noArgs("stats", fs); err != nil {
		return err
	}
	if err := q.Validate(); err != nil {
		return usagef("stats: give --session or --task, not both")
	}
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Stats(ctx, q)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, st)
	}
	printStats(e.stdout, st)
	return nil
}

func cmdActivation(ctx context.Context, e *env, args []string) error {
	var asJSON *bool
	fs, err := commandFlags("activation", args, func(fs *flag.FlagSet) { asJSON = jsonFlag(fs) })
	if err != nil {
		return err
	}
	if err := noArgs("activation", fs); err != nil {
		return err
	}
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	a, err := s.Activation(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, a)
	}
	printActivation(e.stdout, a)
	return nil
}

// Health's exit codes.
const (
	healthShortfall    = 1
	healthError        = 2
	healthNotActivated = 3
)

func cmdHealth(ctx context.Context, e *env, args []string) error {
	var asJSON *bool
	fs, err := commandFlags("health", args, func(fs *flag.FlagSet) { asJSON = jsonFlag(fs) })
	if err != nil {
		return err
	}
	if err := noArgs("health", fs); err != nil {
		return err
	}
	h, a, err := health(ctx, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "subagentctl: %s\n", e.dsn.redact(err.Error()))
		return exitError{healthError}
	}
	if *asJSON {
		if err := writeJSON(e.stdout, h); err != nil {
			return err
		}
	} else {
		printHealth(e.stdout, h)
	}
	switch {
	case !h.Ran && !a.CaptureSince.Present:
		return exitError{healthNotActivated}
	case !h.Ran:
		return exitError{healthError}
	case h.Shortfall > 0:
		return exitError{healthShortfall}
	}
	return nil
}

func health(ctx context.Context, e *env) (core.Health, core.Activation, error) {
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return core.Health{}, core.Activation{}, err
	}
	defer s.Close()
	a, err := s.Activation(ctx)
	if err != nil {
		return core.Health{}, a, err
	}
	h, err := s.Health(ctx)
	return h, a, err
}
