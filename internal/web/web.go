// Package web is subagentctl's read-only view of a store: an overview
// (activation, health, counts, the sessions with their fan-out and
// coverage) and, per session, each turn's fan-out as an SVG timeline
// beside the rows' details. Pages are rendered on the server with
// html/template (every stored text comes from agents and is escaped as
// text); they carry no script, and a Content-Security-Policy forbids any.
// Templates and the stylesheet are embedded: nothing is fetched.
package web

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

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"sessionURL": func(id string) string { return "/sessions/" + url.PathEscape(id) },
	"when":       when,
	"num":        num,
	"text":       text,
	"since":      since,
}).ParseFS(assets, "assets/*.html"))

// Option configures the view.
type Option func(*server)

// WithSessions sets how many sessions the overview lists, the most
// recently active first (default 200).
func WithSessions(n int) Option { return func(s *server) { s.sessions = n } }

// WithLogger receives the errors a page could not be rendered for.
func WithLogger(l *slog.Logger) Option { return func(s *server) { s.log = l } }

type server struct {
	src      Source
	sessions int
	log      *slog.Logger
}

// New returns the view over src. It only reads: GET (and HEAD) / , GET
// /sessions/{id} and GET /style.css; any other method is refused.
func New(src Source, opts ...Option) http.Handler {
	s := &server{src: src, sessions: 200, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /sessions/{id...}", s.session)
	mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, r *http.Request) {
		css, _ := assets.ReadFile("assets/style.css")
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=300")
		w.Write(css)
	})
	return secure(mux)
}

// secure sets the headers every response carries: no script, no frame,
// no sniffing, no referrer leaving the page.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set(
			"Content-Security-Policy",
			"default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
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
	id := r.PathValue("id")
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
		if err = pages.ExecuteTemplate(&b, name, data); err == nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(b.Bytes())
			return
		}
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	s.log.LogAttrs(
		r.Context(), slog.LevelWarn, "subagentctl serve: page failed", slog.String("path", r.URL.Path),
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

// text is a nullable text: its value, or "—".
func text(p *string) string {
	if p == nil {
		return "—"
	}
	return *p
}

// since is d as the timeline's ticks show it.
func since(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return fmt.Sprintf("+%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("+%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("+%.1fm", d.Minutes())
	}
	return fmt.Sprintf("+%.1fh", d.Hours())
}
