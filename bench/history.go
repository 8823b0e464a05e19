package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/migration"
)

// The baselines of the history measures are written by hand as a user
// would, one file per measure and dialect in baselines/:
//
//   - scan: one scan of the messages with the same filter (the literal
//     kind, or a \u escape that could spell it; then the kind read from
//     the metadata), counting matches;
//   - backfill: the reference plan's one INSERT … SELECT (the seeds), as a
//     user would write it for the contract: the newest message of each
//     pair by a ROW_NUMBER() window (AC-21b), the columns with the
//     dialect's own JSON functions, the rows marked checked at the seam as
//     every row the library writes is, ON CONFLICT DO NOTHING; no canonical
//     reading of odd documents, no merge into live rows, no lock. On
//     PostgreSQL the text is parsed by the same function as the library's
//     (a bare ::jsonb cast aborts on the seeded malformed metadata);
//   - health: the health check's two set differences with the dialect's
//     own JSON functions (no canonical reading, no exact time comparisons).
//
//go:embed baselines/*.sql
var baselines embed.FS

// baseline is the hand-written statement of a measure on a dialect.
func baseline(measure, dialect string) string {
	b, err := baselines.ReadFile("baselines/" + measure + "." + dialect + ".sql")
	if err != nil {
		panic(err) // the files are embedded: a missing one is a build mistake
	}
	return strings.TrimSuffix(strings.TrimSpace(string(b)), ";")
}

// timedExec times one statement that returns no rows.
func timedExec(ctx context.Context, s *sqlstore.Store, q string, args ...any) (time.Duration, error) {
	pool, err := s.DB().DB()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	_, err = pool.ExecContext(ctx, q, args...)
	return time.Since(start), err
}

// sameRows checks that the hand-written backfill wrote the library's rows
// (set aside in bench_aside), every column but the id and updated_at
// compared, the seam's mark included: a baseline that stored other rows
// would be no baseline (one that left its rows unchecked would also pay
// the partial index on them).
func sameRows(ctx context.Context, s *sqlstore.Store) error {
	cols := []string{"seam_checked"}
	for _, c := range storekit.Columns() {
		if c.Name != "id" && c.Name != "updated_at" {
			cols = append(cols, c.Name)
		}
	}
	except := func(a, b string) string {
		list := strings.Join(cols, ", ")
		return "SELECT count(*) FROM (SELECT " + list + " FROM " + a + " EXCEPT SELECT " + list + " FROM " + b + ") x"
	}
	var only [2]int64
	table := "task_session_subagents"
	for i, q := range []string{except(table, "bench_aside"), except("bench_aside", table)} {
		if err := s.DB().WithContext(ctx).Raw(q).Scan(&only[i]).Error; err != nil {
			return err
		}
	}
	if only[0] != 0 || only[1] != 0 {
		return fmt.Errorf("the hand-written backfill's rows are not the library's: %d by hand only, %d the library's only",
			only[0], only[1])
	}
	return nil
}

// handAside runs fn (which writes into the table and empties it) with the
// library's rows set aside and put back after.
func handAside(ctx context.Context, s *sqlstore.Store, fn func() error) error {
	db := s.DB().WithContext(ctx)
	for _, q := range []string{
		"DROP TABLE IF EXISTS bench_aside",
		"CREATE TABLE bench_aside AS SELECT * FROM task_session_subagents",
		"DELETE FROM task_session_subagents",
	} {
		if err := db.Exec(q).Error; err != nil {
			return err
		}
	}
	if err := fn(); err != nil {
		return err
	}
	for _, q := range []string{"INSERT INTO task_session_subagents SELECT * FROM bench_aside", "DROP TABLE bench_aside"} {
		if err := db.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

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
	wg.Add(1)
	go func() {
		defer wg.Done()
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
	}()
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
		out = append(
			out,
			result{What: "backfill cost growth", Dialect: dialect, Size: fmt.Sprintf("%d→%d msgs", first.n, last.n),
				Library: fmt.Sprintf("%.2f→%.2f µs/msg", first.perMsg, last.perMsg), Baseline: "-", Ratio: growth,
				Target: "per-message cost ≤ 2× (linear)", Pass: growth <= 2 && flat,
				Note: fmt.Sprintf(
					"Go heap +%.1f→+%.1f MiB at peak: %s", first.peakMiB, last.peakMiB,
					map[bool]string{true: "flat", false: "GROWS"}[flat],
				)},
		)
	}
	return out, nil
}

type historyPoint struct{ perMsg, peakMiB float64 }

func measureHistory(
	ctx context.Context, c config, dialect string, s *sqlstore.Store, n int,
) ([]result, historyPoint, error) {
	bytes, err := seed(ctx, s, n)
	if err != nil {
		return nil, historyPoint{}, err
	}
	size := fmt.Sprintf("%d msgs, %.0f MB", n, float64(bytes)/1e6)
	var lib, bare, hand, hLib, hBare []time.Duration
	var libCPU, handCPU, hLibCPU, hBareCPU []time.Duration
	meter, err := newCPUMeter(ctx, s, dialect)
	if err != nil {
		return nil, historyPoint{}, err
	}
	var peak uint64
	var inserted int64
	m := migration.New(s, migration.WithLogger(testlog.Discard))
	for run := range c.runs {
		if err := s.DB().Exec("DELETE FROM task_session_subagents").Error; err != nil {
			return nil, historyPoint{}, err
		}
		if err := s.DB().Exec("DELETE FROM kandev_meta").Error; err != nil {
			return nil, historyPoint{}, err
		}
		scan := func() error { d, err := timed(ctx, s, baseline("scan", dialect)); bare = append(bare, d); return err }
		byHand := func() error {
			var d time.Duration
			_, cpu, err := measured(meter, func() (err error) {
				d, err = timedExec(ctx, s, baseline("backfill", dialect), time.Now().UTC())
				return err
			})
			if err == nil && run%2 == 0 { // the library's rows are set aside
				err = sameRows(ctx, s)
			}
			if err == nil {
				err = s.DB().Exec("DELETE FROM task_session_subagents").Error
			}
			hand, handCPU = append(hand, d), append(handCPU, cpu)
			return err
		}
		if run%2 == 1 { // alternate which goes first
			if err := errors.Join(scan(), byHand()); err != nil {
				return nil, historyPoint{}, err
			}
		}
		var res migration.StepResult
		var p uint64
		_, cpu, err := measured(meter, func() error { p = peakHeap(func() { res = m.Backfill(ctx) }); return nil })
		if err != nil {
			return nil, historyPoint{}, err
		}
		libCPU = append(libCPU, cpu)
		if res.Status != migration.Ran {
			return nil, historyPoint{}, fmt.Errorf("backfill %s: %s", res.Status, res.Detail)
		}
		lib, peak, inserted = append(lib, res.Duration), max(peak, p), res.RowsInserted
		if run%2 == 0 {
			// The library's rows stay for the health check below: the
			// hand-written insert runs with them set aside.
			if err := errors.Join(scan(), handAside(ctx, s, byHand)); err != nil {
				return nil, historyPoint{}, err
			}
		}
		// The health check of a busy store: the boundary moved before the
		// whole history, as if every message had been recorded live after
		// activation, so both differences cover every message and row.
		capture := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		err = s.DB().Exec("UPDATE kandev_meta SET value = ? WHERE key = ?",
			capture.Format(time.RFC3339Nano), storekit.CaptureSinceKey).Error
		if err != nil {
			return nil, historyPoint{}, err
		}
		var h report.Health
		wall, cpu, err := measured(meter, func() (err error) { h, err = s.Health(ctx, report.HealthQuery{}); return err })
		if err != nil {
			return nil, historyPoint{}, err
		}
		hLib, hLibCPU = append(hLib, wall), append(hLibCPU, cpu)
		if !h.Ran || h.Shortfall != 0 || h.Excess != 0 {
			return nil, historyPoint{}, fmt.Errorf(
				"health of a backfilled store: %+v, want no shortfall and no excess",
				h,
			)
		}
		var d time.Duration
		_, cpu, err = measured(meter, func() (err error) {
			d, err = timed(ctx, s, baseline("health", dialect), capture, capture)
			return err
		})
		if err != nil {
			return nil, historyPoint{}, err
		}
		hBare, hBareCPU = append(hBare, d), append(hBareCPU, cpu)
	}
	idle, err := idlePass(ctx, c, dialect, size, s)
	if err != nil {
		return nil, historyPoint{}, err
	}
	l, b, hw := median(lib), median(bare), median(hand)
	pt := historyPoint{perMsg: float64(l.Microseconds()) / float64(n), peakMiB: float64(peak) / (1 << 20)}
	hl, hb := median(hLib), median(hBare)
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	// SQLite's pass reads each candidate through a Go function the
	// hand-written statement does without: its target is wider.
	limit := map[bool]float64{true: 1.5, false: 1.2}[dialect == "sqlite"]
	return []result{
		{
			What: "backfill", Dialect: dialect, Size: size,
			Library:  fmt.Sprintf("%v (%.2f µs/msg, %d rows)", ms(l), pt.perMsg, inserted),
			Baseline: ms(hw).String() + " (the reference plan's INSERT … SELECT, by hand)",
			Ratio:    l.Seconds() / hw.Seconds(), CPURatio: cpuRatio(libCPU, handCPU),
			Target: fmt.Sprintf("≤ %.2f×", limit), Pass: l.Seconds() <= limit*hw.Seconds(),
			Note: fmt.Sprintf("floor: one bare scan %v (%.2f×); Go heap +%.1f MiB at peak",
				ms(b), l.Seconds()/b.Seconds(), pt.peakMiB),
		},
		{
			What: "health check", Dialect: dialect, Size: size,
			Library: ms(hl).String(), Baseline: ms(hb).String() + " (hand-written)",
			Ratio: hl.Seconds() / hb.Seconds(), CPURatio: cpuRatio(hLibCPU, hBareCPU),
			Target: "≤ 1.50×", Pass: hl.Seconds() <= 1.5*hb.Seconds(),
		},
		idle,
	}, pt, nil
}

// idlePass times the whole migration pass on a table it has brought up to
// date — its fixed part: the lock, the catalog reads, the keys — beside
// the one read of the meta table a hand-written "already migrated?" check
// would make.
func idlePass(ctx context.Context, c config, dialect, size string, s *sqlstore.Store) (result, error) {
	m := migration.New(s, migration.WithLogger(testlog.Discard))
	if r := m.Run(ctx); r.Failed() { // brings the keys back to where a pass leaves them
		return result{}, fmt.Errorf("the pass: %s", r)
	}
	var lib, hand []time.Duration
	for range 5 * c.runs {
		start := time.Now()
		if r := m.Run(ctx); r.Failed() {
			return result{}, fmt.Errorf("the pass on an up-to-date table: %s", r)
		} else if n := r.Step(migration.StepBackfill).RowsInserted; n != 0 {
			return result{}, fmt.Errorf("the pass on an up-to-date table inserted %d rows", n)
		}
		lib = append(lib, time.Since(start))
		d, err := timed(ctx, s, `SELECT value FROM kandev_meta WHERE key = '`+storekit.CaptureSinceKey+`'`)
		if err != nil {
			return result{}, err
		}
		hand = append(hand, d)
	}
	l, h := median(lib), median(hand)
	return result{
		What: "the pass, table up to date", Dialect: dialect, Size: size,
		Library:  l.Round(10 * time.Microsecond).String(),
		Baseline: h.Round(10*time.Microsecond).String() + " (one read of the meta table)",
		Ratio:    l.Seconds() / h.Seconds(), Target: "≤ 5 ms", Pass: l <= 5*time.Millisecond,
	}, nil
}
