package report

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// Overviewer answers "what failed, what it cost, where" over a window of
// the record (docs/CONTRACT.md §5.4): the SQL stores and the memory store
// implement it, with OverviewOf as the reference.
type Overviewer interface {
	Overview(ctx context.Context, q OverviewQuery) (Overview, error)
}

// OverviewQuery is the window an overview counts: the rows observed in
// [Since, Until) (a zero bound is open), and how many groups each
// breakdown lists.
type OverviewQuery struct {
	Since, Until time.Time
	// Groups bounds the groups listed per breakdown, the most invoked
	// first (0: DefaultOverviewGroups; at most MaxOverviewGroups); the
	// rest are counted in Breakdown.Others.
	Groups int
	// Failed counts the failed rows alone (a tool status in
	// FailedToolStatuses): what the failures cost, apart from the rest.
	Failed bool
}

// Validate checks the query, naming what is wrong.
func (q OverviewQuery) Validate() error {
	if q.Groups < 0 || q.Groups > MaxOverviewGroups {
		return fmt.Errorf("overview: %d groups, want 0 (the default, %d) to %d",
			q.Groups, DefaultOverviewGroups, MaxOverviewGroups)
	}
	return validWindow("overview", q.Since, q.Until)
}

// GroupsOrDefault is the query's bound on each breakdown.
func (q OverviewQuery) GroupsOrDefault() int {
	if q.Groups == 0 {
		return DefaultOverviewGroups
	}
	return q.Groups
}

// Contains reports whether an observation instant is in the window, at
// the stores' microsecond.
func (q OverviewQuery) Contains(observedAt time.Time) bool {
	return canon.InWindow(observedAt, q.Since, q.Until)
}

func validWindow(op string, since, until time.Time) error {
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return fmt.Errorf("%s: since %s is not before until %s", op,
			since.UTC().Format(time.RFC3339Nano), until.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// Overview is the record over a window: the rows, then four breakdowns of
// them — by tool status and agent status (verbatim values), by subagent
// type and by model (with their durations' median and 95th percentile).
type Overview struct {
	Query        OverviewQuery `json:"query"`
	Rows         int64         `json:"rows"`
	Live         int64         `json:"live"`
	Backfill     int64         `json:"backfill"`
	ToolStatus   Breakdown     `json:"tool_status"`
	AgentStatus  Breakdown     `json:"agent_status"`
	SubagentType Breakdown     `json:"subagent_type"`
	Model        Breakdown     `json:"model"`
}

// Breakdown is the rows grouped by one column's value: the most invoked
// groups first (then by value, byte by byte; not reported last), at most
// OverviewQuery.Groups of them; the others counted apart.
type Breakdown struct {
	Groups []Group `json:"groups"`
	// Others is how many groups were not listed, and OtherRows their rows.
	Others    int64 `json:"others"`
	OtherRows int64 `json:"other_rows"`
}

// Group is one value of a breakdown's column (nil: not reported), with
// its figures over all its rows and over the live and the backfilled
// rows apart.
type Group struct {
	Value    *string `json:"value"`
	All      Figures `json:"all"`
	Live     Figures `json:"live"`
	Backfill Figures `json:"backfill"`
}

// Figures are a group's invocations (rows), how many failed (a tool
// status in FailedToolStatuses), its durations and its metrics, each over
// the rows that reported it, with how many did not.
type Figures struct {
	Invocations int64 `json:"invocations"`
	Failed      int64 `json:"failed"`
	// NoEnd counts the rows whose agent may still end and has not: a
	// background launch or an open call with no end seen (docs/CONTRACT.md
	// §3.4). Running now, or never came back: the stale read tells them
	// apart by age.
	NoEnd int64 `json:"no_end"`
	// TotalTokens sums total_tokens: each run's final request, not what
	// the runs spent. RunTokens sums what they spent (RunTokens of each
	// row), over the rows whose run's usage was reported; each row's own,
	// never a parent's added to its children's.
	TotalTokens  Metric `json:"total_tokens"`
	RunTokens    Metric `json:"run_tokens"`
	ToolUseCount Metric `json:"tool_use_count"`
	// Duration is nil in the status breakdowns, which give no
	// percentiles.
	Duration *Distribution `json:"duration_ms,omitempty"`
}

// Distribution is a metric's reported values by rank: the median and the
// 95th percentile by nearest rank (the value at rank ⌈p·n⌉ of the n
// reported values in ascending order), nil when nothing was reported.
type Distribution struct {
	Reported   int64  `json:"reported"`
	Unreported int64  `json:"unreported"`
	Median     *int64 `json:"median"`
	P95        *int64 `json:"p95"`
}

// SessionQuery selects the sessions Reader.Sessions summarises: those
// with a row observed in [Since, Until) (a zero bound is open; the
// summaries count those rows only), whose id starts with Prefix (byte by
// byte), after the key After in the listing's order, at most Limit of
// them (0: all).
type SessionQuery struct {
	Since, Until time.Time
	Prefix       string
	After        *SessionKey
	Limit        int
}

// SessionKey is a session's place in the listing: the most recently
// observed first, then by session id, byte by byte.
type SessionKey struct {
	LastObservedAt time.Time `json:"last_observed_at"`
	TaskSessionID  string    `json:"task_session_id"`
}

// Key is the summary's place in the listing, for SessionQuery.After.
func (s SessionSummary) Key() SessionKey {
	return SessionKey{LastObservedAt: s.LastObservedAt, TaskSessionID: s.TaskSessionID}
}

// Validate checks the query, naming what is wrong.
func (q SessionQuery) Validate() error {
	if err := (core.Page{Limit: q.Limit}).Validate(); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	if !utf8.ValidString(q.Prefix) || strings.ContainsRune(q.Prefix, 0) {
		return fmt.Errorf("sessions: the prefix %q is not UTF-8 text without NUL", q.Prefix)
	}
	return validWindow("sessions", q.Since, q.Until)
}

// Contains reports whether the window holds an observation instant.
func (q SessionQuery) Contains(observedAt time.Time) bool {
	return canon.InWindow(observedAt, q.Since, q.Until)
}

// Precedes reports whether a session with key k comes before the one with
// key after in the listing's order.
func (k SessionKey) Precedes(after SessionKey) bool {
	a, b := canon.Time(k.LastObservedAt), canon.Time(after.LastObservedAt)
	if !a.Equal(b) {
		return a.After(b)
	}
	return k.TaskSessionID < after.TaskSessionID
}
