package main

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// benchMemoryRecord is Recorder.Record on the memory adapter, as
// `go test -bench` measures it.
func benchMemoryRecord() result {
	frames := kandevtest.Stream("m-", time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC))
	r := testing.Benchmark(func(b *testing.B) {
		rec, _ := core.NewRecorder(memory.New())
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			rec.Record(ctx, frames[i%len(frames)])
		}
	})
	ns := float64(r.NsPerOp())
	return result{what: "Record (memory)", dialect: "memory", size: fmt.Sprint(r.N, " ops"),
		library: fmt.Sprintf("%.0f ns/op, %d allocs/op", ns, r.AllocsPerOp()), baseline: "-",
		target: "< 2 µs/op", pass: ns < 2000}
}

// streams are the frames each writer records, whole sessions each, in
// order: realistic sequences (out of order, duplicated, 1-8-way fan-outs).
func streams(sessions, writers int) (ids []string, perWriter [][]core.Frame, total int) {
	perWriter = make([][]core.Frame, writers)
	t0 := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	for s := range sessions {
		frames := kandevtest.Stream(fmt.Sprintf("b%d-", s), t0.Add(time.Duration(s)*time.Minute))
		ids = append(ids, frames[0].TaskSessionID)
		perWriter[s%writers] = append(perWriter[s%writers], frames...)
		total += len(frames)
	}
	return ids, perWriter, total
}

// benchUpsert records the same frames through the library's Recorder and
// through a hand-written baseline: core.Normalize, then the identical
// statement as a database/sql prepared statement.
func benchUpsert(ctx context.Context, c config, dialect string, writers int) (result, error) {
	ids, perWriter, total := streams(c.sessions, writers)
	var lib, raw []time.Duration
	for run := range c.runs {
		for _, library := range []bool{run%2 == 0, run%2 != 0} { // alternate which goes first
			db, cleanup, err := newStore(ctx, c, dialect)
			if err != nil {
				return result{}, err
			}
			for _, id := range ids {
				if err := kandevtest.InsertSession(ctx, db.DB(), core.HostTables{}, id, "task"); err != nil {
					return result{}, err
				}
			}
			var d time.Duration
			if library {
				d, err = recordLibrary(ctx, db, perWriter)
				lib = append(lib, d)
			} else {
				d, err = recordRaw(ctx, db, perWriter)
				raw = append(raw, d)
			}
			cleanup()
			if err != nil {
				return result{}, err
			}
		}
	}
	l, r := median(lib), median(raw)
	rate := func(d time.Duration) string { return fmt.Sprintf("%.0f frames/s", float64(total)/d.Seconds()) }
	ratio := l.Seconds() / r.Seconds()
	return result{what: fmt.Sprintf("upsert, %d writer(s)", writers), dialect: dialect, size: fmt.Sprint(total, " frames"),
		library: rate(l), baseline: rate(r), ratio: ratio, target: "≤ 1.30×", pass: ratio <= 1.3}, nil
}

func recordLibrary(ctx context.Context, s store, perWriter [][]core.Frame) (time.Duration, error) {
	rec, err := core.NewRecorder(s)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, frames := range perWriter {
		wg.Go(func() {
			for _, f := range frames {
				rec.Record(ctx, f)
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if v := rec.Counters().Values(); v.Failed > 0 {
		return 0, fmt.Errorf("library: %d failed writes", v.Failed)
	}
	return d, nil
}

func recordRaw(ctx context.Context, s store, perWriter [][]core.Frame) (time.Duration, error) {
	q, _, err := s.UpsertStatement(core.Subagent{})
	if err != nil {
		return 0, err
	}
	sqlDB, err := s.DB().DB()
	if err != nil {
		return 0, err
	}
	stmt, err := sqlDB.PrepareContext(ctx, q)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(perWriter))
	for _, frames := range perWriter {
		wg.Go(func() { errs <- rawWrites(ctx, stmt, frames) })
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return d, nil
}

func rawWrites(ctx context.Context, stmt *sql.Stmt, frames []core.Frame) error {
	for _, f := range frames {
		row, v := core.Normalize(f)
		if v.NoIdentity {
			continue
		}
		row.ID, row.UpdatedAt = uuid.NewString(), time.Now()
		if _, err := stmt.ExecContext(ctx, sqlstore.UpsertArgs(row)...); err != nil {
			return err
		}
	}
	return nil
}
