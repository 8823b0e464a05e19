package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// testSessionTurns (docs/CONTRACT.md §5.7): a session read a page of turns
// at a time equals the reference (storekit.TurnsOf) for every page, walked
// forwards and backwards and from cursors that start no turn; every turn
// is on exactly one page of a walk. The session has turns whose rows
// interleave with others', rows without a turn, instants shared by
// several rows and finer than a microsecond, and a turn id another
// session uses too.
func testSessionTurns(t *testing.T, s *suite) {
	tl, ok := s.Store.(report.TurnLister)
	if !ok {
		t.Fatal("the store does not implement report.TurnLister")
	}
	sess, other := s.session(t, "turns"), s.session(t, "turns-other")
	rng := rand.New(rand.NewPCG(11, 13))
	at := base
	for i := range 120 {
		turn := fmt.Sprintf("turn-%02d", rng.IntN(30))
		switch rng.IntN(10) {
		case 0:
			turn = "" // a row without a turn
		case 1:
			turn = "turn-é" // byte order, not the collation's
		}
		if rng.IntN(3) > 0 { // a third of the rows share the previous one's instant
			at = at.Add(time.Duration(rng.IntN(5000)) * time.Nanosecond * 997)
		}
		s.write(t, core.Frame{TaskSessionID: sess, TaskID: s.id("task", "turns"), TurnID: turn,
			ToolCallID: fmt.Sprintf("call-%03d", rng.IntN(1000)), ObservedAt: at})
		if i%10 == 0 {
			s.write(t, core.Frame{TaskSessionID: other, TaskID: s.id("task", "turns-other"), TurnID: turn,
				ToolCallID: fmt.Sprint("other-", i), ObservedAt: at})
		}
	}
	rows := append(s.rows(t, sess), s.rows(t, other)...)
	ask := func(q report.TurnQuery) report.TurnPage {
		t.Helper()
		got, err := tl.SessionTurns(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := jsonOf(t, got), jsonOf(t, storekit.TurnsOf(rows, q)); g != w {
			t.Fatalf("turns %+v:\n got  %s\n want %s", q, g, w)
		}
		return got
	}
	all := storekit.TurnsOf(rows, report.TurnQuery{TaskSessionID: sess, Limit: report.MaxTurns})
	if all.Later || len(all.Rows) != len(s.rows(t, sess)) {
		t.Fatalf("the reference's one page holds %d rows (later: %v), want all %d", len(all.Rows), all.Later,
			len(s.rows(t, sess)))
	}
	end := core.Cursor{ObservedAt: base.Add(24 * time.Hour)} // after every row
	for _, limit := range []int{1, 7, 0} {
		var forward, backward int
		for page := ask(report.TurnQuery{TaskSessionID: sess, Limit: limit}); ; {
			forward += len(page.Rows)
			if !page.Later {
				break
			}
			last := page.Last
			page = ask(report.TurnQuery{TaskSessionID: sess, Limit: limit, After: &last})
		}
		for page := ask(report.TurnQuery{TaskSessionID: sess, Limit: limit, Before: &end}); ; {
			backward += len(page.Rows)
			if !page.Earlier {
				break
			}
			first := page.First
			page = ask(report.TurnQuery{TaskSessionID: sess, Limit: limit, Before: &first})
		}
		if forward != len(all.Rows) || backward != len(all.Rows) {
			t.Errorf("pages of %d turns: %d rows forwards, %d backwards, want %d", limit, forward, backward,
				len(all.Rows))
		}
	}
	for _, r := range rows {
		for _, c := range []core.Cursor{r.Cursor(), {ObservedAt: r.ObservedAt.Add(time.Nanosecond)}} {
			ask(report.TurnQuery{TaskSessionID: sess, Limit: 3, After: &c})
			ask(report.TurnQuery{TaskSessionID: sess, Limit: 3, Before: &c})
		}
	}
	ask(report.TurnQuery{TaskSessionID: s.id("sess", "none")})
	_, err := tl.SessionTurns(context.Background(), report.TurnQuery{TaskSessionID: sess, Limit: report.MaxTurns + 1})
	WantError(t, "a page over MaxTurns", err, nil)
	_, err = tl.SessionTurns(context.Background(), report.TurnQuery{TaskSessionID: sess, After: &all.First,
		Before: &all.Last})
	WantError(t, "both after and before", err, nil)
}
