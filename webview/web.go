// Package webview is a read-only view of a store, as an http.Handler a
// host mounts in its own server (or subagentctl serve runs alone): an
// overview (activation, health, counts, the sessions with their fan-out
// and coverage) and, per session, each turn's fan-out as an SVG timeline
// beside the rows' details. Pages are rendered on the server with
// html/template (every stored text comes from agents and is escaped as
// text); they carry no script, and a Content-Security-Policy forbids any.
// Templates and the stylesheet are embedded: nothing is fetched. It has
// no authentication of its own: mount it behind the host's middleware.
// Opt-in, like package acp: the library's other packages do not link it.
//
//	mux.Handle("/admin/subagents/", requireAdmin(webview.New(store, webview.WithPrefix("/admin/subagents"))))
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package webview

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/semaphore"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/canon"
	"github.com/subagentctx/subagentctx/internal/fanout"
)

// Source is what the view reads: the rows, and the read side.
type Source interface {
	core.Store
	report.Reader
	report.Overviewer
	report.Timeliner
	report.FailureLister
	report.TurnLister
	report.StaleLister
}

//go:embed assets
var assets embed.FS

// pages are the templates; each handler binds url to its prefix.
var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"url":                 func(string) string { return "" },
	"sessionURL":          func(string) string { return "" },
	"turnsURL":            func(string, string, *core.Cursor) string { return "" },
	"when":                when,
	"num":                 num,
	"human":               human,
	"ms":                  ms,
	"text":                text,
	"average":             average,
	"add":                 func(a, b int) int { return a + b },
	"figures":             func(v *string, part string, f report.Figures) figuresRow { return figuresRow{v, part, f} },
	"pageURL":             func(window, *report.SessionKey) string { return "" },
	"failuresURL":         func(window, report.FailureKey) string { return "" },
	"failedStatuses":      canon.FailedToolStatuses,
	"failedAgentStatuses": canon.FailedAgentStatuses,
	"since":               report.Since,
	"minStale":            func() time.Duration { return report.MinStaleAfter },
	"runTokens":           report.RunTokens,
	"unended":             func(r core.Subagent) bool { return storekit.Unended(&r) },
	"head":                func(title string, refresh int) head { return head{title, refresh} },
}).ParseFS(assets, "assets/*.html"))

// head is what a page's head says: its title, and how often a page that
// is still moving reloads itself (seconds; 0: never).
type head struct {
	Title   string
	Refresh int
}

// Option configures the view.
type Option func(*server)

// WithSessions sets how many sessions a page of the overview lists, the
// most recently active first (default 50; the next page follows by key).
func WithSessions(n int) Option { return func(s *server) { s.sessions = n } }

// WithTurns sets how many turns a session's page draws (default 25; the
// next ones follow by a link; at most report.MaxTurns).
func WithTurns(n int) Option { return func(s *server) { s.turns = min(max(n, 1), report.MaxTurns) } }

// WithRefresh sets how often the page of a session with a subagent still
// running reloads itself (default 5 s, at least 1 s): with no script, by
// the page's own refresh. A page whose subagents have all ended — or have
// had no end seen for longer than WithStaleAfter — never does.
func WithRefresh(d time.Duration) Option {
	return func(s *server) { s.refresh = max(int(d.Round(time.Second)/time.Second), 1) }
}

// WithStaleAfter sets how long a subagent may run with no end seen before
// the view counts it as one that never came back: the overview lists those
// of its window apart, and a session's page stops reloading itself for
// them. By default the overview learns each type's threshold from the
// durations of its window (report.StaleAfterOf: three times the type's
// 95th percentile, at least report.MinStaleAfter), and 1 h for a type with
// none, which is also the session page's.
func WithStaleAfter(d time.Duration) Option {
	return func(s *server) {
		if d > 0 {
			s.staleAfter, s.learnStale = d, false
		}
	}
}

// WithClock sets the clock the overview's ranges end at (default
// time.Now): a host's test pins it.
func WithClock(now func() time.Time) Option { return func(s *server) { s.now = now } }

// WithLogger receives the errors a page could not be rendered for.
func WithLogger(l *slog.Logger) Option { return func(s *server) { s.log = l } }

// WithPrefix is the path the view is mounted under ("/admin/subagents", a
// plain path): it serves only below it, and every link and asset it writes
// starts with it. Default "": the root.
func WithPrefix(p string) Option {
	return func(s *server) {
		if p = strings.Trim(p, "/"); p != "" {
			p = "/" + path.Clean(p)
		}
		s.prefix = p
	}
}

// WithReadTimeout bounds each read a page makes (default 10 s; a
// non-positive d keeps it): a read still running then is cancelled — on
// PostgreSQL the server cancels its statement, it is not left running —
// and the page answers 503 saying the range took too long, with links to
// shorter ones. Waiting for a turn to read (WithMaxReads) is bounded by
// the same duration.
func WithReadTimeout(d time.Duration) Option {
	return func(s *server) {
		if d > 0 {
			s.readTimeout = d
		}
	}
}

// WithMaxReads bounds how many of the view's reads run at once, over all
// its pages and visitors (default 2, at least 1): the view never holds
// more of the host's connections than that, and on database/sql's default
// pool (two idle connections) a page opens and closes none. The other
// reads wait their turn in the order they asked; one that cannot start
// within the read timeout is answered 503 with Retry-After.
func WithMaxReads(n int) Option { return func(s *server) { s.maxReads = max(n, 1) } }

// WithFrameAncestors lets the listed sources frame the pages (CSP
// frame-ancestors, "'self'" or an origin), for a host that shows the view
// inside its own admin console. Default: no framing at all.
func WithFrameAncestors(sources ...string) Option {
	return func(s *server) { s.frameAncestors = sources }
}

type server struct {
	src            Source
	sessions       int
	turns          int
	log            *slog.Logger
	prefix         string
	frameAncestors []string
	pages          *template.Template
	now            func() time.Time
	refresh        int // seconds (WithRefresh)
	staleAfter     time.Duration
	learnStale     bool // each type's threshold from the overview's durations
	readTimeout    time.Duration
	maxReads       int
	turnstile      *semaphore.Weighted // maxReads turns, given in the order asked
}

// The view's defaults for WithReadTimeout and WithMaxReads.
const (
	DefaultReadTimeout = 10 * time.Second
	DefaultMaxReads    = 2
)

// New returns the view over src. It only reads: GET (and HEAD) of the
// overview (prefix/), a session (prefix/session?id=…, so that any id,
// ".." and "/" included, opens) and the stylesheet (prefix/style.css);
// any other method is refused (405) and any other path is 404.
func New(src Source, opts ...Option) http.Handler {
	s := &server{src: src, sessions: 50, turns: 25, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now,
		refresh: 5, staleAfter: time.Hour, learnStale: true, readTimeout: DefaultReadTimeout, maxReads: DefaultMaxReads}
	for _, o := range opts {
		o(s)
	}
	s.turnstile = semaphore.NewWeighted(int64(s.maxReads))
	s.pages = template.Must(pages.Clone()).Funcs(template.FuncMap{
		"url":        func(path string) string { return s.prefix + path },
		"sessionURL": func(id string) string { return s.prefix + "/session?id=" + url.QueryEscape(id) },
		"turnsURL": func(id, dir string, c *core.Cursor) string {
			v := url.Values{"id": {id}}
			v.Set(dir, c.ObservedAt.UTC().Format(time.RFC3339Nano))
			v.Set(dir+"_tool", c.ToolCallID)
			v.Set(dir+"_exec", c.AgentExecutionID)
			return s.prefix + "/session?" + v.Encode()
		},
		"pageURL": func(w window, after *report.SessionKey) string { return s.prefix + "/?" + w.query(after).Encode() },
		"failuresURL": func(w window, after report.FailureKey) string {
			v := w.query(nil)
			v.Set("failed_after", after.ObservedAt.UTC().Format(time.RFC3339Nano))
			v.Set("failed_session", after.TaskSessionID)
			v.Set("failed_tool", after.ToolCallID)
			v.Set("failed_exec", after.AgentExecutionID)
			return s.prefix + "/?" + v.Encode() + "#failures"
		},
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+s.prefix+"/{$}", s.overview)
	mux.HandleFunc("GET "+s.prefix+"/session", s.session)
	mux.HandleFunc("GET "+s.prefix+"/session/totals", s.totals)
	mux.HandleFunc("GET "+s.prefix+"/style.css", func(w http.ResponseWriter, r *http.Request) {
		css, err := assets.ReadFile("assets/style.css")
		if err != nil {
			http.Error(w, "no stylesheet", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=300")
		w.Write(css)
	})
	return s.secure(mux)
}

// secure sets the headers every response carries: no script, no frame
// (unless the host allowed some), no sniffing, no referrer leaving the
// page.
func (s *server) secure(h http.Handler) http.Handler {
	frames := "'none'"
	if len(s.frameAncestors) > 0 {
		frames = strings.Join(s.frameAncestors, " ")
	}
	// form-action 'self': the view's own filter form submits to the view
	// (a GET of its own page); nothing else may be a form's target.
	csp := "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; " +
		"frame-ancestors " + frames
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		if len(s.frameAncestors) == 0 {
			hd.Set("X-Frame-Options", "DENY")
		}
		h.ServeHTTP(w, r)
	})
}

type overviewPage struct {
	Window     window
	Ranges     []string
	Activation report.Activation
	Health     report.Health
	Overview   report.Overview
	Sessions   []report.SessionSummary
	Next       *report.SessionKey
	Generated  time.Time
	// Charts are the window over time: subagents, failures and tokens per
	// bucket.
	Charts []chart
	// Failed is the overview of the failed rows alone: what they cost,
	// apart from the rest; Failures lists them, newest first, a page at a
	// time (NextFailures: the next page's key).
	Failed       report.Overview
	Failures     []core.Subagent
	NextFailures *report.FailureKey
	// Stale are the window's subagents with no end seen for longer than
	// their type's threshold (StaleAfter), oldest first (docs/CONTRACT.md
	// §5.8); Learnt says the thresholds were learnt from the window.
	Stale      []core.Subagent
	StaleAfter report.StaleAfter
	Learnt     bool
}

// figuresRow is one line of a breakdown's table: a group's figures over
// all its rows, or over its live or backfilled ones.
type figuresRow struct {
	Value *string
	Part  string
	F     report.Figures
}

// window is the overview's scope, from the query string: a range ending
// now (range=1h|24h|7d|30d|all, default 24h) or explicit since and until
// (RFC 3339), an id prefix (q) and the page's key (after, after_id).
type window struct {
	Range        string
	Since, Until time.Time
	Prefix       string
	After        *report.SessionKey
	// FailedAfter is the last failure of the previous page of failures.
	FailedAfter *report.FailureKey
}

// failuresPage is how many failed subagents the overview lists a page,
// stalePage how many with no end seen.
const (
	failuresPage = 25
	stalePage    = 25
	// staleLearning bounds the rows the stale read gives when each type's
	// threshold is learnt, before those short of their own are cut.
	staleLearning = 1000
)

// healthWindow is how far back the overview's health check reaches.
const healthWindow = time.Hour

// ranges are the overview's ready-made windows, ending now.
var ranges = []struct {
	name string
	d    time.Duration
}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}, {"all", 0}}

// parseInstant reads the parameter name as an RFC 3339 instant, naming
// what is wrong; ok is false when it is absent. Year 1's first instant is
// an instant like any other (it is also Go's zero time, so presence is
// told by ok, never by IsZero).
func parseInstant(v url.Values, name string) (t time.Time, ok bool, err error) {
	if v.Get(name) == "" {
		return time.Time{}, false, nil
	}
	t, err = time.Parse(time.RFC3339Nano, v.Get(name))
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s=%q is not an RFC 3339 instant", name, v.Get(name))
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return time.Time{}, false, fmt.Errorf("%s=%q is outside years 1-9999", name, v.Get(name))
	}
	return t.UTC(), true, nil
}

// parseWindow reads the overview's query string, naming what is wrong. A
// store reads a zero Since as "from the start", which is what since at
// year 1's first instant says too; a zero Until would read as "to now",
// so until at that instant, before which nothing can be observed, is
// refused by name.
func parseWindow(v url.Values, now time.Time) (window, error) {
	w := window{Range: v.Get("range"), Prefix: v.Get("q")}
	since, hasSince, err := parseInstant(v, "since")
	if err != nil {
		return w, err
	}
	until, hasUntil, err := parseInstant(v, "until")
	if err != nil {
		return w, err
	}
	w.Since, w.Until = since, until
	switch {
	case hasUntil && until.IsZero():
		return w, fmt.Errorf("until=%q: nothing can be observed before year 1's first instant", v.Get("until"))
	case hasSince || hasUntil:
		w.Range = ""
	default:
		if w.Range == "" {
			w.Range = "24h"
		}
		known := false
		for _, r := range ranges {
			if r.name == w.Range {
				known = true
				if r.d > 0 {
					w.Since = now.Add(-r.d).UTC()
				}
			}
		}
		if !known {
			return w, fmt.Errorf("range=%q: want 1h, 24h, 7d, 30d or all", w.Range)
		}
	}
	if hasSince && hasUntil && !w.Since.Before(w.Until) {
		return w, fmt.Errorf("since %s is not before until %s", v.Get("since"), v.Get("until"))
	}
	if v.Has("after") {
		t, _, err := parseInstant(v, "after")
		if err != nil {
			return w, err
		}
		w.After = &report.SessionKey{LastObservedAt: t, TaskSessionID: v.Get("after_id")}
	}
	if v.Has("failed_after") {
		t, _, err := parseInstant(v, "failed_after")
		if err != nil {
			return w, err
		}
		w.FailedAfter = &report.FailureKey{ObservedAt: t, TaskSessionID: v.Get("failed_session"),
			ToolCallID: v.Get("failed_tool"), AgentExecutionID: v.Get("failed_exec")}
	}
	return w, nil
}

// checkQuery names the first of the parameters whose value no store could
// be asked for: invalid UTF-8, a NUL byte, or longer than an identifier
// may be (docs/CONTRACT.md §2), or given twice.
func checkQuery(v url.Values, names ...string) error {
	for _, name := range names {
		values := v[name]
		if len(values) > 1 {
			return fmt.Errorf("%s is given %d times: want it once", name, len(values))
		}
		for _, value := range values {
			switch {
			case !utf8.ValidString(value):
				return fmt.Errorf("%s=%q is not valid UTF-8", name, value)
			case strings.ContainsRune(value, 0):
				return fmt.Errorf("%s=%q holds a NUL byte", name, value)
			case len(value) > storekit.MaxIDBytes:
				return fmt.Errorf("%s is %d bytes long: at most %d", name, len(value), storekit.MaxIDBytes)
			}
		}
	}
	return nil
}

// query is the window as a query string, on the page after the key after
// (nil: the first page). A range ending now stays a range, so that the
// next page moves with it only by the time it takes to read.
func (w window) query(after *report.SessionKey) url.Values {
	v := url.Values{}
	if w.Range != "" {
		v.Set("range", w.Range)
	} else {
		// An explicit window with neither bound set was given as since at
		// year 1's first instant: it is said again, or the next page would
		// fall back to the default range.
		if !w.Since.IsZero() || w.Until.IsZero() {
			v.Set("since", w.Since.Format(time.RFC3339Nano))
		}
		if !w.Until.IsZero() {
			v.Set("until", w.Until.Format(time.RFC3339Nano))
		}
	}
	if w.Prefix != "" {
		v.Set("q", w.Prefix)
	}
	if after != nil {
		v.Set("after", after.LastObservedAt.UTC().Format(time.RFC3339Nano))
		v.Set("after_id", after.TaskSessionID)
	}
	return v
}

// shorter is the ready-made ranges shorter than the window, the same
// prefix, longest first: what to try when the window took too long.
func (w window) shorter(now time.Time) []window {
	until := w.Until
	if until.IsZero() {
		until = now
	}
	var out []window
	for i := len(ranges) - 1; i >= 0; i-- {
		r := ranges[i]
		if r.d > 0 && (w.Since.IsZero() || r.d < until.Sub(w.Since)) {
			out = append(out, w.WithRange(r.name))
		}
	}
	return out
}

// WithRange returns the window over another ready-made range (the same
// prefix, the first page).
func (w window) WithRange(r string) window { return window{Range: r, Prefix: w.Prefix} }

func (s *server) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := s.now().UTC()
	win, err := parseWindow(r.URL.Query(), now)
	if err == nil {
		err = checkQuery(r.URL.Query(), "range", "since", "until", "q", "after", "after_id", "failed_after",
			"failed_session", "failed_tool", "failed_exec")
	}
	if err != nil {
		http.Error(w, "subagentctx: webview: "+err.Error(), http.StatusBadRequest)
		return
	}
	p := overviewPage{Window: win, Generated: now, StaleAfter: report.StaleAfter{Default: s.staleAfter},
		Learnt: s.learnStale}
	// Learning the thresholds, the stale read takes every row past the
	// least one a type can learn, to keep those past their own type's
	// once the overview is read.
	staleBefore, staleRead := now.Add(-s.staleAfter), stalePage
	if s.learnStale {
		staleBefore, staleRead = now.Add(-min(report.MinStaleAfter, s.staleAfter)), staleLearning
	}
	for _, r := range ranges {
		p.Ranges = append(p.Ranges, r.name)
	}
	// The page's reads are independent: they run at once, as many as the
	// view's turns allow (WithMaxReads), so the page takes its slowest read
	// rather than their sum where turns are free. They ask for their turns
	// in this order, the costliest first (the overview over a long window,
	// health over a short one), so that the cheap ones fill the gaps rather
	// than leave one read running alone at the end. Health covers the last
	// hour, whatever the window: whether capture works now, at a cost that
	// does not grow with the window (subagentctl health --since answers for
	// any other).
	tq := report.TimelineQuery{Since: win.Since, Until: win.Until, Bucket: bucketFor(win, now)}
	reads := []func(context.Context) error{
		func(ctx context.Context) (err error) {
			p.Overview, err = s.src.Overview(ctx, report.OverviewQuery{Since: win.Since, Until: win.Until})
			return
		},
		func(ctx context.Context) (err error) {
			p.Health, err = s.src.Health(ctx, report.HealthQuery{Since: now.Add(-healthWindow)})
			return
		},
		func(ctx context.Context) (err error) {
			p.Failed, err = s.src.Overview(ctx, report.OverviewQuery{Since: win.Since, Until: win.Until, Failed: true})
			return
		},
		func(ctx context.Context) error {
			t, err := s.src.Timeline(ctx, tq)
			if err == nil {
				t.Query = tq // drawn over the window asked for, whatever the store echoed
				p.Charts = charts(t, now)
			}
			return err
		},
		func(ctx context.Context) (err error) {
			p.Sessions, err = s.src.Sessions(ctx, report.SessionQuery{Since: win.Since, Until: win.Until,
				Prefix: win.Prefix, After: win.After, Limit: s.sessions + 1})
			return
		},
		func(ctx context.Context) (err error) {
			p.Failures, err = s.src.Failures(ctx, report.FailureQuery{Since: win.Since, Until: win.Until,
				Limit: failuresPage + 1, After: win.FailedAfter})
			if len(p.Failures) > failuresPage {
				p.Failures = p.Failures[:failuresPage]
				k := report.KeyOf(p.Failures[failuresPage-1])
				p.NextFailures = &k
			}
			return
		},
		func(ctx context.Context) (err error) {
			p.Stale, err = s.src.Stale(ctx, report.StaleQuery{Since: win.Since, Before: staleBefore,
				Limit: staleRead})
			return
		},
		func(ctx context.Context) (err error) { p.Activation, err = s.src.Activation(ctx); return },
	}
	var wg sync.WaitGroup
	errs := make([]error, len(reads))
	for i, read := range reads {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.read(ctx, read) }()
	}
	wg.Wait()
	err = errors.Join(errs...)
	if s.learnStale && err == nil {
		p.StaleAfter = report.StaleAfterOf(p.Overview, s.staleAfter)
		if p.Stale = p.StaleAfter.Keep(p.Stale, now); len(p.Stale) > stalePage {
			p.Stale = p.Stale[:stalePage]
		}
	}
	if len(p.Sessions) > s.sessions {
		p.Sessions = p.Sessions[:s.sessions]
		k := p.Sessions[len(p.Sessions)-1].Key()
		p.Next = &k
	}
	s.render(w, r, "overview.html", p, err)
}

type sessionPage struct {
	ID    string
	Turns []turnView
	// Drawn counts the page's subagents and, when the page draws the whole
	// session, its live and backfilled ones.
	Drawn struct{ Subagents, Live, Backfill int }
	// Earlier and Later start the neighbouring pages (nil: none).
	Earlier, Later *core.Cursor
	Generated      time.Time
	// Refresh is how often the page reloads itself while a subagent it
	// draws can still end (seconds; 0 once none can).
	Refresh int
	// StaleBefore is the instant before which a subagent with no end seen
	// never came back, as far as the view says (WithStaleAfter).
	StaleBefore time.Time
}

// totalsPage is a session's statistics and coverage, over every row.
type totalsPage struct {
	ID        string
	Stats     report.Stats
	Coverage  report.SessionCoverage
	Turns     int // turn groups: turns with a subagent, and the rows without one as one more
	Generated time.Time
}

// turnCursor reads the page's cursor from the parameters name, name_tool
// and name_exec, naming what is wrong; nil when name is absent.
func turnCursor(v url.Values, name string) (*core.Cursor, error) {
	if !v.Has(name) {
		return nil, nil
	}
	t, ok, err := parseInstant(v, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s is empty: want an RFC 3339 instant", name)
	}
	return &core.Cursor{ObservedAt: t, ToolCallID: v.Get(name + "_tool"), AgentExecutionID: v.Get(name + "_exec")}, nil
}

func (s *server) session(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := r.URL.Query()
	id := v.Get("id")
	bad := func(err error) { http.Error(w, "subagentctx: webview: "+err.Error(), http.StatusBadRequest) }
	err := checkQuery(v, "id", "after", "after_tool", "after_exec", "before", "before_tool", "before_exec")
	if err != nil {
		bad(err)
		return
	}
	q := report.TurnQuery{TaskSessionID: id, Limit: s.turns}
	if q.After, err = turnCursor(v, "after"); err != nil {
		bad(err)
		return
	}
	if q.Before, err = turnCursor(v, "before"); err != nil {
		bad(err)
		return
	}
	if q.After != nil && q.Before != nil {
		bad(fmt.Errorf("after and before are both given: want one"))
		return
	}
	p := sessionPage{ID: id, Generated: time.Now().UTC(), StaleBefore: s.now().Add(-s.staleAfter)}
	// A page reads the turns it draws: its time and memory follow the
	// page, not the session (docs/CONTRACT.md §5.7).
	var page report.TurnPage
	err = s.read(ctx, func(ctx context.Context) (err error) { page, err = s.src.SessionTurns(ctx, q); return })
	if err == nil && len(page.Rows) == 0 && q.After == nil && q.Before == nil {
		http.Error(w, "no subagent on record for this session", http.StatusNotFound)
		return
	}
	if err == nil {
		p.Drawn.Subagents = len(page.Rows)
		for _, r := range page.Rows {
			switch r.Source {
			case core.SourceLive:
				p.Drawn.Live++
			case core.SourceBackfill:
				p.Drawn.Backfill++
			}
		}
		for i, t := range fanout.Build(page.Rows) {
			p.Turns = append(p.Turns, layout(t, i))
		}
		if page.Earlier {
			p.Earlier = &page.First
		}
		if page.Later {
			p.Later = &page.Last
		}
		for _, r := range page.Rows {
			if storekit.Unended(&r) && !report.Since(r).Before(p.StaleBefore) {
				p.Refresh = s.refresh // a subagent in flight: the page follows it
				break
			}
		}
	}
	s.render(w, r, "session.html", p, err)
}

// totals draws a session's statistics and coverage: a read over all its
// rows and messages, so that the session page, which reads only the turns
// it draws, links to it rather than paying it on every page.
func (s *server) totals(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if err := checkQuery(v, "id"); err != nil {
		http.Error(w, "subagentctx: webview: "+err.Error(), http.StatusBadRequest)
		return
	}
	p := totalsPage{ID: v.Get("id"), Generated: time.Now().UTC()}
	err := s.read(r.Context(), func(ctx context.Context) (err error) {
		p.Stats, err = s.src.Stats(ctx, report.StatsQuery{TaskSessionID: p.ID})
		return
	})
	if err == nil && p.Stats.Subagents == 0 {
		http.Error(w, "no subagent on record for this session", http.StatusNotFound)
		return
	}
	if len(p.Stats.Sessions) == 1 {
		p.Coverage = p.Stats.Sessions[0]
	}
	for _, f := range p.Stats.FanOutPerTurn {
		p.Turns += int(f.Turns)
	}
	if p.Stats.RowsWithoutTurn > 0 {
		p.Turns++
	}
	s.render(w, r, "totals.html", p, err)
}

// errBusy is a read that could not start within the read timeout: every
// turn was taken all the while (WithMaxReads).
var errBusy = errors.New("every read turn stayed taken")

// errTooLong is a read the view cancelled at its deadline.
var errTooLong = errors.New("the read ran out of time")

// read runs one of a page's reads in its turn and under its deadline. A
// panic in it is the page's error, never the host's: the read runs in a
// goroutine the view started, where nothing of the host could recover it.
func (s *server) read(ctx context.Context, fn func(context.Context) error) (err error) {
	wait, cancel := context.WithTimeout(ctx, s.readTimeout)
	defer cancel()
	if s.turnstile.Acquire(wait, 1) != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errBusy
	}
	defer s.turnstile.Release(1)
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("a read panicked: %v\n%s", v, debug.Stack())
		}
	}()
	rctx, cancel := context.WithTimeout(ctx, s.readTimeout)
	defer cancel()
	if err = fn(rctx); err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %w", errTooLong, err)
	}
	return err
}

// unavailablePage says why a page could not be read in time, and what to
// try instead.
type unavailablePage struct {
	Busy     bool     // every read turn stayed taken; else the reads ran out of time
	Timeout  string   // the read timeout, as text
	Shorter  []window // the overview's shorter ranges (none on other pages)
	MaxReads int
}

// render writes a page, or a plain error without the store's details
// (which may name the database): those go to the log. A page whose reads
// ran out of time, found every turn taken, or met the database's passing
// state (a statement timeout, a lost connection) is a 503 that says so;
// any other failure is a 500.
func (s *server) render(w http.ResponseWriter, r *http.Request, name string, data any, err error) {
	if err == nil {
		var b bytes.Buffer
		if err = s.pages.ExecuteTemplate(&b, name, data); err == nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(b.Bytes())
			return
		}
	}
	if r.Context().Err() != nil {
		return // the visitor left: nobody reads the answer
	}
	s.log.LogAttrs(
		r.Context(), slog.LevelWarn, "subagentctx: webview: page failed", slog.String("path", r.URL.Path),
		slog.Any("error", err),
	)
	// A page some of whose reads ran out of time took too long, even where
	// others then found every turn taken by them: a shorter range helps.
	busy := errors.Is(err, errBusy) && !errors.Is(err, errTooLong)
	if !busy && !errors.Is(err, errTooLong) && !errors.Is(err, core.ErrUnavailable) {
		http.Error(w, "the store could not be read; see the server's log", http.StatusInternalServerError)
		return
	}
	p := unavailablePage{Busy: busy, Timeout: s.readTimeout.String(), MaxReads: s.maxReads}
	if o, ok := data.(overviewPage); ok && !busy {
		p.Shorter = o.Window.shorter(o.Generated)
	}
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, "unavailable.html", p); err != nil {
		http.Error(w, "the store could not be read in time; see the server's log", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Retry-After", strconv.Itoa(max(int(s.readTimeout.Round(time.Second)/time.Second), 1)))
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write(b.Bytes())
}

// when is an instant as the pages show it.
func when(t any) string {
	switch x := t.(type) {
	case time.Time:
		if x.IsZero() {
			return "—"
		}
		return x.UTC().Format("2006-01-02 15:04:05.000000Z")
	case *time.Time:
		if x == nil {
			return "—"
		}
		return when(*x)
	}
	return fmt.Sprint(t)
}

// num is a metric: its value, or "not reported" (never 0).
func num(p any) string {
	switch x := p.(type) {
	case *int64:
		if x == nil {
			return "not reported"
		}
		return fmt.Sprint(*x)
	case *big.Int:
		if x == nil {
			return "not reported"
		}
		return x.String()
	}
	return fmt.Sprint(p)
}

// human is a metric in human units (1.2 M; the exact value is num's), or
// "not reported".
func human(p any) string {
	var v *big.Int
	switch x := p.(type) {
	case *big.Int:
		v = x
	case *int64:
		if x != nil {
			v = big.NewInt(*x)
		}
	default:
		return fmt.Sprint(p)
	}
	if v == nil {
		return "not reported"
	}
	f, _ := new(big.Float).SetInt(v).Float64()
	for _, u := range []struct {
		size float64
		name string
	}{{1e15, " P"}, {1e12, " T"}, {1e9, " G"}, {1e6, " M"}, {1e3, " k"}} {
		if f >= u.size { // sums of metrics are never negative
			return sig3(f/u.size) + u.name
		}
	}
	return v.String()
}

// ms is a duration in milliseconds in the unit that fits (320 ms, 48.2 s,
// 3.5 h), or "not reported".
func ms(p *int64) string {
	if p == nil {
		return "not reported"
	}
	if *p < 1000 {
		return fmt.Sprintf("%d ms", *p)
	}
	sec := float64(*p) / 1000 // at least a second, which is a unit
	u := timeUnits[0]
	for _, u = range timeUnits {
		if sec >= u.seconds {
			break
		}
	}
	return sig3(sec/u.seconds) + " " + u.name
}

// average is a metric's average, three significant digits in human units,
// or "—" when nothing was reported.
func average(m report.Metric) string {
	if m.Average == nil {
		return "—"
	}
	if *m.Average < 1 {
		return strconv.FormatFloat(*m.Average, 'f', 2, 64)
	}
	f, _ := new(big.Float).SetFloat64(*m.Average).Int(nil)
	if f.Cmp(big.NewInt(1000)) < 0 {
		return sig3(*m.Average)
	}
	return human(f)
}

// text is a nullable text: its value, or "—".
func text(p *string) string {
	if p == nil {
		return "—"
	}
	return *p
}

// sig3 is v (at least 1) with three significant digits, never in
// exponent form.
func sig3(v float64) string {
	switch {
	case v < 10:
		return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
	case v < 100:
		return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 1, 64), "0"), ".")
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// since is a span in seconds as the timeline's ticks show it, three
// significant digits in the unit that fits, from microseconds to years.
func since(sec float64) string {
	switch {
	case sec == 0:
		return "0"
	case sec < 1e-6:
		return "+<1µs"
	}
	for _, u := range timeUnits {
		if sec >= u.seconds {
			return "+" + sig3(sec/u.seconds) + u.tick
		}
	}
	return "+<1µs"
}

// timeUnits are the units spans are shown in, the largest first: as a
// tick's suffix, and as a duration's name.
var timeUnits = []struct {
	seconds    float64
	tick, name string
}{
	{365.25 * 86400, "y", "y"}, {86400, "d", "d"}, {3600, "h", "h"}, {60, "m", "min"}, {1, "s", "s"},
	{1e-3, "ms", "ms"}, {1e-6, "µs", "µs"},
}
