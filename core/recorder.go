package core

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Recorder is the live path (docs/CONTRACT.md §3, §6): one frame in, at most
// one atomic upsert, written without the caller waiting. Record has no
// error result, never panics into its caller and does no I/O on the
// caller's goroutine: a frame is normalised, counted and queued, and the
// recorder's writers store it, many frames per transaction, retrying
// through outages. Telemetry must never break or slow the product path.
//
// A storekit.Synchronous store (the memory adapter) is written on the caller's
// goroutine instead, so a host's unit test reads a row right after Record.
//
// Call Close when the host stops (it flushes, then stops the writers);
// Flush waits for everything recorded so far. All methods are safe for
// concurrent use, and on a nil *Recorder they do nothing.
type Recorder struct {
	store    Store
	batches  batchStore // store as a storekit.BatchStore, or nil
	sync     bool       // store is storekit.Synchronous
	counters *Counters
	log      *slog.Logger
	// failureMsg and sessionField are the WARN line of a frame given up
	// (WithFailureLog).
	failureMsg, sessionField string
	now                      func() time.Time
	warns                    warnLimiter

	queueSize, batchSize int
	queueBytes           int64
	writers              int // 0: the store's storekit.WriterHint, else 1
	retryMin, retryMax   time.Duration
	drain, writeTimeout  time.Duration
	ready                <-chan struct{}
	manualStart          bool // WithManualStart: the writers wait for Start
	written              func(Subagent)
	observer             Observer
	shards               []*shard
	seed                 maphash.Seed

	// ctx is the writers' context: each batch gets a deadline under it,
	// and Close cancels it when its budget runs out, which ends a write
	// still in flight.
	ctx     context.Context
	cancel  context.CancelFunc
	lastErr atomic.Pointer[error] // why the database last refused a batch
	// unreachable: the last attempt met the database's passing state;
	// lastWrite: when a frame was last written (Unix nanoseconds, 0: never).
	unreachable atomic.Bool
	lastWrite   atomic.Int64

	// mu orders Record's queueing against Close: once closed is set under
	// the write lock, no frame enters a queue.
	mu        sync.RWMutex
	closed    bool
	closeOnce sync.Once
	started   bool          // the writers were started (under mu)
	stopped   chan struct{} // closed by Close: the writers stop
	running   sync.WaitGroup
}

// The capabilities a store may declare (storekit.Synchronous,
// storekit.BatchStore, storekit.WriterHint document them for store
// authors): the Recorder asks for each by its method set.
type (
	synchronous interface{ Synchronous() }
	batchStore  interface {
		UpsertBatch(ctx context.Context, rows []Subagent) (rowErrs []error, err error)
	}
	writerHint interface{ Writers() int }
)

// RecorderOption configures a Recorder.
type RecorderOption func(*Recorder)

// WithCounters sets the counters (default: a fresh unpublished set; use
// ProcessCounters() to publish on expvar).
func WithCounters(c *Counters) RecorderOption { return func(r *Recorder) { r.counters = c } }

// WithLogger sets the logger for WARN lines (default slog.Default()).
func WithLogger(l *slog.Logger) RecorderOption { return func(r *Recorder) { r.log = l } }

// WithFailureLog sets the WARN line of a frame given up: its message
// (default "subagentctx: subagent context write failed") and the name of
// the field carrying its session id (default "task_session_id"), so that a
// host's log alerts and tests keyed on its own wording keep working. An
// empty argument keeps its default.
func WithFailureLog(message, sessionField string) RecorderOption {
	return func(r *Recorder) {
		if message != "" {
			r.failureMsg = message
		}
		if sessionField != "" {
			r.sessionField = sessionField
		}
	}
}

// WithClock sets the clock that stamps a frame recorded without an
// observation time (default time.Now). The store stamps updated_at.
func WithClock(now func() time.Time) RecorderOption { return func(r *Recorder) { r.now = now } }

// WithQueue bounds the frames waiting to be written (default
// DefaultQueueSize). A frame recorded while the queue is full is dropped:
// counted failed and dropped, and logged.
func WithQueue(frames int) RecorderOption { return func(r *Recorder) { r.queueSize = frames } }

// WithQueueBytes bounds the memory the waiting frames hold (default
// DefaultQueueBytes): their texts and identifiers, and a fixed share for
// the rest of each row. Whichever of WithQueue and WithQueueBytes is
// reached first makes the queue full. Each writer's queue holds its share
// and always takes a frame when empty.
func WithQueueBytes(n int64) RecorderOption { return func(r *Recorder) { r.queueBytes = n } }

// WithWriters sets the number of writer goroutines, at least 1 (default:
// the store's storekit.WriterHint, else 1). Frames of one key always go to the same
// writer, so they are applied in the order they were recorded.
func WithWriters(n int) RecorderOption {
	return func(r *Recorder) {
		r.writers = n
		if n == 0 {
			r.writers = -1 // given, and wrong: NewRecorder refuses it
		}
	}
}

// WithBatch bounds the frames written in one transaction (default
// DefaultBatchSize).
func WithBatch(frames int) RecorderOption { return func(r *Recorder) { r.batchSize = frames } }

// WithRetry sets the backoff between attempts while the database is
// unavailable: from first, doubling up to longest (default 50ms to 2s).
func WithRetry(first, longest time.Duration) RecorderOption {
	return func(r *Recorder) { r.retryMin, r.retryMax = first, longest }
}

// WithDrain bounds how long Close waits for the queue to drain (default
// DefaultDrain; 0: as long as Close's context allows). Past it, what is
// still queued, a write in flight included, is given up: counted failed
// and logged once at WARN with the count and the cause.
func WithDrain(d time.Duration) RecorderOption { return func(r *Recorder) { r.drain = d } }

// WithWriteTimeout bounds one batch's write (default DefaultWriteTimeout).
// A write past it is the database's passing state, like an outage: the
// batch is kept and retried, and a connection that went silent no longer
// holds its writer.
func WithWriteTimeout(d time.Duration) RecorderOption {
	return func(r *Recorder) { r.writeTimeout = d }
}

// WithWritten calls fn with each frame's row as soon as it is written
// (counted persisted), on the goroutine that wrote it: fn must not block
// or wait (it delays the writer), and a panic in it is recovered and
// logged. A bridge that follows the rows as they are written — the
// OpenTelemetry bridge, say — hands them on from here.
func WithWritten(fn func(Subagent)) RecorderOption { return func(r *Recorder) { r.written = fn } }

// Observer receives what the recorder's writers do, for a host's metrics
// (package otelbridge publishes it on OpenTelemetry's metrics API). Batch
// is called after each attempt to write a batch — on a SQL store, one
// transaction — with its frames, how long it took and its outcome: nil
// (every frame answered: committed, or refused alone), or the error that
// made the writer keep the frames and retry (retried) or give them up.
// It runs on the writer's goroutine and must return promptly; a panic in
// it is logged, never the frames'.
type Observer interface {
	Batch(frames int, took time.Duration, outcome BatchOutcome)
}

// BatchOutcome is how an attempt to write a batch ended.
type BatchOutcome string

// The outcomes.
const (
	BatchWritten BatchOutcome = "written"  // every frame answered
	BatchRetried BatchOutcome = "retried"  // the database's passing state: kept, retried with backoff
	BatchGivenUp BatchOutcome = "given_up" // the frames failed (a store's fault, not the frames')
)

// WithObserver hands each batch attempt to o (Observer).
func WithObserver(o Observer) RecorderOption { return func(r *Recorder) { r.observer = o } }

// WithReady holds the writers until ready is closed (frames queue
// meanwhile): the migration pass's migration.Runner.Ready, so that the first
// write finds the table in its declared shape.
func WithReady(ready <-chan struct{}) RecorderOption { return func(r *Recorder) { r.ready = ready } }

// WithManualStart leaves the writers unstarted until Start, for a host
// that builds the recorder in a constructor and starts what runs in a
// start hook (fx's OnStart): if the application never starts — another
// constructor failed — nothing of the recorder is left running. Frames
// recorded before Start wait in the queue; Close without Start gives them
// up, counted failed.
func WithManualStart() RecorderOption { return func(r *Recorder) { r.manualStart = true } }

// Defaults.
const (
	// DefaultQueueSize bounds the frames waiting to be written: 32,768
	// frames, at about 500 bytes each (measured with realistic payloads)
	// 16 MiB; at a busy host's few hundred frames a second, a minute or
	// more of outage before the first frame is dropped.
	DefaultQueueSize = 1 << 15
	// DefaultQueueBytes bounds what they hold whatever their texts (each
	// at most 64 KiB, docs/CONTRACT.md §3.1): 64 MiB.
	DefaultQueueBytes = 64 << 20
	// DefaultBatchSize is the most frames one transaction writes.
	DefaultBatchSize = 256
	// DefaultDrain is Close's budget: a third of fx's default stop
	// timeout (15 s), so that a host's other stop hooks keep theirs.
	DefaultDrain = 5 * time.Second
	// DefaultWriteTimeout bounds one batch: a batch of DefaultBatchSize
	// frames takes milliseconds; the rest is waiting for a lock, which
	// SQLite's busy timeout bounds the same (10 s in sqlite.Pragmas). A
	// writer stuck behind a silent connection is freed within it.
	DefaultWriteTimeout = 10 * time.Second
)

// NewRecorder returns a Recorder writing to store; its writers start at
// once. A bad option is an error naming it.
func NewRecorder(store Store, opts ...RecorderOption) (*Recorder, error) {
	if store == nil {
		return nil, liberr.Errorf("NewRecorder: store is nil")
	}
	r := &Recorder{store: store, queueSize: DefaultQueueSize, queueBytes: DefaultQueueBytes, batchSize: DefaultBatchSize,
		retryMin: 50 * time.Millisecond, retryMax: 2 * time.Second, drain: DefaultDrain,
		writeTimeout: DefaultWriteTimeout, seed: maphash.MakeSeed(),
		failureMsg: "subagentctx: subagent context write failed", sessionField: "task_session_id"}
	for _, o := range opts {
		if o != nil {
			o(r)
		}
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
	if r.writers == 0 {
		r.writers = 1
		if h, ok := store.(writerHint); ok && h.Writers() > 0 {
			r.writers = h.Writers()
		}
	}
	switch {
	case r.writers < 1:
		return nil, liberr.Errorf("NewRecorder: WithWriters(%d): want at least 1 writer", max(r.writers, 0))
	case r.queueSize < r.writers:
		return nil, liberr.Errorf("NewRecorder: a queue of %d frames for %d writers, want at least one frame each",
			r.queueSize, r.writers)
	case r.queueBytes < 1:
		return nil, liberr.Errorf("NewRecorder: WithQueueBytes(%d): want at least 1", r.queueBytes)
	case r.batchSize < 1:
		return nil, liberr.Errorf("NewRecorder: batches of %d frames, want at least 1", r.batchSize)
	case r.retryMin <= 0 || r.retryMax < r.retryMin:
		return nil, liberr.Errorf("NewRecorder: retry from %v to %v, want 0 < min <= max", r.retryMin, r.retryMax)
	case r.drain < 0:
		return nil, liberr.Errorf("NewRecorder: WithDrain(%v): want 0 (no budget but Close's context) or more", r.drain)
	case r.writeTimeout <= 0:
		return nil, liberr.Errorf("NewRecorder: WithWriteTimeout(%v): want more than 0", r.writeTimeout)
	}
	_, r.sync = store.(synchronous)
	r.batches, _ = store.(batchStore)
	if r.sync {
		return r, nil
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.stopped = make(chan struct{})
	r.shards = make([]*shard, r.writers)
	for i := range r.shards {
		r.shards[i] = &shard{queue: make(chan Subagent, r.queueSize/r.writers), maxBytes: r.queueBytes / int64(r.writers),
			progress: make(chan struct{})}
	}
	if !r.manualStart {
		r.Start()
	}
	return r, nil
}

// Start starts the writers: NewRecorder does, unless WithManualStart was
// given. It is idempotent, and does nothing after Close.
func (r *Recorder) Start() {
	if r == nil || r.sync {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	for _, s := range r.shards {
		r.running.Add(1)
		go r.write(s)
	}
}

// Counters returns the recorder's counters (nil on a nil Recorder).
func (r *Recorder) Counters() *Counters {
	if r == nil {
		return nil
	}
	return r.counters
}

// Record normalises f, gates its identity, counts it and queues it for
// writing, without waiting (docs/CONTRACT.md §3.1, §6). A frame without a
// session id, task id or tool call id is counted skipped_no_identity and
// not written (AC-2). A frame that cannot be written is counted failed and
// logged at WARN with its session and tool call id (rate-limited in an
// outage). ctx is the caller's; it is not used for the write, which
// outlives the call.
func (r *Recorder) Record(ctx context.Context, f Frame) {
	if r == nil {
		return
	}
	row, ok := r.admit(f)
	if !ok {
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	switch {
	case r.closed:
		r.resolve(ctx, row, errRecorderClosed)
	case r.sync:
		r.writeSync(ctx, row)
	case !r.shards[r.shardOf(row.Key())].enqueue(row):
		r.counters.dropped.Add(1)
		r.resolve(ctx, row, fmt.Errorf("the queue of %d frames or %d bytes is full: frame dropped",
			r.queueSize, r.queueBytes))
	}
}

// RecordWaiting is Record for a caller that is not a product path and
// would rather wait than lose a frame — a command reading a file, an
// import: when the queue is full it waits for room instead of dropping
// the frame. It returns nil once the frame is queued (or written, on a
// Synchronous store, or skipped for want of an identity); when ctx ends
// or the recorder closes first, the frame is counted failed and the
// error says why. Record itself never waits.
func (r *Recorder) RecordWaiting(ctx context.Context, f Frame) error {
	if r == nil {
		return nil
	}
	row, ok := r.admit(f)
	if !ok {
		return nil
	}
	for {
		r.mu.RLock()
		switch {
		case r.closed:
			r.resolve(ctx, row, errRecorderClosed)
			r.mu.RUnlock()
			return liberr.Errorf("%w", errRecorderClosed)
		case r.sync:
			r.writeSync(ctx, row)
			r.mu.RUnlock()
			return nil
		}
		// Taken before the attempt, so that room made after a failed
		// attempt is never missed.
		s := r.shards[r.shardOf(row.Key())]
		progress := s.progressed()
		queued := s.enqueue(row)
		r.mu.RUnlock()
		if queued {
			return nil
		}
		select {
		case <-progress:
		case <-r.stopped:
		case <-ctx.Done():
			err := fmt.Errorf("not queued (the queue of %d frames or %d bytes stayed full): %w",
				r.queueSize, r.queueBytes, context.Cause(ctx))
			r.resolve(ctx, row, err)
			return liberr.Errorf("%w", err)
		}
	}
}

var errRecorderClosed = errors.New("the recorder is closed")

// admit stamps, normalises and counts a frame on the caller's goroutine;
// false when it is not to be written (no identity, AC-2).
func (r *Recorder) admit(f Frame) (Subagent, bool) {
	if f.ObservedAt.IsZero() {
		f.ObservedAt = r.now()
	}
	row, v := Normalize(f)
	r.counters.attempted.Add(1)
	if v.NoIdentity {
		r.counters.skipped.Add(1)
		return Subagent{}, false
	}
	if v.Anomalous {
		r.counters.anomalous.Add(1)
	}
	if v.UnknownExecution {
		r.counters.unknown.Add(1)
	}
	if v.Truncated {
		r.counters.truncated.Add(1)
	}
	return row, true
}

// writeSync writes a row on the caller's goroutine (a Synchronous store).
// The write outlives the caller's interest in it, as on the writers: the
// caller's cancellation does not fail the frame.
func (r *Recorder) writeSync(ctx context.Context, row Subagent) {
	r.resolve(ctx, row, r.upsertRecovering(context.WithoutCancel(ctx), row))
}

// shardOf sends every frame of one key to the same writer, so a key's
// frames are applied in the order they were recorded.
func (r *Recorder) shardOf(k RowKey) int {
	if len(r.shards) == 1 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(k.TaskSessionID)
	h.WriteByte(0)
	h.WriteString(k.AgentExecutionID)
	h.WriteByte(0)
	h.WriteString(k.ToolCallID)
	return int(h.Sum64() % uint64(len(r.shards)))
}

// resolve counts a frame's outcome: persisted, or failed with a WARN.
func (r *Recorder) resolve(ctx context.Context, row Subagent, err error) {
	if err == nil {
		r.counters.persisted.Add(1)
		r.lastWrite.Store(r.now().UnixNano())
		if r.written != nil {
			r.notify(ctx, row)
		}
		return
	}
	r.counters.failed.Add(1)
	if ok, suppressed := r.warns.allow(r.now()); ok {
		attrs := []slog.Attr{
			slog.String(r.sessionField, row.TaskSessionID),
			slog.String("tool_call_id", row.ToolCallID),
			slog.String("agent_execution_id", row.AgentExecutionID),
			slog.Any("error", err),
		}
		if suppressed > 0 {
			attrs = append(attrs, slog.Int64("similar_warnings_suppressed", suppressed))
		}
		r.log.LogAttrs(ctx, slog.LevelWarn, r.failureMsg, attrs...)
	}
}

// notify hands a written row to the WithWritten function, whose panic
// is the host's bug, logged, never the frame's.
func (r *Recorder) notify(ctx context.Context, row Subagent) {
	defer func() {
		if p := recover(); p != nil {
			r.log.LogAttrs(ctx, slog.LevelError, "subagentctx: the WithWritten function panicked",
				slog.Any("panic", p), slog.String("tool_call_id", row.ToolCallID))
		}
	}()
	r.written(row)
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

// batchRecovering writes rows through UpsertBatch, or one Upsert each for a
// store without it; a store's panic becomes a failure of the whole batch.
func (r *Recorder) batchRecovering(ctx context.Context, rows []Subagent) (rowErrs []error, err error) {
	defer func() {
		if p := recover(); p != nil {
			rowErrs, err = nil, fmt.Errorf("store panicked: %v", p)
		}
	}()
	if r.batches != nil {
		return r.batches.UpsertBatch(ctx, rows)
	}
	rowErrs = make([]error, len(rows))
	for i, row := range rows {
		// Each row on its own: a panic fails that row only, not those
		// before it, which are written.
		if rowErrs[i] = r.upsertRecovering(ctx, row); passing(rowErrs[i]) {
			// Keep the frames from here on for the retry.
			return rowErrs[:i], rowErrs[i]
		}
	}
	return rowErrs, nil
}

// passing is the database's passing state (docs/CONTRACT.md §6.1): the
// frames are kept and retried. A batch past its deadline is one.
func passing(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// shard is one writer's queue: the frames of the keys that hash to it.
type shard struct {
	queue chan Subagent
	// bytes is what the frames in queue hold (rowBytes), at most maxBytes
	// unless the queue holds one frame alone.
	bytes    atomic.Int64
	maxBytes int64
	// enqMu makes taking a place in the queue and counting it one step,
	// so that enqueued counts exactly the frames ahead in the queue: Flush
	// relies on it when other goroutines record at the same time.
	enqMu    sync.Mutex
	enqueued atomic.Uint64 // frames queued so far
	resolved atomic.Uint64 // frames written or given up so far, in queue order
	mu       sync.Mutex
	progress chan struct{} // closed, and replaced, whenever resolved grows

	// writeMu guards the batch in a store call and whether Close gave it
	// up (abandoned): each frame is resolved once, by the writer or by
	// Close, never both.
	writeMu   sync.Mutex
	inflight  []Subagent
	abandoned bool
}

// enqueue queues row without waiting; false when the queue is full, in
// frames or in bytes.
func (s *shard) enqueue(row Subagent) bool {
	s.enqMu.Lock()
	defer s.enqMu.Unlock()
	n := rowBytes(&row)
	if held := s.bytes.Load(); held > 0 && held+n > s.maxBytes {
		return false
	}
	select {
	case s.queue <- row:
		s.enqueued.Add(1)
		s.bytes.Add(n)
		return true
	default:
		return false
	}
}

// take is a frame leaving the queue: its bytes are free again.
func (s *shard) take(row Subagent) Subagent {
	s.bytes.Add(-rowBytes(&row))
	return row
}

// rowOverhead is what a queued row holds besides its strings' bytes: the
// struct, its pointers' targets and the channel's slot.
const rowOverhead = 256

// rowBytes is what a queued row holds in memory, as the queue counts it.
func rowBytes(r *Subagent) int64 {
	n := rowOverhead + len(r.ID) + len(r.TaskSessionID) + len(r.TaskID) + len(r.AgentExecutionID) + len(r.ToolCallID)
	for _, p := range []*string{r.TurnID, r.ParentToolCallID, r.SubagentType, r.Description, r.AgentID,
		r.ChildSessionID, r.Model, r.AgentStatus, r.ToolStatus} {
		if p != nil {
			n += len(*p)
		}
	}
	return int64(n)
}

// progressed is closed the next time a frame of the shard is resolved
// (its place in the queue was taken by a writer before that).
func (s *shard) progressed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress
}

func (s *shard) advance(n int) {
	s.resolved.Add(uint64(n))
	s.mu.Lock()
	close(s.progress)
	s.progress = make(chan struct{})
	s.mu.Unlock()
}

// write is one writer: it takes the frames of its shard in order, many per
// transaction, and retries a batch while the database is in a passing
// state (docs/CONTRACT.md §6.1), with backoff, until it is taken or the
// recorder is closed (the frames are then given up: counted failed). Each
// attempt has a deadline (WithWriteTimeout); Close's budget cancels an
// attempt still in flight.
func (r *Recorder) write(s *shard) {
	defer r.running.Done()
	defer r.giveUpQueued(s)
	if r.ready != nil {
		select {
		case <-r.ready:
		case <-r.stopped:
			return
		}
	}
	batch := make([]Subagent, 0, r.batchSize)
	for {
		select {
		case <-r.stopped: // before taking more: a closed recorder writes nothing new
			return
		default:
		}
		select {
		case row := <-s.queue:
			batch = append(batch[:0], s.take(row))
		case <-r.stopped:
			return
		}
	drain:
		for len(batch) < r.batchSize {
			select {
			case row := <-s.queue:
				batch = append(batch, s.take(row))
			default:
				break drain
			}
		}
		for delay := r.retryMin; len(batch) > 0; delay = min(2*delay, r.retryMax) {
			start := time.Now()
			rowErrs, err, abandoned := r.attempt(s, batch)
			if abandoned {
				return
			}
			r.observe(len(batch), time.Since(start), err)
			// The state first: a caller that sees its frames written
			// (Flush) reads the state that wrote them.
			r.unreachable.Store(err != nil && passing(err))
			for i, e := range rowErrs {
				r.resolve(r.ctx, batch[i], e)
			}
			s.advance(len(rowErrs))
			batch = batch[len(rowErrs):]
			switch {
			case err == nil:
			case !passing(err):
				r.giveUp(s, batch, err)
				batch = batch[:0]
			default:
				r.lastErr.Store(&err)
				r.warnOutage(err, len(batch), delay)
				select {
				case <-time.After(delay):
				case <-r.stopped:
					r.giveUp(s, batch, fmt.Errorf("the recorder closed while the database was unavailable: %w", err))
					return
				}
			}
		}
	}
}

// observe hands an attempt to the Observer, whose panic is the host's bug,
// logged, never the frames'.
func (r *Recorder) observe(frames int, took time.Duration, err error) {
	if r.observer == nil {
		return
	}
	outcome := BatchWritten
	switch {
	case err != nil && passing(err):
		outcome = BatchRetried
	case err != nil:
		outcome = BatchGivenUp
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.LogAttrs(r.ctx, slog.LevelError, "subagentctx: the Observer panicked", slog.Any("panic", p))
		}
	}()
	r.observer.Batch(frames, took, outcome)
}

// RecorderState is what an alert reads of a recorder beside its
// counters: whether it can write now, and when it last did.
type RecorderState struct {
	// Ready: the table is ready for writes — the migration pass given
	// with WithReady has made it so, or none was given.
	Ready bool
	// Reachable: the database answered the writers' last attempt (true
	// before the first); false while it is in its passing state and the
	// frames are kept and retried.
	Reachable bool
	// LastWrite is when a frame was last written; zero before the first.
	LastWrite time.Time
}

// State reads the recorder's state (the zero state on a nil Recorder).
func (r *Recorder) State() RecorderState {
	if r == nil {
		return RecorderState{}
	}
	st := RecorderState{Ready: r.ready == nil || closedChan(r.ready), Reachable: !r.unreachable.Load()}
	if ns := r.lastWrite.Load(); ns != 0 {
		st.LastWrite = time.Unix(0, ns).UTC()
	}
	return st
}

// QueueDepth is how many frames wait in the recorder's queues, not yet
// taken by a writer (0 on a nil Recorder, or a Synchronous store's).
func (r *Recorder) QueueDepth() int {
	if r == nil {
		return 0
	}
	n := 0
	for _, s := range r.shards {
		n += len(s.queue)
	}
	return n
}

// attempt writes batch once, under its deadline. The store's answer is
// checked: more results than frames, or fewer without an error, is the
// store's fault, and fails the frames it leaves unanswered. abandoned: Close
// gave the batch up while the store had it; the writer resolves nothing.
func (r *Recorder) attempt(s *shard, batch []Subagent) (rowErrs []error, err error, abandoned bool) {
	s.writeMu.Lock()
	if s.abandoned { // Close gave this shard up before the batch reached the store
		s.writeMu.Unlock()
		r.giveUp(s, batch, errors.New("the recorder closed before the frame was written"))
		return nil, nil, true
	}
	s.inflight = batch
	s.writeMu.Unlock()
	ctx, cancel := context.WithTimeout(r.ctx, r.writeTimeout)
	rowErrs, err = r.batchRecovering(ctx, batch)
	cancel()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.abandoned {
		return nil, nil, true
	}
	s.inflight = nil
	switch {
	case len(rowErrs) > len(batch):
		return nil, fmt.Errorf("the store returned %d results for a batch of %d frames", len(rowErrs), len(batch)), false
	case err == nil && len(rowErrs) < len(batch):
		err = fmt.Errorf("the store returned %d results for a batch of %d frames, and no error", len(rowErrs), len(batch))
	}
	return rowErrs, err, false
}

// giveUp counts frames as failed.
func (r *Recorder) giveUp(s *shard, batch []Subagent, err error) {
	for _, row := range batch {
		r.resolve(context.Background(), row, err)
	}
	s.advance(len(batch))
}

// giveUpQueued counts the frames still queued as failed: nothing enters a
// queue after Close.
func (r *Recorder) giveUpQueued(s *shard) {
	var rest []Subagent
	for {
		select {
		case row := <-s.queue:
			rest = append(rest, s.take(row))
			continue
		default:
		}
		break
	}
	r.giveUp(s, rest, errors.New("the recorder closed before the frame was written"))
}

// abandon gives up the batch a writer still has in a store call: the call
// may never return (a store that ignores its context).
func (r *Recorder) abandon(s *shard, cause error) {
	s.writeMu.Lock()
	batch := s.inflight
	s.inflight, s.abandoned = nil, true
	s.writeMu.Unlock()
	r.giveUp(s, batch, cause)
	r.giveUpQueued(s)
}

// warnOutage logs, rate-limited, that the writer keeps frames through an
// outage.
func (r *Recorder) warnOutage(err error, frames int, retry time.Duration) {
	if ok, suppressed := r.warns.allow(r.now()); ok {
		r.log.LogAttrs(context.Background(), slog.LevelWarn, "subagentctx: database unavailable; frames kept and retried",
			slog.Int("frames", frames), slog.Duration("retry_in", retry),
			slog.Int64("similar_warnings_suppressed", suppressed), slog.Any("error", err))
	}
}

// Flush returns when every frame recorded before the call has been written
// or given up, or with ctx's error when ctx ends first.
func (r *Recorder) Flush(ctx context.Context) error {
	if r == nil || r.sync {
		return nil
	}
	for _, s := range r.shards {
		target := s.enqueued.Load()
		for s.resolved.Load() < target {
			progress := s.progressed()
			if s.resolved.Load() >= target {
				break
			}
			select {
			case <-progress:
			case <-ctx.Done():
				return liberr.Errorf("flush: %d frames still pending: %w", r.counters.Values().Pending, context.Cause(ctx))
			}
		}
	}
	return nil
}

// Close stops the recorder: it waits for what is queued to be written, for
// at most the drain budget (WithDrain) and as long as ctx allows, then
// stops the writers. Whatever is still unwritten then, a write in flight
// included, is given up: counted failed, so that pending reaches 0, and
// logged once at WARN with the count and the cause (the database's last
// error, or a table that never became ready, in which case nothing is
// waited for). A frame recorded after Close is counted failed. Close
// returns an error saying what was given up, and nil when nothing was; a
// host's stop should log it, not fail on it. Close is idempotent.
func (r *Recorder) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	var err error
	r.closeOnce.Do(func() { err = r.close(ctx) })
	return err
}

func (r *Recorder) close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	started := r.started
	r.mu.Unlock()
	if r.sync {
		return nil
	}
	defer r.cancel()
	if !started {
		close(r.stopped)
		unwritten := r.counters.Values().Pending
		for _, s := range r.shards {
			r.giveUpQueued(s)
		}
		if unwritten == 0 {
			return nil
		}
		return liberr.Errorf("close: %d frames given up: the recorder was never started", unwritten)
	}
	budget, cancel := ctx, context.CancelFunc(func() {})
	if r.drain > 0 {
		budget, cancel = context.WithTimeout(ctx, r.drain)
	}
	defer cancel()
	var cause error
	switch {
	case r.ready != nil && !closedChan(r.ready):
		cause = errors.New("the table never became ready: the migration pass has not completed")
	case r.Flush(budget) != nil:
		cause = fmt.Errorf("the drain ended first (%w)", context.Cause(budget))
		if last := r.lastErr.Load(); last != nil {
			cause = fmt.Errorf("the database's last error: %w; %w", *last, cause)
		}
	}
	unwritten := r.counters.Values().Pending
	close(r.stopped) // writers take nothing new; one in backoff gives its batch up
	if cause != nil {
		r.cancel() // a write in flight ends now
	}
	done := make(chan struct{})
	go func() { r.running.Wait(); close(done) }()
	if cause == nil {
		<-done
		return nil
	}
	select {
	case <-done:
	case <-time.After(100 * time.Millisecond): // a store that ignores its context
		for _, s := range r.shards {
			r.abandon(s, fmt.Errorf("given up when the recorder closed: %w", cause))
		}
	}
	r.log.LogAttrs(context.Background(), slog.LevelWarn, "subagentctx: recorder closed with frames unwritten; given up",
		slog.Int64("frames", unwritten), slog.Any("cause", cause))
	return liberr.Errorf("close: %d frames given up: %w", unwritten, cause)
}

// closedChan reports whether c is closed, without waiting.
func closedChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
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
