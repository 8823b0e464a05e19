// Command report records an hour of subagents into embedded SQLite and
// prints what an operator asks of the record, through package core/report:
// is it complete, what did the subagents cost, what failed and when, which
// sessions, and one session's fan-out as a tree.
//
//	go -C examples run ./report
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

func main() {
	path := flag.String("db", "", "SQLite file (default: a new temporary directory)")
	flag.Parse()
	if *path == "" {
		dir, err := os.MkdirTemp("", "subagentctx-report-")
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

// store is what this program reads: a store with every read of the record.
type store interface {
	report.Reader
	report.Overviewer
	report.Timeliner
	report.TurnLister
	report.FailureLister
	ListBySession(ctx context.Context, session string, page core.Page) ([]core.Subagent, error)
}

func run(ctx context.Context, w io.Writer, path string) error {
	db, err := sqlite.OpenDB(path)
	if err != nil {
		return err
	}
	if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
		return err
	}
	for _, s := range []string{"sess-a", "sess-b"} {
		if err := kandevtest.InsertSession(ctx, db, sqlstore.Tables{}, s, "task-"+s); err != nil {
			return err
		}
	}
	s, err := sqlite.New(db)
	if err != nil {
		return err
	}
	defer s.Close()
	// The pass activates the record: from now on an absence means something.
	if pass := migration.New(s).Run(ctx); pass.Failed() {
		return fmt.Errorf("migration pass:\n%s", pass)
	}
	// The hour the subagents ran: the next whole one, after the record's
	// activation, so that every session's coverage is known.
	since := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	if err := record(ctx, s, since); err != nil {
		return err
	}
	for _, read := range []func(context.Context, io.Writer, store, time.Time) error{
		health, stats, overview, timeline, failures, sessions, tree,
	} {
		if err := read(ctx, w, s, since); err != nil {
			return err
		}
	}
	return nil
}

// record writes two sessions: in the first, a turn fans out to three
// subagents, one of which launches a nested one, and one fails; in the
// second, one subagent is still running.
func record(ctx context.Context, s core.Store, t0 time.Time) error {
	rec, err := core.NewRecorder(s)
	if err != nil {
		return err
	}
	frame := func(session, turn, call, parent, status, typ string, at, tokens, ms int64) core.Frame {
		return core.Frame{TaskSessionID: session, TaskID: "task-" + session, TurnID: turn, ExecutionID: "exec-1",
			ToolCallID: call, ParentToolCallID: parent, ToolStatus: status,
			ObservedAt: t0.Add(time.Duration(at) * time.Minute),
			Payload:    &core.Payload{SubagentType: typ, Model: "claude-sonnet-4-5", TotalTokens: tokens, DurationMs: ms}}
	}
	for _, f := range []core.Frame{
		frame("sess-a", "turn-1", "toolu_1", "", "completed", "explorer", 1, 12000, 40000),
		frame("sess-a", "turn-1", "toolu_2", "", "failed", "security-reviewer", 2, 3000, 9000),
		frame("sess-a", "turn-1", "toolu_3", "", "completed", "explorer", 3, 8000, 20000),
		frame("sess-a", "turn-1", "toolu_4", "toolu_3", "completed", "explorer", 4, 2000, 5000),
		frame("sess-b", "turn-1", "toolu_1", "", "in_progress", "planner", 30, 0, 0),
	} {
		rec.Record(ctx, f)
	}
	return rec.Close(ctx)
}

// meaning is what each activation state lets an operator conclude
// (docs/CONTRACT.md §5.1).
var meaning = map[report.ActivationState]string{
	report.Activated:    "an absence is a real absence",
	report.CaptureOnly:  "no execution id is an identity yet",
	report.NoBoundary:   "no coverage boundary: all fan-out is unknown",
	report.NotActivated: "no absence means anything",
}

// zero is what a count of zero means under a session's coverage.
var zero = map[report.Coverage]string{report.Known: "zero means zero", report.Unknown: "zero means unknown"}

func health(ctx context.Context, w io.Writer, s store, _ time.Time) error {
	a, err := s.Activation(ctx)
	if err != nil {
		return err
	}
	h, err := s.Health(ctx, report.HealthQuery{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "activation: %s (%s); healthy: %v, shortfall %d, excess %d\n",
		a.State, meaning[a.State], h.Healthy(), h.Shortfall, h.Excess)
	return nil
}

func stats(ctx context.Context, w io.Writer, s store, _ time.Time) error {
	st, err := s.Stats(ctx, report.StatsQuery{TaskSessionID: "sess-a"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "sess-a: %d subagents, tokens %s over %d reported\n", st.Subagents, st.TotalTokens.All.Sum,
		st.TotalTokens.All.Reported)
	for _, f := range st.FanOutPerTurn {
		printFanOut(w, f)
	}
	for _, c := range st.Sessions {
		fmt.Fprintf(w, "  coverage of %s: %s (%s)\n", c.TaskSessionID, c.Coverage, zero[c.Coverage])
	}
	return nil
}

func printFanOut(w io.Writer, f report.FanOut) {
	fmt.Fprintf(w, "  %d turn(s) launched %d subagents\n", f.Turns, f.Subagents)
}

func overview(ctx context.Context, w io.Writer, s store, since time.Time) error {
	all, err := s.Overview(ctx, report.OverviewQuery{Since: since, Groups: report.DefaultOverviewGroups})
	if err != nil {
		return err
	}
	failed, err := s.Overview(ctx, report.OverviewQuery{Since: since, Failed: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "overview: %d rows, %d failed\n", all.Rows, failed.Rows)
	printBreakdown(w, "by type", all.SubagentType)
	printBreakdown(w, "failed, by type", failed.SubagentType)
	return nil
}

func printBreakdown(w io.Writer, title string, b report.Breakdown) {
	fmt.Fprintf(w, "  %s:\n", title)
	for _, g := range b.Groups {
		printGroup(w, g)
	}
}

func printGroup(w io.Writer, g report.Group) {
	value := "(not reported)"
	if g.Value != nil {
		value = *g.Value
	}
	var f report.Figures = g.All
	tokens := "-"
	if f.TotalTokens.Sum != nil {
		tokens = f.TotalTokens.Sum.String()
	}
	fmt.Fprintf(w, "    %-18s %d invoked, %d failed, tokens %s, median %s ms\n", value, f.Invocations, f.Failed,
		tokens, median(f.Duration))
}

func median(d *report.Distribution) string {
	if d == nil || d.Median == nil {
		return "-"
	}
	return fmt.Sprint(*d.Median)
}

func timeline(ctx context.Context, w io.Writer, s store, since time.Time) error {
	tl, err := s.Timeline(ctx, report.TimelineQuery{Since: since, Until: since.Add(time.Hour), Bucket: 15 * time.Minute})
	if err != nil {
		return err
	}
	for _, b := range tl.Buckets {
		printBucket(w, since, b)
	}
	return nil
}

func printBucket(w io.Writer, since time.Time, b report.Bucket) {
	fmt.Fprintf(w, "from +%v: %d invoked, %d failed\n", b.Start.Sub(since), b.Invocations, b.Failed)
}

// failures pages through the window's failed subagents one at a time,
// resuming after the last one's key.
func failures(ctx context.Context, w io.Writer, s store, since time.Time) error {
	var after *report.FailureKey
	for {
		rows, err := s.Failures(ctx, report.FailureQuery{Since: since, Limit: 1, After: after})
		if err != nil || len(rows) == 0 {
			return err
		}
		r := rows[0]
		fmt.Fprintf(w, "failed: %s %s (%s)\n", r.TaskSessionID, r.ToolCallID, *r.SubagentType)
		k := report.KeyOf(r)
		after = &k
	}
}

// sessions pages through the sessions on record, the most recent first.
func sessions(ctx context.Context, w io.Writer, s store, since time.Time) error {
	var after *report.SessionKey
	for {
		page, err := s.Sessions(ctx, report.SessionQuery{Since: since, Limit: 1, After: after})
		if err != nil || len(page) == 0 {
			return err
		}
		sum := page[0]
		var c report.SessionCoverage = sum.Coverage
		fmt.Fprintf(w, "session %s: %d subagents, %d open, coverage %s\n", sum.TaskSessionID, sum.Subagents, sum.Open,
			c.Coverage)
		k := sum.Key()
		after = &k
	}
}

// tree prints a session's first turns' rows as the fan-out tree.
func tree(ctx context.Context, w io.Writer, s store, _ time.Time) error {
	page, err := s.SessionTurns(ctx, report.TurnQuery{TaskSessionID: "sess-a"})
	if err != nil {
		return err
	}
	parents := report.Parents(page.Rows)
	depth := func(i int) int {
		d := 0
		for p := parents[i]; p >= 0; p = parents[p] {
			d++
		}
		return d
	}
	for i, r := range page.Rows {
		fmt.Fprintf(w, "%s%s %s\n", strings.Repeat("  ", depth(i)), r.ToolCallID, *r.ToolStatus)
	}
	return nil
}
