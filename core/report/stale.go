package report

import (
	"context"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// StaleLister names the subagents that never came back (docs/CONTRACT.md
// §5.8): the SQL stores and the memory store implement it.
type StaleLister interface {
	Stale(ctx context.Context, q StaleQuery) ([]core.Subagent, error)
}

// StaleQuery selects the rows whose agent may still end and has not —
// ended_at NULL, and either a background launch or a tool call not yet
// settled (docs/CONTRACT.md §3.4) — observed at or after Since (zero: any
// time), since before Before: their start (started_at, else
// observed_at) is earlier. They are listed oldest first, then by session,
// tool call id and execution id, byte by byte, at most Limit.
type StaleQuery struct {
	Before time.Time
	// Since, when set, keeps only the rows observed at or after it: a
	// window's (the web view's), read through the observed_at index.
	Since time.Time
	// Limit bounds the rows listed (0: DefaultStale; at most MaxStale).
	Limit int
}

// Validate checks the query, naming what is wrong.
func (q StaleQuery) Validate() error {
	switch {
	case q.Before.IsZero():
		return fmt.Errorf("stale: no threshold (Before is zero)")
	case q.Limit < 0 || q.Limit > MaxStale:
		return fmt.Errorf("stale: a page of %d, want 0 (the default, %d) to %d", q.Limit, DefaultStale, MaxStale)
	}
	return nil
}

// LimitOrDefault is the query's bound on the rows listed.
func (q StaleQuery) LimitOrDefault() int {
	if q.Limit == 0 {
		return DefaultStale
	}
	return q.Limit
}

// Since is when the row's agent is known to have been running from: its
// reported start, else its first observation.
func Since(r core.Subagent) time.Time {
	if r.StartedAt != nil {
		return canon.Time(*r.StartedAt)
	}
	return canon.Time(r.ObservedAt)
}

// StaleAfter is how long a subagent may run with no end seen before it
// counts as never come back (docs/CONTRACT.md §5.8), per subagent type as
// the record has seen them run (StaleAfterOf), else Default.
type StaleAfter struct {
	ByType  map[string]time.Duration
	Default time.Duration
}

// MinStaleAfter is the least threshold StaleAfterOf learns: a type of
// quick runs is not stale the minute one runs long.
const MinStaleAfter = 5 * time.Minute

// What a type's threshold is learnt from: its 95th percentile duration,
// times staleFactor, from MinStaleAfter to staleCeiling.
const (
	staleFactor  = 3
	staleCeiling = 7 * 24 * time.Hour
)

// StaleAfterOf learns the thresholds from an overview's breakdown by
// subagent type (the record's recent runs): three times the 95th
// percentile of each listed type's reported durations (duration_ms,
// nearest rank), at least five minutes and at most a week; def for a type
// with no duration reported, a type not listed, and rows of no type.
func StaleAfterOf(o Overview, def time.Duration) StaleAfter {
	a := StaleAfter{ByType: map[string]time.Duration{}, Default: def}
	for _, g := range o.SubagentType.Groups {
		if g.Value == nil || g.All.Duration == nil || g.All.Duration.P95 == nil {
			continue
		}
		p95 := min(max(*g.All.Duration.P95, 0), staleCeiling.Milliseconds()/staleFactor)
		a.ByType[*g.Value] = max(MinStaleAfter, staleFactor*time.Duration(p95)*time.Millisecond)
	}
	return a
}

// For is the threshold of r's type.
func (a StaleAfter) For(r core.Subagent) time.Duration {
	if r.SubagentType != nil {
		if d, ok := a.ByType[*r.SubagentType]; ok {
			return d
		}
	}
	return a.Default
}

// Shortest is the least of the thresholds: a stale read whose Before is
// now less it holds every row past its own (Keep then cuts the rest).
func (a StaleAfter) Shortest() time.Duration {
	d := a.Default
	for _, t := range a.ByType {
		d = min(d, t)
	}
	return d
}

// Keep is the rows that have gone longer than their own type's threshold
// with no end seen at now, in their order.
func (a StaleAfter) Keep(rows []core.Subagent, now time.Time) []core.Subagent {
	var out []core.Subagent
	for _, r := range rows {
		if now.Sub(Since(r)) > a.For(r) {
			out = append(out, r)
		}
	}
	return out
}
