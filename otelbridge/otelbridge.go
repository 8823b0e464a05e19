// Package otelbridge puts the record in a host's trace UI: each subagent,
// once its row settles, becomes two OpenTelemetry spans on OpenTelemetry's
// GenAI semantic conventions — the caller's execute_tool span with the
// transfer refinement, and under it the subagent's invoke_agent span —
// through the host's TracerProvider (docs/CONTRACT.md §9). It links the
// OpenTelemetry API only; the host brings the SDK and its exporter. It is
// opt-in: the library's other packages do not link it.
//
// Two ways in: live, from the Recorder (Bridge.Written, given to
// core.WithWritten), and replay, from a store's export (Bridge.Replay) for
// history and backfilled rows. Span and trace ids derive from each row's
// key (IDs, given to the host's SDK), so a replay never duplicates a span
// the live path sent.
//
// The conventions are in development: every name the bridge writes is in
// conventions.go, the one place to change when they are renamed.
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package otelbridge

import (
	"context"
	"crypto/sha256"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Option configures a Bridge.
type Option func(*Bridge)

// WithTurn gives the context a subagent without a parent subagent on
// record starts under: the host's own span for the turn, say. Default: a
// trace of the turn's own, its id derived from the session and the turn.
func WithTurn(fn func(ctx context.Context, row core.Subagent) context.Context) Option {
	return func(b *Bridge) { b.turn = fn }
}

// WithQueue bounds the settled rows waiting for their spans on the live
// path (default 4,096): past it a row's spans are dropped, counted in
// Dropped, never waited for.
func WithQueue(n int) Option {
	return func(b *Bridge) { b.queue = make(chan core.Subagent, max(n, 1)) }
}

// Sessions lists a session's rows in AC-13 order: the store the recorder
// writes (every core.Store does).
type Sessions interface {
	ListBySession(ctx context.Context, taskSessionID string, page core.Page) ([]core.Subagent, error)
}

// WithStore makes the live path's spans the record's: for each settled
// row the bridge reads its session's rows from store and builds the
// spans from the stored row — its observed_at, source, turn and the
// history it absorbed — under its parent as report.Parents resolves it, so
// that a live span and its replay are identical, at the seam and after a
// restart (docs/CONTRACT.md §9). Without it the live path builds them from
// the frames this process saw, its parent under the same execution. The
// read runs on the bridge's goroutine, never the recorder's.
func WithStore(store Sessions) Option { return func(b *Bridge) { b.store = store } }

// WithPending bounds the rows the live path follows until they settle
// (default 65,536): past it the oldest is forgotten (its spans, if it
// settles later, lack what the forgotten frames said).
func WithPending(n int) Option { return func(b *Bridge) { b.maxPending = max(n, 1) } }

// WithMetrics makes the live path measure each run that ended on the
// conventions' agent and tool metrics (docs/CONTRACT.md §9): the
// invoke_agent span's duration, the execute_tool span's, and the run's
// tool calls and model requests where reported — once per run, when its
// spans leave. A replay measures nothing: it re-sends history, which the
// metrics, about what runs now, would count twice.
func WithMetrics(m *Metrics) Option { return func(b *Bridge) { b.metrics = m } }

// Bridge turns settled rows into spans.
type Bridge struct {
	tracer     trace.Tracer
	turn       func(context.Context, core.Subagent) context.Context
	queue      chan core.Subagent
	maxPending int
	store      Sessions
	metrics    *Metrics

	mu      sync.Mutex
	pending map[core.RowKey]*core.Subagent // the live rows not settled yet
	order   []core.RowKey                  // pending's keys, oldest first
	sent    map[core.RowKey]bool           // the live rows whose spans left
	dropped atomic.Int64
	done    chan struct{} // closed by Close: the goroutine stops
	exited  chan struct{} // closed by the goroutine once it has stopped
	stop    sync.Once
}

// New returns a bridge emitting through tp; its live path's goroutine
// runs until Close.
func New(tp trace.TracerProvider, opts ...Option) *Bridge {
	b := &Bridge{
		tracer:     tp.Tracer(instrumentationName, trace.WithInstrumentationVersion(core.Version)),
		queue:      make(chan core.Subagent, 4096),
		maxPending: 1 << 16,
		pending:    map[core.RowKey]*core.Subagent{},
		sent:       map[core.RowKey]bool{},
		done:       make(chan struct{}),
		exited:     make(chan struct{}),
	}
	for _, o := range opts {
		o(b)
	}
	go b.run()
	return b
}

// Written follows the Recorder's written rows (core.WithWritten(b.Written)):
// it merges each into the row it follows with the store's rules and, when
// the row settles, hands it to the bridge's goroutine — it never waits on
// the tracer or its exporter.
func (b *Bridge) Written(row core.Subagent) {
	k := row.Key()
	b.mu.Lock()
	if b.sent[k] {
		b.mu.Unlock()
		return // spans are immutable: a settled row's late frames change nothing sent
	}
	merged := row
	if prev := b.pending[k]; prev != nil {
		merged = storekit.Merge(prev, row)
	} else {
		if len(b.order) >= b.maxPending {
			delete(b.pending, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, k)
	}
	if merged.SettledAt == nil || storekit.Unended(&merged) {
		// Not over yet: an open call, or a background run whose end has
		// not come (its agent span ends at its end, docs/CONTRACT.md §3.4).
		b.pending[k] = &merged
		b.mu.Unlock()
		return
	}
	delete(b.pending, k)
	if len(b.sent) >= b.maxPending {
		clear(b.sent) // a late frame of a long-settled row may send it again, with the same ids
	}
	b.sent[k] = true
	b.mu.Unlock()
	select {
	case b.queue <- merged:
	default:
		b.dropped.Add(1)
	}
}

// Dropped is how many settled rows' spans the live path dropped, its
// queue full.
func (b *Bridge) Dropped() int64 { return b.dropped.Load() }

func (b *Bridge) run() {
	defer close(b.exited)
	for {
		select {
		case row := <-b.queue:
			b.live(context.Background(), b.drain(row))
		case <-b.done:
			return
		}
	}
}

// drain is row and the settled rows queued behind it, up to a batch: their
// sessions are read once each (WithStore), not once a row.
func (b *Bridge) drain(row core.Subagent) []core.Subagent {
	rows := []core.Subagent{row}
	for len(rows) < liveBatch {
		select {
		case r := <-b.queue:
			rows = append(rows, r)
		default:
			return rows
		}
	}
	return rows
}

// liveBatch bounds the settled rows the live path turns into spans at once.
const liveBatch = 256

// Close stops the live path once the rows already queued have their
// spans (or ctx ends); it does not flush the host's exporter, which a host
// shuts down after it.
func (b *Bridge) Close(ctx context.Context) error {
	b.stop.Do(func() { close(b.done) })
	select {
	case <-b.exited: // its row in hand, if any, has its spans
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		select {
		case row := <-b.queue:
			b.live(ctx, b.drain(row))
		default:
			return nil
		}
	}
}

// Replay emits the spans of every settled row an export yields (the rows
// of a store, from report.Exporter.Export), in its order, and returns how
// many rows had spans; a row not settled has none. The ids are the live
// path's.
//
// An export yields a session's rows together (it is ordered by session):
// each session's are held until the next begins, so that every row's
// parent is resolved among its session's rows (report.Parents), as the live
// path resolves it.
func (b *Bridge) Replay(ctx context.Context, rows iter.Seq2[core.Subagent, error]) (int, error) {
	n := 0
	var session []core.Subagent
	flush := func() {
		parents := report.Parents(session)
		for i, p := range parents {
			if session[i].SettledAt != nil && !storekit.Unended(&session[i]) {
				b.emit(ctx, session[i], parentOf(session, p), traceOf(session, parents, i))
				n++
			}
		}
		session = session[:0]
	}
	for row, err := range rows {
		if err != nil {
			return n, err
		}
		if len(session) > 0 && session[0].TaskSessionID != row.TaskSessionID {
			flush()
		}
		session = append(session, row)
	}
	flush()
	return n, nil
}

// live writes the spans of rows the live path saw settle: from the
// stored rows and their sessions', each session read once, with a store
// (WithStore); else from the frames, under the parent of the same
// execution.
func (b *Bridge) live(ctx context.Context, settled []core.Subagent) {
	type session struct {
		rows    []core.Subagent
		parents []int
		at      map[core.RowKey]int
	}
	sessions := map[string]*session{}
	for _, row := range settled {
		s, read := sessions[row.TaskSessionID]
		if !read && b.store != nil {
			s = &session{at: map[core.RowKey]int{}}
			if rows, err := b.store.ListBySession(ctx, row.TaskSessionID, core.Page{}); err == nil {
				s.rows, s.parents = rows, report.Parents(rows)
				for i, r := range rows {
					s.at[r.Key()] = i
				}
			}
			sessions[row.TaskSessionID] = s
		}
		if s != nil {
			if i, ok := s.at[row.Key()]; ok && s.rows[i].SettledAt != nil && !storekit.Unended(&s.rows[i]) {
				b.emit(ctx, s.rows[i], parentOf(s.rows, s.parents[i]), traceOf(s.rows, s.parents, i))
				b.metrics.measure(ctx, s.rows[i])
				continue
			}
		}
		// From the frames (no store, or the store could not say).
		var parent *core.Subagent
		if row.ParentToolCallID != nil {
			p := row
			p.ToolCallID, p.ParentToolCallID = *row.ParentToolCallID, nil
			parent = &p
		}
		b.emit(ctx, row, parent, idsOf(row).trace)
		b.metrics.measure(ctx, row)
	}
}

func parentOf(rows []core.Subagent, i int) *core.Subagent {
	if i < 0 {
		return nil
	}
	return &rows[i]
}

// traceOf is row i's trace: its root subagent's (a span's parent is in its
// trace, whatever turn a late child was recorded in).
func traceOf(rows []core.Subagent, parents []int, i int) trace.TraceID {
	for range rows { // a cycle of parent links ends within as many steps
		if parents[i] < 0 {
			break
		}
		i = parents[i]
	}
	return idsOf(rows[i]).trace
}

// emit writes a settled row's two spans, under its parent subagent's
// invoke_agent span when it has one, else under the turn.
func (b *Bridge) emit(ctx context.Context, row core.Subagent, parentRow *core.Subagent, tid trace.TraceID) {
	ids := idsOf(row)
	ids.trace = tid
	parent := b.parentContext(ctx, row, parentRow, ids.trace)
	tool, toolSpan := b.tracer.Start(withIDs(parent, ids.trace, ids.tool), toolSpanName(row),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(row.ObservedAt),
		trace.WithAttributes(toolAttributes(row)...))
	start, end, _ := runOf(row)
	_, agentSpan := b.tracer.Start(withIDs(tool, ids.trace, ids.agent), agentSpanName(row),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(start),
		trace.WithAttributes(agentAttributes(row)...))
	if why := failure(row); why != nil {
		for _, s := range []trace.Span{agentSpan, toolSpan} {
			s.SetStatus(codes.Error, *why)
			s.SetAttributes(attribute.String(errorType, *why))
		}
	}
	agentSpan.End(trace.WithTimestamp(end))
	toolSpan.End(trace.WithTimestamp(latest(row.ObservedAt, *row.SettledAt)))
}

// runOf is the span of a settled row's agent: from its own start to its
// own end where a source reported them, else over its tool call
// (docs/CONTRACT.md §3.4). An end before the start (two sources whose
// clocks disagree, or frames out of order) measures nothing: ok is false,
// and the span ends where it starts.
func runOf(row core.Subagent) (start, end time.Time, ok bool) {
	start, end = row.ObservedAt, *row.SettledAt
	if row.StartedAt != nil {
		start = *row.StartedAt
	}
	if row.EndedAt != nil {
		end = *row.EndedAt
	}
	return start, latest(start, end), !end.Before(start)
}

// latest is the later of a start and an end: the end, unless it comes
// first.
func latest(start, end time.Time) time.Time {
	if end.Before(start) {
		return start
	}
	return end
}

// parentContext is where a row's execute_tool span starts: its parent
// subagent's invoke_agent span (by the ids that span was given), or the
// turn's; tid is the row's trace.
func (b *Bridge) parentContext(ctx context.Context, row core.Subagent, parent *core.Subagent,
	tid trace.TraceID) context.Context {
	if parent != nil {
		return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: idsOf(*parent).agent, TraceFlags: trace.FlagsSampled, Remote: true,
		}))
	}
	if b.turn != nil {
		return b.turn(ctx, row)
	}
	return ctx
}

// ids are a row's trace and span ids.
type ids struct {
	trace       trace.TraceID
	tool, agent trace.SpanID
}

// idsOf derives a row's ids from its key: its trace from its session and
// turn (every subagent of a turn in one trace), its spans from the key.
func idsOf(row core.Subagent) ids {
	turn := ""
	if row.TurnID != nil {
		turn = *row.TurnID
	}
	var out ids
	h := sha256.Sum256([]byte("trace\x00" + row.TaskSessionID + "\x00" + turn))
	copy(out.trace[:], h[:16])
	key := row.TaskSessionID + "\x00" + row.AgentExecutionID + "\x00" + row.ToolCallID
	h = sha256.Sum256([]byte("execute_tool\x00" + key))
	copy(out.tool[:], h[:8])
	h = sha256.Sum256([]byte("invoke_agent\x00" + key))
	copy(out.agent[:], h[:8])
	return out
}

// attrs is a span's attributes, the unreported left out (never 0).
type attrs []attribute.KeyValue

func (a *attrs) text(k string, v *string) {
	if v != nil {
		*a = append(*a, attribute.String(k, *v))
	}
}

func (a *attrs) number(k string, v *int64) {
	if v != nil {
		*a = append(*a, attribute.Int64(k, *v))
	}
}
