// Package history is how the host's message history reads as subagent
// rows: one message (Recover), a whole history over the rows already
// stored (Pass), and the host's timestamps (ParseHostTime). It is the Go
// reference the migration pass must match on every dialect
// (docs/CONTRACT.md §4.1, §4.2); differential fuzz tests hold each
// dialect's SQL to it. It reads the column declaration (storekit.Columns): a
// column's metadata path and metric floor are declared there, not here.
package history

import (
	"bytes"
	"slices"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/canon"
	"github.com/subagentctx/subagentctx/internal/jsonb"
)

// recovered are the columns the history holds (a metadata path declared),
// read once: Recover runs per message.
var recovered = slices.DeleteFunc(storekit.Columns(), func(c storekit.Column) bool { return c.Metadata == nil })

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
	// Recoverable: a subagent message the backfill reads a row from (when
	// it is the newest of its pair and its session exists).
	Recoverable bool
	// Created is created_at at the host's precision (nil: unreadable).
	Created *time.Time
	// Row is the row it reads (for a subagent message): every column but
	// updated_at, which is the pass's time.
	Row core.Subagent
}

// Recover reads one message the way the migration pass does, on every
// dialect (docs/CONTRACT.md §4.1, §4.2). The message's own columns give
// the ids and times; every column that declares a metadata path reads it
// there, as its type says.
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
	r := Recovered{Subagent: true, Created: m.CreatedAt}
	r.Row = core.Subagent{
		ID:               deref(m.ID),
		TaskSessionID:    deref(m.TaskSessionID),
		TaskID:           deref(m.TaskID),
		TurnID:           nonEmpty(deref(m.TurnID)),
		AgentExecutionID: core.UnknownExecution,
		Source:           core.SourceBackfill,
	}
	for _, c := range recovered {
		c.Set(&r.Row, Read(c, jsonb.Lookup(doc, c.Metadata...)))
	}
	if m.CreatedAt != nil {
		r.Row.ObservedAt = storekit.CanonicalTime(*m.CreatedAt)
	}
	if r.Row.ToolStatus != nil && canon.IsTerminalToolStatus(*r.Row.ToolStatus) && m.UpdatedAt != nil {
		t := storekit.CanonicalTime(*m.UpdatedAt)
		r.Row.SettledAt = &t
	}
	r.Recoverable = m.CreatedAt != nil && r.Row.TaskSessionID != "" && r.Row.TaskID != "" && r.Row.ToolCallID != "" &&
		storable(
			r.Row.ID, r.Row.TaskSessionID, r.Row.TaskID, deref(r.Row.TurnID), r.Row.ToolCallID, deref(r.Row.ParentToolCallID),
		)
	return r
}

// Read is a metadata value (a jsonb.Parse result, nil when absent) as the
// column c holds it (docs/CONTRACT.md §4.2), for Column.Set: text takes a
// JSON string (” ⇒ NULL), a metric a JSON number whose value is an
// integer within 64 bits and at least the column's Min, a boolean true or
// a number equal to 1. Anything else is NULL (false for a boolean).
func Read(c storekit.Column, v any) any {
	switch c.Type {
	case storekit.Text:
		if s, _ := v.(string); s != "" || !c.Nullable {
			return s
		}
	case storekit.Int64:
		if n, ok := v.(jsonb.Number); ok {
			if i, ok := n.Int(); ok && i >= c.Min {
				return i
			}
		}
	case storekit.Bool:
		return isTrue(v)
	}
	return nil
}

// storable: every identifier could be stored live, and the row has an id.
func storable(id string, ids ...string) bool {
	if id == "" || storekit.CheckIdentifier(id) != nil {
		return false
	}
	for _, x := range ids {
		if storekit.CheckIdentifier(x) != nil {
			return false
		}
	}
	return true
}

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

// Result is what one pass does.
type Result struct {
	// Inserted: rows written for pairs that had none.
	Inserted int64
	// Merged: rows live frames wrote first, into which history was merged
	// (storekit.MergeHistory).
	Merged int64
	// Through is backfill_through: the newest created_at among the
	// recoverable messages (nil: none matched, the '' sentinel).
	Through *time.Time
}

// Pass is the reference of one whole backfill (docs/CONTRACT.md §4.1,
// §8.5): given the host's messages and session ids and the rows already
// stored, the table's rows after it, in no particular order. Each
// (session, tool call id) pair reads its newest recoverable message
// (AC-21b). A pair without a row gets that message's row, unless its
// session does not exist (AC-21a) or its id is taken in the session (the
// primary key; the insert does nothing). A pair with rows merges history
// into its first row in AC-13 order (storekit.MergeHistory): one invocation,
// one row, whichever came first.
func Pass(messages []Message, sessions map[string]bool, stored []core.Subagent) ([]core.Subagent, Result) {
	var res Result
	newest := map[[2]string]Recovered{}
	for _, m := range messages {
		r := Recover(m)
		if !r.Recoverable {
			continue
		}
		if res.Through == nil || r.Created.After(*res.Through) {
			t := *r.Created
			res.Through = &t
		}
		pair := [2]string{r.Row.TaskSessionID, r.Row.ToolCallID}
		if cur, ok := newest[pair]; !ok || newer(r, cur) {
			newest[pair] = r
		}
	}
	rows := slices.Clone(stored)
	first := map[[2]string]int{} // pair → index of its first row in AC-13 order
	held := map[[2]string]bool{} // (session, id) taken
	for i, s := range rows {
		pair := [2]string{s.TaskSessionID, s.ToolCallID}
		if j, ok := first[pair]; !ok || s.Cursor().Less(rows[j].Cursor()) {
			first[pair] = i
		}
		held[[2]string{s.TaskSessionID, s.ID}] = true
	}
	pairs := make([][2]string, 0, len(newest))
	for p := range newest {
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	for _, p := range pairs {
		r := newest[p]
		if i, ok := first[p]; ok {
			rows[i] = storekit.MergeHistory(rows[i], r.Row)
			res.Merged++
			continue
		}
		id := [2]string{r.Row.TaskSessionID, r.Row.ID}
		if !sessions[r.Row.TaskSessionID] || held[id] {
			continue
		}
		held[id] = true
		rows = append(rows, r.Row)
		res.Inserted++
	}
	return rows, res
}

// newer: a is newer than b for AC-21b: later created_at, then the greater
// message id byte by byte.
func newer(a, b Recovered) bool {
	if !a.Created.Equal(*b.Created) {
		return a.Created.After(*b.Created)
	}
	return bytes.Compare([]byte(a.Row.ID), []byte(b.Row.ID)) > 0
}
