package core

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
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

// The overview's bound on the groups of one breakdown.
const (
	DefaultOverviewGroups = 20
	MaxOverviewGroups     = 1000
)

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
	return inWindow(observedAt, q.Since, q.Until)
}

// counts reports whether the overview counts a row: in its window, and
// failed when it asks for the failed ones.
func (q OverviewQuery) counts(r Subagent) bool {
	return q.Contains(r.ObservedAt) && (!q.Failed || r.ToolStatus != nil && IsFailedToolStatus(*r.ToolStatus))
}

func inWindow(t, since, until time.Time) bool {
	t = CanonicalTime(t)
	return (since.IsZero() || !t.Before(CeilMicro(since))) && (until.IsZero() || t.Before(CeilMicro(until)))
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
	Invocations  int64  `json:"invocations"`
	Failed       int64  `json:"failed"`
	TotalTokens  Metric `json:"total_tokens"`
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

// Rank is the nearest rank (1-based) of the percentile pct of n values:
// ⌈pct·n/100⌉.
func Rank(pct, n int64) int64 { return (pct*n + 99) / 100 }

// OverviewOf is the reference overview: rows (a store's, in any order)
// counted in the window q asks for.
func OverviewOf(rows []Subagent, q OverviewQuery) Overview {
	o := Overview{Query: q}
	dims := []struct {
		into      *Breakdown
		value     func(Subagent) *string
		durations bool
	}{
		{&o.ToolStatus, func(r Subagent) *string { return r.ToolStatus }, false},
		{&o.AgentStatus, func(r Subagent) *string { return r.AgentStatus }, false},
		{&o.SubagentType, func(r Subagent) *string { return r.SubagentType }, true},
		{&o.Model, func(r Subagent) *string { return r.Model }, true},
	}
	var in []Subagent
	for _, r := range rows {
		if q.counts(r) {
			in = append(in, r)
			if r.Source == SourceBackfill {
				o.Backfill++
			} else {
				o.Live++
			}
		}
	}
	o.Rows = o.Live + o.Backfill
	for _, d := range dims {
		byValue := map[string][]Subagent{}
		var unreported []Subagent
		for _, r := range in {
			if v := d.value(r); v != nil {
				byValue[*v] = append(byValue[*v], r)
			} else {
				unreported = append(unreported, r)
			}
		}
		var groups []Group
		for v, rs := range byValue {
			groups = append(groups, groupOf(&v, rs, d.durations))
		}
		if len(unreported) > 0 {
			groups = append(groups, groupOf(nil, unreported, d.durations))
		}
		slices.SortFunc(groups, compareGroups)
		*d.into = limitGroups(groups, q.GroupsOrDefault())
	}
	return o
}

// compareGroups is a breakdown's order: the most invoked first, then by
// value byte by byte, not reported last.
func compareGroups(a, b Group) int {
	if c := cmp.Compare(b.All.Invocations, a.All.Invocations); c != 0 {
		return c
	}
	switch {
	case a.Value == nil || b.Value == nil:
		return cmp.Compare(boolInt(a.Value == nil), boolInt(b.Value == nil))
	}
	return strings.Compare(*a.Value, *b.Value)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// limitGroups keeps the first n groups of an ordered breakdown and counts
// the rest.
func limitGroups(groups []Group, n int) Breakdown {
	b := Breakdown{Groups: groups}
	if len(groups) > n {
		for _, g := range groups[n:] {
			b.Others++
			b.OtherRows += g.All.Invocations
		}
		b.Groups = groups[:n]
	}
	if b.Groups == nil {
		b.Groups = []Group{}
	}
	return b
}

func groupOf(value *string, rows []Subagent, durations bool) Group {
	g := Group{Value: value}
	var live, backfill []Subagent
	for _, r := range rows {
		if r.Source == SourceBackfill {
			backfill = append(backfill, r)
		} else {
			live = append(live, r)
		}
	}
	g.All, g.Live, g.Backfill = figuresOf(rows, durations), figuresOf(live, durations), figuresOf(backfill, durations)
	return g
}

func figuresOf(rows []Subagent, durations bool) Figures {
	f := Figures{Invocations: int64(len(rows))}
	var tokens, uses Metric
	var ms []int64
	for _, r := range rows {
		if r.ToolStatus != nil && IsFailedToolStatus(*r.ToolStatus) {
			f.Failed++
		}
		tokens.add(r.TotalTokens)
		uses.add(r.ToolUseCount)
		if r.DurationMs != nil {
			ms = append(ms, *r.DurationMs)
		}
	}
	tokens.average()
	uses.average()
	f.TotalTokens, f.ToolUseCount = tokens, uses
	if durations {
		slices.Sort(ms)
		d := DistributionOf(int64(len(rows)), ms)
		f.Duration = &d
	}
	return f
}

// DistributionOf is the distribution of the sorted reported values among
// rows rows.
func DistributionOf(rows int64, sorted []int64) Distribution {
	n := int64(len(sorted))
	d := Distribution{Reported: n, Unreported: rows - n}
	if n > 0 {
		median, p95 := sorted[Rank(50, n)-1], sorted[Rank(95, n)-1]
		d.Median, d.P95 = &median, &p95
	}
	return d
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
	if err := (Page{Limit: q.Limit}).Validate(); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	if !utf8.ValidString(q.Prefix) || strings.ContainsRune(q.Prefix, 0) {
		return fmt.Errorf("sessions: the prefix %q is not UTF-8 text without NUL", q.Prefix)
	}
	return validWindow("sessions", q.Since, q.Until)
}

// Contains reports whether the window holds an observation instant.
func (q SessionQuery) Contains(observedAt time.Time) bool {
	return inWindow(observedAt, q.Since, q.Until)
}

// Precedes reports whether a session with key k comes before the one with
// key after in the listing's order.
func (k SessionKey) Precedes(after SessionKey) bool {
	a, b := CanonicalTime(k.LastObservedAt), CanonicalTime(after.LastObservedAt)
	if !a.Equal(b) {
		return a.After(b)
	}
	return k.TaskSessionID < after.TaskSessionID
}

// SessionsOf is the reference listing of Reader.Sessions: rows (a
// store's, in any order, at the stores' microsecond) summarised per
// session in the query's window, with coverage from the activation a.
func SessionsOf(rows []Subagent, a Activation, q SessionQuery) []SessionSummary {
	byID := map[string]*SessionSummary{}
	perTurn := map[[2]string]int64{}
	for _, r := range rows {
		if !q.Contains(r.ObservedAt) || !strings.HasPrefix(r.TaskSessionID, q.Prefix) {
			continue
		}
		sum := byID[r.TaskSessionID]
		if sum == nil {
			sum = &SessionSummary{
				TaskSessionID:   r.TaskSessionID,
				TaskID:          r.TaskID,
				FirstObservedAt: r.ObservedAt,
				LastObservedAt:  r.ObservedAt,
			}
			byID[r.TaskSessionID] = sum
		}
		sum.Subagents++
		if r.SettledAt == nil {
			sum.Open++
		}
		if r.TaskID < sum.TaskID {
			sum.TaskID = r.TaskID
		}
		if r.ObservedAt.Before(sum.FirstObservedAt) {
			sum.FirstObservedAt = r.ObservedAt
		}
		if r.ObservedAt.After(sum.LastObservedAt) {
			sum.LastObservedAt = r.ObservedAt
		}
		if r.TurnID != nil {
			perTurn[[2]string{r.TaskSessionID, *r.TurnID}]++
		}
	}
	for k, n := range perTurn {
		sum := byID[k[0]]
		sum.Turns++
		sum.MaxFanOut = max(sum.MaxFanOut, n)
	}
	out := make([]SessionSummary, 0, len(byID))
	for _, sum := range byID {
		if q.After != nil && !q.After.Precedes(sum.Key()) {
			continue
		}
		first := sum.FirstObservedAt
		sum.Coverage = CoverageOf(a, sum.TaskSessionID, &first)
		out = append(out, *sum)
	}
	slices.SortFunc(out, func(a, b SessionSummary) int {
		if c := b.LastObservedAt.Compare(a.LastObservedAt); c != 0 {
			return c
		}
		return strings.Compare(a.TaskSessionID, b.TaskSessionID)
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}
