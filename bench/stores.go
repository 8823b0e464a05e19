package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// store is what both SQL adapters' stores are, with the statements the
// baselines run.
type store interface {
	core.Store
	core.Reader
	backfill.Target
	UpsertStatement(core.Subagent) (string, []any, error)
	HealthStatement(time.Time) (string, []any)
}

// newStore opens a fresh database of the dialect with Kandev-shaped host
// tables and the store in it; cleanup closes and drops it.
func newStore(ctx context.Context, c config, dialect string) (store, func(), error) {
	var db *gorm.DB
	var err error
	var drop func()
	b := make([]byte, 6)
	rand.Read(b)
	name := "bench_" + hex.EncodeToString(b)
	if dialect == "sqlite" {
		path := filepath.Join(c.tmp, name+".db")
		if db, err = sqlite.OpenDB(path); err != nil {
			return nil, nil, err
		}
		drop = func() {}
	} else {
		admin, err := postgres.OpenDB(c.pgAdmin)
		if err != nil {
			return nil, nil, err
		}
		if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
			return nil, nil, err
		}
		u, _ := url.Parse(c.pgAdmin)
		u.Path = "/" + name
		if db, err = postgres.OpenDB(u.String()); err != nil {
			return nil, nil, err
		}
		drop = func() {
			admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			if a, err := admin.DB(); err == nil {
				a.Close()
			}
		}
	}
	cleanup := func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
		drop()
	}
	if err := kandevtest.CreateTables(ctx, db, core.HostTables{}); err != nil {
		cleanup()
		return nil, nil, err
	}
	var s store
	if dialect == "sqlite" {
		s, err = sqlite.New(ctx, db, core.HostTables{})
	} else {
		s, err = postgres.New(ctx, db, core.HostTables{})
	}
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return s, cleanup, nil
}

// seed writes n messages: about 1% subagent tool calls of every provider's
// shape (some duplicated by an earlier message, some malformed), the rest
// other tool calls and chat; each carries about 1 KiB of content, so that
// ≈300k messages make the reference store's 328 MB.
func seed(ctx context.Context, c config, s store, n int) (bytes int64, err error) {
	db := s.DB()
	shapes := []core.Payload{kandevtest.ClaudeAsyncLaunch, kandevtest.ClaudeAsyncLaunch, kandevtest.ClaudeAsyncLaunch,
		kandevtest.ClaudeCompleted, kandevtest.OpenCodeTask, kandevtest.CursorTask, kandevtest.AuggieSubAgent, kandevtest.CodexChild}
	content := strings.Repeat("Kandev message content, tool output and prose. ", 21) // ≈1 KiB
	other := `{"tool_call_id":"call_%d","status":"completed","normalized":{"kind":"execute","execute":{"command":"go test ./...","exit_code":0}}}`
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const perSession = 1000
	batch := make([]kandevtest.Message, 0, 5000)
	for i := range n {
		sess := fmt.Sprintf("s%d", i/perSession)
		if i%perSession == 0 {
			if err := kandevtest.InsertSession(ctx, db, core.HostTables{}, sess, sess+"-task"); err != nil {
				return 0, err
			}
		}
		var meta string
		switch {
		case i%100 == 7:
			p := shapes[(i/100)%len(shapes)]
			meta = kandevtest.Subagent(fmt.Sprintf("toolu_%d", i), "completed", &p).JSON()
		case i%100 == 8: // an earlier message of the same subagent
			meta = kandevtest.Subagent(fmt.Sprintf("toolu_%d", i-1), "in_progress", &core.Payload{SubagentType: "explorer"}).JSON()
		case i%1000 == 9:
			meta = `{"normalized": {"kind": "subagent_task"` // malformed
		case i%3 == 0:
			meta = fmt.Sprintf(other, i)
		default:
			meta = `{}`
		}
		created := t0.Add(time.Duration(i) * time.Second)
		m := meta
		batch = append(batch, kandevtest.Message{ID: fmt.Sprintf("m%09d", i), TaskSessionID: sess, TaskID: sess + "-task",
			TurnID: fmt.Sprintf("%s-t%d", sess, i/20), Content: content, Metadata: &m, CreatedAt: created, UpdatedAt: created})
		bytes += int64(len(content) + len(meta) + 120)
		if len(batch) == cap(batch) || i == n-1 {
			if err := kandevtest.InsertMessages(ctx, db, core.HostTables{}, batch); err != nil {
				return 0, err
			}
			batch = batch[:0]
		}
	}
	if s.Dialect().Name() == "postgres" {
		err = db.Exec("VACUUM ANALYZE").Error
	}
	return bytes, err
}

// bareScan is the backfill's cost floor: one scan of the messages with the
// same JSON filter, counting matches.
func bareScan(ctx context.Context, s store) (time.Duration, error) {
	d := s.Dialect()
	q := `SELECT count(*) FROM (SELECT ` + d.MessageDocument("metadata") + ` AS doc FROM task_session_messages ` + d.Fence() + `) x
		WHERE ` + d.JSONText("x.doc", "normalized", "kind") + ` = 'subagent_task'`
	sqlDB, err := s.DB().DB()
	if err != nil {
		return 0, err
	}
	var n int64
	start := time.Now()
	err = sqlDB.QueryRowContext(ctx, q).Scan(&n)
	return time.Since(start), err
}

// peakHeap samples the Go heap while fn runs and returns its peak in bytes.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return peak
}

// benchStores measures the backfill (against a bare scan) and the health
// check (against a bare run of its own statement) over growing stores.
func benchStores(ctx context.Context, c config, dialect string) ([]result, error) {
	var out []result
	type point struct {
		n       int
		perMsg  float64
		peakMiB float64
	}
	var points []point
	for _, n := range c.stores {
		s, cleanup, err := newStore(ctx, c, dialect)
		if err != nil {
			return nil, err
		}
		bytes, err := seed(ctx, c, s, n)
		if err != nil {
			cleanup()
			return nil, err
		}
		size := fmt.Sprintf("%d msgs, %.0f MB", n, float64(bytes)/1e6)
		var lib, bare, hLib, hBare []time.Duration
		var peak uint64
		var inserted int64
		m, _ := backfill.New(s, backfill.WithLogger(slog.New(slog.DiscardHandler)))
		for run := range c.runs {
			if err := s.DB().Exec("DELETE FROM task_session_subagents").Error; err != nil {
				cleanup()
				return nil, err
			}
			s.DB().Exec("DELETE FROM kandev_meta")
			scan := func() error { d, err := bareScan(ctx, s); bare = append(bare, d); return err }
			if run%2 == 1 {
				if err := scan(); err != nil {
					cleanup()
					return nil, err
				}
			}
			var res backfill.StepResult
			p := peakHeap(func() { res = m.Backfill(ctx) })
			if res.Status != backfill.Ran {
				cleanup()
				return nil, fmt.Errorf("backfill %s: %s", res.Status, res.Detail)
			}
			lib, peak, inserted = append(lib, res.Duration), max(peak, p), res.RowsInserted
			if run%2 == 0 {
				if err := scan(); err != nil {
					cleanup()
					return nil, err
				}
			}
			// Health: the library's call against its own statement run bare.
			start := time.Now()
			if _, err := s.Health(ctx); err != nil {
				cleanup()
				return nil, err
			}
			hLib = append(hLib, time.Since(start))
			a, _ := s.Activation(ctx)
			q, args := s.HealthStatement(*a.CaptureSince.Time)
			sqlDB, _ := s.DB().DB()
			var x, y, z int64
			var last *int64
			start = time.Now()
			if err := sqlDB.QueryRowContext(ctx, rebind(s, q), args...).Scan(&x, &y, &z, &last); err != nil {
				cleanup()
				return nil, err
			}
			hBare = append(hBare, time.Since(start))
		}
		cleanup()
		l, b := median(lib), median(bare)
		peakMiB := float64(peak) / (1 << 20)
		points = append(points, point{n, float64(l.Microseconds()) / float64(n), peakMiB})
		out = append(out, result{what: "backfill", dialect: dialect, size: size,
			library:  fmt.Sprintf("%v (%.2f µs/msg, %d rows)", l.Round(time.Millisecond), float64(l.Microseconds())/float64(n), inserted),
			baseline: b.Round(time.Millisecond).String(), ratio: l.Seconds() / b.Seconds(), target: "≤ 1.50×", pass: l.Seconds() <= 1.5*b.Seconds(),
			note: fmt.Sprintf("peak Go heap %.1f MiB", peakMiB)})
		hl, hb := median(hLib), median(hBare)
		out = append(out, result{what: "health check", dialect: dialect, size: size, library: hl.Round(time.Millisecond).String(),
			baseline: hb.Round(time.Millisecond).String(), ratio: hl.Seconds() / hb.Seconds(), target: "≤ 1.50×", pass: hl.Seconds() <= 1.5*hb.Seconds()})
	}
	if len(points) > 1 {
		first, last := points[0], points[len(points)-1]
		growth := last.perMsg / first.perMsg
		flat := last.peakMiB <= first.peakMiB+8
		out = append(out, result{what: "backfill cost growth", dialect: dialect, size: fmt.Sprintf("%d→%d msgs", first.n, last.n),
			library: fmt.Sprintf("%.2f→%.2f µs/msg", first.perMsg, last.perMsg), baseline: "-", ratio: growth,
			target: "per-message cost ≤ 2× (linear)", pass: growth <= 2,
			note: fmt.Sprintf("peak Go heap %.1f→%.1f MiB: %s", first.peakMiB, last.peakMiB, map[bool]string{true: "flat", false: "GROWS"}[flat])})
		if !flat {
			out[len(out)-1].pass = false
		}
	}
	return out, nil
}

// rebind turns ? placeholders into $n for PostgreSQL's database/sql driver.
func rebind(s store, q string) string {
	if s.Dialect().Name() != "postgres" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
