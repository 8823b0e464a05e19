package core

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ExpvarName is the name under which the process's counters are published
// (AC-26), so /debug/vars shows them.
const ExpvarName = "subagent_context_total"

// Counter names, the keys of the published map (AC-26).
const (
	CounterAttempted         = "attempted"
	CounterPersisted         = "persisted"
	CounterSkippedNoIdentity = "skipped_no_identity"
	CounterAnomalousValue    = "anomalous_value"
	CounterFailed            = "failed"
	CounterUnknownExecution  = "unknown_execution"
)

// Counters are the recorder's six counters in one expvar.Map. The invariant
// attempted = skipped_no_identity + persisted + failed holds once every
// Record call has returned; anomalous_value and unknown_execution qualify
// frames already counted there.
type Counters struct {
	m                                                         *expvar.Map
	attempted, persisted, skipped, anomalous, failed, unknown *expvar.Int
}

// NewCounters returns counters in a fresh, unpublished expvar.Map: as many
// as you like, in tests too, without a duplicate-name panic.
func NewCounters() *Counters {
	return wrapMap(new(expvar.Map).Init())
}

var processCounters = sync.OnceValue(func() *Counters {
	if v, ok := expvar.Get(ExpvarName).(*expvar.Map); ok {
		return wrapMap(v) // published by someone else: share it
	}
	c := NewCounters()
	expvar.Publish(ExpvarName, c.m)
	return c
})

// ProcessCounters returns the process's counters, published on expvar as
// subagent_context_total the first time it is called and shared after that.
func ProcessCounters() *Counters { return processCounters() }

func wrapMap(m *expvar.Map) *Counters {
	get := func(name string) *expvar.Int {
		if v, ok := m.Get(name).(*expvar.Int); ok {
			return v
		}
		v := new(expvar.Int)
		m.Set(name, v)
		return v
	}
	return &Counters{
		m:         m,
		attempted: get(CounterAttempted),
		persisted: get(CounterPersisted),
		skipped:   get(CounterSkippedNoIdentity),
		anomalous: get(CounterAnomalousValue),
		failed:    get(CounterFailed),
		unknown:   get(CounterUnknownExecution),
	}
}

// Map is the expvar.Map holding the counters, for a host that publishes it
// under a name of its own.
func (c *Counters) Map() *expvar.Map { return c.m }

// CounterValues is a point-in-time copy of the counters.
type CounterValues struct {
	Attempted         int64 `json:"attempted"`
	Persisted         int64 `json:"persisted"`
	SkippedNoIdentity int64 `json:"skipped_no_identity"`
	AnomalousValue    int64 `json:"anomalous_value"`
	Failed            int64 `json:"failed"`
	UnknownExecution  int64 `json:"unknown_execution"`
}

// Values reads the counters.
func (c *Counters) Values() CounterValues {
	return CounterValues{
		Attempted:         c.attempted.Value(),
		Persisted:         c.persisted.Value(),
		SkippedNoIdentity: c.skipped.Value(),
		AnomalousValue:    c.anomalous.Value(),
		Failed:            c.failed.Value(),
		UnknownExecution:  c.unknown.Value(),
	}
}

// Recorder is the live path: one frame in, at most one atomic upsert. Record
// has no error result and never panics into, or blocks, its caller beyond
// the context's deadline (AC-27): telemetry must never break the product
// path.
type Recorder struct {
	store    Store
	counters *Counters
	log      *slog.Logger
	now      func() time.Time
	timeout  time.Duration
	warns    warnLimiter
	workers  workerPool
}

// warnLimiter keeps an outage from flooding the log: at most warnBurst WARN
// lines per second; the next line that gets through says how many were
// suppressed. Every failure is still counted.
type warnLimiter struct {
	mu         sync.Mutex
	window     time.Time
	inWindow   int
	suppressed int64
}

const warnBurst = 10

// allow reports whether to log now, and how many lines were suppressed
// before this one.
func (w *warnLimiter) allow(now time.Time) (bool, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.window) >= time.Second || now.Before(w.window) {
		w.window, w.inWindow = now, 0
	}
	if w.inWindow >= warnBurst {
		w.suppressed++
		return false, 0
	}
	w.inWindow++
	n := w.suppressed
	w.suppressed = 0
	return true, n
}

// RecorderOption configures a Recorder.
type RecorderOption func(*Recorder)

// WithCounters sets the counters (default: a fresh unpublished set; use
// ProcessCounters() to publish on expvar).
func WithCounters(c *Counters) RecorderOption { return func(r *Recorder) { r.counters = c } }

// WithLogger sets the logger for WARN on failed writes (default slog.Default()).
func WithLogger(l *slog.Logger) RecorderOption { return func(r *Recorder) { r.log = l } }

// WithClock sets the clock used for frames without an observation time and
// for updated_at (default time.Now).
func WithClock(now func() time.Time) RecorderOption { return func(r *Recorder) { r.now = now } }

// WithTimeout bounds how long Record waits for one store write, on top of
// the caller's context (default 5s; 0 leaves only the caller's context). It
// does not cancel the write, which the store bounds by its own means
// (SQLite's busy timeout, PostgreSQL's connection and statement timeouts);
// a write abandoned at the deadline may still commit later and is counted
// as failed.
func WithTimeout(d time.Duration) RecorderOption { return func(r *Recorder) { r.timeout = d } }

// DefaultRecordTimeout bounds one store write unless WithTimeout says otherwise.
const DefaultRecordTimeout = 5 * time.Second

// NewRecorder returns a Recorder writing to store.
func NewRecorder(store Store, opts ...RecorderOption) (*Recorder, error) {
	if store == nil {
		return nil, errors.New("subagentctx: NewRecorder: store is nil")
	}
	r := &Recorder{store: store, timeout: DefaultRecordTimeout, workers: workerPool{jobs: make(chan func())}}
	for _, o := range opts {
		o(r)
	}
	if r.counters == nil {
		r.counters = NewCounters()
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.timeout < 0 {
		return nil, fmt.Errorf("subagentctx: NewRecorder: timeout is %v, want >= 0", r.timeout)
	}
	return r, nil
}

// Counters returns the recorder's counters.
func (r *Recorder) Counters() *Counters { return r.counters }

// Record normalises f, gates its identity, counts it and writes it. A frame
// without a session id, task id or tool call id is counted as
// skipped_no_identity and not written (AC-2). A failed write is counted as
// failed and logged at WARN with the session id and tool call id (AC-27); in
// an outage at most 10 such lines a second are logged, the next one saying
// how many were suppressed.
func (r *Recorder) Record(ctx context.Context, f Frame) {
	now := r.now()
	if f.ObservedAt.IsZero() {
		f.ObservedAt = now
	}
	row, v := Normalize(f)
	r.counters.attempted.Add(1)
	if v.NoIdentity {
		r.counters.skipped.Add(1)
		return
	}
	if v.Anomalous {
		r.counters.anomalous.Add(1)
	}
	if v.UnknownExecution {
		r.counters.unknown.Add(1)
	}
	row.UpdatedAt = CanonicalTime(now)
	if err := r.write(ctx, row); err != nil {
		r.counters.failed.Add(1)
		if ok, suppressed := r.warns.allow(r.now()); ok {
			attrs := []slog.Attr{
				slog.String("task_session_id", row.TaskSessionID),
				slog.String("tool_call_id", row.ToolCallID),
				slog.String("agent_execution_id", row.AgentExecutionID),
				slog.Any("error", err),
			}
			if suppressed > 0 {
				attrs = append(attrs, slog.Int64("similar_warnings_suppressed", suppressed))
			}
			r.log.LogAttrs(ctx, slog.LevelWarn, "subagentctx: subagent context write failed", attrs...)
		}
		return
	}
	r.counters.persisted.Add(1)
}

// ContextBounded is implemented by stores that return promptly whatever
// their context, such as the memory adapter (no I/O). The Recorder calls
// them directly. Every other store is called on a worker goroutine, with the
// Recorder's timeout, so that one that ignores its context still cannot
// block the caller past the deadline.
type ContextBounded interface{ ContextBounded() }

// write runs the upsert so that a store that panics, or ignores its
// context, cannot reach the caller. A write abandoned at the deadline may
// still commit later; it is counted as failed.
func (r *Recorder) write(ctx context.Context, row Subagent) error {
	if _, ok := r.store.(ContextBounded); ok {
		return r.upsertRecovering(ctx, row)
	}
	// The Recorder's own timeout bounds the wait here, with a timer, and is
	// not passed down as a context deadline: a cancellable context costs
	// every SQLite write a watcher goroutine in the driver (about 6 µs,
	// BenchmarkUpsert), and SQLite's busy wait ignores it anyway. The
	// caller's context is passed down as it is.
	var expired <-chan time.Time
	if r.timeout > 0 {
		t := time.NewTimer(r.timeout)
		defer t.Stop()
		expired = t.C
	}
	done := make(chan error, 1) // buffered: an abandoned write never blocks its worker
	if err := r.workers.dispatch(ctx, expired, func() { done <- r.upsertRecovering(ctx, row) }); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("store did not return before the context ended: %w", context.Cause(ctx))
	case <-expired:
		return fmt.Errorf("store did not return within %v", r.timeout)
	}
}

// upsertRecovering turns a store's panic into an error.
func (r *Recorder) upsertRecovering(ctx context.Context, row Subagent) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store panicked: %v", p)
		}
	}()
	return r.store.Upsert(ctx, row)
}

// workerPool runs store calls on long-lived goroutines. A goroutine per call
// would cost about 9 µs a write on SQLite (measured: BenchmarkUpsert in
// adapters/sqlite), mostly regrowing a fresh goroutine's stack down the
// database/sql and cgo call path; a worker keeps its grown stack. Workers
// are started on demand, up to maxWorkers, and exit after idleWorker
// without work, so an idle Recorder holds no goroutine.
type workerPool struct {
	jobs    chan func()
	running atomic.Int32
}

const (
	maxWorkers = 256
	idleWorker = 10 * time.Second
)

// dispatch hands fn to an idle worker, or starts one; when maxWorkers are
// all busy (a store that hangs), it waits for one until ctx is done or the
// timeout expires.
func (p *workerPool) dispatch(ctx context.Context, expired <-chan time.Time, fn func()) error {
	select {
	case p.jobs <- fn:
		return nil
	default:
	}
	if p.running.Add(1) <= maxWorkers {
		go p.work(fn)
		return nil
	}
	p.running.Add(-1)
	select {
	case p.jobs <- fn:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("every store worker is busy until the context ended: %w", context.Cause(ctx))
	case <-expired:
		return errors.New("every store worker stayed busy past the timeout")
	}
}

func (p *workerPool) work(fn func()) {
	defer p.running.Add(-1)
	idle := time.NewTimer(idleWorker)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(idleWorker)
		select {
		case fn = <-p.jobs:
		case <-idle.C:
			return
		}
	}
}
