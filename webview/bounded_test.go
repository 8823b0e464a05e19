package webview_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/webview"
)

// wrapped is a source whose every read goes through around: a test's way
// to cut, count or hold the view's reads on any store.
type wrapped struct {
	webview.Source
	around func(ctx context.Context, read func(context.Context) error) error
}

func through[T any](w wrapped, ctx context.Context, read func(context.Context) (T, error)) (v T, err error) {
	err = w.around(ctx, func(ctx context.Context) error { v, err = read(ctx); return err })
	return v, err
}

func (w wrapped) Activation(ctx context.Context) (report.Activation, error) {
	return through(w, ctx, w.Source.Activation)
}
func (w wrapped) Health(ctx context.Context, q report.HealthQuery) (report.Health, error) {
	return through(w, ctx, func(ctx context.Context) (report.Health, error) { return w.Source.Health(ctx, q) })
}
func (w wrapped) Stats(ctx context.Context, q report.StatsQuery) (report.Stats, error) {
	return through(w, ctx, func(ctx context.Context) (report.Stats, error) { return w.Source.Stats(ctx, q) })
}
func (w wrapped) Sessions(ctx context.Context, q report.SessionQuery) ([]report.SessionSummary, error) {
	return through(w, ctx, func(ctx context.Context) ([]report.SessionSummary, error) {
		return w.Source.Sessions(ctx, q)
	})
}
func (w wrapped) Overview(ctx context.Context, q report.OverviewQuery) (report.Overview, error) {
	return through(w, ctx, func(ctx context.Context) (report.Overview, error) { return w.Source.Overview(ctx, q) })
}
func (w wrapped) Timeline(ctx context.Context, q report.TimelineQuery) (report.Timeline, error) {
	return through(w, ctx, func(ctx context.Context) (report.Timeline, error) { return w.Source.Timeline(ctx, q) })
}
func (w wrapped) Failures(ctx context.Context, q report.FailureQuery) ([]core.Subagent, error) {
	return through(w, ctx, func(ctx context.Context) ([]core.Subagent, error) { return w.Source.Failures(ctx, q) })
}
func (w wrapped) SessionTurns(ctx context.Context, q report.TurnQuery) (report.TurnPage, error) {
	return through(w, ctx, func(ctx context.Context) (report.TurnPage, error) {
		return w.Source.SessionTurns(ctx, q)
	})
}

// viewPaths are every page of the view that reads the store.
func viewPaths(sess string) []string {
	return []string{"/?range=all", "/?range=1h", "/?range=24h", "/?range=30d", "/session?id=" + sess,
		"/session/totals?id=" + sess}
}

// eachStore runs fn on the memory store and on every SQL dialect's, each
// holding the demo stream.
func eachStore(t *testing.T, fn func(t *testing.T, s webview.Source, e *sqltest.Env)) {
	t.Run("memory", func(t *testing.T) {
		s := memory.New()
		testenv.Record(t, s, kandevtest.Stream("demo-", t0))
		fn(t, s, nil)
	})
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		e.Session(t, "demo-sess")
		testenv.Record(t, e.Store, kandevtest.Stream("demo-", t0))
		fn(t, e.Store, e)
	})
}

// TestAFailedReadNeverStopsTheHost: every read of every page is cut short
// at a random point of its work (its deadline drawn from 0 to 3 ms, as a
// client that gives up, a statement timeout or a failover cuts it), and
// the request itself is abandoned at random: no goroutine of the view
// panics (a panic there would end this test's process), and every page
// either renders whole or is an error page.
func TestAFailedReadNeverStopsTheHost(t *testing.T) {
	eachStore(t, func(t *testing.T, s webview.Source, _ *sqltest.Env) {
		rnd := rand.New(rand.NewPCG(1, 2))
		var mu sync.Mutex
		draw := func(n int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return time.Duration(rnd.IntN(n)) * time.Microsecond
		}
		cut := wrapped{Source: s, around: func(ctx context.Context, read func(context.Context) error) error {
			ctx, cancel := context.WithTimeout(ctx, draw(3000))
			defer cancel()
			err := read(ctx)
			if err == nil && ctx.Err() != nil {
				// A store that finished its work anyway (memory) fails as a
				// driver does: its answer is the zero value and an error.
				return &core.OpError{Op: "read", Kind: core.ErrUnavailable, Err: ctx.Err()}
			}
			return err
		}}
		h := webview.New(cut, webview.WithClock(clock), webview.WithMaxReads(7))
		failed := 0
		for round := range 20 {
			for _, path := range viewPaths("demo-sess") {
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				if round%4 == 3 {
					ctx, cancel = context.WithTimeout(context.Background(), draw(5000))
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", path, nil).WithContext(ctx))
				left := ctx.Err() != nil
				cancel()
				body := w.Body.String()
				switch {
				case w.Code == http.StatusOK && !left && !strings.Contains(body, "</html>"):
					t.Errorf("%s: 200 with a page cut short: %q", path, body)
				case w.Code == http.StatusServiceUnavailable && !strings.Contains(body, "took too long"):
					t.Errorf("%s: 503 not saying why: %q", path, body)
				case w.Code != http.StatusOK && w.Code != http.StatusServiceUnavailable &&
					w.Code != http.StatusInternalServerError && w.Code != http.StatusNotFound:
					t.Errorf("%s: status %d", path, w.Code)
				}
				if w.Code != http.StatusOK {
					failed++
				}
			}
		}
		if failed == 0 {
			t.Error("no page failed: the reads were never cut")
		}
	})
}

// TestAPanickingReadIsAnErrorPage: a store whose read panics (a bug in a
// host's own store) costs the page, not the process.
func TestAPanickingReadIsAnErrorPage(t *testing.T) {
	s := memory.New()
	testenv.Record(t, s, kandevtest.Stream("demo-", t0))
	boom := wrapped{Source: s, around: func(context.Context, func(context.Context) error) error { panic("boom") }}
	for _, path := range viewPaths("demo-sess") {
		res, body := get(t, webview.New(boom, webview.WithClock(clock)), "GET", path)
		if res.StatusCode != http.StatusInternalServerError || strings.Contains(body, "boom") {
			t.Errorf("%s: %d %q", path, res.StatusCode, body)
		}
	}
}

// TestReadsTakeTurns: with WithMaxReads(1), five overview pages of all
// time opened at once never have more than one read running, on every
// store; each page still renders whole.
func TestReadsTakeTurns(t *testing.T) {
	eachStore(t, func(t *testing.T, s webview.Source, _ *sqltest.Env) {
		var running, most atomic.Int32
		counted := wrapped{Source: s, around: func(ctx context.Context, read func(context.Context) error) error {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(2 * time.Millisecond) // long enough for reads without turns to overlap
			return read(ctx)
		}}
		h := webview.New(counted, webview.WithClock(clock), webview.WithMaxReads(1))
		pages(t, h, 5, "/?range=all", http.StatusOK)
		if m := most.Load(); m != 1 {
			t.Errorf("at most %d reads ran at once: want 1", m)
		}
	})
}

// pages opens n copies of path at once and checks each one's status.
func pages(t *testing.T, h http.Handler, n int, path string, want int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, body := get(t, h, "GET", path)
			if res.StatusCode != want || (want == http.StatusOK && !strings.Contains(body, "</html>")) {
				t.Errorf("%s: %d, want %d: %.200q", path, res.StatusCode, want, body)
			}
		}()
	}
	wg.Wait()
}

// TestBusyIsA503WithRetryAfter: a read that holds its turn past the read
// timeout (a store that does not heed its context) leaves the next page
// without a turn: that page is answered 503 with Retry-After, saying the
// view is busy, within the read timeout.
func TestBusyIsA503WithRetryAfter(t *testing.T) {
	s := memory.New()
	testenv.Record(t, s, kandevtest.Stream("demo-", t0))
	release, holding := make(chan struct{}), make(chan struct{}, 1)
	stuck := wrapped{Source: s, around: func(ctx context.Context, read func(context.Context) error) error {
		select {
		case holding <- struct{}{}: // the first read holds its turn until released
			await.Recv(t, release, "the test's release")
		default:
		}
		return read(ctx)
	}}
	h := webview.New(stuck, webview.WithClock(clock), webview.WithMaxReads(1),
		webview.WithReadTimeout(200*time.Millisecond))
	first := make(chan int)
	go func() { res, _ := get(t, h, "GET", "/session?id=demo-sess"); first <- res.StatusCode }()
	await.Recv(t, holding, "the first page's read")
	start := time.Now()
	res, body := get(t, h, "GET", "/session?id=demo-sess")
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the busy page took %v", waited)
	}
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" ||
		!strings.Contains(body, "busy") {
		t.Errorf("busy page: %d Retry-After %q %q", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	close(release)
	// The read that held the turn outlasted the timeout: its page is
	// answered all the same, with what the store gave (this one ignores its
	// context) or saying it took too long.
	if code := await.Recv(t, first, "the first page"); code != http.StatusOK && code != http.StatusServiceUnavailable {
		t.Errorf("the page that held the turn: %d", code)
	}
}

// TestTooLongOffersShorterRanges: an overview whose reads outlast the read
// timeout is a 503 page that says so and links the shorter ranges, also
// when it has fewer turns than reads (7 for the overview's 8), so that the
// last read finds every turn taken by reads that ran out of time.
func TestTooLongOffersShorterRanges(t *testing.T) {
	s := memory.New()
	slow := wrapped{Source: s, around: func(ctx context.Context, read func(context.Context) error) error {
		await.Recv(t, ctx.Done(), "the read's deadline")
		return &core.OpError{Op: "read", Kind: core.ErrUnavailable, Err: ctx.Err()}
	}}
	h := webview.New(slow, webview.WithClock(clock), webview.WithMaxReads(7),
		webview.WithReadTimeout(50*time.Millisecond))
	res, body := get(t, h, "GET", "/?range=all")
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "took too long") {
		t.Fatalf("%d %q", res.StatusCode, body)
	}
	for _, r := range []string{"30d", "7d", "24h", "1h"} {
		if !strings.Contains(body, `href="/?range=`+r+`"`) {
			t.Errorf("no link to range %s: %s", r, body)
		}
	}
	_, body = get(t, h, "GET", "/?range=24h")
	if strings.Contains(body, "range=30d") || !strings.Contains(body, `href="/?range=1h"`) {
		t.Errorf("24h offers: %s", body)
	}
}

// TestReadsBoundedOnPostgres is the view as a host runs it, on its own
// pool, with PostgreSQL's own account of what runs: while an operator's
// lock holds every read of the table back, five overview pages of all
// time with WithMaxReads(1) never have more than one of the view's
// statements active on the server, and the host's own query on the same
// pool still answers; a page whose reads outlast the read timeout leaves
// no statement running on the server (cancelled there, not only waited
// for) and says so.
func TestReadsBoundedOnPostgres(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		if e.Name == "sqlite" || strings.HasPrefix(e.Name, "citus") {
			t.Skip("pg_stat_activity of one PostgreSQL server: TestReadsTakeTurns counts the reads on every store")
		}
		e.Session(t, "demo-sess")
		testenv.Record(t, e.Store, kandevtest.Stream("demo-", t0))
		view := testenv.PostgresStore(t, e.DSN+"&application_name=view")
		active := func() int {
			var n int
			if err := e.DB.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND
				application_name = 'view' AND state = 'active' AND query NOT LIKE '%hostprobe%'`).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		lock := func() (unlock func()) {
			tx := e.DB.Begin()
			if err := tx.Exec(`LOCK TABLE task_session_subagents IN ACCESS EXCLUSIVE MODE`).Error; err != nil {
				t.Fatal(err)
			}
			return func() { tx.Commit() }
		}
		probe := func() time.Duration {
			start := time.Now()
			var one int
			if err := view.DB().Raw(`SELECT /* hostprobe */ 1`).Scan(&one).Error; err != nil || one != 1 {
				t.Fatalf("host query: %v", err)
			}
			return time.Since(start)
		}
		probe() // the pool's first connection
		idle := probe()

		t.Run("OneHeavyStatementAtATime", func(t *testing.T) {
			h := webview.New(view, webview.WithClock(clock), webview.WithMaxReads(1),
				webview.WithReadTimeout(time.Minute))
			unlock := lock()
			done := make(chan struct{})
			go func() { defer close(done); pages(t, h, 5, "/?range=all", http.StatusOK) }()
			most, busiest := 0, time.Duration(0)
			for range 40 {
				most = max(most, active())
				busiest = max(busiest, probe())
				time.Sleep(10 * time.Millisecond)
			}
			unlock()
			await.Recv(t, done, "the five pages")
			t.Logf("host query: %v idle, at most %v while five pages waited", idle, busiest)
			if most != 1 {
				t.Errorf("%d of the view's statements were active at once: want 1", most)
			}
		})

		t.Run("CancelledOnTheServer", func(t *testing.T) {
			h := webview.New(view, webview.WithClock(clock), webview.WithMaxReads(7),
				webview.WithReadTimeout(300*time.Millisecond))
			unlock := lock()
			defer unlock()
			res, body := get(t, h, "GET", "/?range=all")
			if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "took too long") {
				t.Errorf("%d %q", res.StatusCode, body)
			}
			left := active()
			for deadline := time.Now().Add(5 * time.Second); left > 0 && time.Now().Before(deadline); left = active() {
				time.Sleep(20 * time.Millisecond)
			}
			if left > 0 {
				t.Errorf("%d of the view's statements still run on the server", left)
			}
		})

		t.Run("StatementTimeout1ms", func(t *testing.T) {
			var bulk []core.Frame
			for i := range 200 {
				bulk = append(bulk, core.Frame{TaskSessionID: "demo-sess", TaskID: "t",
					ToolCallID: fmt.Sprintf("bulk-%d", i), ObservedAt: t0.Add(time.Duration(i) * time.Second)})
			}
			testenv.Record(t, e.Store, bulk)
			timed := testenv.PostgresStore(t, e.DSN+"&statement_timeout=1")
			h := webview.New(timed, webview.WithClock(clock))
			unavailable := 0
			for _, path := range viewPaths("demo-sess") {
				res, body := get(t, h, "GET", path)
				switch res.StatusCode {
				case http.StatusServiceUnavailable:
					unavailable++
				case http.StatusOK:
				case http.StatusInternalServerError:
					// pgx can lose track of a statement the
					// timeout cut during PREPARE (42P05 on the next read of
					// the connection: jackc/pgx#2223): an error page.
				default:
					t.Errorf("%s: %d %q", path, res.StatusCode, body)
				}
			}
			if unavailable == 0 {
				t.Error("no page met the 1 ms statement timeout")
			}
		})
	})
}
