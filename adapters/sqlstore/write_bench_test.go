package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// BenchmarkWriteOneRow: one row written alone (Store.Upsert) beside the
// same row written as a batch of one (Store.UpsertBatch, a transaction
// around its statements), each a new invocation under an execution id,
// on SQLite and PostgreSQL: the write path writes a single row alone
// where the figures say that is cheaper (docs/performance.md). On
// PostgreSQL such a row may absorb history, so Upsert writes it as a
// batch of one already: the two are the same path there.
func BenchmarkWriteOneRow(b *testing.B) {
	for _, d := range []*sqltest.Driver{testenv.SQLite(), testenv.Postgres()} {
		for _, way := range []string{"alone", "batch of one"} {
			b.Run(d.Name+"/"+way, func(b *testing.B) {
				e := d.Env(b)
				ctx := context.Background()
				if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, "s", "t"); err != nil {
					b.Fatal(err)
				}
				at := time.Now()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ExecutionID: "e1",
						ToolCallID: fmt.Sprint("toolu_", i), ToolStatus: "in_progress", ObservedAt: at})
					var err error
					if way == "alone" {
						err = e.Store.Upsert(ctx, row)
					} else {
						var rowErrs []error
						rowErrs, err = e.Store.UpsertBatch(ctx, []core.Subagent{row})
						err = errors.Join(append(rowErrs, err)...)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
