package sqlstore_test

import (
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/testenv"
)

// TestExportWindowIsAnIndexRange (docs/CONTRACT.md §8.15): the library
// gives updated_at no index, but an export's window is a plain range on
// it, so that the index an operator adds for frequent exports of a large
// table can serve it. On PostgreSQL the test forbids the scan (on a small
// table it would rather scan); SQLite, which keeps no histogram, must
// choose a search of the index itself, a window open at its end included
// (it read a one-sided range as most of the table, and the whole table in
// export order instead).
func TestExportWindowIsAnIndexRange(t *testing.T) {
	const index = "task_session_subagents_updated_at_idx"
	since := time.Date(2026, 8, 12, 23, 10, 0, 500001001, time.UTC)
	for _, d := range []*sqltest.Driver{testenv.SQLite(), testenv.Postgres()} {
		t.Run(d.Name, func(t *testing.T) {
			e := d.Env(t)
			e.Exec(t, "CREATE INDEX "+index+" ON task_session_subagents (updated_at)")
			for _, q := range []report.ExportQuery{{Since: since}, {Since: since, Until: since.Add(time.Hour)}} {
				stmt, args := e.Store.ExportSQL(q)
				var plan []string
				err := e.DB.Transaction(func(tx *gorm.DB) error {
					explain := "EXPLAIN QUERY PLAN "
					if d.Name != "sqlite" {
						explain = "EXPLAIN (COSTS OFF) "
						if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
							return err
						}
					}
					rows, err := tx.Raw(explain+stmt, args...).Rows()
					if err != nil {
						return err
					}
					defer rows.Close()
					cols, _ := rows.Columns()
					for rows.Next() {
						v := make([]any, len(cols))
						for i := range v {
							v[i] = new(any)
						}
						if err := rows.Scan(v...); err != nil {
							return err
						}
						var line []string
						for _, x := range v {
							if s, ok := (*x.(*any)).(string); ok {
								line = append(line, s)
							}
						}
						plan = append(plan, strings.Join(line, " "))
					}
					return rows.Err()
				})
				if err != nil {
					t.Fatal(err)
				}
				text := strings.Join(plan, "\n")
				if !strings.Contains(text, index) || d.Name == "sqlite" && !strings.Contains(text, "SEARCH") {
					t.Errorf("export %+v does not go through %s:\n%s", q, index, text)
				}
			}
		})
	}
}
