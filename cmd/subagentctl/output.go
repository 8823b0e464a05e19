package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// timeLayout is RFC 3339, UTC, with microseconds.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// rowJSON is a row with the SPEC's column names: NULL as null, metrics as
// integers, is_async as a boolean, timestamps as RFC 3339 UTC microseconds.
type rowJSON struct {
	ID               string  `json:"id"`
	TaskSessionID    string  `json:"task_session_id"`
	TaskID           string  `json:"task_id"`
	TurnID           *string `json:"turn_id"`
	AgentExecutionID string  `json:"agent_execution_id"`
	ToolCallID       string  `json:"tool_call_id"`
	ParentToolCallID *string `json:"parent_tool_call_id"`
	SubagentType     *string `json:"subagent_type"`
	Description      *string `json:"description"`
	AgentID          *string `json:"agent_id"`
	ChildSessionID   *string `json:"child_session_id"`
	Model            *string `json:"model"`
	AgentStatus      *string `json:"agent_status"`
	ToolStatus       *string `json:"tool_status"`
	IsAsync          bool    `json:"is_async"`
	TotalTokens      *int64  `json:"total_tokens"`
	ToolUseCount     *int64  `json:"tool_use_count"`
	DurationMs       *int64  `json:"duration_ms"`
	Source           string  `json:"source"`
	ObservedAt       string  `json:"observed_at"`
	SettledAt        *string `json:"settled_at"`
	UpdatedAt        string  `json:"updated_at"`
}

func rowsJSON(rows []core.Subagent) []rowJSON {
	out := make([]rowJSON, len(rows))
	for i, r := range rows {
		out[i] = rowJSON{ID: r.ID, TaskSessionID: r.TaskSessionID, TaskID: r.TaskID, TurnID: r.TurnID,
			AgentExecutionID: r.AgentExecutionID, ToolCallID: r.ToolCallID, ParentToolCallID: r.ParentToolCallID,
			SubagentType: r.SubagentType, Description: r.Description, AgentID: r.AgentID, ChildSessionID: r.ChildSessionID,
			Model: r.Model, AgentStatus: r.AgentStatus, ToolStatus: r.ToolStatus, IsAsync: r.IsAsync,
			TotalTokens: r.TotalTokens, ToolUseCount: r.ToolUseCount, DurationMs: r.DurationMs, Source: string(r.Source),
			ObservedAt: r.ObservedAt.UTC().Format(timeLayout), UpdatedAt: r.UpdatedAt.UTC().Format(timeLayout)}
		if r.SettledAt != nil {
			s := r.SettledAt.UTC().Format(timeLayout)
			out[i].SettledAt = &s
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func str(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

func num(p *int64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func printRows(w io.Writer, rows []core.Subagent) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OBSERVED_AT\tTOOL_CALL_ID\tEXECUTION\tPARENT\tTYPE\tTOOL_STATUS\tAGENT_STATUS\tASYNC\tTOKENS\tTOOL_USES\tDURATION_MS\tSOURCE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\n", r.ObservedAt.UTC().Format(timeLayout), r.ToolCallID,
			r.AgentExecutionID, str(r.ParentToolCallID), str(r.SubagentType), str(r.ToolStatus), str(r.AgentStatus), r.IsAsync,
			num(r.TotalTokens), num(r.ToolUseCount), num(r.DurationMs), r.Source)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d rows (\"-\" is NULL: not reported, never 0)\n", len(rows))
}

func printMetric(w io.Writer, name string, m core.Metric) {
	if m.Average == nil {
		fmt.Fprintf(w, "  %-15s reported by 0, not reported by %d: unknown (not 0)\n", name, m.Unreported)
		return
	}
	fmt.Fprintf(w, "  %-15s sum %d, average %.1f over %d reported; %d not reported\n", name, m.Sum, *m.Average, m.Reported, m.Unreported)
}

func printStats(w io.Writer, st core.Stats) {
	scope := "whole store"
	switch {
	case st.Query.TaskSessionID != "":
		scope = "session " + st.Query.TaskSessionID
	case st.Query.TaskID != "":
		scope = "task " + st.Query.TaskID
	}
	fmt.Fprintf(w, "statistics for %s (activation: %s)\n", scope, st.Activation.State)
	fmt.Fprintf(w, "  subagents       %d (%d live, %d backfill — backfilled rows are not live observations)\n", st.Subagents, st.Live, st.Backfill)
	var fan []string
	for _, f := range st.FanOutPerTurn {
		fan = append(fan, fmt.Sprintf("%d→%d", f.Subagents, f.Turns))
	}
	fmt.Fprintf(w, "  fan-out/turn    %s (subagents→turns); %d rows without a turn\n", strings.Join(fan, " "), st.RowsWithoutTurn)
	printMetric(w, "total_tokens", st.TotalTokens)
	printMetric(w, "tool_use_count", st.ToolUseCount)
	printMetric(w, "duration_ms", st.DurationMs)
	if st.ExecutionIdentities {
		fmt.Fprintf(w, "  executions      %d distinct; %d rows with 'unknown' (unrecorded, not shared)\n", st.DistinctExecutions, st.UnknownExecutionRows)
	} else {
		fmt.Fprintf(w, "  executions      not identities: %s is absent\n", core.KeyExecutionSince)
	}
	fmt.Fprintf(w, "  coverage        %d sessions with known fan-out, %d unknown\n", st.KnownSessions, st.UnknownSessions)
	for _, c := range st.Sessions {
		fmt.Fprintf(w, "    %-24s %-7s %s\n", c.TaskSessionID, c.Coverage, c.Reason)
	}
}

func printKey(w io.Writer, name string, k core.KeyValue) {
	switch {
	case !k.Present:
		fmt.Fprintf(w, "  %-34s absent\n", name)
	case k.ParseError != "":
		fmt.Fprintf(w, "  %-34s INVALID: %s\n", name, k.ParseError)
	default:
		fmt.Fprintf(w, "  %-34s %s\n", name, k.Raw)
	}
}

func printActivation(w io.Writer, a core.Activation) {
	fmt.Fprintf(w, "state: %s\n", a.State)
	printKey(w, core.KeyCaptureSince, a.CaptureSince)
	printKey(w, core.KeyExecutionSince, a.ExecutionSince)
	if a.NothingToRecover {
		fmt.Fprintf(w, "  %-34s '' (the backfill found nothing to recover)\n", core.KeyBackfillThrough)
	} else {
		printKey(w, core.KeyBackfillThrough, a.BackfillThrough)
	}
}

func printHealth(w io.Writer, h core.Health) {
	if !h.Ran {
		fmt.Fprintf(w, "health: not run: %s\n", h.Reason)
		return
	}
	verdict := "healthy"
	if h.Shortfall > 0 {
		verdict = "SHORTFALL"
	}
	last := "none: the writer has produced nothing since activation"
	if h.LastObservedAt != nil {
		last = h.LastObservedAt.UTC().Format(timeLayout)
	}
	fmt.Fprintf(w, "health: %s (since %s)\n  shortfall      %d (subagent messages with no row: the alarm)\n"+
		"  excess         %d (rows with no subagent message: reported, never an alarm)\n"+
		"  collisions     %d (tool call ids reused across executions, kept apart)\n  last observed  %s\n",
		verdict, h.CaptureSince.UTC().Format(time.RFC3339Nano), h.Shortfall, h.Excess, h.Collisions, last)
}
