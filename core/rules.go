package core

import "github.com/subagentctx/subagentctx/internal/canon"

// This file is where a frame becomes the row it asks to write. How a row
// then merges into a stored one, and what a row must be to be stored, are
// the store's side: core/storekit (Merge, Validate), over the column
// declaration (storekit.Columns).

// Verdict is what Normalize learned about a frame besides the row, so the
// Recorder can count it (AC-26).
type Verdict struct {
	// NoIdentity: the session id, task id or tool call id was empty, so no
	// row may be written (AC-2).
	NoIdentity bool
	// Anomalous: at least one metric was negative and was dropped (AC-9).
	Anomalous bool
	// UnknownExecution: the frame carried no execution id and the row uses
	// the 'unknown' sentinel (AC-30/31).
	UnknownExecution bool
	// Truncated: a descriptive text was longer than canon's MaxTextBytes
	// and is stored cut, marked (§3.1).
	Truncated bool
}

// Normalize turns a frame into the row it asks to write (docs/CONTRACT.md
// §3.1). It is pure: the Recorder supplies the observation time and counts
// the verdict; the store assigns the id. ObservedAt is kept in UTC at
// microsecond precision, the precision every adapter stores.
func Normalize(f Frame) (Subagent, Verdict) {
	var v Verdict
	// AC-2: without all three identities nothing is written.
	if f.TaskSessionID == "" || f.TaskID == "" || f.ToolCallID == "" {
		v.NoIdentity = true
		return Subagent{}, v
	}
	observed := canon.Time(f.ObservedAt)
	a := new(canon.Arena) // backs every pointer of the row: one allocation
	row := Subagent{
		TaskSessionID: f.TaskSessionID,
		TaskID:        f.TaskID,
		ToolCallID:    f.ToolCallID,
		// AC-30/31: a non-empty execution id verbatim, else the sentinel.
		AgentExecutionID: f.ExecutionID,
		// '' ⇒ NULL for every nullable text column.
		TurnID:           a.NonEmpty(f.TurnID),
		ParentToolCallID: a.NonEmpty(canon.Sanitize(f.ParentToolCallID)), // AC-6: nested rows are written like any other
		ToolStatus:       a.NonEmpty(text(f.ToolStatus, &v)),
		Source:           SourceLive, // AC-1: the live path creates live rows
		ObservedAt:       observed,
	}
	if row.AgentExecutionID == "" {
		row.AgentExecutionID = UnknownExecution
		v.UnknownExecution = true
	}
	// AC-11: settled_at is the observation time of a terminal tool_status
	// (or of a frame the host knows settles its tool call, §7).
	if f.Settled || canon.IsTerminalToolStatus(f.ToolStatus) {
		row.SettledAt = a.Time(observed)
	}
	// The agent's own lifecycle (docs/CONTRACT.md §3.4): what the source
	// reports, and a synchronous run's end with its tool call's.
	if !f.StartedAt.IsZero() {
		row.StartedAt = a.Time(canon.Time(f.StartedAt))
	}
	switch {
	case !f.EndedAt.IsZero():
		row.EndedAt = a.Time(canon.Time(f.EndedAt))
	case f.Payload != nil && !f.Settled && canon.IsTerminalToolStatus(f.ToolStatus) && !f.Payload.background():
		row.EndedAt = a.Time(observed)
	}
	if p := f.Payload; p != nil {
		row.SubagentType = a.NonEmpty(text(p.SubagentType, &v))
		row.Description = a.NonEmpty(text(p.Description, &v))
		row.AgentID = a.NonEmpty(canon.Sanitize(p.AgentID))
		row.ChildSessionID = a.NonEmpty(canon.Sanitize(p.ChildSessionID))
		row.Model = a.NonEmpty(text(p.Model, &v))
		// AC-10a: agent_status is stored verbatim and never settles anything.
		row.AgentStatus = a.NonEmpty(text(p.Status, &v))
		row.IsAsync = p.IsAsync
		// AC-7/7a: total_tokens and duration_ms cannot say "reported zero":
		// 0 ⇒ NULL. AC-8: tool_use_count is a pointer; nil ⇒ NULL, 0 ⇒ 0.
		// AC-9: a negative metric ⇒ NULL for that field only, counted once.
		var neg [3]bool
		row.TotalTokens, neg[0] = metric(a, p.TotalTokens, canon.MinTotalTokens)
		row.DurationMs, neg[1] = metric(a, p.DurationMs, canon.MinDurationMs)
		if n := p.ToolUseCount; n != nil {
			row.ToolUseCount, neg[2] = metric(a, *n, canon.MinToolUseCount)
		}
		v.Anomalous = neg[0] || neg[1] || neg[2]
	}
	// The run's usage (docs/CONTRACT.md §3.5): a reported 0 is 0, a
	// negative reading NULL and anomalous, like any metric.
	if u := f.Usage; u != nil {
		for _, m := range []struct {
			in  *int64
			out **int64
		}{{u.InputTokens, &row.InputTokens}, {u.OutputTokens, &row.OutputTokens},
			{u.CacheReadTokens, &row.CacheReadTokens}, {u.CacheWriteTokens, &row.CacheWriteTokens},
			{u.Requests, &row.Requests}} {
			if m.in != nil {
				var neg bool
				*m.out, neg = metric(a, *m.in, 0)
				v.Anomalous = v.Anomalous || neg
			}
		}
	}
	return row, v
}

// text is a descriptive text as stored: valid UTF-8 without NUL, within
// canon.MaxTextBytes (cut and marked past it, noted in v).
func text(s string, v *Verdict) string {
	s, cut := canon.Cap(canon.Sanitize(s))
	v.Truncated = v.Truncated || cut
	return s
}

// metric maps a reported metric to its column: at least min kept, below 0
// ⇒ NULL and anomalous (AC-9), 0 below min ⇒ NULL (AC-7a).
func metric(a *canon.Arena, v, min int64) (*int64, bool) {
	switch {
	case v < 0:
		return nil, true
	case v < min:
		return nil, false
	}
	return a.Int(v), false
}
