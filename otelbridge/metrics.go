package otelbridge

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
)

// Metrics publishes a recorder on the host's MeterProvider, through
// OpenTelemetry's metrics API (docs/CONTRACT.md §9, Metrics): what its
// on-call alerts on — frames by outcome, frames pending, the queue's
// depth, whether it can write now and when it last did, each batch's
// write latency and the batches retried.
// Give it to the recorder (core.WithObserver(m)), then Observe the
// recorder. The instruments' names are in conventions.go.
type Metrics struct {
	duration metric.Float64Histogram
	retries  metric.Int64Counter
	meter    metric.Meter
	// The agent metrics a Bridge measures (WithMetrics).
	agentDuration, toolDuration metric.Float64Histogram
	toolCalls, requests         metric.Int64Histogram
}

var _ core.Observer = (*Metrics)(nil)

// NewMetrics creates the instruments on mp's meter.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	m := &Metrics{meter: mp.Meter(instrumentationName, metric.WithInstrumentationVersion(core.Version))}
	var err error
	if m.duration, err = m.meter.Float64Histogram(metricBatchDuration, metric.WithUnit("s"),
		metric.WithDescription("How long one attempt to write a batch of frames took."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
			5, 10)); err != nil {
		return nil, err
	}
	if m.retries, err = m.meter.Int64Counter(metricBatchRetries, metric.WithUnit("{batch}"),
		metric.WithDescription("Batches kept and retried while the database was unavailable.")); err != nil {
		return nil, err
	}
	// The boundaries the conventions advise for each duration; a subagent
	// makes a few to hundreds of tool calls and model requests.
	agent := metric.WithExplicitBucketBoundaries(0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8,
		409.6)
	tool := metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
		20.48, 40.96, 81.92)
	calls := metric.WithExplicitBucketBoundaries(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
	if m.agentDuration, err = m.meter.Float64Histogram(metricAgentDuration, metric.WithUnit("s"), agent,
		metric.WithDescription("How long a subagent ran: its invoke_agent span, from its own start to its own "+
			"end where reported.")); err != nil {
		return nil, err
	}
	if m.toolDuration, err = m.meter.Float64Histogram(metricToolDuration, metric.WithUnit("s"), tool,
		metric.WithDescription("How long the tool call that launched a subagent took: its execute_tool span "+
			"(a background launch returns at once).")); err != nil {
		return nil, err
	}
	if m.toolCalls, err = m.meter.Int64Histogram(metricAgentToolCalls, metric.WithUnit("{tool_call}"), calls,
		metric.WithDescription("The tool calls a subagent's run made, where reported.")); err != nil {
		return nil, err
	}
	if m.requests, err = m.meter.Int64Histogram(metricAgentRequests, metric.WithUnit("{inference_call}"), calls,
		metric.WithDescription("The model requests a subagent's run made (its own, not its children's), where "+
			"reported.")); err != nil {
		return nil, err
	}
	return m, nil
}

// measure records an ended run on the agent metrics (nil m: none).
func (m *Metrics) measure(ctx context.Context, row core.Subagent) {
	if m == nil {
		return
	}
	agent := metric.WithAttributes(agentMetricAttributes(row)...)
	if start, end, ok := runOf(row); ok { // a run that ended before it started measured nothing
		m.agentDuration.Record(ctx, end.Sub(start).Seconds(), agent)
	}
	if took := row.SettledAt.Sub(row.ObservedAt); took >= 0 {
		m.toolDuration.Record(ctx, took.Seconds(), metric.WithAttributes(toolMetricAttributes(row)...))
	}
	if row.ToolUseCount != nil {
		m.toolCalls.Record(ctx, *row.ToolUseCount, agent)
	}
	if row.Requests != nil {
		m.requests.Record(ctx, *row.Requests, agent)
	}
}

// Batch implements core.Observer.
func (m *Metrics) Batch(_ int, took time.Duration, outcome core.BatchOutcome) {
	ctx := context.Background()
	m.duration.Record(ctx, took.Seconds(), metric.WithAttributes(attribute.String(attrOutcome, string(outcome))))
	if outcome == core.BatchRetried {
		m.retries.Add(ctx, 1)
	}
}

// Observe publishes rec's counters — frames by outcome, pending — its
// queue's depth, its readiness and its last write's time, read at each
// collection; the returned function stops it. The outcomes partition the
// frames recorded: persisted, failed, dropped (the queue was full: the
// counters' failed less these) and skipped (no identity).
func (m *Metrics) Observe(rec *core.Recorder) (stop func() error, err error) {
	frames, err := m.meter.Int64ObservableCounter(metricFrames, metric.WithUnit("{frame}"),
		metric.WithDescription("Frames recorded, by outcome: persisted, failed, dropped (the queue was full) or "+
			"skipped (no identity)."))
	if err != nil {
		return nil, err
	}
	pending, err := m.meter.Int64ObservableUpDownCounter(metricFramesPending, metric.WithUnit("{frame}"),
		metric.WithDescription("Frames recorded and not yet written or given up."))
	if err != nil {
		return nil, err
	}
	depth, err := m.meter.Int64ObservableUpDownCounter(metricQueueDepth, metric.WithUnit("{frame}"),
		metric.WithDescription("Frames waiting in the recorder's queues for a writer."))
	if err != nil {
		return nil, err
	}
	// No unit: Prometheus would read "1" as a ratio's.
	ready, err := m.meter.Int64ObservableGauge(metricReady, metric.WithDescription(
		"1 while the recorder can write: the migration pass has made the table ready and the database answered "+
			"the last write; else 0."))
	if err != nil {
		return nil, err
	}
	lastWrite, err := m.meter.Float64ObservableGauge(metricLastWrite, metric.WithUnit("s"),
		metric.WithDescription("When a frame was last written, in seconds since the Unix epoch (absent before the "+
			"first)."))
	if err != nil {
		return nil, err
	}
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		v, st := rec.Counters().Values(), rec.State()
		for outcome, n := range map[string]int64{
			"persisted": v.Persisted, "failed": v.Failed - v.Dropped, "dropped": v.Dropped,
			"skipped": v.SkippedNoIdentity,
		} {
			o.ObserveInt64(frames, n, metric.WithAttributes(attribute.String(attrOutcome, outcome)))
		}
		o.ObserveInt64(pending, v.Pending)
		o.ObserveInt64(depth, int64(rec.QueueDepth()))
		up := int64(0)
		if st.Ready && st.Reachable {
			up = 1
		}
		o.ObserveInt64(ready, up)
		if !st.LastWrite.IsZero() {
			o.ObserveFloat64(lastWrite, float64(st.LastWrite.UnixMicro())/1e6)
		}
		return nil
	}, frames, pending, depth, ready, lastWrite)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// ObserveStale publishes, at each collection, how many subagents never
// came back (docs/CONTRACT.md §5.8): the rows observed within the last
// window whose agent may still end and has not, started more than
// olderThan ago (report.StaleLister, at most report.MaxStale). The window
// keeps each collection's read on the observed_at index; a read that
// fails observes nothing. The returned function stops it.
func (m *Metrics) ObserveStale(src report.StaleLister, olderThan, window time.Duration) (stop func() error,
	err error) {
	if olderThan <= 0 || window <= 0 {
		return nil, fmt.Errorf("otelbridge: ObserveStale: olderThan %s and window %s must be positive", olderThan,
			window)
	}
	stale, err := m.meter.Int64ObservableGauge(metricStale, metric.WithUnit("{subagent}"),
		metric.WithDescription("Subagents whose agent may still run — a background launch or an open call — with no "+
			"end seen for longer than the threshold: running long, or never came back."))
	if err != nil {
		return nil, err
	}
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		now := time.Now()
		rows, err := src.Stale(ctx, report.StaleQuery{Since: now.Add(-window), Before: now.Add(-olderThan),
			Limit: report.MaxStale})
		if err != nil {
			return err
		}
		o.ObserveInt64(stale, int64(len(rows)))
		return nil
	}, stale)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
