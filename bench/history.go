package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
)

// The baselines of the history measures, written by hand as a user would:
// one scan of the messages with the same filter (the literal kind, or a \u
// escape that could spell it; then the kind read from the metadata),
// counting matches,
// and the health check's two set differences with the dialect's own JSON
// functions (no canonical reading, no exact time comparisons).
var (
	bareScan = map[string]string{
		"sqlite": `SELECT count(*) FROM task_session_messages
			WHERE (instr(metadata, 'subagent_task') > 0 OR instr(metadata, '\u') > 0)
			AND json_valid(metadata) AND json_extract(metadata, '$.normalized.kind') = 'subagent_task'`,
		"postgres": `SELECT count(*) FROM task_session_messages
			WHERE (strpos(metadata, 'subagent_task') > 0 OR strpos(metadata, E'\\u') > 0)
			AND subagentctx_metadata_v1(metadata) #>> '{normalized,kind}' = 'subagent_task'`,
	}
	handHealth = map[string]string{
		"sqlite": `WITH m AS MATERIALIZED (SELECT task_session_id, json_extract(metadata, '$.tool_call_id') AS tool_call_id, created_at FROM task_session_messages
				WHERE (instr(metadata, 'subagent_task') > 0 OR instr(metadata, '\u') > 0)
				AND json_valid(metadata) AND json_extract(metadata, '$.normalized.kind') = 'subagent_task')
			SELECT (SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM m WHERE created_at >= ? AND tool_call_id IS NOT NULL
				EXCEPT SELECT task_session_id, tool_call_id FROM task_session_subagents)),
			(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM task_session_subagents WHERE observed_at >= ?
				EXCEPT SELECT task_session_id, tool_call_id FROM m))`,
		"postgres": `WITH m AS MATERIALIZED (SELECT task_session_id, doc ->> 'tool_call_id' AS tool_call_id, created_at
				FROM (SELECT task_session_id, created_at, subagentctx_metadata_v1(metadata) AS doc FROM task_session_messages
					WHERE strpos(metadata, 'subagent_task') > 0 OR strpos(metadata, E'\\u') > 0 OFFSET 0) d
				WHERE doc #>> '{normalized,kind}' = 'subagent_task')
			SELECT (SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM m WHERE created_at >= $1 AND tool_call_id IS NOT NULL
				EXCEPT SELECT task_session_id, tool_call_id FROM task_session_subagents) i),
			(SELECT count(*) FROM (SELECT task_session_id, tool_call_id FROM task_session_subagents WHERE observed_at >= $2
				EXCEPT SELECT task_session_id, tool_call_id FROM m) x)`,
	}
)

func timed(ctx context.Context, s *sqlstore.Store, q string, args ...any) (time.Duration, error) {
	pool, err := s.DB().DB()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	rows, err := pool.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
	}
	rows.Close()
	return time.Since(start), rows.Err()
}

// peakHeap samples the Go heap while fn runs and returns how far its peak
// rose above the heap fn started with, in bytes.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	start := sample[0].Value.Uint64()
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
	return peak - min(peak, start)
}

// benchHistory measures the backfill (against a bare scan) and the health
// check (against the hand-written set differences) over growing stores.
func benchHistory(ctx context.Context, c config, dialect string) ([]result, error) {
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
		r, p, err := measureHistory(ctx, c, dialect, s, n)
		cleanup()
		if err != nil {
			return nil, err
		}
		out, points = append(out, r...), append(points, point{n, p.perMsg, p.peakMiB})
	}
	if len(points) > 1 {
		first, last := points[0], points[len(points)-1]
		growth := last.perMsg / first.perMsg
		flat := last.peakMiB <= first.peakMiB+8
		out = append(out, result{what: "backfill cost growth", dialect: dialect, size: fmt.Sprintf("%d→%d msgs", first.n, last.n),
			library: fmt.Sprintf("%.2f→%.2f µs/msg", first.perMsg, last.perMsg), baseline: "-", ratio: growth,
			target: "per-message cost ≤ 2× (linear)", pass: growth <= 2 && flat,
			note: fmt.Sprintf("Go heap +%.1f→+%.1f MiB at peak: %s", first.peakMiB, last.peakMiB, map[bool]string{true: "flat", false: "GROWS"}[flat])})
	}
	return out, nil
}

type historyPoint struct{ perMsg, peakMiB float64 }

func measureHistory(ctx context.Context, c config, dialect string, s *sqlstore.Store, n int) ([]result, historyPoint, error) {
	bytes, err := seed(ctx, s, n)
	if err != nil {
		return nil, historyPoint{}, err
	}
	size := fmt.Sprintf("%d msgs, %.0f MB", n, float64(bytes)/1e6)
	var lib, bare, hLib, hBare []time.Duration
	var peak uint64
	var inserted int64
	m := backfill.New(s, backfill.WithLogger(slog.New(slog.DiscardHandler)))
	for run := range c.runs {
		if err := s.DB().Exec("DELETE FROM task_session_subagents").Error; err != nil {
			return nil, historyPoint{}, err
		}
		if err := s.DB().Exec("DELETE FROM kandev_meta").Error; err != nil {
			return nil, historyPoint{}, err
		}
		scan := func() error { d, err := timed(ctx, s, bareScan[dialect]); bare = append(bare, d); return err }
		if run%2 == 1 { // alternate which goes first
			if err := scan(); err != nil {
				return nil, historyPoint{}, err
			}
		}
		var res backfill.StepResult
		p := peakHeap(func() { res = m.Backfill(ctx) })
		if res.Status != backfill.Ran {
			return nil, historyPoint{}, fmt.Errorf("backfill %s: %s", res.Status, res.Detail)
		}
		lib, peak, inserted = append(lib, res.Duration), max(peak, p), res.RowsInserted
		if run%2 == 0 {
			if err := scan(); err != nil {
				return nil, historyPoint{}, err
			}
		}
		// The health check of a busy store: the boundary moved before the
		// whole history, as if every message had been recorded live after
		// activation, so both differences cover every message and row.
		capture := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := s.DB().Exec("UPDATE kandev_meta SET value = ? WHERE key = ?", capture.Format(time.RFC3339Nano), core.CaptureSinceKey).Error; err != nil {
			return nil, historyPoint{}, err
		}
		start := time.Now()
		h, err := s.Health(ctx)
		if err != nil {
			return nil, historyPoint{}, err
		}
		hLib = append(hLib, time.Since(start))
		if !h.Ran || h.Shortfall != 0 || h.Excess != 0 {
			return nil, historyPoint{}, fmt.Errorf("health of a backfilled store: %+v, want no shortfall and no excess", h)
		}
		d, err := timed(ctx, s, handHealth[dialect], capture, capture)
		if err != nil {
			return nil, historyPoint{}, err
		}
		hBare = append(hBare, d)
	}
	l, b := median(lib), median(bare)
	pt := historyPoint{perMsg: float64(l.Microseconds()) / float64(n), peakMiB: float64(peak) / (1 << 20)}
	hl, hb := median(hLib), median(hBare)
	return []result{
		{what: "backfill", dialect: dialect, size: size,
			library:  fmt.Sprintf("%v (%.2f µs/msg, %d rows)", l.Round(time.Millisecond), pt.perMsg, inserted),
			baseline: b.Round(time.Millisecond).String() + " (bare scan)", ratio: l.Seconds() / b.Seconds(), target: "≤ 1.50×",
			pass: l.Seconds() <= 1.5*b.Seconds(), note: fmt.Sprintf("Go heap +%.1f MiB at peak", pt.peakMiB)},
		{what: "health check", dialect: dialect, size: size, library: hl.Round(time.Millisecond).String(),
			baseline: hb.Round(time.Millisecond).String() + " (hand-written)", ratio: hl.Seconds() / hb.Seconds(), target: "≤ 1.50×",
			pass: hl.Seconds() <= 1.5*hb.Seconds()},
	}, pt, nil
}
