package core_test

import (
	"bytes"
	"context"
	"errors"
	"expvar"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
)

// storeFunc is a Store whose Upsert is a function; listing is not used here.
type storeFunc func(ctx context.Context, row core.Subagent) error

func (f storeFunc) Upsert(ctx context.Context, row core.Subagent) error { return f(ctx, row) }
func (storeFunc) ListBySession(context.Context, string, core.Page) ([]core.Subagent, error) {
	return nil, nil
}
func (storeFunc) ListByTurn(context.Context, string, core.Page) ([]core.Subagent, error) {
	return nil, nil
}

func frame(tool string) core.Frame {
	return core.Frame{TaskSessionID: "sess", TaskID: "task", ExecutionID: "exec", ToolCallID: tool,
		Payload: &core.Payload{SubagentType: "explorer"}}
}

func checkInvariant(t *testing.T, v core.CounterValues) {
	t.Helper()
	if v.Attempted != v.SkippedNoIdentity+v.Persisted+v.Failed {
		t.Errorf("AC-26: attempted %d != skipped %d + persisted %d + failed %d", v.Attempted, v.SkippedNoIdentity, v.Persisted, v.Failed)
	}
}

func TestAC26_CountersOnHappyAndSkippedPaths(t *testing.T) {
	rec, err := core.NewRecorder(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec.Record(ctx, frame("a"))                                         // persisted
	rec.Record(ctx, core.Frame{TaskSessionID: "sess", TaskID: "task"})  // skipped: no tool call id
	rec.Record(ctx, core.Frame{TaskSessionID: "sess", ToolCallID: "b"}) // skipped: no task id
	noExec := frame("c")
	noExec.ExecutionID = ""
	rec.Record(ctx, noExec) // persisted, unknown_execution
	neg := frame("d")
	neg.Payload.TotalTokens, neg.Payload.DurationMs = -1, -1
	rec.Record(ctx, neg) // persisted, anomalous once
	want := core.CounterValues{Attempted: 5, Persisted: 3, SkippedNoIdentity: 2, AnomalousValue: 1, UnknownExecution: 1}
	if got := rec.Counters().Values(); got != want {
		t.Errorf("counters = %+v, want %+v", got, want)
	}
	checkInvariant(t, rec.Counters().Values())
}

func TestAC27_FailingStoreNeverReachesTheCaller(t *testing.T) {
	tests := []struct {
		name  string
		store storeFunc
		want  string
	}{
		{"error", func(context.Context, core.Subagent) error { return errors.New("disk full") }, "disk full"},
		{"panic", func(context.Context, core.Subagent) error { panic("driver bug") }, "driver bug"},
		{"blocks past the deadline", func(ctx context.Context, _ core.Subagent) error { select {} }, "context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec, err := core.NewRecorder(tc.store, core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
				core.WithTimeout(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rec.Record(context.Background(), frame("toolu_9"))
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Record blocked for %v", d)
			}
			v := rec.Counters().Values()
			if v.Failed != 1 || v.Persisted != 0 {
				t.Errorf("counters %+v: want failed 1", v)
			}
			checkInvariant(t, v)
			line := logs.String()
			for _, want := range []string{"level=WARN", "task_session_id=sess", "tool_call_id=toolu_9", tc.want} {
				if !strings.Contains(line, want) {
					t.Errorf("log %q lacks %q", line, want)
				}
			}
		})
	}
}

func TestRecordHonoursCallerContext(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	rec, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error { <-block; return nil }),
		core.WithTimeout(0), core.WithLogger(slog.New(slog.DiscardHandler)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	rec.Record(ctx, frame("x"))
	if v := rec.Counters().Values(); v.Failed != 1 {
		t.Errorf("counters %+v: want failed 1", v)
	}
}

func TestRecorderFillsObservedAtAndUpdatedAt(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 987654321, time.UTC)
	var got core.Subagent
	rec, _ := core.NewRecorder(storeFunc(func(_ context.Context, r core.Subagent) error { got = r; return nil }),
		core.WithClock(func() time.Time { return now }))
	rec.Record(context.Background(), frame("x"))
	want := now.Truncate(time.Microsecond)
	if !got.ObservedAt.Equal(want) || !got.UpdatedAt.Equal(want) {
		t.Errorf("observed_at %v updated_at %v, want %v", got.ObservedAt, got.UpdatedAt, want)
	}
}

func TestCountersInvariantUnderConcurrency(t *testing.T) {
	var n sync.Mutex
	calls := 0
	rec, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error {
		n.Lock()
		defer n.Unlock()
		calls++
		if calls%3 == 0 {
			return errors.New("every third write fails")
		}
		return nil
	}), core.WithLogger(slog.New(slog.DiscardHandler)))
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			f := frame("t")
			if i%4 == 0 {
				f.TaskID = ""
			}
			rec.Record(context.Background(), f)
		})
	}
	wg.Wait()
	v := rec.Counters().Values()
	if v.Attempted != 64 || v.SkippedNoIdentity != 16 || v.Failed != 16 || v.Persisted != 32 {
		t.Errorf("counters %+v", v)
	}
	checkInvariant(t, v)
}

func TestCountersExpvar(t *testing.T) {
	// Many unpublished sets never collide.
	for range 3 {
		core.NewCounters()
	}
	a, b := core.ProcessCounters(), core.ProcessCounters()
	if a != b {
		t.Fatal("ProcessCounters must return one shared set")
	}
	published, ok := expvar.Get(core.ExpvarName).(*expvar.Map)
	if !ok || published != a.Map() {
		t.Fatalf("%s not published as the process counters' map", core.ExpvarName)
	}
	rec, _ := core.NewRecorder(memory.New(), core.WithCounters(a))
	rec.Record(context.Background(), frame("x"))
	if !strings.Contains(published.String(), `"persisted": 1`) {
		t.Errorf("/debug/vars would show %s", published.String())
	}
	for _, k := range []string{"attempted", "persisted", "skipped_no_identity", "anomalous_value", "failed", "unknown_execution"} {
		if published.Get(k) == nil {
			t.Errorf("counter %s not in the published map", k)
		}
	}
}

func TestNewRecorderRejectsNilStore(t *testing.T) {
	if _, err := core.NewRecorder(nil); err == nil || !strings.Contains(err.Error(), "store is nil") {
		t.Errorf("err = %v", err)
	}
}

// TestWarnFloodSummarised: every failure is counted, but an outage logs at
// most a burst of WARN lines per second, then a summary of the suppressed.
func TestWarnFloodSummarised(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error { return errors.New("connection refused") }),
		core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), core.WithClock(func() time.Time { return now }))
	for range 100 {
		rec.Record(context.Background(), frame("x"))
	}
	if v := rec.Counters().Values(); v.Failed != 100 {
		t.Fatalf("failed = %d, want 100", v.Failed)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 10 {
		t.Errorf("%d WARN lines in one second, want 10", n)
	}
	now = now.Add(time.Second)
	rec.Record(context.Background(), frame("x"))
	if !strings.Contains(logs.String(), "similar_warnings_suppressed=90") {
		t.Errorf("no summary of the 90 suppressed lines:\n%s", logs.String())
	}
}
