package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/claude"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/migration"
)

func cmdMigrate(ctx context.Context, e *env, o *jsonFlags) error {
	s, err := e.open(ctx, migrating)
	if err != nil {
		return err
	}
	defer s.Close()
	r := e.migrate(ctx, s)
	e.warnHostIndexes(ctx, s)
	if o.json {
		if err := writeJSON(e.stdout, r); err != nil {
			return err
		}
	} else {
		fmt.Fprint(e.stdout, e.dsn.redact(r.String()))
	}
	switch {
	case r.Failed():
		return exitError{exitFail}
	case r.Cancelled() || ctx.Err() != nil: // a pass stopped by a signal did not complete
		e.warnf("interrupted: the pass did not complete; run migrate again")
		return exitError{exitFail}
	}
	return nil
}

// migrate runs a pass; its warnings go to stderr (redacted), and on a
// terminal a ticker shows it is alive.
func (e *env) migrate(ctx context.Context, s *sqlstore.Store) migration.Report {
	stop := e.ticker(func(elapsed time.Duration) string {
		return fmt.Sprintf("migrating… %s", elapsed.Truncate(time.Second))
	})
	defer stop()
	return migration.New(s, migration.WithLogger(e.logger())).Run(ctx)
}

// logger writes the library's warnings to stderr in the command's own
// format, redacted.
func (e *env) logger() *slog.Logger {
	return slog.New(&warnings{e: e})
}

// warnings is a slog.Handler for WARN and above: "subagentctl: warning:
// message key=value …".
type warnings struct {
	e     *env
	attrs []slog.Attr
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("subagentctl: warning: " + strings.TrimPrefix(r.Message, "subagentctx: "))
	add := func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + shown(a.Value.Resolve().String()))
		return true
	}
	for _, a := range w.attrs {
		add(a)
	}
	r.Attrs(add)
	_, err := io.WriteString(w.e.stderr, w.e.dsn.redact(b.String())+"\n")
	return err
}

func (w *warnings) WithAttrs(as []slog.Attr) slog.Handler {
	return &warnings{e: w.e, attrs: append(append([]slog.Attr(nil), w.attrs...), as...)}
}

func (w *warnings) WithGroup(string) slog.Handler { return w }

// warnf prints a warning in the one format.
func (e *env) warnf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "subagentctl: warning: %s\n", e.dsn.redact(shown(fmt.Sprintf(format, args...))))
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

// recordReport is record's result.
type recordReport struct {
	core.CounterValues
	BadLines int `json:"bad_lines"`
	// Unmatched (--claude-sdk, --claude-hooks): an agent's start or end
	// whose tool call the input never named and no row of the session
	// names by agent id, or that the stream's bound forgot.
	Unmatched *int `json:"unmatched,omitempty"`
}

// source is the input format record was told to read.
func (o *recordFlags) source() (string, error) {
	var set []string
	for _, f := range []struct {
		name string
		on   bool
	}{{"--acp", o.acp}, {"--claude-sdk", o.claudeSDK}, {"--claude-hooks", o.claudeHooks}} {
		if f.on {
			set = append(set, f.name)
		}
	}
	switch {
	case len(set) > 1:
		return "", usagef("record: %s: give one input format", strings.Join(set, " and "))
	case len(set) == 1 && (o.session == "" || o.task == ""):
		return "", usagef("record %s: give --task-session ID and --task ID (the input carries neither)", set[0])
	case len(set) == 0 && (o.session != "" || o.task != "" || o.turn != "" || o.execution != ""):
		return "", usagef("record: --task-session, --task, --turn and --execution go with --acp, --claude-sdk " +
			"or --claude-hooks")
	case o.agent != "" && !o.acp:
		return "", usagef("record: --agent goes with --acp")
	case len(set) == 1:
		return set[0], nil
	}
	return "", nil
}

func cmdRecord(ctx context.Context, e *env, o *recordFlags) error {
	source, err := o.source()
	if err != nil {
		return err
	}
	agent, err := acp.ParseAgent(o.agent)
	if err != nil {
		return usagef("record --agent: %v", err)
	}
	in, done, err := e.input(o.pos)
	if err != nil {
		return err
	}
	defer done()
	s, err := e.open(ctx, writing)
	if err != nil {
		return err
	}
	defer s.Close()
	// No drain budget: at the end of the input, Close waits for every
	// frame as long as it takes, until a signal says to stop.
	rec, err := core.NewRecorder(s, core.WithLogger(e.logger()), core.WithDrain(0))
	if err != nil {
		return err
	}
	var lines atomic.Int64
	stop := e.ticker(func(elapsed time.Duration) string {
		n := lines.Load()
		return fmt.Sprintf(
			"recorded %d lines (%.0f/s), %d frames pending", n, float64(n)/elapsed.Seconds(), rec.Counters().Values().Pending,
		)
	})
	decode := func(line []byte) ([]core.Frame, error) {
		f, err := core.DecodeFrame(line)
		if err != nil {
			return nil, err
		}
		return []core.Frame{f}, nil
	}
	var stream *claude.Stream
	switch source {
	case "--claude-sdk", "--claude-hooks":
		stream = claude.NewStream()
		id := claude.Identity{TaskSessionID: o.session, TaskID: o.task, TurnID: o.turn, ExecutionID: o.execution}
		read := stream.SDK
		if source == "--claude-hooks" {
			read = stream.Hook
		}
		decode = func(line []byte) ([]core.Frame, error) { return read(id, line) }
	case "--acp":
		tr := acp.NewTracker()
		id := acp.Identity{
			TaskSessionID: o.session,
			TaskID:        o.task,
			TurnID:        o.turn,
			ExecutionID:   o.execution,
			Agent:         agent,
		}
		decode = func(line []byte) ([]core.Frame, error) { return tr.Line(id, line) }
	}
	bad, readErr := e.recordLines(ctx, in, rec, &lines, decode)
	var unmatched *int
	if stream != nil && readErr == nil && ctx.Err() == nil {
		n, err := e.joinByAgent(ctx, s, rec, stream)
		if err != nil {
			return err
		}
		unmatched = &n
	}
	// Drain before reporting: the counters are final. After a signal, a
	// short grace, then what is unwritten is given up (counted failed).
	closeCtx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		closeCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), signalGrace)
		defer cancel()
	}
	closeErr := rec.Close(closeCtx)
	stop()
	out := recordReport{CounterValues: rec.Counters().Values(), BadLines: bad, Unmatched: unmatched}
	if o.json {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		v := out.CounterValues
		fmt.Fprintf(e.stdout, "attempted %d  persisted %d  skipped_no_identity %d  failed %d  "+
			"anomalous_value %d  unknown_execution %d  dropped %d  bad_lines %d",
			v.Attempted, v.Persisted, v.SkippedNoIdentity, v.Failed, v.AnomalousValue, v.UnknownExecution, v.Dropped, bad)
		if unmatched != nil {
			fmt.Fprintf(e.stdout, "  unmatched %d", *unmatched)
		}
		fmt.Fprintln(e.stdout)
	}
	switch {
	case ctx.Err() != nil && out.Failed > 0:
		e.warnf("interrupted after %d lines: %d frames not written", lines.Load(), out.Failed)
		return exitError{exitFail}
	case ctx.Err() != nil:
		e.warnf("interrupted after %d lines: every frame read was written", lines.Load())
		if bad > 0 {
			return exitError{exitFail}
		}
		return nil
	case readErr != nil:
		return readErr
	case closeErr != nil:
		return closeErr
	case bad > 0 || out.Failed > 0 || unmatched != nil && *unmatched > 0:
		return exitError{exitFail}
	}
	return nil
}

// joinByAgent writes the agents' starts and ends the stream holds, their
// tool call never named in the input, by the session's rows: each joins
// the row whose agent_id names its agent, once the frames already read
// are written. It names and counts the reports no row matched, and those
// the stream's bound forgot.
func (e *env) joinByAgent(ctx context.Context, s core.Store, rec *core.Recorder, stream *claude.Stream) (int, error) {
	unmatched := stream.Counts().Forgotten
	if len(stream.Pending()) > 0 {
		if err := rec.Flush(ctx); err != nil {
			return 0, err
		}
		session := stream.Pending()[0].Frame.TaskSessionID
		rows, err := s.ListBySession(ctx, session, core.Page{})
		if err != nil {
			return 0, err
		}
		for _, f := range stream.Resolve(rows) {
			if err := rec.RecordWaiting(ctx, f); err != nil {
				return 0, err
			}
		}
	}
	for _, p := range stream.Pending() {
		e.warnf("agent %q: no Agent tool call in the input and no row of session %q names it (not written)",
			p.AgentID, p.Frame.TaskSessionID)
		unmatched++
	}
	if n := stream.Counts().Forgotten; n > 0 {
		e.warnf("%d agent reports forgotten before their tool call came (the stream holds %d at most)", n,
			claude.MaxPending)
	}
	return unmatched, nil
}

// input is the command's input: the file named, or stdin for none or
// "-"; done closes it.
func (e *env) input(pos []string) (io.Reader, func(), error) {
	name := firstOr(pos, "-")
	if name == "-" {
		return e.stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// skipBOM skips a UTF-8 byte order mark at the start of an input (an
// editor's on Windows), which would otherwise make its first line bad.
func skipBOM(r *bufio.Reader) {
	if b, _ := r.Peek(3); string(b) == "\ufeff" {
		_, _ = r.Discard(3)
	}
}

// maxLineBytes bounds a line record and import read: a frame or an
// exported row with every text at its cap (64 KiB, docs/CONTRACT.md §3.1)
// fits many times over. A longer line is a bad line, named, and is not
// held in memory while it is read past.
const maxLineBytes = 16 << 20

// readLine reads r's next line, at most maxLineBytes of it: a longer one
// is read to its end without being kept, and reported by tooLong.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(chunk) > maxLineBytes:
			tooLong, line = true, nil
		default:
			line = append(line, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// signalGrace is how long record still tries to write what is queued
// after SIGINT or SIGTERM.
const signalGrace = 2 * time.Second

func firstOr(xs []string, def string) string {
	if len(xs) > 0 {
		return xs[0]
	}
	return def
}

// recordLines records the frames of each line in order, as decode reads
// them; a bad line is reported with its number and skipped. The input is
// read on its own goroutine, so that a signal stops the command even while
// no line arrives.
func (e *env) recordLines(ctx context.Context, in io.Reader, rec *core.Recorder, lines *atomic.Int64,
	decode func([]byte) ([]core.Frame, error)) (bad int, err error) {
	type read struct {
		line    []byte
		tooLong bool
		err     error
	}
	reads := make(chan read)
	go func() {
		r := bufio.NewReader(in)
		skipBOM(r)
		for {
			line, tooLong, err := readLine(r)
			select {
			case reads <- read{line, tooLong, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for n := 1; ; n++ {
		var got read
		select {
		case got = <-reads:
		case <-ctx.Done():
			return bad, ctx.Err()
		}
		if got.tooLong {
			e.warnf("line %d: longer than %d bytes (skipped)", n, maxLineBytes)
			bad++
		} else if len(strings.TrimSpace(string(got.line))) > 0 {
			frames, err := decode(got.line)
			if err != nil {
				e.warnf("line %d: %v (skipped)", n, err)
				bad++
			}
			for _, f := range frames {
				// A file is not a product path: wait for room in the
				// queue rather than drop a frame read from it.
				if err := rec.RecordWaiting(ctx, f); err != nil {
					return bad, err
				}
			}
			lines.Add(1)
		}
		switch {
		case errors.Is(got.err, io.EOF):
			return bad, nil
		case got.err != nil:
			return bad, got.err
		}
	}
}

func cmdList(ctx context.Context, e *env, o *listFlags) error {
	switch {
	case (o.session == "") == (o.turn == ""):
		return usagef("list: give exactly one of --session ID and --turn ID")
	case o.limit < 0:
		return usagef("list: --limit %d is negative", o.limit)
	case o.json && o.tree:
		return usagef("list: give --json or --tree, not both")
	}
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	var rows []core.Subagent
	if o.session != "" {
		rows, err = s.ListBySession(ctx, o.session, core.Page{Limit: o.limit})
	} else {
		rows, err = s.ListByTurn(ctx, o.turn, core.Page{Limit: o.limit})
	}
	switch {
	case err != nil:
		return err
	case o.json:
		return writeJSON(e.stdout, rows)
	case o.tree:
		printTree(e.stdout, rows)
	default:
		printRows(e.stdout, rows)
	}
	return nil
}

// staleRow is one row of stale --json: the row, with since (its start,
// else its first observation) and its age in seconds.
type staleRow struct {
	core.Subagent
	Since            time.Time `json:"since"`
	AgeSeconds       int64     `json:"age_seconds"`
	ThresholdSeconds int64     `json:"threshold_seconds"`
}

// staleLearnt is the window whose runs teach each type's threshold when
// --older-than is not given, and the threshold of a type it saw no
// duration of.
const (
	staleLearnt  = 30 * 24 * time.Hour
	staleDefault = time.Hour
)

// cmdStale names the subagents that never came back (docs/CONTRACT.md
// §5.8): exit 0 when none, 1 when some, for cron. Without --older-than
// each type's threshold is learnt from its durations of the last 30 days
// (report.StaleAfterOf).
func cmdStale(ctx context.Context, e *env, o *staleFlags) error {
	if o.olderThan < 0 {
		return usagef("stale: --older-than %s, want a positive duration", o.olderThan)
	}
	if o.limit < 0 || o.limit > report.MaxStale {
		return usagef("stale: --limit %d, want 0 (the default, %d) to %d", o.limit, report.DefaultStale, report.MaxStale)
	}
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	var stale report.StaleLister = s // every store reads it alike
	now := time.Now().UTC()
	after := report.StaleAfter{Default: o.olderThan}
	q := report.StaleQuery{Before: now.Add(-o.olderThan), Limit: o.limit}
	if o.olderThan == 0 {
		var overview report.Overviewer = s
		ov, err := overview.Overview(ctx, report.OverviewQuery{Since: now.Add(-staleLearnt),
			Groups: report.MaxOverviewGroups})
		if err != nil {
			return err
		}
		// Every row past the shortest threshold is read, then each kept
		// only past its own type's.
		after = report.StaleAfterOf(ov, staleDefault)
		q = report.StaleQuery{Before: now.Add(-after.Shortest()), Limit: report.MaxStale}
	}
	rows, err := stale.Stale(ctx, q)
	if err != nil {
		return err
	}
	if o.olderThan == 0 {
		rows = after.Keep(rows, now)
		if limit := (report.StaleQuery{Limit: o.limit}).LimitOrDefault(); len(rows) > limit {
			rows = rows[:limit]
		}
	}
	if o.json {
		out := make([]staleRow, len(rows))
		for i, r := range rows {
			since := report.Since(r)
			out[i] = staleRow{r, since, int64(now.Sub(since) / time.Second), int64(after.For(r) / time.Second)}
		}
		err = writeJSON(e.stdout, out)
	} else {
		printStale(e.stdout, rows, now, after, o.olderThan == 0)
	}
	if err == nil && len(rows) > 0 {
		return exitError{exitFail}
	}
	return err
}

func cmdStats(ctx context.Context, e *env, o *statsFlags) error {
	q := report.StatsQuery{TaskSessionID: o.session, TaskID: o.task}
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
	if o.json {
		return writeJSON(e.stdout, st)
	}
	printStats(e.stdout, st)
	return nil
}

func cmdActivation(ctx context.Context, e *env, o *jsonFlags) error {
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	a, err := s.Activation(ctx)
	if err != nil {
		return err
	}
	if o.json {
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

func cmdHealth(ctx context.Context, e *env, o *healthFlags) error {
	q := report.HealthQuery{Pairs: o.pairs}
	if o.since != "" {
		since, err := instant("health --since", o.since)
		if err != nil {
			return err
		}
		q.Since = since
	}
	if err := q.Validate(); err != nil {
		return usagef("%v", err)
	}
	h, err := e.health(ctx, q)
	if err != nil {
		fmt.Fprintf(e.stderr, "subagentctl: error: %s\n", e.dsn.redact(err.Error()))
		return exitError{healthError}
	}
	if o.json {
		if err := writeJSON(e.stdout, h); err != nil {
			return err
		}
	} else {
		printHealth(e.stdout, h)
	}
	switch {
	case !h.Ran && (h.State == report.NotActivated || h.State == report.NoBoundary):
		return exitError{healthNotActivated}
	case !h.Ran:
		return exitError{healthError}
	case h.Shortfall > 0:
		return exitError{healthShortfall}
	}
	return nil
}

func cmdExport(ctx context.Context, e *env, o *exportFlags) error {
	var q report.ExportQuery
	for _, b := range []struct {
		flag, v string
		into    *time.Time
	}{{"export --since", o.since, &q.Since}, {"export --until", o.until, &q.Until}} {
		if b.v == "" {
			continue
		}
		t, err := instant(b.flag, b.v)
		if err != nil {
			return err
		}
		*b.into = t
	}
	switch {
	case o.format != "jsonl" && o.format != "csv":
		return usagef("export --format %q: want jsonl or csv", o.format)
	case (o.afterSession == "") != (o.afterID == ""):
		return usagef("export: give --after-session and --after-id together")
	case o.afterSession != "":
		q.After = &report.ExportKey{TaskSessionID: o.afterSession, ID: o.afterID}
	case o.keys && o.format != "jsonl":
		return usagef("export --keys: the keys travel in JSON lines only, not %s", o.format)
	}
	if err := q.Validate(); err != nil {
		return usagef("%v", err)
	}
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	// Before the rows are read: what was committed before it is in them.
	next, err := s.NextSince(ctx, q)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	if o.keys {
		keys, err := s.Keys(ctx)
		if err != nil {
			return err
		}
		if err := json.NewEncoder(w).Encode(keysLine{keys}); err != nil {
			return err
		}
	}
	write := exportJSONLine(w)
	if o.format == "csv" {
		write = exportCSV(w)
	}
	n := 0
	for r, err := range s.Export(ctx, q) {
		if err != nil {
			w.Flush()
			return err
		}
		if err := write(&r); err != nil {
			return err
		}
		n++
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if e.progress {
		e.warnf("exported %d rows", n)
	}
	fmt.Fprintf(e.stderr, "next since: %s\n", next.UTC().Format(time.RFC3339Nano))
	return nil
}

func cmdPrune(ctx context.Context, e *env, o *pruneFlags) error {
	if o.before == "" {
		return usagef("prune: give --before DURATION|TIME")
	}
	before, err := instant("prune --before", o.before)
	if err != nil {
		return err
	}
	s, err := e.open(ctx, pruning)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.Prune(ctx, before)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(e.stdout, res)
	}
	moved := "the retention boundary moved there"
	if !res.Advanced {
		moved = "the retention boundary was already there or later"
	}
	fmt.Fprintf(e.stdout, "pruned %d rows last written before %s (%s)\n",
		res.Deleted, res.Boundary.UTC().Format(time.RFC3339Nano), moved)
	return nil
}

func (e *env) health(ctx context.Context, q report.HealthQuery) (report.Health, error) {
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return report.Health{}, err
	}
	defer s.Close()
	e.warnHostIndexes(ctx, s)
	return s.Health(ctx, q)
}

// warnHostIndexes warns of each index the reads need on the host's tables
// that is missing, with the statement that creates it: the library never
// touches the host's tables itself.
func (e *env) warnHostIndexes(ctx context.Context, s *sqlstore.Store) {
	missing, err := s.MissingHostIndexes(ctx)
	if err != nil {
		return // the command's own reads report what is wrong
	}
	for _, x := range missing {
		e.warnf("no index on %s(%s): %s read through it; create it with: %s", x.Table, x.Column, x.Why, x.Statement())
	}
}

// instant reads a command's time argument: a duration back from now
// ("90m", "24h"; a day is "24h"), an RFC 3339 instant, or a date (UTC
// midnight).
func instant(flag, v string) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, usagef("%s %s: a duration back from now, want it positive", flag, v)
		}
		return time.Now().UTC().Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, usagef("%s %q: want a duration (90m, 24h) or an RFC 3339 instant or a date", flag, v)
}

// cmdGrants prints the GRANT statements for a role: the parts' privileges
// on the host's tables as named by the global flags (docs/CONTRACT.md §4.4).
func cmdGrants(ctx context.Context, e *env, o *grantsFlags) error {
	if o.role == "" {
		return usagef("grants: give --role NAME")
	}
	// By default what an application needs; an operator's parts are asked
	// for by name.
	parts := []sqlstore.Part{sqlstore.PartLive, sqlstore.PartRead}
	if o.part != "" {
		if !slices.Contains(sqlstore.Parts(), sqlstore.Part(o.part)) {
			return usagef("grants --part %q: want migrate, live, read, prune or import", o.part)
		}
		parts = []sqlstore.Part{sqlstore.Part(o.part)}
	}
	if e.tables.Meta == "" {
		if err := e.findMeta(ctx); err != nil {
			return err
		}
	}
	if e.tables.Meta == "" {
		fmt.Fprintf(e.stdout, "-- the meta table %s: with --db, the one the database uses (%s where it has only that)\n",
			sqlstore.DefaultMetaTable, sqlstore.KandevMetaTable)
	}
	for _, p := range parts {
		stmts, err := sqlstore.GrantSQL(e.tables, p, o.role)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "-- %s\n", partDoc[p])
		for _, q := range stmts {
			fmt.Fprintf(e.stdout, "%s;\n", q)
		}
	}
	return nil
}

// findMeta names the meta table the database given by --db (or
// $SUBAGENTCTL_DB) uses, read-only; with no database given it leaves the
// name empty (the default's).
func (e *env) findMeta(ctx context.Context) error {
	if e.db == "" {
		e.db = os.Getenv("SUBAGENTCTL_DB")
	}
	if e.db == "" {
		return nil
	}
	var err error
	if e.dsn, err = parseDSN(e.db); err != nil {
		return usageError{msg: err.Error()}
	}
	s, err := e.open(ctx, readOnly)
	if err != nil {
		return err
	}
	defer s.Close()
	e.tables.Meta, err = s.MetaTable(ctx)
	return err
}

// partDoc says what each part is, above its statements.
var partDoc = map[sqlstore.Part]string{
	sqlstore.PartMigrate: "migrate: besides owning task_session_subagents (it creates it: CREATE on the schema)",
	sqlstore.PartLive:    "live: the recorder, record, record --acp, and the pass at boot once the owner has migrated",
	sqlstore.PartRead:    "read: list, stats, activation, health, export, serve",
	sqlstore.PartPrune:   "prune",
	sqlstore.PartImport:  "import",
}

// keysLine is the line export --keys writes first: the record's keys
// (sqlstore.Store.Keys), which import carries to the target.
type keysLine struct {
	Keys map[string]string `json:"subagentctx_keys"`
}

// cmdImport loads an export into the store (docs/CONTRACT.md §3.3).
func cmdImport(ctx context.Context, e *env, o *inputFlags) error {
	in, done, err := e.input(o.pos)
	if err != nil {
		return err
	}
	defer done()
	s, err := e.open(ctx, importing)
	if err != nil {
		return err
	}
	defer s.Close()
	keys := map[string]string{}
	n := 0
	rows := func(yield func(core.Subagent, error) bool) {
		r := bufio.NewReaderSize(in, 1<<16)
		skipBOM(r)
		for {
			line, tooLong, err := readLine(r)
			if tooLong {
				yield(core.Subagent{}, fmt.Errorf("line %d: longer than %d bytes", n+1, maxLineBytes))
				return
			}
			if len(strings.TrimSpace(string(line))) > 0 {
				n++
				// Only the line export --keys wrote first is decoded twice.
				var k keysLine
				if bytes.HasPrefix(bytes.TrimSpace(line), []byte(`{"subagentctx_keys"`)) &&
					json.Unmarshal(line, &k) == nil && k.Keys != nil {
					if err := sqlstore.CheckKeys(k.Keys); err != nil {
						yield(core.Subagent{}, fmt.Errorf("line %d: %w", n, err))
						return
					}
					maps.Copy(keys, k.Keys)
				} else {
					var row core.Subagent
					if err := json.Unmarshal(line, &row); err != nil {
						yield(core.Subagent{}, fmt.Errorf("line %d: %w", n, err))
						return
					}
					if !yield(row, nil) {
						return
					}
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					yield(core.Subagent{}, err)
				}
				return
			}
		}
	}
	res, err := s.Import(ctx, keys, rows)
	if err != nil {
		e.warnf("%s before the error", res)
		return err
	}
	if o.json {
		return writeJSON(e.stdout, res)
	}
	fmt.Fprintln(e.stdout, res)
	return nil
}
