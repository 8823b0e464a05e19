package sqlstore

import (
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// What the package's external tests (the golden statements, the Citus
// plans) read of its statements; hosts never need them.

func (s *Store) WaveSQL(n int) (string, error)     { return s.waveSQL(n) }
func (s *Store) SchemaSQL(meta string) []string    { return s.schemaStatements(false, meta) }
func (s *Store) ShardedSchemaSQL() []string        { return s.schemaStatements(true, DefaultMetaTable) }
func (s *Store) Upserting() sqldialect.UpsertForm  { return s.form }
func (s *Store) LeanUpsert() sqldialect.UpsertForm { return s.lean }
func (s *Store) UpsertArgs(row *core.Subagent) []any {
	return upsertArgs(&s.form, storekit.Columns(), row)
}
func Args(row *core.Subagent) []any { return args(row, storekit.Columns()) }

func (s *Store) HealthSQL(since time.Time, distributed, whole bool) []struct {
	SQL  string
	Args []any
} {
	var out []struct {
		SQL  string
		Args []any
	}
	for _, st := range s.healthStatements(since, report.DefaultHealthPairs, distributed, whole) {
		out = append(out, struct {
			SQL  string
			Args []any
		}{st.SQL, st.Args})
	}
	return out
}
func (s *Store) ListSQL(column, value string, page core.Page) (string, []any) {
	return s.listStatement(column, value, page)
}
func (s *Store) StatsSQL(where string) string  { return s.statsStatement(where) }
func (s *Store) FanOutSQL(where string) string { return s.fanOutStatement(where) }
func (s *Store) SessionsSQL(q report.SessionQuery) (string, []any) {
	return s.sessionsStatement(q)
}
func (s *Store) OverviewSQL(q report.OverviewQuery) (string, []any) { return s.overviewStatement(q) }
func (s *Store) OverviewGroupsSQL(q report.OverviewQuery) (string, []any) {
	return s.overviewGroupsStatement(q)
}
func (s *Store) OverviewHistogramSQL(q report.OverviewQuery, dim string, values []*string) (string, []any) {
	return s.overviewHistogramStatement(q, dim, values)
}
func (s *Store) OverviewBucketSQL(q report.OverviewQuery, dim, value string, bucket int64) (string, []any) {
	return s.overviewBucketStatement(q, dim, []rankedBucket{{value: groupKey{value: value}, b: bucket}, {
		value: groupKey{null: true}, b: bucket}})
}
func (s *Store) TimelineSQL(q report.TimelineQuery) (string, []any) { return s.timelineStatement(q) }
func (s *Store) FailuresSQL(q report.FailureQuery) (string, []any)  { return s.failuresStatement(q) }
func (s *Store) StaleSQL(q report.StaleQuery) (string, []any)       { return s.staleStatement(q) }
func (s *Store) ExportSQL(q report.ExportQuery) (string, []any)     { return s.exportStatement(q) }
func (s *Store) CoverageCountsSQL(bound time.Time) (string, []any) {
	return s.coverageCountsStatement(bound, true)
}
func (s *Store) FirstActivitySQL(where string, before time.Time) (string, string) {
	rows, messages, _, _ := s.firstActivityStatements(where, before)
	return rows, messages
}
func (s *Store) RepairSQL() (string, string)                   { return s.repairStatements(nil, nil) }
func (s *Store) MessagesSQL() string                           { return s.d.SubagentMessages(s.tables, "") }
func (s *Store) Form(distributed bool) sqldialect.BackfillForm { return s.d.BackfillForm(distributed) }

// SeamSQL is the seam check's statements in the order they run.
func (s *Store) SeamSQL() []string {
	q := s.seamStatements()
	out := []string{q.probe, q.merge, q.remove, q.mark}
	if f := s.seamFunction; f != nil {
		out = append(out, "-- where the table's owner made it, in the place of the three above\n"+f.object.Create, f.call)
	}
	return out
}

// BackfillSQL is the backfill's statements in the order they run.
func (s *Store) BackfillSQL(distributed bool) []string {
	st := s.backfillStatements(distributed)
	var out []string
	for _, q := range []string{st.Drop, st.Stage, st.Single, st.Through, st.Merge, st.Insert, st.Drop} {
		if q != "" {
			out = append(out, q)
		}
	}
	return out
}

// BackfillParts are the statements of a sharded backfill, by name.
func (s *Store) BackfillParts() map[string]string {
	st := s.backfillStatements(true)
	return map[string]string{"through": st.Through, "merge": st.Merge, "insert": st.Insert}
}
func (s *Store) TurnStartsSQL(session string, from *core.Cursor, backwards bool, limit int) (string, []any) {
	return s.turnStartsStatement(session, from, backwards, limit)
}
func (s *Store) TurnRowsSQL(session string, turns ...string) (string, []any) {
	var starts []turnStart
	for _, t := range turns {
		starts = append(starts, turnStart{turn: &t})
	}
	return s.turnRowsStatement(session, append(starts, turnStart{}))
}

const DurationBucket = durationBucket

func BucketBounds(b int64) (lo, hi int64) { return bucketBounds(b) }
