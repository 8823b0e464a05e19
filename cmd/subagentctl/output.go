package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/fanout"
)

// timeLayout is RFC 3339, UTC, with microseconds.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// shown is a stored or logged string as the text output prints it: quoted
// when it holds a control character, a line separator or invalid UTF-8 —
// an identifier from a frame can, and printed raw it could end a line and
// forge the next, or drive the operator's terminal.
func shown(v string) string {
	if strings.ContainsFunc(v, func(r rune) bool {
		return unicode.IsControl(r) || r == utf8.RuneError || r == '\u2028' || r == '\u2029'
	}) {
		return strconv.Quote(v)
	}
	return v
}

func str(p *string) string {
	if p == nil {
		return "-"
	}
	return shown(*p)
}

func num(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func printRows(w io.Writer, rows []core.Subagent) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OBSERVED_AT\tTOOL_CALL_ID\tEXECUTION\tPARENT\tTYPE\tTOOL_STATUS\tAGENT_STATUS\t"+
		"ASYNC\tAGENT_ENDED_AT\tFINAL_TOKENS\tRUN_TOKENS\tREQUESTS\tTOOL_USES\tDURATION_MS\tSOURCE")
	for _, r := range rows {
		fmt.Fprintf(
			tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ObservedAt.UTC().Format(timeLayout),
			shown(r.ToolCallID), shown(r.AgentExecutionID), str(r.ParentToolCallID), str(r.SubagentType),
			str(r.ToolStatus), str(r.AgentStatus), r.IsAsync, instantOrDash(r.EndedAt),
			num(r.TotalTokens), bigOrDash(report.RunTokens(r)), num(r.Requests), num(r.ToolUseCount), num(r.DurationMs),
			r.Source,
		)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d rows (\"-\" is NULL: not reported, never 0; FINAL_TOKENS is total_tokens, the final "+
		"request's; RUN_TOKENS the run's input, output and cache tokens)\n", len(rows))
}

// bigOrDash is an exact figure, "-" for not reported.
func bigOrDash(v *big.Int) string {
	if v == nil {
		return "-"
	}
	return v.String()
}

// instantOrDash is an instant as the tables print it, "-" for NULL.
func instantOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// printStale prints the agents that never came back, oldest first, with
// how long ago they started (now - since) and the threshold they passed.
// Learnt says after's thresholds were learnt per type, which it then
// says.
func printStale(w io.Writer, rows []core.Subagent, now time.Time, after report.StaleAfter, learnt bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGE\tTHRESHOLD\tSINCE\tSESSION\tTURN\tTOOL_CALL_ID\tTYPE\tDESCRIPTION\tTOOL_STATUS\t"+
		"AGENT_STATUS")
	for _, r := range rows {
		since := report.Since(r)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", now.Sub(since).Truncate(time.Second),
			after.For(r), since.Format(timeLayout), shown(r.TaskSessionID), str(r.TurnID), shown(r.ToolCallID),
			str(r.SubagentType), str(r.Description), str(r.ToolStatus), str(r.AgentStatus))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d subagents with no end seen\n", len(rows))
	if learnt {
		fmt.Fprintf(w, "(each type's threshold learnt from its runs of the last %d days: 3x its 95th percentile "+
			"duration_ms, at least %s; %s for a type with none)\n", staleLearnt/(24*time.Hour), report.MinStaleAfter,
			after.Default)
	}
}

// printTree prints the rows' nesting: per turn, each subagent with the
// subagents it launched indented under it.
func printTree(w io.Writer, rows []core.Subagent) {
	for _, turn := range fanout.Build(rows) {
		label := "turn " + shown(turn.TurnID)
		if turn.TurnID == "" {
			label = "no turn"
		}
		fmt.Fprintf(w, "%s (%d subagents)\n", label, turn.Count)
		var walk func(nodes []*fanout.Node, prefix string)
		walk = func(nodes []*fanout.Node, prefix string) {
			for i, n := range nodes {
				branch, next := "├─ ", "│  "
				if i == len(nodes)-1 {
					branch, next = "└─ ", "   "
				}
				fmt.Fprintf(w, "%s%s%s\n", prefix, branch, describe(n.Row))
				walk(n.Children, prefix+next)
			}
		}
		walk(turn.Roots, "")
	}
	fmt.Fprintf(w, "%d rows (\"-\" is NULL: not reported, never 0; FINAL_TOKENS is total_tokens, the final "+
		"request's; RUN_TOKENS the run's input, output and cache tokens)\n", len(rows))
}

func describe(r core.Subagent) string {
	parts := []string{shown(r.ToolCallID), str(r.SubagentType), "tool_status=" + str(r.ToolStatus)}
	if r.AgentExecutionID != core.UnknownExecution {
		parts = append(parts, "execution="+shown(r.AgentExecutionID))
	}
	if r.IsAsync {
		parts = append(parts, "async")
	}
	if r.SettledAt == nil {
		parts = append(parts, "open")
	}
	parts = append(
		parts, "tokens="+num(r.TotalTokens), "tool_uses="+num(r.ToolUseCount), "duration_ms="+num(r.DurationMs),
	)
	if r.Description != nil {
		parts = append(parts, fmt.Sprintf("%q", *r.Description))
	}
	return strings.Join(parts, "  ")
}

func printMetric(w io.Writer, name string, m report.MetricStats) {
	line := func(part string, x report.Metric) string {
		if x.Average == nil {
			return fmt.Sprintf("%s: reported by 0, not reported by %d", part, x.Unreported)
		}
		return fmt.Sprintf(
			"%s: sum %s, average %.1f over %d reported, %d not reported", part, x.Sum, *x.Average, x.Reported, x.Unreported,
		)
	}
	fmt.Fprintf(
		w, "  %-15s %s\n  %-15s %s; %s\n", name, line("all", m.All), "", line("live", m.Live), line("backfill", m.Backfill),
	)
}

func printStats(w io.Writer, st report.Stats) {
	scope := "whole store"
	switch {
	case st.Query.TaskSessionID != "":
		scope = "session " + shown(st.Query.TaskSessionID)
	case st.Query.TaskID != "":
		scope = "task " + shown(st.Query.TaskID)
	}
	fmt.Fprintf(w, "statistics for %s (activation: %s)\n", scope, st.Activation.State)
	fmt.Fprintf(
		w, "  subagents       %d (%d live, %d backfill — backfilled rows are recovered, not measured live)\n", st.Subagents,
		st.Live, st.Backfill,
	)
	fmt.Fprintf(w, "  lifecycle       %d background, %d with no end seen (running, or never came back: stale), "+
		"%d ended; %d failed (tool or agent status)\n", st.Background, st.NoEnd, st.Subagents-st.NoEnd, st.Failed)
	var fan []string
	for _, f := range st.FanOutPerTurn {
		fan = append(fan, fmt.Sprintf("%d→%d", f.Subagents, f.Turns))
	}
	fmt.Fprintf(
		w, "  fan-out/turn    %s (subagents→turns); %d rows without a turn\n", strings.Join(fan, " "), st.RowsWithoutTurn,
	)
	printMetric(w, "total_tokens", st.TotalTokens)
	printMetric(w, "run_tokens", st.RunTokens)
	fmt.Fprintln(w, "                  (total_tokens is each run's final request, not its spend; run_tokens what "+
		"each run spent: input, output and cache tokens, where its usage was read)")
	printMetric(w, "tool_use_count", st.ToolUseCount)
	printMetric(w, "duration_ms", st.DurationMs)
	if st.DistinctExecutions != nil {
		fmt.Fprintf(
			w, "  executions      %d distinct; %d rows with 'unknown' (unrecorded, not shared)\n", *st.DistinctExecutions,
			st.UnknownExecutionRows,
		)
	} else {
		fmt.Fprintf(w, "  executions      not identities: %s is absent\n", storekit.ExecutionSinceKey)
	}
	fmt.Fprintf(
		w, "  coverage        %d sessions with known fan-out, %d unknown\n", st.KnownSessions, st.UnknownSessions,
	)
	for _, c := range st.Sessions {
		fmt.Fprintf(w, "    %-24s %-7s %s\n", shown(c.TaskSessionID), c.Coverage, c.Reason)
	}
}

func printKey(w io.Writer, name string, k report.KeyReading) {
	switch {
	case !k.Present:
		fmt.Fprintf(w, "  %-34s absent\n", name)
	case k.ParseError != "":
		fmt.Fprintf(w, "  %-34s INVALID: %s\n", name, shown(k.ParseError))
	default:
		fmt.Fprintf(w, "  %-34s %s\n", name, shown(k.Raw))
	}
}

func printActivation(w io.Writer, a report.Activation) {
	fmt.Fprintf(w, "state: %s\n", a.State)
	printKey(w, storekit.CaptureSinceKey, a.CaptureSince)
	printKey(w, storekit.ExecutionSinceKey, a.ExecutionSince)
	if a.NothingToRecover {
		fmt.Fprintf(w, "  %-34s '' (the backfill found nothing to recover)\n", storekit.BackfillThroughKey)
	} else {
		printKey(w, storekit.BackfillThroughKey, a.BackfillThrough)
	}
	if a.PrunedBefore.Present {
		printKey(w, storekit.PrunedBeforeKey, a.PrunedBefore)
	}
}

func printHealth(w io.Writer, h report.Health) {
	if !h.Ran {
		fmt.Fprintf(w, "health: %s (state %s)\n", h.Reason, h.State)
		return
	}
	verdict := "healthy"
	if h.Shortfall > 0 {
		verdict = "SHORTFALL"
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "none"
		}
		return t.UTC().Format(timeLayout)
	}
	collisions := "not reported: no execution id is an identity in state " + string(h.State)
	if h.Collisions != nil {
		collisions = fmt.Sprintf("%d (tool call ids reused across executions, kept apart)", *h.Collisions)
	}
	fmt.Fprintf(w, "health: %s (since %s)\n  shortfall      %d (subagent messages with no row: the alarm)\n"+
		"  excess         %d (rows with no subagent message: reported, never an alarm)\n"+
		"  collisions     %s\n"+
		"  doubled        %d (invocations held twice, history beside a live row: an earlier release's writer)\n"+
		"  last observed  %s\n  last write     %s\n",
		verdict, h.Since.UTC().Format(time.RFC3339Nano), h.Shortfall, h.Excess, collisions, h.Doubled,
		at(h.LastObservedAt), at(h.LastWriteAt))
	if h.WriterSilent() {
		fmt.Fprintln(w, "  the writer has produced nothing in the window")
	}
	pairs := func(title string, ps []report.Pair, total int64) {
		if len(ps) == 0 {
			return
		}
		fmt.Fprintf(w, "  %s (%d of %d, the earliest first):\n", title, len(ps), total)
		for _, p := range ps {
			fmt.Fprintf(w, "    %s  %s  %s\n", p.FirstSeen.UTC().Format(timeLayout), shown(p.TaskSessionID),
				shown(p.ToolCallID))
		}
	}
	pairs("missing", h.Missing, h.Shortfall)
	pairs("excess", h.Extra, h.Excess)
	pairs("doubled", h.DoubledPairs, h.Doubled)
}

// exportJSONLine writes each row as one JSON object per line.
func exportJSONLine(w io.Writer) func(*core.Subagent) error {
	enc := json.NewEncoder(w)
	return func(r *core.Subagent) error { return enc.Encode(r) }
}

// exportCSV writes a header of the table's columns, then each row: NULL
// as an empty field, times in RFC 3339 UTC with microseconds, is_async as
// true or false.
func exportCSV(w io.Writer) func(*core.Subagent) error {
	c := csv.NewWriter(w)
	header := true
	record := make([]string, len(columns))
	return func(r *core.Subagent) error {
		if header {
			for i, col := range columns {
				record[i] = col.Name
			}
			if err := c.Write(record); err != nil {
				return err
			}
			header = false
		}
		for i, col := range columns {
			record[i] = csvValue(col, r)
		}
		if err := c.Write(record); err != nil {
			return err
		}
		c.Flush()
		return c.Error()
	}
}

// csvValue is a column's CSV field (docs/CONTRACT.md §3.3): NULL empty,
// a boolean true or false, a text that a spreadsheet would read as a
// formula prefixed with ' so that it stays text.
func csvValue(col storekit.Column, r *core.Subagent) string {
	if col.Type == storekit.Bool {
		return strconv.FormatBool(col.Value(r) == int64(1))
	}
	if col.IsNull(r) {
		return ""
	}
	switch v := col.Value(r).(type) {
	case time.Time:
		return v.UTC().Format(timeLayout)
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
			return "'" + v
		}
		return v
	}
	return col.Format(r)
}
