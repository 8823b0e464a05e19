// Command otelhost is an fx host that already exports traces over OTLP and
// sends its subagents there too: the OpenTelemetry bridge on the host's
// TracerProvider, fed by the recorder as rows are written (and able to
// replay a store's history). Point it at any OTLP/HTTP endpoint — Jaeger,
// Langfuse, Phoenix, an OpenTelemetry collector:
//
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces go run ./examples/otelhost
package main

import (
	"context"
	"log"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/subagentctx/subagentctx/core"
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
// subagent's spans once its row settles, never waiting on the exporter.
var Bridge = fx.Options(
	fx.Provide(func(lc fx.Lifecycle, tp trace.TracerProvider, store core.Store) *otelbridge.Bridge {
		b := otelbridge.New(tp, otelbridge.WithStore(store)) // spans from the stored rows: the replay's
		lc.Append(fx.StopHook(b.Close))
		return b
	}),
	fx.Provide(fx.Annotate(
		func(b *otelbridge.Bridge) core.RecorderOption { return core.WithWritten(b.Written) },
		fx.ResultTags(`group:"`+fxmodule.RecorderOptions+`"`),
	)),
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
