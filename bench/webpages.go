package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/webview"
)

// benchPages measures the web view's pages on the operate store (n rows,
// a session an hour, the newest ending now): the overview of each range,
// a filtered page (a day a week ago, sessions by id prefix) and the
// newest session's page, each beside the same answers written by hand
// (baselines/overview.*.sql, baselines/session.*.sql: plain GROUP BYs,
// the dialect's percentiles, one listing — every figure the overview
// shows: its breakdowns over all rows and over the failed ones, the run's
// tokens beside the final request's, the failures' first page, the agents
// with no end seen, the timeline in the page's buckets; no health
// check of the last hour, no coverage, no rendering).
func benchPages(ctx context.Context, c config, s *sqlstore.Store, dialect string, n int) ([]result, error) {
	now := time.Now().UTC()
	// The cost of a page is measured, whatever it is: the view's default
	// deadline (10 s) would answer the long ranges with 503.
	clock, deadline := webview.WithClock(func() time.Time { return now }), webview.WithReadTimeout(time.Hour)
	h := webview.New(s, clock, deadline)
	// The page reads two at a time by default (WithMaxReads) where the
	// hand-written answers run one after another; one at a time is the
	// same work side by side.
	serial := webview.New(s, clock, deadline, webview.WithMaxReads(1))
	newest := fmt.Sprintf("op%06d", (n+999)/1000-1)
	typical, err := seedTypicalSession(ctx, s, now)
	if err != nil {
		return nil, err
	}
	weekAgo := now.Add(-7 * 24 * time.Hour)
	pages := []struct {
		what, path   string
		since, until time.Time
		prefix       string // the id prefix, or the session
		statements   string
		sessionArg   bool
	}{
		{"web view: overview, last hour", "/?range=1h", now.Add(-time.Hour), now.Add(time.Minute), "", "overview", false},
		{"web view: overview, last 24 h", "/", now.Add(-24 * time.Hour), now.Add(time.Minute), "", "overview", false},
		{"web view: overview, last 7 days", "/?range=7d", now.Add(-7 * 24 * time.Hour), now.Add(time.Minute), "",
			"overview", false},
		{"web view: overview, last 30 days", "/?range=30d", now.Add(-30 * 24 * time.Hour), now.Add(time.Minute), "",
			"overview", false},
		{"web view: overview, all time", "/?range=all", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
			now.Add(time.Minute), "", "overview", false},
		{
			"web view: filtered page (a day, an id prefix)",
			"/?" + url.Values{"since": {weekAgo.Format(time.RFC3339Nano)},
				"until": {weekAgo.Add(24 * time.Hour).Format(time.RFC3339Nano)}, "q": {"op0"}}.Encode(),
			weekAgo, weekAgo.Add(24 * time.Hour), "op0", "overview", false,
		},
		{"web view: session page, 100 subagents", "/session?id=" + typical, time.Time{}, time.Time{}, typical,
			"session", true},
		{"web view: session page, 1000 subagents", "/session?id=" + newest, time.Time{}, time.Time{}, newest,
			"session", true},
	}
	size := fmt.Sprintf("%d rows", n)
	var out []result
	for _, p := range pages {
		var lib, oneAtATime, hand []time.Duration
		overview := !p.sessionArg
		for range c.runs {
			took, err := page(ctx, h, p.path)
			if err != nil {
				return nil, err
			}
			lib = append(lib, took)
			if overview {
				if took, err = page(ctx, serial, p.path); err != nil {
					return nil, err
				}
				oneAtATime = append(oneAtATime, took)
			}
			args := []any{p.since, p.until, p.prefix + "%"}
			if p.sessionArg {
				args = []any{p.prefix}
			}
			if took, err = answersByHand(ctx, s, p.statements, dialect, args, now); err != nil {
				return nil, fmt.Errorf("%s by hand: %w", p.what, err)
			}
			hand = append(hand, took)
		}
		l, b := median(lib), median(hand)
		// The overview of every range from 24 hours up reads every row of
		// its window, exactly: it may cost what the same answers cost by
		// hand, not a fixed time (the 1-hour page has a time of its own).
		target, pass := "≤ 1.20× by hand", l.Seconds() <= 1.2*b.Seconds()
		switch {
		case p.path == "/?range=1h":
			target, pass = "< 100ms", l < 100*time.Millisecond
		case p.sessionArg:
			target, pass = "< 50ms", l < 50*time.Millisecond
		case p.prefix != "":
			target, pass = "< 300ms", l < 300*time.Millisecond
		}
		var note string
		if overview {
			one := median(oneAtATime)
			note = fmt.Sprintf("one read at a time: %v (%.2f× by hand)", one.Round(100*time.Microsecond),
				one.Seconds()/b.Seconds())
		}
		out = append(out, result{
			What: p.what, Dialect: dialect, Size: size, Library: l.Round(100 * time.Microsecond).String(),
			Baseline: b.Round(100*time.Microsecond).String() + " (the same answers by hand)",
			Ratio:    l.Seconds() / b.Seconds(), Target: target, Pass: pass, Note: note,
		})
	}
	big, err := benchLongSession(ctx, c, h, s, dialect, typical, now)
	if err != nil {
		return nil, err
	}
	return append(out, big), nil
}

// benchLongSession measures the first page of a session of 200,000 rows
// (50,000 turns of four) beside the page of the 100-row session: the time
// and the Go memory allocated per page, which the page's keyset read keeps
// from growing with the session (docs/CONTRACT.md §5.7).
func benchLongSession(ctx context.Context, c config, h http.Handler, s *sqlstore.Store, dialect, typical string,
	now time.Time) (result, error) {
	n := 200_000
	if c.tiny {
		n = 2_000
	}
	const sess = "long-session"
	if err := kandevtest.InsertSession(ctx, s.DB(), sqlstore.Tables{}, sess, sess+"-task"); err != nil {
		return result{}, err
	}
	start := now.Add(-30 * 24 * time.Hour)
	for i := 0; i < n; i += 1000 {
		var rows []core.Subagent
		for j := i; j < min(i+1000, n); j++ {
			row, _ := core.Normalize(core.Frame{TaskSessionID: sess, TaskID: sess + "-task", ExecutionID: "exec",
				ToolCallID: fmt.Sprint("t", j), TurnID: fmt.Sprint("turn-", j/4), ToolStatus: "completed",
				ObservedAt: start.Add(time.Duration(j) * time.Second), Payload: &kandevtest.ClaudeCompleted})
			rows = append(rows, row)
		}
		if errs, err := s.UpsertBatch(ctx, rows); err != nil || errors.Join(errs...) != nil {
			return result{}, errors.Join(err, errors.Join(errs...))
		}
	}
	if err := s.DB().WithContext(ctx).Exec("ANALYZE").Error; err != nil {
		return result{}, err
	}
	page := func(id string) (time.Duration, float64, error) {
		var times []time.Duration
		var allocs []float64
		for range c.runs {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			t0 := time.Now()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/session?id="+id, nil))
			if w.Code != 200 {
				return 0, 0, fmt.Errorf("session %s: %d %s", id, w.Code, w.Body.String())
			}
			times = append(times, time.Since(t0))
			runtime.ReadMemStats(&after)
			allocs = append(allocs, float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
		}
		slices.Sort(allocs)
		return median(times), allocs[len(allocs)/2], nil
	}
	lt, la, err := page(sess)
	if err != nil {
		return result{}, err
	}
	st, sa, err := page(typical)
	if err != nil {
		return result{}, err
	}
	var reads []time.Duration
	for range c.runs {
		t0 := time.Now()
		if _, err := s.SessionTurns(ctx, report.TurnQuery{TaskSessionID: sess}); err != nil {
			return result{}, err
		}
		reads = append(reads, time.Since(t0))
	}
	return result{
		What: "web view: session page of a long session", Dialect: dialect,
		Size:    fmt.Sprintf("%d rows, %d turns", n, n/4),
		Library: fmt.Sprintf("%v, %.1f MiB allocated", lt.Round(100*time.Microsecond), la),
		Baseline: fmt.Sprintf("%v, %.1f MiB (the page of the 100-row session)", st.Round(100*time.Microsecond),
			sa),
		Ratio: lt.Seconds() / st.Seconds(), Target: "≤ 2× the short session's time and memory",
		Pass: lt <= 2*st && la <= 2*sa,
		Note: fmt.Sprintf("25 turns a page, keyset by turn: its read (SessionTurns) %v; the session's "+
			"totals, over every row, are a page of their own", median(reads).Round(100*time.Microsecond)),
	}, nil
}

// page times one GET of path on h, which must answer 200.
func page(ctx context.Context, h http.Handler, path string) (time.Duration, error) {
	start := time.Now()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil).WithContext(ctx))
	if w.Code != 200 {
		return 0, fmt.Errorf("%s: %d %s", path, w.Code, w.Body.String())
	}
	_, err := io.Copy(io.Discard, w.Body)
	return time.Since(start), err
}

// answersByHand times the same answers written by hand
// (baselines/<measure>.<dialect>.sql), one statement after another, with
// the page's arguments (its window and id prefix, or its session), the
// timeline in the window's buckets and the "no end seen" list of agents
// started an hour before now (webview.WithStaleAfter's default).
func answersByHand(ctx context.Context, s *sqlstore.Store, measure, dialect string, args []any, now time.Time) (
	time.Duration, error) {
	var took time.Duration
	var bucket string
	if since, ok := args[0].(time.Time); ok {
		bucket = strconv.FormatInt(int64(pageBucket(since, args[1].(time.Time))/time.Second), 10)
	}
	staleBefore := strconv.FormatFloat(float64(now.Add(-time.Hour).UnixMicro())/1e6, 'f', 6, 64)
	for _, q := range statements(measure, dialect) {
		q = strings.ReplaceAll(q, "{bucket_s}", bucket)
		q = strings.ReplaceAll(q, "{stale_before_s}", staleBefore)
		d, err := timed(ctx, s, q, args[:placeholders(q)]...)
		if err != nil {
			return 0, fmt.Errorf("%w\n%s", err, q)
		}
		took += d
	}
	return took, nil
}

// statements are a baseline file's statements, one per ';' at a line's
// end.
func statements(measure, dialect string) []string {
	var out []string
	for _, q := range strings.Split(baseline(measure, dialect), ";\n") {
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, q)
		}
	}
	return out
}

var dollar = regexp.MustCompile(`\$(\d+)`)

// placeholders is how many arguments a statement takes: its '?' marks,
// or its highest $n.
func placeholders(q string) int {
	n := strings.Count(q, "?")
	for _, m := range dollar.FindAllStringSubmatch(q, -1) {
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	return n
}

// seedTypicalSession adds a session of 100 subagents to the store: ten
// turns of ten, each third nested under the one before, settled.
func seedTypicalSession(ctx context.Context, s *sqlstore.Store, now time.Time) (string, error) {
	const sess = "typical-session"
	if err := kandevtest.InsertSession(ctx, s.DB(), sqlstore.Tables{}, sess, sess+"-task"); err != nil {
		return "", err
	}
	var rows []core.Subagent
	for i := range 100 {
		f := core.Frame{TaskSessionID: sess, TaskID: sess + "-task", ExecutionID: "exec", ToolCallID: fmt.Sprint("t", i),
			TurnID: fmt.Sprint("turn-", i/10), ToolStatus: "completed",
			ObservedAt: now.Add(-time.Hour).Add(time.Duration(i) * time.Second), Payload: &kandevtest.ClaudeCompleted}
		if i%3 != 0 {
			f.ParentToolCallID = fmt.Sprint("t", i-1)
		}
		row, _ := core.Normalize(f)
		rows = append(rows, row)
	}
	errs, err := s.UpsertBatch(ctx, rows)
	if err != nil {
		return "", err
	}
	return sess, errors.Join(errs...)
}

// pageBucket is the timeline's bucket the overview draws a window in (as
// webview chooses it): the smallest of a minute, an hour, a day, a week
// that gives at most 120 bars, else 30 days; a day for a window open at
// its start.
func pageBucket(since, until time.Time) time.Duration {
	if since.IsZero() {
		return 24 * time.Hour
	}
	for _, b := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour} {
		if until.Sub(since)/b <= 120 {
			return b
		}
	}
	return 30 * 24 * time.Hour
}
