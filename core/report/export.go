package report

import (
	"context"
	"iter"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// ExportQuery selects the rows an export streams: those last written
// (updated_at) in [Since, Until) — zero bounds are open — after the key
// After, in ExportKey order.
type ExportQuery struct {
	Since, Until time.Time
	After        *ExportKey
}

// ExportKey is a row's place in an export: its session and id, each
// compared byte by byte, the session first. An export resumes after the
// last key it printed.
type ExportKey struct {
	TaskSessionID string `json:"task_session_id"`
	ID            string `json:"id"`
}

// Validate checks the query, naming what is wrong.
func (q ExportQuery) Validate() error { return validWindow("export", q.Since, q.Until) }

// Exporter streams every row in scope in a stable order, in constant
// memory (docs/CONTRACT.md §3.3): the SQL stores and the memory store
// implement it. The iteration stops at the first error, which it yields.
//
// NextSince is where the window after q must start so that consecutive
// windows miss no committed row (**Decision 8.16**): q's Until, or the
// store's write horizon behind now when that is earlier (a write stamped
// before it may still be committing). Call it before Export: a consumer
// that passes it as the next window's Since misses nothing, and may see a
// row again (keep the one with the later updated_at).
type Exporter interface {
	Export(ctx context.Context, q ExportQuery) iter.Seq2[core.Subagent, error]
	NextSince(ctx context.Context, q ExportQuery) (time.Time, error)
}
