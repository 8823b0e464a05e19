package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"log/slog"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testlog"
)

// keys is a store that remembers the keys it wrote.
type keys struct {
	mu      sync.Mutex
	written map[string]bool
}

func (k *keys) Upsert(context.Context, core.Subagent) error { return nil }
func (k *keys) UpsertBatch(_ context.Context, rows []core.Subagent) ([]error, error) {
	time.Sleep(time.Microsecond) // a write takes a while: Flush has to wait
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range rows {
		k.written[r.ToolCallID] = true
	}
	return make([]error, len(rows)), nil
}
func (k *keys) has(tool string) bool { k.mu.Lock(); defer k.mu.Unlock(); return k.written[tool] }
func (*keys) ListBySession(context.Context, string, core.Page) ([]core.Subagent, error) {
	return nil, nil
}
func (*keys) ListByTurn(context.Context, string, core.Page) ([]core.Subagent, error) { return nil, nil }
func (*keys) DeleteSession(context.Context, string) error                            { return nil }

// TestFlushUnderConcurrency: Flush keeps its promise while other goroutines
// record: everything the caller recorded before it is written when it
// returns (docs/CONTRACT.md §6).
func TestFlushUnderConcurrency(t *testing.T) {
	store := &keys{written: map[string]bool{}}
	rec, _ := core.NewRecorder(store, core.WithWriters(2), core.WithBatch(8), quiet())
	defer rec.Close(context.Background())
	var wg sync.WaitGroup
	var broken atomic.Int64
	for g := range 16 { // the race is a window of nanoseconds: many rounds find it when it is there
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1500 {
				tool := fmt.Sprintf("g%d-%d", g, i)
				rec.Record(context.Background(), frame(tool))
				if err := rec.Flush(context.Background()); err != nil {
					t.Error(err)
					return
				}
				if !store.has(tool) {
					broken.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := broken.Load(); n > 0 {
		t.Errorf("%d of 24000 frames not written when the Flush after them returned", n)
	}
}

// TestMisbehavingStores: a store's panic, or a batch store's wrong number
// of results, fails exactly the frames it concerns: no crash, the rows
// before a panic stay persisted, the counters stay true, and no frame is
// counted twice.
func TestMisbehavingStores(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		store                     core.Store
		persisted, failed, frames int64
	}{
		{"a panic mid-batch (one upsert per row)", storeFunc(func(_ context.Context, r core.Subagent) error {
			if r.ToolCallID == "t2" {
				panic("driver bug")
			}
			return nil
		}), 4, 1, 5},
		{"more results than frames", batchFunc{batch: func(rows []core.Subagent) ([]error, error) {
			return make([]error, len(rows)+1), nil
		}}, 0, 5, 5},
		{"fewer results and no error", batchFunc{batch: func(rows []core.Subagent) ([]error, error) {
			return make([]error, len(rows)-1), nil
		}}, 4, 1, 5},
		{"a panic in a batch store", batchFunc{batch: func([]core.Subagent) ([]error, error) {
			panic("driver bug")
		}}, 0, 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			rec, err := core.NewRecorder(tc.store, core.WithWriters(1), core.WithBatch(int(tc.frames)), quiet(),
				core.WithReady(release))
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.frames {
				rec.Record(context.Background(), frame(fmt.Sprint("t", i)))
			}
			close(release) // one batch of every frame
			if err := rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			v := rec.Counters().Values()
			checkInvariant(t, v)
			if v.Persisted != tc.persisted || v.Failed != tc.failed || v.Pending != 0 {
				t.Errorf("%+v: want %d persisted, %d failed", v, tc.persisted, tc.failed)
			}
		})
	}
}

// TestWriteDeadline: a write that never returns on its own (a silent
// connection) ends at the write timeout, is the database's passing state
// and is retried, so the frame is written once the database answers.
func TestWriteDeadline(t *testing.T) {
	var calls atomic.Int64
	rec, _ := core.NewRecorder(storeFunc(func(ctx context.Context, _ core.Subagent) error {
		if calls.Add(1) <= 2 {
			select { // stuck until the deadline
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(await.Limit):
				return errors.New("no deadline came")
			}
		}
		return nil
	}), core.WithWriteTimeout(20*time.Millisecond), core.WithRetry(time.Millisecond, 2*time.Millisecond), quiet())
	rec.Record(context.Background(), frame("x"))
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := rec.Counters().Values(); v.Persisted != 1 || v.Failed != 0 || calls.Load() != 3 {
		t.Errorf("%+v after %d calls; want persisted on the third", v, calls.Load())
	}
}

// TestCloseBounded: with the database down, Close returns within its drain
// budget, gives up what is queued (counted failed, pending 0), says so
// with the database's error, and logs it once.
func TestCloseBounded(t *testing.T) {
	var logs testlog.Buffer
	down := errors.Join(core.ErrUnavailable, errors.New("connection refused"))
	rec, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error { return down }),
		core.WithDrain(200*time.Millisecond), core.WithRetry(5*time.Millisecond, 10*time.Millisecond),
		core.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	for i := range 20 {
		rec.Record(context.Background(), frame(fmt.Sprint("t", i)))
	}
	start := time.Now()
	err := rec.Close(context.Background())
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v with a budget of 200ms", took)
	}
	if err == nil || !strings.Contains(err.Error(), "20 frames given up") ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Close: %v; want the count and the database's error", err)
	}
	if v := rec.Counters().Values(); v.Failed != 20 || v.Pending != 0 {
		t.Errorf("%+v", v)
	}
	if n := strings.Count(logs.String(), "recorder closed with frames unwritten"); n != 1 ||
		!strings.Contains(logs.String(), "frames=20") {
		t.Errorf("%d closing WARN lines:\n%s", n, logs.String())
	}
}

// TestCloseNeverReady: when the table never became ready, Close waits for
// nothing and says why.
func TestCloseNeverReady(t *testing.T) {
	rec, _ := core.NewRecorder(storeFunc(func(context.Context, core.Subagent) error { return nil }),
		core.WithReady(make(chan struct{})), quiet())
	rec.Record(context.Background(), frame("x"))
	start := time.Now()
	err := rec.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "never became ready") || time.Since(start) > time.Second {
		t.Errorf("Close: %v after %v", err, time.Since(start))
	}
	if v := rec.Counters().Values(); v.Failed != 1 || v.Pending != 0 {
		t.Errorf("%+v", v)
	}
}
