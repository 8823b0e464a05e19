package webview_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/webview"
)

// Texts an agent could put in any stored field; each must render as
// inert text.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(1)>`,
	`</text></svg><svg onload=alert(1)>`,
	`javascript:alert(1)`,
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// clock is the pages' now: an hour after the test's frames.
func clock() time.Time { return t0.Add(time.Hour) }

// hostileFrames is a session whose every text field is hostile, and a
// nested subagent under one of them.
func hostileFrames(sess string) []core.Frame {
	var out []core.Frame
	for i, h := range hostile {
		out = append(
			out,
			core.Frame{TaskSessionID: sess, TaskID: "task-" + h, TurnID: "turn-" + h, ExecutionID: "exec-" + h,
				ToolCallID: "tool-" + h, ToolStatus: "completed", ObservedAt: t0.Add(time.Duration(i) * time.Second),
				Payload: &core.Payload{Description: h, SubagentType: h, Model: h, Status: h}},
		)
	}
	out = append(
		out,
		core.Frame{TaskSessionID: sess, TaskID: "task", TurnID: "turn-" + hostile[0], ExecutionID: "exec-" + hostile[0],
			ToolCallID: "child", ParentToolCallID: "tool-" + hostile[0], ObservedAt: t0.Add(2 * time.Second),
			Payload: &core.Payload{Description: hostile[1]}},
	)
	return out
}

var pageAll = core.Page{}

// hostileTitle is one subagent whose description is h.
func hostileTitle(sess, h string) []core.Frame {
	return []core.Frame{{TaskSessionID: sess, TaskID: "task", TurnID: "turn", ExecutionID: "e", ToolCallID: "t",
		ObservedAt: t0, Payload: &core.Payload{Description: h, SubagentType: h}}}
}

func get(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	res := w.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// tags are the page's real markup: escaped text never holds a literal '<'.
var tags = regexp.MustCompile(`<[a-zA-Z][^>]*>`)

// handlerAttr is an event handler attribute (onerror=, onload=, …).
var handlerAttr = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)

// checkInert: no hostile text reaches the page as markup — no script or
// image element, no event handler, no javascript: link — and the texts
// show, escaped.
func checkInert(t *testing.T, page, body string) {
	t.Helper()
	for _, tag := range tags.FindAllString(body, -1) {
		lower := strings.ToLower(tag)
		if strings.HasPrefix(lower, "<script") || strings.HasPrefix(lower, "<img") ||
			strings.HasPrefix(lower, "<iframe") || handlerAttr.MatchString(tag) || strings.Contains(lower, "javascript:") {
			t.Errorf("%s: hostile markup %q", page, tag)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("%s: the script text is not shown escaped", page)
	}
}

// TestPages renders the overview and a session page on every store the
// command line serves (memory too, as a host's test would) and checks
// what they show.
func TestPages(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		for _, prefix := range []string{"", "/admin/subagents"} {
			exercisePages(t, memory.New(), prefix, func(string) {})
		}
	})
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		for _, prefix := range []string{"", "/admin/subagents"} {
			exercisePages(t, e.Store, prefix, func(id string) { e.Session(t, id) })
		}
	})
}

func exercisePages(t *testing.T, s webview.Source, prefix string, session func(id string)) {
	frames := kandevtest.Stream("demo-", t0)
	sess := frames[0].TaskSessionID
	bad := "evil-" + hostile[0]
	session(sess)
	session(bad)
	testenv.Record(t, s, frames)
	testenv.Record(t, s, hostileFrames(bad))
	h := webview.New(s, webview.WithPrefix(prefix), webview.WithClock(clock))
	page := func(id string) string { return prefix + "/session?id=" + url.QueryEscape(id) }

	res, body := get(t, h, "GET", prefix+"/")
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("overview: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") ||
		strings.Contains(csp, "script-src") {
		t.Errorf("overview: Content-Security-Policy %q, want no script source at all", csp)
	}
	for _, want := range []string{
		`href="` + page("demo-sess") + `"`, `href="` + page(bad) + `"`, "Health", "Activation",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview: %q missing", want)
		}
	}
	checkInert(t, "overview", body)

	res, body = get(t, h, "GET", page(sess))
	if res.StatusCode != 200 {
		t.Fatalf("session page: %d\n%s", res.StatusCode, body)
	}
	crawl(t, h, prefix)
	rows, err := s.ListBySession(context.Background(), sess, core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(body, `<rect class="bar"`); n != len(rows) {
		t.Errorf("session page: %d bars for %d rows", n, len(rows))
	}
	if n := strings.Count(body, `<tr id="t`); n != len(rows) {
		t.Errorf("session page: %d detail rows for %d rows", n, len(rows))
	}
	// Every metric not reported says so, never 0.
	unreported := 0
	for _, r := range rows {
		for _, m := range []*int64{r.TotalTokens, r.ToolUseCount, r.DurationMs} {
			if m == nil {
				unreported++
			}
		}
	}
	if n := len(regexp.MustCompile(`<td class="n">not reported(</td>|<br>)`).FindAllString(body, -1)); unreported == 0 ||
		n != unreported {
		t.Errorf("session page: %d cells say not reported; %d metrics are unreported", n, unreported)
	}
	for _, want := range []string{"⟳", " open", "Turn <span class=\"id\">demo-turn-"} {
		if !strings.Contains(body, want) {
			t.Errorf("session page: %q missing (async, open bar, turns)", want)
		}
	}
	// Nested subagents are drawn under their parent, indented.
	nested := regexp.MustCompile(`<text class="label" x="(\d+)"`).FindAllStringSubmatch(body, -1)
	indented := false
	for _, m := range nested {
		indented = indented || m[1] != "4"
	}
	if !indented {
		t.Error("session page: no label is indented, although the stream nests a subagent")
	}

	res, body = get(t, h, "GET", page(bad))
	if res.StatusCode != 200 {
		t.Fatalf("hostile session page: %d", res.StatusCode)
	}
	checkInert(t, "hostile session page", body)
	for _, h := range hostile[1:] {
		if !strings.Contains(body, escape(h)) {
			t.Errorf("hostile session page: %q is not shown as text", h)
		}
	}

	if res, _ := get(t, h, "GET", page("nobody")); res.StatusCode != 404 {
		t.Errorf("unknown session: %d, want 404", res.StatusCode)
	}
	before, _ := s.ListBySession(context.Background(), sess, core.Page{})
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		if res, _ := get(t, h, m, page(sess)); res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, res.StatusCode)
		}
	}
	after, _ := s.ListBySession(context.Background(), sess, core.Page{})
	if len(after) != len(before) {
		t.Errorf("requests changed the store: %d rows, then %d", len(before), len(after))
	}
	if res, body := get(t, h, "GET", prefix+"/style.css"); res.StatusCode != 200 || !strings.Contains(body, ".bar") {
		t.Errorf("style.css: %d", res.StatusCode)
	}
	if res, _ := get(t, h, "HEAD", prefix+"/"); res.StatusCode != 200 {
		t.Errorf("HEAD: %d, want 200", res.StatusCode)
	}
	if prefix != "" {
		if res, _ := get(t, h, "GET", "/style.css"); res.StatusCode != 404 {
			t.Errorf("outside the prefix: %d, want 404", res.StatusCode)
		}
	}
	// Any session id opens its page: dot segments, slashes, percents,
	// a kilobyte of it.
	for _, id := range []string{"..", ".", "a/b", "/", "%2e%2e", "100%", strings.Repeat("é/", 170)} {
		session(id)
		testenv.Record(t, s, []core.Frame{{TaskSessionID: id, TaskID: "t", ToolCallID: "c", ObservedAt: t0}})
		if res, body := get(t, h, "GET", page(id)); res.StatusCode != 200 || !strings.Contains(body, escape(id)) {
			t.Errorf("session %q: %d", id, res.StatusCode)
		}
	}
}

// crawl follows every link and asset of every page reachable from the
// overview, under the prefix: each must answer 200.
func crawl(t *testing.T, h http.Handler, prefix string) {
	t.Helper()
	link := regexp.MustCompile(`(?:href|src)="([^"#][^"]*)"`)
	seen := map[string]bool{}
	todo := []string{prefix + "/"}
	for len(todo) > 0 && len(seen) < 200 {
		at := todo[0]
		todo = todo[1:]
		if seen[at] {
			continue
		}
		seen[at] = true
		res, body := get(t, h, "GET", at)
		if res.StatusCode != 200 {
			t.Errorf("crawling under %q: %s answers %d", prefix, at, res.StatusCode)
			continue
		}
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(body, -1) {
			u := html.UnescapeString(m[1])
			if !strings.HasPrefix(u, prefix+"/") {
				t.Errorf("crawling under %q: %s links to %s, outside the prefix", prefix, at, u)
				continue
			}
			todo = append(todo, u)
		}
	}
	if len(seen) < 3 {
		t.Errorf("crawling under %q found only %v", prefix, seen)
	}
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// failing is a store whose every read fails with an error naming a DSN.
type failing struct{ *memory.Store }

var errDSN = errors.New(`dial postgres://admin:s3cret@db.internal:5432/prod: refused`)

func (failing) Health(context.Context, report.HealthQuery) (report.Health, error) {
	return report.Health{}, errDSN
}
func (failing) SessionTurns(context.Context, report.TurnQuery) (report.TurnPage, error) {
	return report.TurnPage{}, errDSN
}

// TestErrorsNameNoDatabase: a store that fails shows a plain error page,
// never its error (which may hold a DSN and its password).
func TestErrorsNameNoDatabase(t *testing.T) {
	h := webview.New(failing{memory.New()})
	for _, path := range []string{"/", "/session?id=s"} {
		res, body := get(t, h, "GET", path)
		if res.StatusCode != 500 || strings.Contains(body, "s3cret") || strings.Contains(body, "postgres://") {
			t.Errorf("%s: %d %q", path, res.StatusCode, body)
		}
	}
}

// TestLargeSession: hundreds of subagents in one turn stay one readable
// timeline: a row each, the drawing as tall as its rows.
func TestLargeSession(t *testing.T) {
	s := memory.New()
	var frames []core.Frame
	for i := range 600 {
		status := "completed"
		if i%7 == 0 {
			status = "in_progress"
		}
		frames = append(frames, core.Frame{TaskSessionID: "big", TaskID: "task", TurnID: "turn", ExecutionID: "e",
			ToolCallID: "tool-" + string(rune('a'+i%26)) + time.Duration(i).String(), ToolStatus: status,
			ObservedAt: t0.Add(time.Duration(i) * 10 * time.Millisecond),
			Payload:    &core.Payload{SubagentType: "worker"}})
	}
	testenv.Record(t, s, frames)
	res, body := get(t, webview.New(s), "GET", "/session?id=big")
	if res.StatusCode != 200 || strings.Count(body, `<rect class="bar"`) != 600 {
		t.Fatalf("%d, %d bars", res.StatusCode, strings.Count(body, `<rect class="bar"`))
	}
	if !strings.Contains(body, `height="13232"`) { // 28 + 600×22 + 4
		t.Error("the timeline is not as tall as its 600 rows")
	}
}

// TestOverviewAnswers: the overview says what failed, what it cost and
// where, in human units with the exact value in the title; a nested
// subagent's tokens show under its parent on the session page and are
// never added into the turn's total; sessions page by key, filter by id
// prefix and by window; a bad query string is a 400 naming it.
func TestOverviewAnswers(t *testing.T) {
	s := memory.New()
	n := func(v int64) *int64 { return &v }
	row := func(sess, tool, parent, typ, model, status string, tokens, ms *int64, at time.Time) core.Frame {
		f := core.Frame{TaskSessionID: sess, TaskID: "task", TurnID: "turn", ExecutionID: "e", ToolCallID: tool,
			ParentToolCallID: parent, ToolStatus: status, ObservedAt: at,
			Payload: &core.Payload{SubagentType: typ, Model: model}}
		if tokens != nil {
			f.Payload.TotalTokens = *tokens
		}
		if ms != nil {
			f.Payload.DurationMs = *ms
		}
		return f
	}
	// What b and d spent (§3.5): 100 + 20 + 5000 + 0 over three requests,
	// and 7000 + 3000 (a child session's input and output alone).
	spent := func(f core.Frame, u core.Usage) core.Frame { f.Usage = &u; return f }
	testenv.Record(t, s, []core.Frame{
		row("s1", "a", "", "explorer", "opus", "completed", n(1000), n(1000), t0),
		spent(row("s1", "b", "a", "explorer", "opus", "failed", n(400), n(3000), t0.Add(time.Second)),
			core.Usage{InputTokens: n(100), OutputTokens: n(20), CacheReadTokens: n(5000), CacheWriteTokens: n(0),
				Requests: n(3)}),
		row("s1", "c", "", "reviewer", "", "error", nil, nil, t0.Add(2*time.Second)),
		spent(row("s1", "d", "", "", "opus", "cancelled", n(2_000_000), n(61_000), t0.Add(3*time.Second)),
			core.Usage{InputTokens: n(7000), OutputTokens: n(3000)}),
		row("s2", "a", "", "explorer", "opus", "completed", nil, nil, t0.Add(-2*time.Hour)),
		row("s3", "a", "", "explorer", "opus", "completed", nil, nil, t0.Add(-3*time.Hour)),
	})
	h := webview.New(s, webview.WithClock(clock), webview.WithSessions(2))
	_, day := get(t, h, "GET", "/")
	_, hour := get(t, h, "GET", "/?range=1h")
	_, all := get(t, h, "GET", "/?range=all")
	cell := func(body, text string) bool { return strings.Contains(body, ">"+text+"<") }
	for _, want := range []string{
		`title="2001400">2 M`, // opus' tokens, exact in the title
		"1.02 min",            // opus' p95 duration: 61 s, rank 3 of 3
		"3 s",                 // opus' median: rank 2 of 3; explorer's p95
		"1 s",                 // explorer's median: rank 1 of 2
		"not reported",        // the model of the reviewer
	} {
		if !strings.Contains(hour, want) {
			t.Errorf("the last hour's overview lacks %q", want)
		}
	}
	for _, status := range []string{"completed", "failed", "error", "cancelled"} {
		if !cell(hour, status) {
			t.Errorf("the tool status %q is not counted", status)
		}
	}
	// The sessions' table (the failures' table above it links sessions too).
	sessions := func(body string) string { return body[strings.Index(body, "<h2>Sessions</h2>"):] }
	if strings.Count(sessions(hour), `href="/session?id=`) != 1 ||
		strings.Count(sessions(day), `href="/session?id=`) != 2 {
		t.Errorf("windows: the last hour lists %d sessions (want 1), the last day %d (want 2)",
			strings.Count(sessions(hour), `href="/session?id=`), strings.Count(sessions(day), `href="/session?id=`))
	}
	// The failures: newest first, each with its session's link; and what
	// they cost by type and model apart.
	failed := hour[strings.Index(hour, `<table class="failures">`):strings.Index(hour, "<h2>Sessions</h2>")]
	if i, j, k := strings.Index(failed, ">cancelled<"), strings.Index(failed, ">error<"),
		strings.Index(failed, ">failed<"); i < 0 || j < i || k < j || strings.Contains(failed, ">completed<") ||
		strings.Count(failed, `href="/session?id=s1"`) != 3 || !strings.Contains(failed, "What the failed ones cost") ||
		!strings.Contains(failed, `title="2000400">2 M`) {
		t.Errorf("the failures, newest first, with what they cost:\n%s", failed)
	}
	// The run's tokens beside the final request's: opus' three rows spent
	// 15,120 with one not reporting (the same in what the failed ones
	// cost: b and d); each failure's own, or "not reported" (c), never 0.
	runCells := regexp.MustCompile(`title="15120">15.1 k</td><td class="n">7.56 k</td><td class="n">1</td>`)
	if !runCells.MatchString(hour[:strings.Index(hour, `<h2 id="failures">`)]) ||
		!strings.Contains(failed, `title="15120">15.1 k</td><td class="n">7.56 k</td><td class="n">0</td>`) ||
		!strings.Contains(failed, `title="10000">10 k</td>`) || !strings.Contains(failed, `title="5120">5.12 k</td>`) ||
		!strings.Contains(failed, `<td class="n unreported">not reported</td>`) {
		t.Errorf("run tokens:\n%s", hour)
	}
	// Paging by key: two sessions, then the third, never one twice.
	next := regexp.MustCompile(`<a href="([^"]+)">next sessions`).FindStringSubmatch(all)
	if next == nil {
		t.Fatal("all time: no next page for three sessions two to a page")
	}
	_, second := get(t, h, "GET", html.UnescapeString(next[1]))
	for body, want := range map[string][]string{all: {"s1", "s2"}, second: {"s3"}} {
		got := regexp.MustCompile(`href="/session\?id=([^"]+)"`).FindAllStringSubmatch(sessions(body), -1)
		var ids []string
		for _, g := range got {
			ids = append(ids, g[1])
		}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Errorf("a page lists %v, want %v", ids, want)
		}
	}
	if _, body := get(t, h, "GET", "/?range=all&q=s3"); strings.Count(sessions(body), `href="/session?id=`) != 1 ||
		!strings.Contains(body, `href="/session?id=s3"`) {
		t.Error("the id prefix s3 does not list s3 alone")
	}
	for _, bad := range []string{
		"/?range=5y", "/?since=yesterday", "/?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z",
	} {
		res, body := get(t, h, "GET", bad)
		param := strings.Split(strings.TrimPrefix(bad, "/?"), "=")[0]
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, param) {
			t.Errorf("%s: %d %q, want 400 naming the parameter", bad, res.StatusCode, body)
		}
	}
	// The session page: the turn's total over its top-level subagents
	// (1000 + 2,000,000, one not reporting), the nested one apart.
	_, page := get(t, h, "GET", "/session?id=s1")
	for _, want := range []string{
		`<span title="2001000">2 M</span> (1 not reported)`,
		`nested subagent(s) report <span title="400">400</span> tokens more`,
		`title="400">nested 400, not added`,
		"3 failed",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the session page lacks %q", want)
		}
	}
}

// TestSessionPagedByTurns: a session of 60 turns is drawn 25 turns a page,
// every turn on exactly one page by the later links, and back by the
// earlier ones; a bad cursor is a 400.
func TestSessionPagedByTurns(t *testing.T) {
	s := memory.New()
	var frames []core.Frame
	for i := range 60 {
		frames = append(frames, core.Frame{TaskSessionID: "long", TaskID: "task", TurnID: fmt.Sprintf("turn-%02d", i),
			ExecutionID: "e", ToolCallID: fmt.Sprint("tool-", i), ToolStatus: "completed",
			ObservedAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	testenv.Record(t, s, frames)
	h := webview.New(s)
	turn := regexp.MustCompile(`Turn <span class="id">(turn-\d+)</span>`)
	// walk follows the link from page to page, counting each turn drawn
	// and the turns of each page; it returns the last page too.
	walk := func(page, link string) (seen map[string]int, perPage []int, last string) {
		follow := regexp.MustCompile(`<a href="([^"]+)">` + regexp.QuoteMeta(link) + `</a>`)
		seen = map[string]int{}
		for n := 0; page != ""; n++ {
			last = page
			res, body := get(t, h, "GET", page)
			if res.StatusCode != 200 || n > 5 {
				t.Fatalf("%s: %d (page %d)", page, res.StatusCode, n)
			}
			drawn := turn.FindAllStringSubmatch(body, -1)
			for _, m := range drawn {
				seen[m[1]]++
			}
			perPage = append(perPage, len(drawn))
			page = ""
			if m := follow.FindStringSubmatch(body); m != nil {
				page = html.UnescapeString(m[1])
			}
		}
		return seen, perPage, last
	}
	seen, perPage, last := walk("/session?id=long", "later turns →")
	if !slices.Equal(perPage, []int{25, 25, 10}) {
		t.Errorf("the pages draw %v turns, want [25 25 10]", perPage)
	}
	if len(seen) != 60 {
		t.Errorf("%d distinct turns over the pages, want 60", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s drawn on %d pages", k, n)
		}
	}
	back, _, _ := walk(last, "← earlier turns")
	if len(back) != 60 {
		t.Errorf("%d distinct turns back over the pages, want 60", len(back))
	}
	res, body := get(t, h, "GET", "/session?id=long&after=-1")
	if res.StatusCode != 400 || !strings.Contains(body, "after") {
		t.Errorf("after=-1: %d %q", res.StatusCode, body)
	}
}

// TestBadQueriesAre400: every parameter of either page with a value no
// store could be asked for — invalid UTF-8, a NUL byte, longer than an
// identifier may be, given twice, an instant outside years 1-9999 — is a
// 400 naming the parameter, never the store's error (a 500).
func TestBadQueriesAre400(t *testing.T) {
	s := memory.New()
	testenv.Record(t, s, kandevtest.Stream("demo-", t0))
	h := webview.New(s, webview.WithClock(clock))
	long := strings.Repeat("x", storekit.MaxIDBytes+1)
	for _, c := range []struct{ path, param string }{
		{"/?q=%ff", "q"}, {"/?q=%00", "q"}, {"/?q=" + long, "q"}, {"/?q=a&q=b", "q"},
		{"/?range=%ff", "range"}, {"/?range=1y", "range"},
		{"/?since=%00", "since"}, {"/?since=0000-01-01T00:00:00Z", "since"}, {"/?until=yesterday", "until"},
		{"/?after=2026-01-01T00:00:00Z&after_id=%ff", "after_id"}, {"/?after=%00", "after"},
		{"/?failed_after=yesterday", "failed_after"}, {"/?failed_after=2026-01-01T00:00:00Z&failed_tool=%00", "failed_tool"},
		{"/?failed_session=%ff", "failed_session"}, {"/?failed_exec=a&failed_exec=b", "failed_exec"},
		{"/session?id=%ff", "id"}, {"/session?id=a%00b", "id"}, {"/session?id=" + long, "id"},
		{"/session?id=demo-sess&after=-1", "after"}, {"/session?id=demo-sess&after=%ff", "after"},
		{"/session?id=demo-sess&before=0000-01-01T00:00:00Z", "before"}, {"/session?id=demo-sess&before=", "before"},
		{"/session?id=demo-sess&after=2026-01-01T00:00:00Z&after_tool=%00", "after_tool"},
		{"/session?id=demo-sess&before=2026-01-01T00:00:00Z&before_exec=%ff", "before_exec"},
		{"/session?id=demo-sess&after=2026-01-01T00:00:00Z&before=2026-01-01T00:00:00Z", "before"},
	} {
		res, body := get(t, h, "GET", c.path)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, c.param) {
			t.Errorf("%.80s: %d %q, want 400 naming %s", c.path, res.StatusCode, body, c.param)
		}
	}
}

// TestOverviewOverTime (docs/CONTRACT.md §5.6): the overview draws its
// window over time — subagents, failures and tokens per bucket, minutes
// for an hour, hours for a day, days for a month — as inline SVG, each
// bar labelled with its bucket and its value as the store's timeline
// gives it (storekit.TimelineOf over the same rows), the captions saying the
// measure and the bucket in words.
func TestOverviewOverTime(t *testing.T) {
	s := memory.New()
	frames := kandevtest.Stream("demo-", t0)
	testenv.Record(t, s, frames)
	h := webview.New(s, webview.WithClock(clock))
	rows, _ := s.ListBySession(context.Background(), "demo-sess", pageAll)
	for _, c := range []struct {
		rng, bucket string
		size        time.Duration
	}{{"1h", "minute", time.Minute}, {"24h", "hour", time.Hour}, {"30d", "day", 24 * time.Hour}} {
		_, body := get(t, h, "GET", "/?range="+c.rng)
		for _, caption := range []string{"Subagents per " + c.bucket, "Failed per " + c.bucket,
			"Final-request tokens (reported) per " + c.bucket} {
			if !strings.Contains(body, caption) {
				t.Errorf("range %s: no chart %q", c.rng, caption)
			}
		}
		now := clock()
		q := report.TimelineQuery{Since: now.Add(-map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour,
			"30d": 30 * 24 * time.Hour}[c.rng]).UTC(), Bucket: c.size}
		for _, b := range storekit.TimelineOf(rows, q).Buckets {
			want := fmt.Sprintf("<title>%s: %d</title>", b.Start.UTC().Format("2006-01-02 15:04:05.000000Z"),
				b.Invocations)
			if !strings.Contains(body, want) {
				t.Errorf("range %s: no bar labelled %q", c.rng, want)
			}
		}
		if !strings.Contains(body, "<svg role=\"img\"") {
			t.Errorf("range %s: no chart drawn", c.rng)
		}
	}
}

// TestFailuresPaged: the overview lists failures 25 at a time, the newest
// first; its "next failures" link opens the rest, none twice or skipped.
func TestFailuresPaged(t *testing.T) {
	s := memory.New()
	var frames []core.Frame
	for i := range 30 {
		frames = append(frames, core.Frame{TaskSessionID: "fs", TaskID: "t", ExecutionID: "e",
			ToolCallID: fmt.Sprintf("tool-%02d", i), ToolStatus: "failed", ObservedAt: t0.Add(time.Duration(i) * time.Second),
			Payload: &core.Payload{SubagentType: "explorer"}})
	}
	testenv.Record(t, s, frames)
	h := webview.New(s, webview.WithClock(clock))
	cells := regexp.MustCompile(`<td>(2026-11-30 09:00:\d\d)\.000000Z</td><td><a href="/session\?id=fs">`)
	_, first := get(t, h, "GET", "/?range=all")
	next := regexp.MustCompile(`<a href="([^"]+)">next failures`).FindStringSubmatch(first)
	if next == nil {
		t.Fatal("no next page of failures for 30")
	}
	link, _, _ := strings.Cut(html.UnescapeString(next[1]), "#") // a browser keeps the fragment to itself
	_, second := get(t, h, "GET", link)
	var seen []string
	for _, body := range []string{first, second} {
		for _, m := range cells.FindAllStringSubmatch(body, -1) {
			seen = append(seen, m[1])
		}
	}
	if len(seen) != 30 || seen[0] != "2026-11-30 09:00:29" || seen[29] != "2026-11-30 09:00:00" {
		t.Errorf("failures over two pages: %d, from %v", len(seen), seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] >= seen[i-1] {
			t.Errorf("failure %d (%s) is not older than the one before (%s)", i, seen[i], seen[i-1])
		}
	}
}

// statsCounter is a source that counts its reads over a whole session's
// rows (Stats).
type statsCounter struct {
	webview.Source
	stats int
}

func (c *statsCounter) Stats(ctx context.Context, q report.StatsQuery) (report.Stats, error) {
	c.stats++
	return c.Source.Stats(ctx, q)
}

// TestSessionTotalsApart: the session page reads only the turns it draws
// (no statistics over the whole session, docs/CONTRACT.md §5.7) and counts
// what it draws; the whole session's totals and coverage are a page of
// their own, linked from it, with the statistics' figures.
func TestSessionTotalsApart(t *testing.T) {
	s := memory.New()
	testenv.Record(t, s, kandevtest.Stream("demo-", t0))
	rows, err := s.ListBySession(context.Background(), "demo-sess", core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	src := &statsCounter{Source: s}
	h := webview.New(src)
	_, page := get(t, h, "GET", "/session?id=demo-sess")
	if want := fmt.Sprintf("<p>%d subagent(s) (%d live, 0 backfilled) in ", len(rows), len(rows)); !strings.Contains(
		page, want) || !strings.Contains(page, `<a href="/session/totals?id=demo-sess">Totals and coverage</a>`) {
		t.Errorf("the session page lacks %q or the totals' link:\n%s", want, page)
	}
	if src.stats != 0 {
		t.Errorf("the session page read the whole session's statistics %d time(s)", src.stats)
	}
	st, err := s.Stats(context.Background(), report.StatsQuery{TaskSessionID: "demo-sess"})
	if err != nil {
		t.Fatal(err)
	}
	res, totals := get(t, h, "GET", "/session/totals?id=demo-sess")
	want := fmt.Sprintf("%d subagent(s) (%d live, %d backfilled)", st.Subagents, st.Live, st.Backfill)
	if res.StatusCode != 200 || !strings.Contains(totals, want) ||
		!strings.Contains(totals, fmt.Sprintf(`title="%d"`, st.TotalTokens.All.Sum)) {
		t.Errorf("the totals page: %d, lacks %q or the tokens' sum %d:\n%s", res.StatusCode, want,
			st.TotalTokens.All.Sum, totals)
	}
	for path, code := range map[string]int{"/session/totals?id=nobody": 404, "/session/totals?id=%ff": 400,
		"/session/totals?id=a&id=b": 400} {
		if res, body := get(t, h, "GET", path); res.StatusCode != code {
			t.Errorf("%s: %d %q, want %d", path, res.StatusCode, body, code)
		}
	}
}

// TestLifecycleOnThePages (docs/CONTRACT.md §3.4, §5.8): the overview lists
// apart the window's subagents with no end seen past the threshold — a
// background launch whose end never came, an open call — never one that
// ended or one started within it, and counts them per group; a session's
// page reloads itself only while something on it can still change: not
// for a launch past the threshold, nor once its agent ended.
func TestLifecycleOnThePages(t *testing.T) {
	s := memory.New()
	frame := func(sess, tool string, at time.Duration) core.Frame {
		return core.Frame{TaskSessionID: sess, TaskID: "t", ExecutionID: "e", ToolCallID: tool, ToolStatus: "completed",
			ObservedAt: t0.Add(at), Payload: &core.Payload{SubagentType: "reviewer", Status: "async_launched",
				IsAsync: true, Description: "launch " + tool}}
	}
	ended := frame("old", "toolu_ended", 0)
	ended.EndedAt = t0.Add(time.Minute)
	recent := frame("recent", "toolu_recent", 50*time.Minute)
	testenv.Record(t, s, []core.Frame{frame("old", "toolu_lost", 0), ended, recent})
	h := webview.New(s, webview.WithClock(clock), webview.WithStaleAfter(30*time.Minute))
	_, page := get(t, h, "GET", "/?range=24h")
	_, stale, _ := strings.Cut(page, `<h2 id="stale">`)
	stale, _, _ = strings.Cut(stale, "</table>")
	if !strings.Contains(stale, "launch toolu_lost") || strings.Contains(stale, "toolu_ended") ||
		strings.Contains(stale, "toolu_recent") || !strings.Contains(stale, "30m0s") {
		t.Errorf("the no-end section lists the wrong subagents:\n%s", stale)
	}
	if !regexp.MustCompile(`<td>reviewer</td><td></td>\s*<td class="n">3</td><td class="n">0</td><td class="n">2</td>`).
		MatchString(page) {
		t.Errorf("the type breakdown does not count 2 with no end seen of 3:\n%.4000s", page)
	}
	for sess, want := range map[string]struct {
		refresh bool
		ends    []string
	}{"old": {false, []string{"no end seen", "2026-11-30 09:01:00"}}, "recent": {true, []string{"running"}}} {
		_, body := get(t, h, "GET", "/session?id="+sess)
		if got := strings.Contains(body, `http-equiv="refresh"`); got != want.refresh {
			t.Errorf("session %s reloads itself: %v, want %v", sess, got, want.refresh)
		}
		for _, end := range want.ends {
			if !strings.Contains(body, end) {
				t.Errorf("session %s's page does not say %q of an agent's end", sess, end)
			}
		}
	}
}

// TestStaleThresholdsLearntOnTheOverview (docs/CONTRACT.md §5.8): by
// default the overview learns each type's threshold from the window's
// durations — three times its 95th percentile, at least five minutes — and
// an hour for a type with none, and shows each listed row's.
func TestStaleThresholdsLearntOnTheOverview(t *testing.T) {
	s := memory.New()
	now := clock()
	n := func(v int64) int64 { return v }
	var frames []core.Frame
	add := func(tool, typ string, ago time.Duration, p core.Payload) {
		p.SubagentType, p.Description = typ, "run "+tool
		frames = append(frames, core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e", ToolCallID: tool,
			ToolStatus: "completed", ObservedAt: now.Add(-ago), Payload: &p})
	}
	for i, ms := range []int64{1000, 2000, 60_000} {
		add(fmt.Sprint("quick-", i), "quick", 20*time.Hour, core.Payload{DurationMs: n(ms)})
	}
	add("slow-0", "slow", 20*time.Hour, core.Payload{DurationMs: n(3_600_000)})
	launch := core.Payload{Status: "async_launched", IsAsync: true}
	add("bg-quick", "quick", 20*time.Minute, launch)
	add("bg-slow", "slow", 2*time.Hour, launch)
	add("bg-other", "other", 30*time.Minute, launch)
	add("bg-other-old", "other", 90*time.Minute, launch)
	testenv.Record(t, s, frames)
	_, page := get(t, webview.New(s, webview.WithClock(clock)), "GET", "/?range=24h")
	_, stale, _ := strings.Cut(page, `<h2 id="stale">`)
	stale, _, _ = strings.Cut(stale, "</table>")
	rows := regexp.MustCompile(`<td>([0-9hms]+)</td><td><a [^>]+>s</a></td><td>—</td><td>\w+</td><td>run ([\w-]+)</td>`).
		FindAllStringSubmatch(stale, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[2]+" "+r[1])
	}
	if want := []string{"bg-other-old 1h0m0s", "bg-quick 5m0s"}; !slices.Equal(got, want) {
		t.Errorf("the no-end section lists %v, want %v:\n%s", got, want, stale)
	}
}
