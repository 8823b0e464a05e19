package otelbridge

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/subagentctx/subagentctx/core"
)

// Metrics publishes a recorder on the host's MeterProvider, through
// OpenTelemetry's metrics API (docs/CONTRACT.md §9, Metrics): what its
// on-call alerts on — frames by outcome, frames dropped, frames pending,
// the queue's depth, each batch's write latency and the batches retried.
// Give it to the recorder (core.WithObserver(m)), then Observe the
// recorder. The instruments' names are in conventions.go.
type Metrics struct {
	duration metric.Float64Histogram
	retries  metric.Int64Counter
	meter    metric.Meter
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
	return m, nil
}

// Batch implements core.Observer.
func (m *Metrics) Batch(_ int, took time.Duration, outcome core.BatchOutcome) {
	ctx := context.Background()
	m.duration.Record(ctx, took.Seconds(), metric.WithAttributes(attribute.String(attrBatchOutcome, string(outcome))))
	if outcome == core.BatchRetried {
		m.retries.Add(ctx, 1)
	}
}

// Observe publishes rec's counters — frames by outcome, dropped, pending —
// and its queue's depth, read at each collection; the returned function
// stops it.
func (m *Metrics) Observe(rec *core.Recorder) (stop func() error, err error) {
	frames, err := m.meter.Int64ObservableCounter(metricFrames, metric.WithUnit("{frame}"),
		metric.WithDescription("Frames recorded, by outcome: persisted, failed or skipped (no identity)."))
	if err != nil {
		return nil, err
	}
	dropped, err := m.meter.Int64ObservableCounter(metricFramesDropped, metric.WithUnit("{frame}"),
		metric.WithDescription("Frames dropped because the queue was full (counted failed too)."))
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
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		v := rec.Counters().Values()
		for outcome, n := range map[string]int64{
			"persisted": v.Persisted, "failed": v.Failed, "skipped": v.SkippedNoIdentity,
		} {
			o.ObserveInt64(frames, n, metric.WithAttributes(attribute.String(attrFrameOutcome, outcome)))
		}
		o.ObserveInt64(dropped, v.Dropped)
		o.ObserveInt64(pending, v.Pending)
		o.ObserveInt64(depth, int64(rec.QueueDepth()))
		return nil
	}, frames, dropped, pending, depth)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
