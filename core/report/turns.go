package report

import (
	"context"
	"fmt"

	"github.com/subagentctx/subagentctx/core"
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
	After, Before *core.Cursor
	// Limit bounds the turns on the page (0: DefaultTurns; at most
	// MaxTurns).
	Limit int
}

// TurnPage is a page of turns: every row of each, in AC-13 order, and
// whether turns start before and after the page (neither on an empty
// page).
type TurnPage struct {
	Rows []core.Subagent
	// First and Last are the first row of the page's first and last turn
	// (zero on an empty page): the Before and After of the neighbouring
	// pages.
	First, Last core.Cursor
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
