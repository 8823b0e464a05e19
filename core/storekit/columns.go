package storekit

import (
	"fmt"
	"slices"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// columns declares every column of task_session_subagents, in table order:
// its name, type, nullability, whether it is an identifier, its database
// default and its merge rule (docs/CONTRACT.md §2, §3.2). Everything else is
// derived from it: Merge, Clone, Validate, the DDL, the upsert's SET list,
// the SQL argument and scan lists.
//
// Adding a column touches three places: a field of Subagent, its line here
// (with the metadata path the migration pass reads it from, and a metric's
// floor), and the live rule that fills it (Normalize). Everything else
// follows: the DDL and the additive upgrade of deployed tables, the SET
// list, the history reader (history.Recover) and each dialect's message
// view, argument and scan lists.
var columns = []Column{
	{Name: "id", Type: Text, Identifier: true, Rule: RuleWriteOnce,
		field: text(func(s *core.Subagent) *string { return &s.ID })},
	{Name: "task_session_id", Type: Text, Identifier: true, Rule: RuleKey,
		field: text(func(s *core.Subagent) *string { return &s.TaskSessionID })},
	{Name: "task_id", Type: Text, Identifier: true, Rule: RuleWriteOnce,
		field: text(func(s *core.Subagent) *string { return &s.TaskID })},
	{Name: "turn_id", Type: Text, Nullable: true, Identifier: true, Rule: RuleFirstWins,
		field: nullText(func(s *core.Subagent) **string { return &s.TurnID })},
	{Name: "agent_execution_id", Type: Text, Identifier: true, Rule: RuleKey, Default: core.UnknownExecution,
		field: text(func(s *core.Subagent) *string { return &s.AgentExecutionID })},
	{Name: "tool_call_id", Type: Text, Identifier: true, Rule: RuleKey, Metadata: top("tool_call_id"),
		field: text(func(s *core.Subagent) *string { return &s.ToolCallID })},
	{Name: "parent_tool_call_id", Type: Text, Nullable: true, Identifier: true, Rule: RuleFillForward,
		Metadata: top("parent_tool_call_id"),
		field:    nullText(func(s *core.Subagent) **string { return &s.ParentToolCallID })},
	{Name: "subagent_type", Type: Text, Nullable: true, Rule: RuleFillForward, Metadata: task("subagent_type"),
		field: nullText(func(s *core.Subagent) **string { return &s.SubagentType })},
	{Name: "description", Type: Text, Nullable: true, Rule: RuleFillForward, Metadata: task("description"),
		field: nullText(func(s *core.Subagent) **string { return &s.Description })},
	{Name: "agent_id", Type: Text, Nullable: true, Rule: RuleFillForward, Metadata: task("agent_id"),
		field: nullText(func(s *core.Subagent) **string { return &s.AgentID })},
	{Name: "child_session_id", Type: Text, Nullable: true, Rule: RuleFillForward, Metadata: task("child_session_id"),
		field: nullText(func(s *core.Subagent) **string { return &s.ChildSessionID })},
	{Name: "model", Type: Text, Nullable: true, Rule: RuleFillForward, Metadata: task("model"),
		field: nullText(func(s *core.Subagent) **string { return &s.Model })},
	{Name: "agent_status", Type: Text, Nullable: true, Rule: RuleAgentStatus, Metadata: task("status"),
		field: nullText(func(s *core.Subagent) **string { return &s.AgentStatus })},
	{Name: "tool_status", Type: Text, Nullable: true, Rule: RuleFrozenOnceSettled, Metadata: top("status"),
		field: nullText(func(s *core.Subagent) **string { return &s.ToolStatus })},
	{Name: "is_async", Type: Bool, Rule: RuleSticky, Default: false, Metadata: task("is_async"),
		field: boolean(func(s *core.Subagent) *bool { return &s.IsAsync })},
	{Name: "total_tokens", Type: Int64, Nullable: true, Rule: RuleFillForward, Min: canon.MinTotalTokens,
		Metadata: task("total_tokens"),
		field:    nullInt(func(s *core.Subagent) **int64 { return &s.TotalTokens })},
	{Name: "tool_use_count", Type: Int64, Nullable: true, Rule: RuleFillForward, Min: canon.MinToolUseCount,
		Metadata: task("tool_use_count"),
		field:    nullInt(func(s *core.Subagent) **int64 { return &s.ToolUseCount })},
	{Name: "duration_ms", Type: Int64, Nullable: true, Rule: RuleFillForward, Min: canon.MinDurationMs,
		Metadata: task("duration_ms"),
		field:    nullInt(func(s *core.Subagent) **int64 { return &s.DurationMs })},
	{Name: "input_tokens", Type: Int64, Nullable: true, Rule: RuleLargest, LiveOnly: true,
		field: nullInt(func(s *core.Subagent) **int64 { return &s.InputTokens })},
	{Name: "output_tokens", Type: Int64, Nullable: true, Rule: RuleLargest, LiveOnly: true,
		field: nullInt(func(s *core.Subagent) **int64 { return &s.OutputTokens })},
	{Name: "cache_read_tokens", Type: Int64, Nullable: true, Rule: RuleLargest, LiveOnly: true,
		field: nullInt(func(s *core.Subagent) **int64 { return &s.CacheReadTokens })},
	{Name: "cache_write_tokens", Type: Int64, Nullable: true, Rule: RuleLargest, LiveOnly: true,
		field: nullInt(func(s *core.Subagent) **int64 { return &s.CacheWriteTokens })},
	{Name: "requests", Type: Int64, Nullable: true, Rule: RuleLargest, LiveOnly: true,
		field: nullInt(func(s *core.Subagent) **int64 { return &s.Requests })},
	{Name: "source", Type: Text, Rule: RuleWriteOnce, Default: string(core.SourceLive),
		field: text(func(s *core.Subagent) *string { return (*string)(&s.Source) })},
	{Name: "observed_at", Type: Time, Rule: RuleWriteOnce,
		field: timestamp(func(s *core.Subagent) *time.Time { return &s.ObservedAt })},
	{Name: SettledAtColumn, Type: Time, Nullable: true, Rule: RuleFirstWins,
		field: nullTime(func(s *core.Subagent) **time.Time { return &s.SettledAt })},
	{Name: StartedAtColumn, Type: Time, Nullable: true, Rule: RuleEarliest, LiveOnly: true,
		field: nullTime(func(s *core.Subagent) **time.Time { return &s.StartedAt })},
	{Name: "ended_at", Type: Time, Nullable: true, Rule: RuleEnd, LiveOnly: true,
		field: nullTime(func(s *core.Subagent) **time.Time { return &s.EndedAt })},
	{Name: "updated_at", Type: Time, Rule: RuleLastWrite,
		field: timestamp(func(s *core.Subagent) *time.Time { return &s.UpdatedAt })},
}

// top and task are metadata paths: a key at the top of a message's
// metadata, and one under normalized.subagent_task (docs/CONTRACT.md §4.1).
func top(key string) []string  { return []string{key} }
func task(key string) []string { return []string{"normalized", "subagent_task", key} }

// The columns each operation visits: the record path runs several per
// frame, so each skips the columns it leaves alone.
var (
	mergedFields = fieldsWhere(func(c Column) bool { return c.Rule != RuleKey && c.Rule != RuleWriteOnce })
	pointerField = fieldsWhere(func(c Column) bool { return c.Nullable })
	timeFields   = fieldsWhere(func(c Column) bool { return c.Type == Time })
	checkedField = fieldsWhere(func(c Column) bool { return c.Type != Bool })
)

// Columns are the declared columns of task_session_subagents, in table
// order, each with its type, nullability, default and merge rule: a copy,
// so that the declaration cannot change from outside this package.
func Columns() []Column { return slices.Clone(columns) }

// KeyColumns are the unique key's columns, in key order (AC-3, AC-32).
func KeyColumns() []string { return slices.Clone(keyColumns) }

// columnField is a column's field with the column's declaration beside it.
type columnField struct {
	field
	col *Column
}

func fieldsWhere(keep func(Column) bool) []columnField {
	var out []columnField
	for i := range columns {
		if keep(columns[i]) {
			out = append(out, columnField{columns[i].field, &columns[i]})
		}
	}
	return out
}

// SettledAtColumn is the column whose presence freezes FrozenOnceSettled
// columns.
const SettledAtColumn = "settled_at"

// StartedAtColumn is the column whose incoming value, later than a stored
// end, reopens an ended agent (RuleEnd).
const StartedAtColumn = "started_at"

// keyColumns are the unique key's columns, in key order (AC-3, AC-32).
var keyColumns = []string{"task_session_id", "agent_execution_id", "tool_call_id"}

// Column is one declared column. Its accessors read and write the matching
// field of a Subagent.
type Column struct {
	Name string
	Type Type
	// Nullable columns are pointers in Subagent; NULL is nil.
	Nullable bool
	// Identifier columns are stored exactly as given or refused (never
	// sanitized): docs/CONTRACT.md §2.
	Identifier bool
	Rule       Rule
	// Default is the database default (nil: none). Metrics have none, on
	// purpose: "not reported" must never become 0.
	Default any
	// Metadata is the JSON path under a host message's metadata from which
	// the migration pass reads the column (nil: the pass fills it from the
	// message's own columns or a constant, history.Recover). The column's
	// type says what value counts: a JSON string for text ('' ⇒ NULL), an
	// integral number of at least Min for a metric, true or a number equal
	// to 1 for a boolean; anything else is NULL (docs/CONTRACT.md §4.2).
	Metadata []string
	// Min is the least value a metric keeps, on the live path and in
	// history alike: a reported value below it is NULL (AC-7a), a negative
	// one anomalous on the live path (AC-9).
	Min int64
	// LiveOnly columns are never in a host's message: history (the
	// migration pass) leaves them NULL, and only live frames fill them.
	LiveOnly bool
	field    field
}

// Type is a column's kind of value; each SQL dialect maps it to a type.
type Type uint8

// Column types.
const (
	Text  Type = iota + 1 // text
	Int64                 // 64-bit integer
	Bool                  // 0 or 1
	Time                  // an instant, UTC, microseconds
)

// Rule is how a column merges when a row meets a stored one with the same
// key (docs/CONTRACT.md §3.2). Merge implements it in Go; the SQL stores
// render each rule in their upsert's SET list.
type Rule uint8

// Merge rules.
const (
	// RuleKey columns identify the row and are never updated (AC-3).
	RuleKey Rule = iota + 1
	// RuleWriteOnce columns keep the first write's value (AC-1a).
	RuleWriteOnce
	// RuleFirstWins columns keep a stored value; a stored NULL is filled
	// (AC-2a, AC-11).
	RuleFirstWins
	// RuleFillForward columns take a non-NULL incoming value; NULL never blanks
	// a stored one (AC-4, AC-5).
	RuleFillForward
	// RuleFrozenOnceSettled columns fill forward until the stored row has
	// settled_at, and are frozen after (AC-12).
	RuleFrozenOnceSettled
	// RuleSticky booleans are true once either side is true.
	RuleSticky
	// RuleLastWrite columns always take the incoming value.
	RuleLastWrite
	// RuleAgentStatus fills forward, except that an incoming
	// AgentStatusUnknown never replaces the status of a row whose agent has
	// ended: a lost connection says nothing about a run that is over
	// (agent_status, docs/CONTRACT.md §3.4).
	RuleAgentStatus
	// RuleEarliest instants keep the earlier of the two; NULL never blanks
	// a stored one (started_at: a subagent's first start).
	RuleEarliest
	// RuleLargest integers keep the larger of the two; NULL never blanks a
	// stored one: a later, larger reading of a run's usage replaces a
	// smaller one, a partial reading never lowers a complete one (the run's
	// usage, docs/CONTRACT.md §3.5).
	RuleLargest
	// RuleEnd instants are first wins, except that a row whose incoming
	// started_at is later than its stored end was woken again after it
	// stopped: it takes the incoming end, NULL until the agent ends again
	// (ended_at, docs/CONTRACT.md §3.4; reopens).
	RuleEnd
)

var ruleNames = [...]string{
	RuleKey: "key", RuleWriteOnce: "write-once", RuleFirstWins: "first wins", RuleFillForward: "fill forward",
	RuleFrozenOnceSettled: "frozen once settled", RuleSticky: "sticky", RuleLastWrite: "last write",
	RuleEarliest: "earliest", RuleEnd: "first end, reopened by a later start",
	RuleAgentStatus: "fill forward, unknown never over an end", RuleLargest: "largest",
}

func (r Rule) String() string { return ruleNames[r] }

// Sides is what a rule reads of one column's stored and incoming values.
type Sides struct {
	// StoredNull and IncomingNull say which side is NULL (for a Sticky
	// boolean, false counts as NULL: "not reported").
	StoredNull, IncomingNull bool
	// Greater says whether the incoming value is greater than the stored
	// one (a later instant, a larger integer).
	Greater bool
	// Settled says whether the stored row has settled_at.
	Settled bool
}

// TakesIncoming reports whether the merged row takes the incoming value of
// a column with this rule, given its two sides. RuleEnd's reopening is
// reopens; RuleAgentStatus's exception, keepsEndedStatus.
func (r Rule) TakesIncoming(s Sides) bool {
	switch r {
	case RuleFirstWins, RuleEnd:
		return s.StoredNull
	case RuleFillForward, RuleSticky, RuleAgentStatus:
		return !s.IncomingNull
	case RuleFrozenOnceSettled:
		return !s.Settled && !s.IncomingNull
	case RuleLastWrite:
		return true
	case RuleEarliest:
		return !s.IncomingNull && (s.StoredNull || !s.Greater)
	case RuleLargest:
		return !s.IncomingNull && (s.StoredNull || s.Greater)
	}
	return false // RuleKey, RuleWriteOnce
}

// Value is the column's value in s as a database argument: nil for NULL, an
// int64 0/1 for a boolean, a canonical UTC time for an instant.
func (c Column) Value(s *core.Subagent) any { return c.field.value(s) }

// Dest is a scan destination for the column's field in s (database/sql
// Scan semantics; a nullable field becomes nil for NULL).
func (c Column) Dest(s *core.Subagent) any { return c.field.dest(s) }

// Set stores v in the column's field of s: nil is NULL (false for a
// boolean, the zero time for a required instant), otherwise a string, an
// int64, a bool or a time.Time, as the column's type says. A value of
// another type panics: it is a programming error.
func (c Column) Set(s *core.Subagent, v any) { c.field.set(s, v) }

// IsNull reports whether the column is NULL in s.
func (c Column) IsNull(s *core.Subagent) bool { return c.field.null(s) }

// Format renders the column's value in s for messages and diffs ("NULL"
// for NULL).
func (c Column) Format(s *core.Subagent) string { return c.field.format(s) }

// field is typed access to one Subagent field.
type field interface {
	value(*core.Subagent) any
	dest(*core.Subagent) any
	set(*core.Subagent, any)
	null(*core.Subagent) bool
	take(dst, src *core.Subagent)
	clone(*core.Subagent, *canon.Arena)
	canon(*core.Subagent)
	format(*core.Subagent) string
	// greater reports whether incoming's value is greater than stored's —
	// a later instant, a larger integer — (false for text and booleans, or
	// a NULL side).
	greater(stored, incoming *core.Subagent) bool
	// check validates the value (docs/CONTRACT.md §2) without boxing it:
	// Validate runs on every write.
	check(c *Column, s *core.Subagent) error
}

type text func(*core.Subagent) *string

func (f text) value(s *core.Subagent) any         { return *f(s) }
func (f text) dest(s *core.Subagent) any          { return f(s) }
func (f text) set(s *core.Subagent, v any)        { *f(s), _ = v.(string) }
func (f text) null(s *core.Subagent) bool         { return false }
func (f text) take(dst, src *core.Subagent)       { *f(dst) = *f(src) }
func (f text) clone(*core.Subagent, *canon.Arena) {}
func (f text) canon(*core.Subagent)               {}
func (f text) greater(_, _ *core.Subagent) bool   { return false }
func (f text) format(s *core.Subagent) string     { return fmt.Sprintf("%q", *f(s)) }
func (f text) check(c *Column, s *core.Subagent) error {
	v := *f(s)
	switch {
	case v == "" && c.Name != "id": // an empty id is assigned by the store
		return errEmpty
	case c.Identifier && v != "":
		return CheckIdentifier(v)
	}
	return nil
}

type boolean func(*core.Subagent) *bool

func (f boolean) value(s *core.Subagent) any {
	if *f(s) {
		return int64(1)
	}
	return int64(0)
}
func (f boolean) dest(s *core.Subagent) any           { return f(s) }
func (f boolean) set(s *core.Subagent, v any)         { *f(s) = v != nil && v.(bool) }
func (f boolean) null(s *core.Subagent) bool          { return !*f(s) }
func (f boolean) take(dst, src *core.Subagent)        { *f(dst) = *f(src) }
func (f boolean) clone(*core.Subagent, *canon.Arena)  {}
func (f boolean) canon(*core.Subagent)                {}
func (f boolean) greater(_, _ *core.Subagent) bool    { return false }
func (f boolean) format(s *core.Subagent) string      { return fmt.Sprint(*f(s)) }
func (f boolean) check(*Column, *core.Subagent) error { return nil }

type timestamp func(*core.Subagent) *time.Time

func (f timestamp) value(s *core.Subagent) any { return CanonicalTime(*f(s)) }
func (f timestamp) dest(s *core.Subagent) any  { return f(s) }
func (f timestamp) set(s *core.Subagent, v any) {
	*f(s) = time.Time{}
	if v != nil {
		*f(s) = v.(time.Time)
	}
}
func (f timestamp) null(*core.Subagent) bool               { return false }
func (f timestamp) take(dst, src *core.Subagent)           { *f(dst) = *f(src) }
func (f timestamp) greater(stored, in *core.Subagent) bool { return f(in).After(*f(stored)) }
func (f timestamp) clone(*core.Subagent, *canon.Arena)     {}
func (f timestamp) canon(s *core.Subagent) {
	if !isCanonical(*f(s)) {
		*f(s) = CanonicalTime(*f(s))
	}
}
func (f timestamp) check(c *Column, s *core.Subagent) error {
	if f(s).IsZero() && c.Rule != RuleLastWrite { // the store stamps updated_at itself
		return errZeroTime
	}
	return checkTime(*f(s))
}
func (f timestamp) format(s *core.Subagent) string { return formatTime(*f(s)) }

type nullText func(*core.Subagent) **string

func (f nullText) value(s *core.Subagent) any {
	if p := *f(s); p != nil {
		return *p
	}
	return nil
}
func (f nullText) dest(s *core.Subagent) any { return f(s) }
func (f nullText) set(s *core.Subagent, v any) {
	*f(s) = nil
	if v != nil {
		t := v.(string)
		*f(s) = &t
	}
}
func (f nullText) null(s *core.Subagent) bool   { return *f(s) == nil }
func (f nullText) take(dst, src *core.Subagent) { *f(dst) = *f(src) }
func (f nullText) clone(s *core.Subagent, a *canon.Arena) {
	if p := f(s); *p != nil {
		*p = a.Text(**p)
	}
}
func (f nullText) canon(*core.Subagent)             {}
func (f nullText) greater(_, _ *core.Subagent) bool { return false }
func (f nullText) check(c *Column, s *core.Subagent) error {
	switch p := *f(s); {
	case p == nil:
		return nil
	case *p == "":
		return errEmptyNullable
	case c.Identifier:
		return CheckIdentifier(*p)
	}
	return nil
}
func (f nullText) format(s *core.Subagent) string {
	if p := *f(s); p != nil {
		return fmt.Sprintf("%q", *p)
	}
	return "NULL"
}

type nullInt func(*core.Subagent) **int64

func (f nullInt) value(s *core.Subagent) any {
	if p := *f(s); p != nil {
		return *p
	}
	return nil
}
func (f nullInt) dest(s *core.Subagent) any { return f(s) }
func (f nullInt) set(s *core.Subagent, v any) {
	*f(s) = nil
	if v != nil {
		n := v.(int64)
		*f(s) = &n
	}
}
func (f nullInt) null(s *core.Subagent) bool   { return *f(s) == nil }
func (f nullInt) take(dst, src *core.Subagent) { *f(dst) = *f(src) }
func (f nullInt) clone(s *core.Subagent, a *canon.Arena) {
	if p := f(s); *p != nil {
		*p = a.Int(**p)
	}
}
func (f nullInt) canon(*core.Subagent) {}
func (f nullInt) greater(stored, in *core.Subagent) bool {
	s, i := *f(stored), *f(in)
	return s != nil && i != nil && *i > *s
}
func (f nullInt) check(_ *Column, s *core.Subagent) error {
	if p := *f(s); p != nil && *p < 0 {
		return errNegative
	}
	return nil
}
func (f nullInt) format(s *core.Subagent) string {
	if p := *f(s); p != nil {
		return fmt.Sprint(*p)
	}
	return "NULL"
}

type nullTime func(*core.Subagent) **time.Time

func (f nullTime) value(s *core.Subagent) any {
	if p := *f(s); p != nil {
		return CanonicalTime(*p)
	}
	return nil
}
func (f nullTime) dest(s *core.Subagent) any { return f(s) }
func (f nullTime) set(s *core.Subagent, v any) {
	*f(s) = nil
	if v != nil {
		t := v.(time.Time)
		*f(s) = &t
	}
}
func (f nullTime) null(s *core.Subagent) bool   { return *f(s) == nil }
func (f nullTime) take(dst, src *core.Subagent) { *f(dst) = *f(src) }
func (f nullTime) greater(stored, in *core.Subagent) bool {
	s, i := *f(stored), *f(in)
	return s != nil && i != nil && i.After(*s)
}
func (f nullTime) clone(s *core.Subagent, a *canon.Arena) {
	if p := f(s); *p != nil {
		*p = a.Time(**p)
	}
}
func (f nullTime) canon(s *core.Subagent) {
	if p := f(s); *p != nil && !isCanonical(**p) {
		t := canon.Time(**p)
		*p = &t
	}
}
func (f nullTime) check(_ *Column, s *core.Subagent) error {
	if p := *f(s); p != nil {
		return checkTime(*p)
	}
	return nil
}
func (f nullTime) format(s *core.Subagent) string {
	if p := *f(s); p != nil {
		return formatTime(*p)
	}
	return "NULL"
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// isCanonical reports whether t is already in its stored form.
func isCanonical(t time.Time) bool { return t.Location() == time.UTC && t.Nanosecond()%1000 == 0 }

// Canonical returns the row with every time in its stored form: UTC,
// truncated to the microsecond (CanonicalTime).
func Canonical(s core.Subagent) core.Subagent {
	Canonicalize(&s)
	return s
}

// Canonicalize puts every time of the row in its stored form, in place.
func Canonicalize(s *core.Subagent) {
	for _, f := range timeFields {
		f.canon(s)
	}
}

// Clone returns a deep copy, so that a stored row and a caller's copy never
// share a pointer.
func Clone(s core.Subagent) core.Subagent {
	Detach(&s)
	return s
}

// Detach gives the row's pointers values of its own (one allocation), in
// place, so that it shares nothing with the row it was copied from.
func Detach(s *core.Subagent) {
	a := new(canon.Arena)
	for _, f := range pointerField {
		f.clone(s, a)
	}
}
