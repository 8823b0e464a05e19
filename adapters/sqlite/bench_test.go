package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/sqlstore"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// BenchmarkUpsert: the store alone, the Recorder over it (with and without
// its timeout), and the raw prepared statement, on one SQLite file. It is
// how the Recorder's per-write overhead was found and removed (README,
// Design notes).
func BenchmarkUpsert(b *testing.B) {
	frames := kandevtest.Stream("b-", time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC))
	ctx := context.Background()
	setup := func(b *testing.B) *sqlite.Store {
		s, db := open(b)
		kandevtest.InsertSession(ctx, db, core.HostTables{}, frames[0].TaskSessionID, "t")
		return s
	}
	b.Run("store", func(b *testing.B) {
		s := setup(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			row, v := core.Normalize(frames[i%len(frames)])
			if !v.NoIdentity {
				s.Upsert(ctx, row)
			}
		}
	})
	b.Run("recorder", func(b *testing.B) {
		s := setup(b)
		rec, _ := core.NewRecorder(s)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			rec.Record(ctx, frames[i%len(frames)])
		}
	})
	b.Run("recorder-no-timeout", func(b *testing.B) {
		s := setup(b)
		rec, _ := core.NewRecorder(s, core.WithTimeout(0))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			rec.Record(ctx, frames[i%len(frames)])
		}
	})
	b.Run("raw", func(b *testing.B) {
		s := setup(b)
		q, _, _ := s.UpsertStatement(core.Subagent{})
		sqlDB, _ := s.DB().DB()
		stmt, _ := sqlDB.Prepare(q)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			row, v := core.Normalize(frames[i%len(frames)])
			if !v.NoIdentity {
				row.ID, row.UpdatedAt = uuid.NewString(), time.Now()
				stmt.Exec(sqlstore.UpsertArgs(row)...)
			}
		}
	})
}
