// Command otelhost is an fx host that already exports traces over OTLP and
// sends its subagents there too: the OpenTelemetry bridge on the host's
// TracerProvider, fed by the recorder as rows are written (and able to
// replay a store's history). Point it at any OTLP/HTTP endpoint — Jaeger,
// Langfuse, Phoenix, an OpenTelemetry collector:
//
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces go -C examples run ./otelhost
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/fxmodule"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/otelbridge"
)

// README: otel
// Tracing is the host's own tracing, as it has it: an OTLP/HTTP exporter
// behind a batching SDK TracerProvider, shut down (flushed) at stop. The
// bridge's ids generator makes a replay's spans the live path's.
func Tracing(lc fx.Lifecycle, endpoint string) (trace.TracerProvider, error) {
	exporter, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithIDGenerator(otelbridge.IDs{}))
	lc.Append(fx.StopHook(tp.Shutdown))
	return tp, nil
}

// Bridge puts the record on the host's TracerProvider: the recorder hands
// it each written row (through fxmodule's option group), and it sends a
// subagent's spans once its row settles, never waiting on the exporter;
// where the host has RecorderMetrics, it also measures each run that
// ended on the conventions' agent metrics.
var Bridge = fx.Options(
	fx.Provide(func(in struct {
		fx.In
		LC      fx.Lifecycle
		TP      trace.TracerProvider
		Store   core.Store
		Metrics *otelbridge.Metrics `optional:"true"`
	}) *otelbridge.Bridge {
		opts := []otelbridge.Option{otelbridge.WithStore(in.Store)} // spans from the stored rows: the replay's
		if in.Metrics != nil {
			opts = append(opts, otelbridge.WithMetrics(in.Metrics))
		}
		b := otelbridge.New(in.TP, opts...)
		in.LC.Append(fx.StopHook(b.Close))
		return b
	}),
	fx.Provide(fx.Annotate(
		func(b *otelbridge.Bridge) core.RecorderOption { return core.WithWritten(b.Written) },
		fx.ResultTags(`group:"`+fxmodule.RecorderOptions+`"`),
	)),
)

// README: end

// README: metrics
// Meters is the host's own metrics, as it has them: an OTLP/HTTP exporter
// behind an SDK MeterProvider, read every interval and flushed at stop.
func Meters(lc fx.Lifecycle, endpoint string, interval time.Duration) (metric.MeterProvider, error) {
	exporter, err := otlpmetrichttp.New(context.Background(), otlpmetrichttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exporter, sdkmetric.WithInterval(interval))))
	lc.Append(fx.StopHook(mp.Shutdown))
	return mp, nil
}

// Scraped is the same for a host whose metrics Prometheus scrapes: an
// SDK MeterProvider behind OpenTelemetry's Prometheus exporter, its
// registry served by the handler the host mounts at /metrics.
func Scraped(lc fx.Lifecycle) (metric.MeterProvider, http.Handler, error) {
	registry := prom.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	lc.Append(fx.StopHook(mp.Shutdown))
	return mp, promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), nil
}

// RecorderMetrics puts the recorder on the host's MeterProvider: each
// batch its writers attempt (through fxmodule's option group), and its
// counters and queue depth at every collection — the last one after the
// recorder drained at stop — and the subagents of the last day with no
// end seen for an hour.
var RecorderMetrics = fx.Options(
	fx.Provide(otelbridge.NewMetrics),
	fx.Provide(fx.Annotate(
		func(m *otelbridge.Metrics) core.RecorderOption { return core.WithObserver(m) },
		fx.ResultTags(`group:"`+fxmodule.RecorderOptions+`"`),
	)),
	fx.Invoke(func(m *otelbridge.Metrics, rec *core.Recorder, stale report.StaleLister) error {
		if _, err := m.Observe(rec); err != nil {
			return err
		}
		_, err := m.ObserveStale(stale, time.Hour, 24*time.Hour)
		return err
	}),
)

// README: end

func main() {
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = "http://127.0.0.1:4318/v1/traces"
	}
	app := fx.New(
		fxmodule.Memory,
		Bridge,
		fx.Provide(func(lc fx.Lifecycle) (trace.TracerProvider, error) { return Tracing(lc, endpoint) }),
		fx.Invoke(func(rec *core.Recorder) {
			for _, f := range kandevtest.Stream("demo-", time.Now().Add(-time.Minute)) {
				rec.Record(context.Background(), f)
			}
		}),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if err := app.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	log.Printf("the demo session's subagents went to %s", endpoint)
}
