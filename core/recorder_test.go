package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testlog"
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

// batchFunc is a BatchStore.
type batchFunc struct {
	storeFunc
	batch func(rows []core.Subagent) ([]error, error)
}

func (b batchFunc) UpsertBatch(_ context.Context, rows []core.Subagent) ([]error, error) {
	return b.batch(rows)
}

func frame(tool string) core.Frame {
	return core.Frame{TaskSessionID: "sess", TaskID: "task", ExecutionID: "exec", ToolCallID: tool,
		Payload: &core.Payload{SubagentType: "explorer"}}
}

// wait holds a store's write until release closes (an error after
// await.Limit, so a test that forgets to release does not hang).
func wait(release <-chan struct{}) error {
	_, err := await.Within(release, await.Limit)
	return err
}

func quiet() core.RecorderOption {
	return core.WithLogger(testlog.Discard)
}

func checkInvariant(t *testing.T, v core.CounterValues) {
	t.Helper()
	if v.Attempted != v.SkippedNoIdentity+v.Persisted+v.Failed+v.Pending || v.Pending < 0 {
		t.Errorf(
			"AC-26: attempted %d != skipped %d + persisted %d + failed %d + pending %d", v.Attempted, v.SkippedNoIdentity,
			v.Persisted, v.Failed, v.Pending,
		)
	}
}

func flush(t *testing.T, rec *core.Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
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
		t.Errorf("counters = %+v, want %+v (the memory store is written synchronously: no flush)", got, want)
	}
}

// TestWrittenRowsHandedOn: WithWritten sees each written frame's row once,
// after it is persisted, on the memory store and on a queued one; never a
// frame that failed or was skipped; its panic is logged and costs nothing.
func TestWrittenRowsHandedOn(t *testing.T) {
	for _, queued := range []bool{false, true} {
		var mu sync.Mutex
		var seen []string
		var logs testlog.Buffer
		var store core.Store = memory.New()
		if queued {
			store = storeFunc(func(ctx context.Context, r core.Subagent) error {
				if r.ToolCallID == "bad" {
					return errors.New("refused")
				}
				return nil
			})
		}
		rec, err := core.NewRecorder(store, core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
			core.WithWritten(func(r core.Subagent) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, r.ToolCallID)
				if r.ToolCallID == "b" {
					panic("the host's bug")
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, id := range []string{"a", "b", "c"} {
			rec.Record(ctx, frame(id))
		}
		rec.Record(ctx, core.Frame{TaskSessionID: "sess", TaskID: "task"}) // skipped
		if queued {
			rec.Record(ctx, frame("bad"))
		}
		if err := rec.Close(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := strings.Join(seen, ",")
		mu.Unlock()
		if got != "a,b,c" || rec.Counters().Values().Persisted != 3 || !strings.Contains(logs.String(), "the host's bug") {
			t.Errorf("queued %v: handed on %q, counters %+v, log %q", queued, got, rec.Counters().Values(), logs.String())
		}
	}
}

// TestAC27_FailingStoreNeverReachesTheCaller: a store that errors, panics
// or hangs never reaches the caller, who never waits for it.
func TestAC27_FailingStoreNeverReachesTheCaller(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var released atomic.Int32 // hanging store calls that returned
	for _, tc := range []struct {
		name  string
		store storeFunc
		want  string
	}{
		{"error", func(context.Context, core.Subagent) error { return errors.New("disk full") }, "disk full"},
		{"panic", func(context.Context, core.Subagent) error { panic("driver bug") }, "driver bug"},
		{"hangs", func(context.Context, core.Subagent) error {
			defer released.Add(1)
			return wait(release)
		}, "still pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testlog.Buffer
			rec, err := core.NewRecorder(tc.store, core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			rec.Record(context.Background(), frame("toolu_9"))
			// The hanging store returns only once released, at the end:
			// a Record that had waited for it could not have returned yet.
			if released.Load() != 0 {
				t.Errorf("Record returned only after the hanging store did")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			ferr := rec.Flush(ctx)
			v := rec.Counters().Values()
			checkInvariant(t, v)
			if tc.name == "hangs" {
				if ferr == nil || !strings.Contains(ferr.Error(), tc.want) || v.Pending != 1 {
					t.Errorf("hanging store: flush %v, counters %+v; want the frame pending", ferr, v)
				}
				return
			}
			if ferr != nil || v.Failed != 1 || v.Persisted != 0 || v.Pending != 0 {
				t.Errorf("flush %v, counters %+v: want failed 1", ferr, v)
			}
			for _, want := range []string{"level=WARN", "task_session_id=sess", "tool_call_id=toolu_9", tc.want} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("log %q lacks %q", logs.String(), want)
				}
			}
		})
	}
}

// TestFailureLogIsTheHosts: WithFailureLog sets the WARN line of a frame
// given up — its message and its session id's field — so that a host's
// alert keyed on its own wording keeps firing.
func TestFailureLogIsTheHosts(t *testing.T) {
	var logs testlog.Buffer
	rec, err := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error { return errors.New("disk full") }),
		core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		core.WithFailureLog("failed to persist subagent context", "session_id"))
	if err != nil {
		t.Fatal(err)
	}
	rec.Record(context.Background(), frame("toolu_9"))
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`level=WARN msg="failed to persist subagent context"`, "session_id=sess",
		"tool_call_id=toolu_9", "disk full"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}
	if strings.Contains(logs.String(), "task_session_id") {
		t.Errorf("log %q keeps the default field", logs.String())
	}
}

// TestRecordNeverWaits: against a store that hangs and one that is down,
// Record returns at once, and when the queue is full the frame is dropped,
// counted and logged.
func TestRecordNeverWaits(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 10)
	var released atomic.Int32 // store calls that returned
	var logs testlog.Buffer
	rec, _ := core.NewRecorder(
		storeFunc(func(context.Context, core.Subagent) error {
			defer released.Add(1)
			entered <- struct{}{}
			return wait(release)
		}),
		core.WithQueue(
			4,
		),
		core.WithWriters(1),
		core.WithBatch(1),
		core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
	)
	for i := range 10 {
		rec.Record(context.Background(), frame(fmt.Sprint("t", i)))
		if i == 0 {
			await.Recv(t, entered, "the writer in the store") // it holds the first frame there
		}
		checkInvariant(t, rec.Counters().Values())
	}
	// The store hangs until released: Records that had waited for it
	// could not all have returned while it still holds the first frame.
	if n := released.Load(); n != 0 {
		t.Errorf("10 Records returned only after %d store calls did", n)
	}
	close(release)
	flush(t, rec)
	v := rec.Counters().Values()
	// One frame in the writer's hands, four queued: the other five dropped.
	if v.Persisted != 5 || v.Failed != 5 || v.Dropped != 5 || v.Pending != 0 {
		t.Errorf("counters %+v: want 5 persisted, 5 dropped", v)
	}
	if !strings.Contains(logs.String(), "queue of 4 frames or 67108864 bytes is full") {
		t.Errorf("drops not logged: %s", logs.String())
	}
}

// TestRecordWaitingKeepsEveryFrame: through a queue of 4 and a slow
// store, RecordWaiting waits for room instead of dropping (what the
// command line's record and import rely on, §6): every frame is
// persisted, none dropped; with its context ended while the queue is
// full, the frame is counted failed and the error says so; after Close
// it is refused.
func TestRecordWaitingKeepsEveryFrame(t *testing.T) {
	var mu sync.Mutex
	stored := map[string]int{}
	slow := storeFunc(func(_ context.Context, row core.Subagent) error {
		time.Sleep(50 * time.Microsecond)
		mu.Lock()
		stored[row.ToolCallID]++
		mu.Unlock()
		return nil
	})
	rec, _ := core.NewRecorder(slow, core.WithQueue(4), core.WithWriters(2), core.WithBatch(2), quiet())
	const n = 2000
	for i := range n {
		if err := rec.RecordWaiting(context.Background(), frame(fmt.Sprint("t", i))); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	flush(t, rec)
	v := rec.Counters().Values()
	if v.Persisted != n || v.Dropped != 0 || v.Failed != 0 || len(stored) != n {
		t.Errorf("counters %+v, %d distinct rows stored: want all %d persisted, none dropped", v, len(stored), n)
	}
	checkInvariant(t, v)

	release := make(chan struct{})
	held, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error { return wait(release) }),
		core.WithQueue(1), core.WithWriters(1), core.WithBatch(1), quiet())
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var err error
	for i := 0; err == nil && i < 10; i++ { // one in the store, one queued, then it waits
		err = held.RecordWaiting(ctx, frame(fmt.Sprint("h", i)))
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stayed full") {
		t.Errorf("RecordWaiting with its context ended on a full queue: %v", err)
	}
	if v := held.Counters().Values(); v.Failed != 1 || v.Dropped != 0 {
		t.Errorf("after the wait ended: %+v, want the one frame failed, none dropped", v)
	}
	checkInvariant(t, held.Counters().Values())

	closed, _ := core.NewRecorder(memory.New())
	_ = closed.Close(context.Background())
	if err := closed.RecordWaiting(context.Background(), frame("late")); err == nil ||
		closed.Counters().Values().Failed != 1 {
		t.Errorf("RecordWaiting after Close: %v, %+v", err, closed.Counters().Values())
	}
}

// TestRetryThroughOutage: while the store is unavailable the writer keeps
// the frames and retries; when it returns, every frame is stored once, in
// order, and nothing counts failed.
func TestRetryThroughOutage(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	var stored []string
	store := storeFunc(func(_ context.Context, r core.Subagent) error {
		if down.Load() {
			return &core.OpError{Op: "upsert", Kind: core.ErrUnavailable, Err: errors.New("connection refused")}
		}
		mu.Lock()
		defer mu.Unlock()
		stored = append(stored, r.ToolCallID)
		return nil
	})
	rec, _ := core.NewRecorder(store, core.WithRetry(time.Millisecond, 5*time.Millisecond), quiet())
	for i := range 50 {
		rec.Record(context.Background(), frame(fmt.Sprint("t", i)))
	}
	time.Sleep(30 * time.Millisecond)
	if v := rec.Counters().Values(); v.Failed != 0 || v.Pending != 50 {
		t.Errorf("during the outage: %+v, want all pending", v)
	}
	down.Store(false)
	flush(t, rec)
	if v := rec.Counters().Values(); v.Persisted != 50 || v.Failed != 0 {
		t.Errorf("after the outage: %+v", v)
	}
	for i, tool := range stored {
		if tool != fmt.Sprint("t", i) {
			t.Fatalf("frame %d stored as %s: order lost", i, tool)
		}
	}
}

// TestGroupCommit: frames reach the store in batches; one refused frame is
// counted failed without costing the others of its batch.
func TestGroupCommit(t *testing.T) {
	var batches atomic.Int64
	block := make(chan struct{})
	store := batchFunc{batch: func(rows []core.Subagent) ([]error, error) {
		if batches.Add(1) == 1 {
			if err := wait(block); err != nil { // hold the first batch so the rest queue up
				return nil, err
			}
		}
		errs := make([]error, len(rows))
		for i, r := range rows {
			if r.ToolCallID == "bad" {
				errs[i] = &core.OpError{Op: "upsert", Kind: core.ErrConstraint, Err: errors.New("no such session")}
			}
		}
		return errs, nil
	}}
	rec, _ := core.NewRecorder(store, core.WithBatch(64), quiet())
	rec.Record(context.Background(), frame("first"))
	time.Sleep(10 * time.Millisecond)
	for i := range 100 {
		tool := fmt.Sprint("t", i)
		if i == 50 {
			tool = "bad"
		}
		rec.Record(context.Background(), frame(tool))
	}
	close(block)
	flush(t, rec)
	if v := rec.Counters().Values(); v.Persisted != 100 || v.Failed != 1 {
		t.Errorf("counters %+v: want 100 persisted, the bad one failed", v)
	}
	if n := batches.Load(); n > 3 {
		t.Errorf("%d transactions for 101 frames in batches of 64", n)
	}
}

// TestOrderPerKey: with several writers, the frames of one key are applied
// in the order they were recorded.
func TestOrderPerKey(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]int{}
	store := storeFunc(func(_ context.Context, r core.Subagent) error {
		mu.Lock()
		defer mu.Unlock()
		seen[r.ToolCallID] = append(seen[r.ToolCallID], int(*r.TotalTokens))
		return nil
	})
	rec, _ := core.NewRecorder(store, core.WithWriters(4))
	for i := 1; i <= 400; i++ {
		f := frame(fmt.Sprint("k", i%7))
		f.Payload.TotalTokens = int64(i)
		rec.Record(context.Background(), f)
	}
	flush(t, rec)
	for k, order := range seen {
		for i := 1; i < len(order); i++ {
			if order[i] < order[i-1] {
				t.Fatalf("key %s applied out of order: %v", k, order)
			}
		}
	}
}

func TestReadyHoldsWriters(t *testing.T) {
	var writes atomic.Int64
	ready := make(chan struct{})
	rec, _ := core.NewRecorder(
		storeFunc(func(context.Context, core.Subagent) error { writes.Add(1); return nil }),
		core.WithReady(ready),
	)
	rec.Record(context.Background(), frame("x"))
	time.Sleep(20 * time.Millisecond)
	if writes.Load() != 0 || rec.Counters().Values().Pending != 1 {
		t.Fatalf("wrote before ready")
	}
	close(ready)
	flush(t, rec)
	if writes.Load() != 1 {
		t.Errorf("writes after ready: %d", writes.Load())
	}
}

// TestCloseGivesUpAndRefuses: Close past its budget gives up everything
// unwritten, the write a store holds without heeding its context
// included, so pending reaches 0 at once; when that write returns later it
// is not counted a second time; a frame after Close is refused.
func TestCloseGivesUpAndRefuses(t *testing.T) {
	release := make(chan struct{})
	var written atomic.Int64
	rec, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error {
		err := wait(release)
		written.Add(1)
		return err
	}), core.WithWriters(1), core.WithBatch(1), core.WithDrain(50*time.Millisecond), quiet())
	for i := range 3 {
		rec.Record(context.Background(), frame(fmt.Sprint("t", i)))
	}
	err := rec.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "3 frames given up") {
		t.Errorf("Close with a write held past its budget: %v, want 3 frames given up", err)
	}
	rec.Record(context.Background(), frame("late"))
	v := rec.Counters().Values()
	checkInvariant(t, v)
	if v.Failed != 4 || v.Pending != 0 || v.Persisted != 0 {
		t.Errorf("after Close: %+v; want the 3 given up and the late one refused, none pending", v)
	}
	close(release) // the held write returns: it was given up, and is not counted again
	deadline := time.Now().Add(5 * time.Second)
	for written.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	if v := rec.Counters().Values(); v.Persisted != 0 || v.Failed != 4 || v.Pending != 0 {
		t.Errorf("after the held write returned: %+v", v)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestNilRecorderDoesNothing(t *testing.T) {
	var rec *core.Recorder
	rec.Record(context.Background(), frame("x"))
	ctx := context.Background()
	if rec.RecordWaiting(ctx, frame("x")) != nil || rec.Counters() != nil || rec.Flush(ctx) != nil ||
		rec.Close(ctx) != nil {
		t.Error("a nil Recorder must do nothing")
	}
}

func TestRecorderFillsObservedAt(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 987654321, time.UTC)
	got := make(chan core.Subagent, 1)
	rec, _ := core.NewRecorder(storeFunc(func(_ context.Context, r core.Subagent) error { got <- r; return nil }),
		core.WithClock(func() time.Time { return now }))
	rec.Record(context.Background(), frame("x"))
	if r := await.Recv(t, got, "the row"); !r.ObservedAt.Equal(now.Truncate(time.Microsecond)) {
		t.Errorf("observed_at %v, want %v", r.ObservedAt, now.Truncate(time.Microsecond))
	}
}

// TestCountersInvariantAtEveryInstant: while frames are recorded, written
// and failed concurrently, every snapshot satisfies the invariant, and
// pending is 0 once drained.
func TestCountersInvariantAtEveryInstant(t *testing.T) {
	var calls atomic.Int64
	rec, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error {
		if calls.Add(1)%3 == 0 {
			return errors.New("every third write fails")
		}
		return nil
	}), core.WithWriters(2), quiet())
	stop := make(chan struct{})
	var checker sync.WaitGroup
	checker.Add(1)
	go func() {
		defer checker.Done()
		for {
			select {
			case <-stop:
				return
			default:
				checkInvariant(t, rec.Counters().Values())
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				f := frame(fmt.Sprint("t", i, "-", j))
				if i%4 == 0 {
					f.TaskID = ""
				}
				rec.Record(context.Background(), f)
			}
		}()
	}
	wg.Wait()
	flush(t, rec)
	close(stop)
	checker.Wait()
	v := rec.Counters().Values()
	if v.Attempted != 1280 || v.SkippedNoIdentity != 320 || v.Failed+v.Persisted != 960 || v.Pending != 0 {
		t.Errorf("counters %+v", v)
	}
}

// TestProcessCountersBesideTheHostsOwn: a process that publishes its own
// subagent_context_total before ProcessCounters (the reference host's
// map) keeps it, and ProcessCounters neither panics nor replaces it. In a
// process of its own: expvar's names are the process's.
func TestProcessCountersBesideTheHostsOwn(t *testing.T) {
	if os.Getenv("SUBAGENTCTX_TEST_EXPVAR_TAKEN") == "1" {
		own := expvar.NewMap(core.ExpvarName)
		own.Add("persisted", 7)
		c := core.ProcessCounters()
		if c == nil || expvar.Get(core.ExpvarName) != own || own.Get("persisted").(*expvar.Int).Value() != 7 {
			t.Fatal("the host's own map was replaced")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessCountersBesideTheHostsOwn$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SUBAGENTCTX_TEST_EXPVAR_TAKEN=1")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("ProcessCounters beside the host's own %s: %v\n%s", core.ExpvarName, err, out)
	}
}

func TestCountersExpvar(t *testing.T) {
	for range 3 {
		core.NewCounters() // many unpublished sets never collide
	}
	a, b := core.ProcessCounters(), core.ProcessCounters()
	if a != b {
		t.Fatal("ProcessCounters must return one shared set")
	}
	published := expvar.Get(core.ExpvarName)
	if published == nil {
		t.Fatalf("%s not published", core.ExpvarName)
	}
	rec, _ := core.NewRecorder(memory.New(), core.WithCounters(a))
	rec.Record(context.Background(), frame("x"))
	var got map[string]int64
	if err := json.Unmarshal([]byte(published.String()), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{
		"attempted", "persisted", "skipped_no_identity", "anomalous_value", "failed", "unknown_execution", "pending",
		"dropped",
	} {
		if _, ok := got[k]; !ok {
			t.Errorf("counter %s not in the published map %v", k, got)
		}
	}
	if got["persisted"] < 1 {
		t.Errorf("/debug/vars would show %v", got)
	}
}

func TestNewRecorderRejectsBadOptions(t *testing.T) {
	for name, opts := range map[string][]core.RecorderOption{
		"no writers":       {core.WithWriters(0)},
		"tiny queue":       {core.WithWriters(4), core.WithQueue(2)},
		"empty batch":      {core.WithBatch(0)},
		"bad retry":        {core.WithRetry(time.Second, time.Millisecond)},
		"negative writers": {core.WithWriters(-1)},
		"negative drain":   {core.WithDrain(-time.Second)},
		"no write timeout": {core.WithWriteTimeout(0)},
	} {
		_, err := core.NewRecorder(memory.New(), opts...)
		storetest.WantError(t, name, err, nil)
	}
	if _, err := core.NewRecorder(nil); err == nil || !strings.Contains(err.Error(), "store is nil") {
		t.Errorf("nil store: %v", err)
	}
}

// TestWarnFloodSummarised: every failure is counted, but an outage logs at
// most a burst of WARN lines per second, then a summary of the suppressed.
func TestWarnFloodSummarised(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec, _ := core.NewRecorder(
		memory.New(),
		core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		core.WithClock(func() time.Time { return now }),
	)
	bad := frame("x")
	bad.ExecutionID = "e\x00" // refused by every store: ErrInvalidRow
	for range 100 {
		rec.Record(context.Background(), bad)
	}
	if v := rec.Counters().Values(); v.Failed != 100 {
		t.Fatalf("failed = %d, want 100", v.Failed)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 10 {
		t.Errorf("%d WARN lines in one second, want 10", n)
	}
	now = now.Add(time.Second)
	rec.Record(context.Background(), bad)
	if !strings.Contains(logs.String(), "similar_warnings_suppressed=90") {
		t.Errorf("no summary of the 90 suppressed lines:\n%s", logs.String())
	}
}

// observerFunc is an Observer.
type observerFunc func(frames int, took time.Duration, outcome core.BatchOutcome)

func (f observerFunc) Batch(frames int, took time.Duration, outcome core.BatchOutcome) {
	f(frames, took, outcome)
}

// TestObserverSeesEveryAttempt: the Observer is handed each batch attempt
// — retried while the database is unavailable, then written — with its
// frames and a duration; one that panics costs no frame; QueueDepth counts
// the frames a writer has not taken.
func TestObserverSeesEveryAttempt(t *testing.T) {
	var fails atomic.Int32
	fails.Store(2)
	store := batchFunc{batch: func(rows []core.Subagent) ([]error, error) {
		if fails.Add(-1) >= 0 {
			return nil, fmt.Errorf("%w: injected", core.ErrUnavailable)
		}
		return make([]error, len(rows)), nil
	}}
	var mu sync.Mutex
	var seen []string
	obs := observerFunc(func(frames int, took time.Duration, outcome core.BatchOutcome) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%d %s", frames, outcome))
		if took <= 0 {
			t.Errorf("a batch took %v", took)
		}
	})
	rec, _ := core.NewRecorder(store, core.WithObserver(obs), core.WithWriters(1), core.WithBatch(8),
		core.WithRetry(time.Millisecond, time.Millisecond), quiet())
	release := make(chan struct{})
	held, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error { return wait(release) }),
		core.WithWriters(1), core.WithBatch(1), core.WithQueue(8), quiet())
	defer close(release)
	for i := range 3 {
		rec.Record(context.Background(), frame(fmt.Sprint("t", i)))
		held.Record(context.Background(), frame(fmt.Sprint("h", i)))
	}
	flush(t, rec)
	mu.Lock()
	got := strings.Join(seen, ", ")
	mu.Unlock()
	if !strings.HasSuffix(got, "written") || strings.Count(got, "retried") != 2 {
		t.Errorf("attempts %q, want two retried then written", got)
	}
	depth := held.QueueDepth()
	for deadline := time.Now().Add(5 * time.Second); depth != 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		depth = held.QueueDepth()
	}
	if depth != 2 { // one in the store's hands, two waiting
		t.Errorf("QueueDepth %d, want 2", depth)
	}
	panicky, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error { return nil }),
		core.WithObserver(observerFunc(func(int, time.Duration, core.BatchOutcome) { panic("the host's bug") })),
		quiet())
	panicky.Record(context.Background(), frame("p"))
	flush(t, panicky)
	if v := panicky.Counters().Values(); v.Persisted != 1 {
		t.Errorf("a panicking observer cost a frame: %+v", v)
	}
}

// TestManualStart: with WithManualStart the writers wait for Start —
// frames queue meanwhile and are written once it is called — and a
// recorder closed without Start gives its queued frames up, counted
// failed, saying so; Start after Close starts nothing.
func TestManualStart(t *testing.T) {
	ctx := context.Background()
	var written atomic.Int64
	store := storeFunc(func(context.Context, core.Subagent) error { written.Add(1); return nil })
	rec, err := core.NewRecorder(store, core.WithManualStart(), core.WithLogger(testlog.Discard))
	if err != nil {
		t.Fatal(err)
	}
	rec.Record(ctx, frame("toolu_1"))
	time.Sleep(20 * time.Millisecond) // a writer, had one started, would have written by now
	if n := written.Load(); n != 0 {
		t.Fatalf("%d rows written before Start", n)
	}
	rec.Start()
	rec.Start() // idempotent
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if v := rec.Counters().Values(); v.Persisted != 1 || v.Pending != 0 || written.Load() != 1 {
		t.Fatalf("after Start: %+v, %d written", v, written.Load())
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}

	never, err := core.NewRecorder(store, core.WithManualStart(), core.WithLogger(testlog.Discard))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"toolu_1", "toolu_2", "toolu_3"} {
		never.Record(ctx, frame(tool))
	}
	err = never.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "3 frames given up: the recorder was never started") {
		t.Errorf("Close without Start: %v", err)
	}
	if v := never.Counters().Values(); v.Failed != 3 || v.Pending != 0 || v.Persisted != 0 {
		t.Errorf("counters after Close without Start: %+v", v)
	}
	never.Start()
	never.Record(ctx, frame("toolu_4"))
	if v := never.Counters().Values(); v.Failed != 4 || v.Persisted != 0 || written.Load() != 1 {
		t.Errorf("a frame after Close, Start: %+v, %d written", v, written.Load())
	}
}

// TestStateForAlerts: a recorder's state says what an alert needs beside
// the counters — not ready while the table is not (WithReady), not
// reachable while the database is in its passing state, and when a frame
// was last written.
func TestStateForAlerts(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	store := storeFunc(func(context.Context, core.Subagent) error {
		if down.Load() {
			return &core.OpError{Op: "upsert", Kind: core.ErrUnavailable, Err: errors.New("connection refused")}
		}
		return nil
	})
	ready := make(chan struct{})
	rec, _ := core.NewRecorder(store, core.WithReady(ready), core.WithRetry(time.Millisecond, 5*time.Millisecond),
		quiet())
	defer rec.Close(context.Background())
	if st := rec.State(); st.Ready || !st.Reachable || !st.LastWrite.IsZero() {
		t.Errorf("before the table is ready: %+v", st)
	}
	close(ready)
	rec.Record(context.Background(), frame("t1"))
	for deadline := time.Now().Add(await.Limit); rec.State().Reachable; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still reachable while every write meets an unavailable database")
		}
	}
	if st := rec.State(); !st.Ready || !st.LastWrite.IsZero() {
		t.Errorf("during the outage: %+v", st)
	}
	start := time.Now()
	down.Store(false)
	flush(t, rec)
	if st := rec.State(); !st.Ready || !st.Reachable || st.LastWrite.Before(start) || st.LastWrite.After(time.Now()) {
		t.Errorf("after the outage: %+v", st)
	}
}

// TestQueueBoundInBytes: the queue holds at most WithQueueBytes of frames
// whatever their count — frames carrying 64 KiB descriptions fill a queue
// of a megabyte after 16 of them, the rest dropped, counted — and a
// frame is always taken into an empty queue.
func TestQueueBoundInBytes(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	store := storeFunc(func(context.Context, core.Subagent) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		return wait(release)
	})
	rec, err := core.NewRecorder(store, core.WithQueueBytes(1<<20), quiet())
	if err != nil {
		t.Fatal(err)
	}
	desc := strings.Repeat("d", 64<<10-300) // with the row's own share, just under 64 KiB queued
	for i := range 40 {
		f := frame(fmt.Sprint("t", i))
		f.Payload.Description = desc
		rec.Record(context.Background(), f)
		if i == 0 {
			await.Recv(t, entered, "the first frame in the writer's hands")
		}
	}
	close(release)
	flush(t, rec)
	v := rec.Counters().Values()
	// One in the writer's hands, sixteen queued within the megabyte.
	if v.Persisted != 17 || v.Dropped != 23 || v.Failed != 23 {
		t.Errorf("counters %+v: want 17 persisted, 23 dropped", v)
	}
	if _, err := core.NewRecorder(store, core.WithQueueBytes(0)); err == nil ||
		!strings.Contains(err.Error(), "WithQueueBytes(0)") {
		t.Errorf("WithQueueBytes(0): %v", err)
	}
}
