package backfill

import (
	"bytes"
	"slices"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/jsonb"
)

// Message is one row of the host's messages table as the pass reads it.
// Nil means SQL NULL; a time is nil when the value is not an instant the
// pass can read (docs/CONTRACT.md §4.2).
type Message struct {
	ID, TaskSessionID, TaskID, TurnID *string
	Metadata                          *string
	CreatedAt, UpdatedAt              *time.Time
}

// Recovered is what the pass reads from one message.
type Recovered struct {
	// Subagent: the metadata is a JSON object whose normalized.kind is the
	// string "subagent_task".
	Subagent bool
	// Recoverable: a subagent message the backfill inserts a row for (when
	// it is the newest of its pair and its session exists).
	Recoverable bool
	// Created is created_at at the host's precision (nil: unreadable).
	Created *time.Time
	// Row is the row it would insert (for a subagent message): every column
	// but updated_at, which is the pass's time.
	Row core.Subagent
}

// Recover reads one message the way the migration pass does, on every
// dialect: the Go reference that both SQL dialects must match exactly
// (docs/CONTRACT.md §4.1, §4.2; a differential fuzz test checks them).
func Recover(m Message) Recovered {
	var doc any
	if m.Metadata != nil {
		if v, err := jsonb.Parse(*m.Metadata); err == nil {
			doc = v
		}
	}
	if _, ok := doc.(jsonb.Object); !ok {
		doc = jsonb.Object{} // AC-23b: malformed metadata reads as {}
	}
	if kind, _ := jsonb.Lookup(doc, "normalized", "kind").(string); kind != "subagent_task" {
		return Recovered{}
	}
	task := func(key string) any { return jsonb.Lookup(doc, "normalized", "subagent_task", key) }
	r := Recovered{Subagent: true, Created: m.CreatedAt}
	r.Row = core.Subagent{
		ID:               deref(m.ID),
		TaskSessionID:    deref(m.TaskSessionID),
		TaskID:           deref(m.TaskID),
		TurnID:           nonEmpty(deref(m.TurnID)),
		AgentExecutionID: core.UnknownExecution,
		ToolCallID:       deref(nonEmpty(text(jsonb.Lookup(doc, "tool_call_id")))),
		ParentToolCallID: nonEmpty(text(jsonb.Lookup(doc, "parent_tool_call_id"))),
		SubagentType:     nonEmpty(text(task("subagent_type"))),
		Description:      nonEmpty(text(task("description"))),
		AgentID:          nonEmpty(text(task("agent_id"))),
		ChildSessionID:   nonEmpty(text(task("child_session_id"))),
		Model:            nonEmpty(text(task("model"))),
		AgentStatus:      nonEmpty(text(task("status"))),
		ToolStatus:       nonEmpty(text(jsonb.Lookup(doc, "status"))),
		IsAsync:          isTrue(task("is_async")),
		TotalTokens:      metric(task("total_tokens"), 1),
		ToolUseCount:     metric(task("tool_use_count"), 0),
		DurationMs:       metric(task("duration_ms"), 1),
		Source:           core.SourceBackfill,
	}
	if m.CreatedAt != nil {
		r.Row.ObservedAt = core.CanonicalTime(*m.CreatedAt)
	}
	if r.Row.ToolStatus != nil && core.IsTerminalToolStatus(*r.Row.ToolStatus) && m.UpdatedAt != nil {
		t := core.CanonicalTime(*m.UpdatedAt)
		r.Row.SettledAt = &t
	}
	r.Recoverable = m.CreatedAt != nil && r.Row.TaskSessionID != "" && r.Row.TaskID != "" && r.Row.ToolCallID != "" &&
		storable(r.Row.ID, r.Row.TaskSessionID, r.Row.TaskID, deref(r.Row.TurnID), r.Row.ToolCallID, deref(r.Row.ParentToolCallID))
	return r
}

// storable: every identifier could be stored live, and the row has an id.
func storable(id string, ids ...string) bool {
	if id == "" || core.CheckIdentifier(id) != nil {
		return false
	}
	for _, x := range ids {
		if core.CheckIdentifier(x) != nil {
			return false
		}
	}
	return true
}

// text is a JSON string's value; anything else is "" (NULL).
func text(v any) string { s, _ := v.(string); return s }

// isTrue: true, or a number equal to 1 (AC-23).
func isTrue(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case jsonb.Number:
		n, ok := x.Int()
		return ok && n == 1
	}
	return false
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// nonEmpty is a nullable text value: ” ⇒ NULL.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// metric is an integer metric of at least min, else NULL (AC-23).
func metric(v any, min int64) *int64 {
	n, ok := v.(jsonb.Number)
	if !ok {
		return nil
	}
	i, ok := n.Int()
	if !ok || i < min {
		return nil
	}
	return &i
}

// Pass is the reference of one whole backfill: the rows it inserts, in
// no particular order, and backfill_through (nil for the ” sentinel).
// sessions are the host's session ids; stored are the rows already in the
// table. Each message counts as Recover reads it (docs/CONTRACT.md §4.1).
func Pass(messages []Message, sessions map[string]bool, stored []core.Subagent) (rows []core.Subagent, through *time.Time) {
	newest := map[[2]string]Recovered{}
	for _, m := range messages {
		r := Recover(m)
		if !r.Recoverable {
			continue
		}
		if through == nil || r.Created.After(*through) {
			t := *r.Created
			through = &t
		}
		if !sessions[r.Row.TaskSessionID] {
			continue
		}
		pair := [2]string{r.Row.TaskSessionID, r.Row.ToolCallID}
		if cur, ok := newest[pair]; !ok || newer(r, cur) {
			newest[pair] = r
		}
	}
	held := map[[2]string]bool{}
	for _, s := range stored {
		held[[2]string{s.TaskSessionID, s.ToolCallID}] = true
		held[[2]string{s.TaskSessionID, "id:" + s.ID}] = true
	}
	pairs := make([][2]string, 0, len(newest))
	for p := range newest {
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	for _, p := range pairs {
		r := newest[p]
		idKey := [2]string{r.Row.TaskSessionID, "id:" + r.Row.ID}
		if held[p] || held[idKey] { // a pair with a row (§8.5); a taken id (ON CONFLICT DO NOTHING)
			continue
		}
		held[idKey] = true
		rows = append(rows, r.Row)
	}
	return rows, through
}

// newer: a is newer than b for AC-21b: later created_at, then the greater
// message id byte by byte.
func newer(a, b Recovered) bool {
	if !a.Created.Equal(*b.Created) {
		return a.Created.After(*b.Created)
	}
	return bytes.Compare([]byte(a.Row.ID), []byte(b.Row.ID)) > 0
}
