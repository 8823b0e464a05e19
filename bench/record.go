package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// fakeStore is a store that does I/O badly: it hangs, or it is down.
type fakeStore struct{ upsert func() error }

func (f fakeStore) Upsert(context.Context, core.Subagent) error { return f.upsert() }
func (fakeStore) ListBySession(context.Context, string, core.Page) ([]core.Subagent, error) {
	return nil, nil
}
func (fakeStore) ListByTurn(context.Context, string, core.Page) ([]core.Subagent, error) {
	return nil, nil
}

// benchRecord measures Record on the caller's goroutine: on the memory
// store (written synchronously), and against a store that hangs and one
// that is down (the caller must not notice either).
func benchRecord(c config) []result {
	frames := kandevtest.Stream("m-", time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC))
	r := testing.Benchmark(func(b *testing.B) {
		rec, _ := core.NewRecorder(memory.New())
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			rec.Record(ctx, frames[i%len(frames)])
		}
	})
	ns := float64(r.NsPerOp())
	out := []result{{What: "Record (memory, synchronous)", Dialect: "memory", Size: fmt.Sprint(r.N, " ops"),
		Library: fmt.Sprintf("%.0f ns/op, %d allocs/op", ns, r.AllocsPerOp()), Baseline: "-",
		Target: "< 2 µs/op", Pass: ns < 2000}}
	hang := make(chan struct{})
	defer close(hang)
	for _, s := range []struct {
		name  string
		store core.Store
	}{
		{"hangs", fakeStore{func() error { <-hang; return nil }}},
		{"is down", fakeStore{func() error {
			return &core.OpError{Op: "upsert", Kind: core.ErrUnavailable, Err: errors.New("connection refused")}
		}}},
	} {
		out = append(out, recordLatency(c, s.name, s.store, frames))
	}
	return out
}

// recordLatency times every Record call against store, past the point
// where the queue is full, and checks that the heap stops growing there.
func recordLatency(c config, name string, store core.Store, frames []core.Frame) result {
	n := 400_000
	if c.tiny {
		n = 20_000
	}
	rec, _ := core.NewRecorder(store, core.WithQueue(n/4), core.WithLogger(testlog.Discard))
	ctx := context.Background()
	lat := make([]time.Duration, n)
	var heapAtFull, heapEnd uint64
	var ms runtime.MemStats
	allocs := testing.AllocsPerRun(1000, func() { rec.Record(ctx, frames[3]) })
	for i := range n {
		f := frames[i%len(frames)]
		start := time.Now()
		rec.Record(ctx, f)
		lat[i] = time.Since(start)
		if i == n/2 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heapAtFull = ms.HeapAlloc
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapEnd = ms.HeapAlloc
	slices.Sort(lat)
	p50, p99 := lat[n/2], lat[n*99/100]
	growth := float64(heapEnd) - float64(heapAtFull)
	v := rec.Counters().Values()
	// Give up what is queued, so that the measures after this one start
	// from a clean heap.
	stop, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	rec.Close(stop)
	cancel()
	return result{What: "Record, store " + name, Dialect: "-", Size: fmt.Sprintf("%d calls, queue %d", n, n/4),
		Library:  fmt.Sprintf("p50 %v, p99 %v, %.0f allocs/op", p50, p99, allocs),
		Baseline: "-", Target: "p50 < 1 µs, p99 < 10 µs, heap flat once full",
		Pass: p50 < time.Microsecond && p99 < 10*time.Microsecond && growth < 1<<20,
		Note: fmt.Sprintf("heap %+.1f MiB while full; %d dropped, %d pending", growth/(1<<20), v.Dropped, v.Pending)}
}
