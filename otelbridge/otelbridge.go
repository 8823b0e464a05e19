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
package otelbridge

import (
	"context"
	"crypto/sha256"
	"iter"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/subagentctx/subagentctx/core"
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

// WithPending bounds the rows the live path follows until they settle
// (default 65,536): past it the oldest is forgotten (its spans, if it
// settles later, lack what the forgotten frames said).
func WithPending(n int) Option { return func(b *Bridge) { b.maxPending = max(n, 1) } }

// Bridge turns settled rows into spans.
type Bridge struct {
	tracer     trace.Tracer
	turn       func(context.Context, core.Subagent) context.Context
	queue      chan core.Subagent
	maxPending int

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
		merged = core.Merge(prev, row)
	} else {
		if len(b.order) >= b.maxPending {
			delete(b.pending, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, k)
	}
	if merged.SettledAt == nil {
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
			b.emit(context.Background(), row)
		case <-b.done:
			return
		}
	}
}

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
			b.emit(ctx, row)
		default:
			return nil
		}
	}
}

// Replay emits the spans of every settled row an export yields (the rows
// of a store, from core.Exporter.Export), in its order, and returns how
// many rows had spans; a row not settled has none. The ids are the live
// path's.
func (b *Bridge) Replay(ctx context.Context, rows iter.Seq2[core.Subagent, error]) (int, error) {
	n := 0
	for row, err := range rows {
		if err != nil {
			return n, err
		}
		if row.SettledAt == nil {
			continue
		}
		b.emit(ctx, row)
		n++
	}
	return n, nil
}

// emit writes a settled row's two spans, under its parent subagent's
// invoke_agent span when the row names a parent, else under the turn.
func (b *Bridge) emit(ctx context.Context, row core.Subagent) {
	ids := idsOf(row)
	parent := b.parentContext(ctx, row, ids.trace)
	tool, toolSpan := b.tracer.Start(withIDs(parent, ids.trace, ids.tool), toolSpanName(row),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(row.ObservedAt),
		trace.WithAttributes(toolAttributes(row)...))
	_, agentSpan := b.tracer.Start(withIDs(tool, ids.trace, ids.agent), agentSpanName(row),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(row.ObservedAt),
		trace.WithAttributes(agentAttributes(row)...))
	if row.ToolStatus != nil && core.IsFailedToolStatus(*row.ToolStatus) {
		for _, s := range []trace.Span{agentSpan, toolSpan} {
			s.SetStatus(codes.Error, *row.ToolStatus)
		}
	}
	agentSpan.End(trace.WithTimestamp(*row.SettledAt))
	toolSpan.End(trace.WithTimestamp(*row.SettledAt))
}

// parentContext is where a row's execute_tool span starts: its parent
// subagent's invoke_agent span (by the ids that span was given), or the
// turn's; tid is the row's trace.
func (b *Bridge) parentContext(ctx context.Context, row core.Subagent, tid trace.TraceID) context.Context {
	if row.ParentToolCallID != nil {
		p := row
		p.ToolCallID, p.ParentToolCallID = *row.ParentToolCallID, nil
		return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: idsOf(p).agent, TraceFlags: trace.FlagsSampled, Remote: true,
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
