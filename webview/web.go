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
package webview

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/fanout"
)

// Source is what the view reads: the rows, and the read side.
type Source interface {
	core.Store
	core.Reader
}

//go:embed assets
var assets embed.FS

// pages are the templates; each handler binds url to its prefix.
var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"url":        func(string) string { return "" },
	"sessionURL": func(string) string { return "" },
	"when":       when,
	"num":        num,
	"human":      human,
	"text":       text,
}).ParseFS(assets, "assets/*.html"))

// Option configures the view.
type Option func(*server)

// WithSessions sets how many sessions the overview lists, the most
// recently active first (default 200).
func WithSessions(n int) Option { return func(s *server) { s.sessions = n } }

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

// WithFrameAncestors lets the listed sources frame the pages (CSP
// frame-ancestors, "'self'" or an origin), for a host that shows the view
// inside its own admin console. Default: no framing at all.
func WithFrameAncestors(sources ...string) Option {
	return func(s *server) { s.frameAncestors = sources }
}

type server struct {
	src            Source
	sessions       int
	log            *slog.Logger
	prefix         string
	frameAncestors []string
	pages          *template.Template
}

// New returns the view over src. It only reads: GET (and HEAD) of the
// overview (prefix/), a session (prefix/session?id=…, so that any id,
// ".." and "/" included, opens) and the stylesheet (prefix/style.css);
// any other method is refused (405) and any other path is 404.
func New(src Source, opts ...Option) http.Handler {
	s := &server{src: src, sessions: 200, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	s.pages = template.Must(pages.Clone()).Funcs(template.FuncMap{
		"url":        func(path string) string { return s.prefix + path },
		"sessionURL": func(id string) string { return s.prefix + "/session?id=" + url.QueryEscape(id) },
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+s.prefix+"/{$}", s.overview)
	mux.HandleFunc("GET "+s.prefix+"/session", s.session)
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
	csp := "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; " +
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
	Activation core.Activation
	Health     core.Health
	Stats      core.Stats
	Sessions   []core.SessionSummary
	Limit      int
	Generated  time.Time
}

func (s *server) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := overviewPage{Limit: s.sessions, Generated: time.Now().UTC()}
	var err error
	if p.Health, err = s.src.Health(ctx, core.HealthQuery{}); err == nil {
		if p.Stats, err = s.src.Stats(ctx, core.StatsQuery{}); err == nil {
			p.Activation = p.Stats.Activation
			p.Sessions, err = s.src.Sessions(ctx, s.sessions)
		}
	}
	s.render(w, r, "overview.html", p, err)
}

type sessionPage struct {
	ID        string
	Stats     core.Stats
	Coverage  core.SessionCoverage
	Turns     []turnView
	Generated time.Time
}

func (s *server) session(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.URL.Query().Get("id")
	p := sessionPage{ID: id, Generated: time.Now().UTC()}
	rows, err := s.src.ListBySession(ctx, id, core.Page{})
	if err == nil && len(rows) == 0 {
		http.Error(w, "no subagent on record for this session", http.StatusNotFound)
		return
	}
	if err == nil {
		p.Stats, err = s.src.Stats(ctx, core.StatsQuery{TaskSessionID: id})
	}
	if err == nil {
		if len(p.Stats.Sessions) == 1 {
			p.Coverage = p.Stats.Sessions[0]
		}
		for i, t := range fanout.Build(rows) {
			p.Turns = append(p.Turns, layout(t, i))
		}
	}
	s.render(w, r, "session.html", p, err)
}

// render writes a page, or a plain error without the store's details
// (which may name the database): those go to the log.
func (s *server) render(w http.ResponseWriter, r *http.Request, name string, data any, err error) {
	if err == nil {
		var b bytes.Buffer
		if err = s.pages.ExecuteTemplate(&b, name, data); err == nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(b.Bytes())
			return
		}
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	s.log.LogAttrs(
		r.Context(), slog.LevelWarn, "subagentctx: webview: page failed", slog.String("path", r.URL.Path),
		slog.Any("error", err),
	)
	http.Error(w, "the store could not be read; see the server's log", http.StatusInternalServerError)
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
	units := []struct {
		size float64
		name string
	}{{365.25 * 86400, "y"}, {86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}}
	switch {
	case sec == 0:
		return "0"
	case sec < 1e-6:
		return "+<1µs"
	}
	for _, u := range units {
		if sec >= u.size {
			return "+" + sig3(sec/u.size) + u.name
		}
	}
	return "+<1µs"
}
