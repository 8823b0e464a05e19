package core

import (
	"context"
	"fmt"
	"slices"
)

// TurnLister reads a session a page of turns at a time
// (docs/CONTRACT.md §5.7): a page costs the turns it holds, whatever the
// session's size. The SQL stores and the memory store implement it.
type TurnLister interface {
	SessionTurns(ctx context.Context, q TurnQuery) (TurnPage, error)
}

// TurnQuery selects a page of a session's turns. A turn is the rows that
// share a turn_id (the rows without one are one turn of their own), and
// turns are ordered by their first row in AC-13 order. The page is the
// Limit turns that start after After, or, with Before, the Limit turns
// that start just before it; neither: the session's first turns.
type TurnQuery struct {
	TaskSessionID string
	// After and Before are the first row of a turn (a TurnPage's Last or
	// First): at most one of them.
	After, Before *Cursor
	// Limit bounds the turns on the page (0: DefaultTurns; at most
	// MaxTurns).
	Limit int
}

// The turns' bound on one page.
const (
	DefaultTurns = 25
	MaxTurns     = 500
)

// TurnPage is a page of turns: every row of each, in AC-13 order, and
// whether turns start before and after the page (neither on an empty
// page).
type TurnPage struct {
	Rows []Subagent
	// First and Last are the first row of the page's first and last turn
	// (zero on an empty page): the Before and After of the neighbouring
	// pages.
	First, Last Cursor
	// Earlier and Later report whether a turn starts before First, after
	// Last.
	Earlier, Later bool
}

// Validate checks the query, naming what is wrong.
func (q TurnQuery) Validate() error {
	if q.Limit < 0 || q.Limit > MaxTurns {
		return fmt.Errorf("session turns: a page of %d turns, want 0 (the default, %d) to %d", q.Limit,
			DefaultTurns, MaxTurns)
	}
	if q.After != nil && q.Before != nil {
		return fmt.Errorf("session turns: both after and before given, want at most one")
	}
	return nil
}

// LimitOrDefault is the query's bound on a page.
func (q TurnQuery) LimitOrDefault() int {
	if q.Limit == 0 {
		return DefaultTurns
	}
	return q.Limit
}

// turnOf is a row's turn: its turn_id, or "" with ok false for the rows
// without one.
func turnOf(r Subagent) (string, bool) {
	if r.TurnID == nil {
		return "", false
	}
	return *r.TurnID, true
}

// TurnsOf is the Go reference of a page of turns: what every store's
// SessionTurns must return for the same rows.
func TurnsOf(rows []Subagent, q TurnQuery) TurnPage {
	type turn struct {
		id    string
		has   bool
		first Cursor
	}
	var session []Subagent
	for _, r := range rows {
		if r.TaskSessionID == q.TaskSessionID {
			session = append(session, r.Canonical())
		}
	}
	slices.SortFunc(session, func(a, b Subagent) int {
		if a.Cursor().Less(b.Cursor()) {
			return -1
		}
		if b.Cursor().Less(a.Cursor()) {
			return 1
		}
		return 0
	})
	var turns []turn
	seen := map[turn]bool{}
	for _, r := range session {
		id, has := turnOf(r)
		if k := (turn{id: id, has: has}); !seen[k] {
			seen[k] = true
			turns = append(turns, turn{id, has, r.Cursor()})
		}
	}
	var lo, hi int
	switch {
	case q.After != nil:
		after := q.After.Canonical()
		lo = len(turns)
		for i, t := range turns {
			if after.Less(t.first) {
				lo = i
				break
			}
		}
		hi = min(lo+q.LimitOrDefault(), len(turns))
	case q.Before != nil:
		before := q.Before.Canonical()
		hi = 0
		for i, t := range turns {
			if t.first.Less(before) {
				hi = i + 1
			}
		}
		lo = max(hi-q.LimitOrDefault(), 0)
	default:
		hi = min(q.LimitOrDefault(), len(turns))
	}
	if lo >= hi {
		return TurnPage{Rows: []Subagent{}} // an empty page has no neighbours
	}
	page := TurnPage{Rows: []Subagent{}, Earlier: lo > 0, Later: hi < len(turns)}
	in := map[turn]bool{}
	for _, t := range turns[lo:hi] {
		in[turn{id: t.id, has: t.has}] = true
	}
	for _, r := range session {
		if id, has := turnOf(r); in[turn{id: id, has: has}] {
			page.Rows = append(page.Rows, r)
		}
	}
	page.First, page.Last = turns[lo].first, turns[hi-1].first
	return page
}
