package otelbridge

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// IDs is an id generator for the host's SDK (sdktrace.WithIDGenerator(
// otelbridge.IDs{})): the bridge's spans get the ids their rows derive,
// so that the live path and a replay send a subagent's spans under the
// same ids; every other span gets random ones. Without it the SDK's own
// random ids stand, and a replay's spans are new ones.
type IDs struct{}

// wanted is the ids the bridge asks for a span it starts.
type wanted struct {
	trace trace.TraceID
	span  trace.SpanID
}

type wantedKey struct{}

// withIDs asks the generator for these ids for the next span started in
// ctx.
func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, wantedKey{}, wanted{t, s})
}

// NewIDs implements the SDK's IDGenerator: a root span's ids.
func (IDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if w, ok := ctx.Value(wantedKey{}).(wanted); ok {
		return w.trace, w.span
	}
	var t trace.TraceID
	binary.NativeEndian.PutUint64(t[:8], rand.Uint64())
	binary.NativeEndian.PutUint64(t[8:], rand.Uint64())
	return t, IDs{}.NewSpanID(context.Background(), t)
}

// NewSpanID implements the SDK's IDGenerator: a child span's id.
func (IDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if w, ok := ctx.Value(wantedKey{}).(wanted); ok {
		return w.span
	}
	var s trace.SpanID
	for s == (trace.SpanID{}) {
		binary.NativeEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}
