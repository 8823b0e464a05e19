package sqltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/history"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// testHealthWindows: the health check over any window is the same function
// of the messages and rows (docs/CONTRACT.md §5.2) as a Go reference
// computes it: a recoverable message created in the window whose pair has
// no row at any time is short; a row observed in the window whose pair has
// no subagent message at any time is excess; a window that starts before
// capture_since starts there. The pairs listed are the earliest, at most
// the bound, and the counts stay exact past it.
func testHealthWindows(t *testing.T, d *Driver) {
	e := d.Env(t)
	activate(t, e, capture)
	rng := rand.New(rand.NewPCG(7, 11))
	type event struct {
		session, tool string
		at            time.Time
	}
	var msgs, rowsAt []event
	for s := range 6 {
		sess := fmt.Sprintf("w%d", s)
		e.Session(t, sess)
		for p := range 12 {
			tool := fmt.Sprintf("tc-%d", p)
			at := capture.Add(time.Duration(rng.IntN(7200)-600) * time.Second)
			if rng.IntN(3) > 0 { // a host message for the pair
				message(t, e, sess+"-"+tool, sess, tool, at)
				msgs = append(msgs, event{sess, tool, at})
			}
			if rng.IntN(3) > 0 { // a row for it, observed near the message
				observed := at.Add(time.Duration(rng.IntN(20)-10) * time.Second)
				record(t, e, sess, tool, "e1", observed)
				rowsAt = append(rowsAt, event{sess, tool, observed})
			}
		}
	}
	has := func(evs []event, s, tool string) bool {
		return slices.ContainsFunc(evs, func(x event) bool { return x.session == s && x.tool == tool })
	}
	// want lists, for a window, the pairs of evs in it whose pair has no
	// event in other, each at its earliest time in the window.
	want := func(evs, other []event, since time.Time) []report.Pair {
		first := map[[2]string]time.Time{}
		for _, x := range evs {
			k := [2]string{x.session, x.tool}
			if x.at.Before(since) || has(other, x.session, x.tool) {
				continue
			}
			if f, ok := first[k]; !ok || x.at.Before(f) {
				first[k] = x.at
			}
		}
		var out []report.Pair
		for k, f := range first {
			out = append(out, report.Pair{TaskSessionID: k[0], ToolCallID: k[1], FirstSeen: f})
		}
		slices.SortFunc(out, func(a, b report.Pair) int {
			if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
				return c
			}
			return strings.Compare(a.TaskSessionID+"\x00"+a.ToolCallID, b.TaskSessionID+"\x00"+b.ToolCallID)
		})
		return out
	}
	show := func(ps []report.Pair) string {
		var b strings.Builder
		for _, p := range ps {
			fmt.Fprintf(&b, "%s/%s@%s ", p.TaskSessionID, p.ToolCallID, p.FirstSeen.UTC().Format(time.RFC3339Nano))
		}
		return b.String()
	}
	for _, w := range []struct {
		name  string
		since time.Time
		pairs int
	}{
		{"whole window", time.Time{}, 0},
		{"before capture_since: starts there", capture.Add(-time.Hour), 0},
		{"the last half hour", capture.Add(90 * time.Minute), 0},
		{"at a message's microsecond", msgs[len(msgs)/2].at, 0},
		{"two pairs listed", capture.Add(10 * time.Minute), 2},
	} {
		t.Run(w.name, func(t *testing.T) {
			h, err := e.Store.Health(context.Background(), report.HealthQuery{Since: w.since, Pairs: w.pairs})
			if err != nil {
				t.Fatal(err)
			}
			since := capture
			if w.since.After(capture) {
				since = w.since
			}
			if !h.Ran || !h.Since.Equal(since) {
				t.Fatalf("window %v, want from %v: %+v", h.Since, since, h)
			}
			missing, excess := want(msgs, rowsAt, since), want(rowsAt, msgs, since)
			bound := report.HealthQuery{Pairs: w.pairs}.PairsOrDefault()
			if h.Shortfall != int64(len(missing)) || h.Excess != int64(len(excess)) {
				t.Errorf("shortfall %d excess %d, want %d and %d", h.Shortfall, h.Excess, len(missing), len(excess))
			}
			if got, want := show(h.Missing), show(missing[:min(bound, len(missing))]); got != want {
				t.Errorf("missing pairs\n got  %s\n want %s", got, want)
			}
			if got, want := show(h.Extra), show(excess[:min(bound, len(excess))]); got != want {
				t.Errorf("excess pairs\n got  %s\n want %s", got, want)
			}
		})
	}
	if _, err := e.Store.Health(context.Background(), report.HealthQuery{Pairs: -1}); err == nil {
		t.Error("a negative pair bound: want an error")
	}
}

// testHealthWindowHostForms: a window's active sessions are found through
// the raw created_at column and its index, and a message created in the
// window is found in every form the host may store its time in (AC-24e):
// the shortfall of windows that start on a minute, within one, and at
// midnight counts each message whose instant, as history.ParseHostTime
// reads it (the Go reference), is at or after the window's start — around
// each start, to the nanosecond, and up to fourteen hours before it.
func testHealthWindowHostForms(t *testing.T, d *Driver) {
	e := d.Env(t)
	activate(t, e, capture)
	starts := []time.Time{
		time.Date(2026, 8, 13, 2, 0, 0, 0, time.UTC),
		time.Date(2026, 8, 13, 2, 7, 30, 500000000, time.UTC),
		time.Date(2026, 8, 14, 0, 0, 0, 0, time.UTC),
	}
	around := []time.Duration{-14 * time.Hour, -13*time.Hour - time.Minute, -time.Hour, -61 * time.Second,
		-time.Minute, -59 * time.Second, -time.Second, -time.Microsecond, -1, 0, 1, time.Microsecond,
		time.Second, time.Minute, time.Hour}
	var created []time.Time // each message's instant by the reference (zero: none)
	add := func(at time.Time, text string) {
		n := len(created)
		sess, tool := fmt.Sprintf("hf%03d", n), fmt.Sprintf("tc-hf%03d", n)
		if text == "" {
			message(t, e, sess, sess, tool, at)
			created = append(created, storekit.CanonicalTime(at))
			return
		}
		e.Session(t, sess)
		meta := kandevtest.Subagent(tool, "completed", &kandevtest.ClaudeCompleted).JSON()
		e.Exec(t, `INSERT INTO task_session_messages
				(id, task_session_id, task_id, turn_id, content, metadata, created_at, updated_at)
			VALUES (?, ?, ?, 'turn-1', '', ?, ?, ?)`, sess, sess, "task-"+sess, meta, text, text)
		at, ok := history.ParseHostTime(text)
		if !ok {
			at = time.Time{}
		}
		created = append(created, at)
	}
	east, west := time.FixedZone("+09:30", 9*3600+1800), time.FixedZone("-11:00", -11*3600)
	for _, start := range starts {
		for _, off := range around {
			at := start.Add(off)
			if !d.Dialect.HostTimeText() {
				add(at, "")
				continue
			}
			for _, text := range []string{
				at.Format("2006-01-02 15:04:05.999999999-07:00"), // as both drivers write UTC
				at.Format("2006-01-02 15:04:05.000000000-07:00"),
				at.Format("2006-01-02 15:04-07:00"), // no seconds: the minute
				at.Format("2006-01-02T15:04:05.999999999Z07:00"),
				at.Format("2006-01-02T15:04:05.999999999-07:00"),
				at.Format("2006-01-02 15:04:05.999999999") + "-00:00",
				at.Format("2006-01-02 15:04:05.999999999"),
				at.Format("2006-01-02"),
				at.Format("2006-01-02") + "+00:00",
				at.In(east).Format("2006-01-02 15:04:05.999999999-07:00"),
				at.In(west).Format("2006-01-02 15:04:05.999999999-07:00"),
			} {
				add(at, text)
			}
		}
	}
	for _, since := range starts {
		var want int64
		for _, at := range created {
			if !at.IsZero() && !at.Before(since) {
				want++
			}
		}
		h, err := e.Store.Health(context.Background(), report.HealthQuery{Since: since})
		if err != nil {
			t.Fatal(err)
		}
		if !h.Ran || !h.Since.Equal(since) || h.Shortfall != want {
			t.Errorf("since %v: ran %v from %v, shortfall %d, want %d of %d messages", since, h.Ran, h.Since,
				h.Shortfall, want, len(created))
		}
	}
}
