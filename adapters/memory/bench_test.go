package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// BenchmarkRecord is Recorder.Record on the memory adapter over a realistic
// stream (target: under 2 µs/op; see docs/performance.md).
func BenchmarkRecord(b *testing.B) {
	frames := kandevtest.Stream("m-", time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC))
	rec, _ := core.NewRecorder(memory.New())
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rec.Record(ctx, frames[i%len(frames)])
	}
}
