package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"google.golang.org/protobuf/proto"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/fxmodule"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
	"github.com/subagentctx/subagentctx/otelbridge"
)

// receiver is an OTLP/HTTP trace endpoint: it decodes each export's
// protobuf and keeps the spans.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil || req.URL.Path != "/v1/traces" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// pair is one row's two spans as received.
type pair struct{ tool, agent *tracepb.Span }

// byRow is the spans received per tool call id, and how many in all.
func (r *receiver) byRow() (map[string]pair, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]pair{}
	for _, s := range r.spans {
		a := attributes(s)
		p := out[a["gen_ai.tool.call.id"]]
		if a["gen_ai.operation.name"] == "execute_tool" {
			p.tool = s
		} else {
			p.agent = s
		}
		out[a["gen_ai.tool.call.id"]] = p
	}
	return out, len(r.spans)
}

func attributes(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			out[kv.Key] = fmt.Sprint(v.BoolValue)
		}
	}
	return out
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func frame(tool, parent, status string, at time.Duration, p core.Payload) core.Frame {
	return core.Frame{TaskSessionID: "sess", TaskID: "task", TurnID: "turn-1", ExecutionID: "exec", ToolCallID: tool,
		ParentToolCallID: parent, ToolStatus: status, ObservedAt: t0.Add(at), Payload: &p}
}

// TestSpansThroughOTLP: an fx host with the bridge sends, through the
// SDK's OTLP/HTTP exporter, two spans for each subagent that is over —
// nested under its parent's invoke_agent span, timed from observed_at to
// settled_at (a background run's agent span to its reported end,
// docs/CONTRACT.md §3.4), failed as an error, async as such, usage only
// where reported — and none for one never settled; a replay of the store
// sends a backfilled row's spans, and the live rows' again under the same
// ids.
func TestSpansThroughOTLP(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	app, rec, store, bridge := bridgedHost(t, srv.URL+"/v1/traces")
	launch := frame("async", "", "pending", time.Second, core.Payload{SubagentType: "reviewer", IsAsync: true})
	launch.Settled = true // an async launch: the call returns once the subagent starts
	// Its end, reported later (an SDK's task_notification, a hook's
	// SubagentStop): only then has it spans, the agent's ending there.
	// The parent's run usage, from its transcript: input_tokens on the span
	// counts the cached ones too.
	usage := frame("parent", "", "completed", 5*time.Second, core.Payload{TotalTokens: 9000, AgentID: "agent-7"})
	in, out, read, write, reqs := int64(130), int64(512), int64(6000), int64(1000), int64(3)
	usage.Usage = &core.Usage{InputTokens: &in, OutputTokens: &out, CacheReadTokens: &read, CacheWriteTokens: &write,
		Requests: &reqs}
	end := frame("async", "", "", 7*time.Second, core.Payload{Status: "completed"})
	end.EndedAt = t0.Add(7 * time.Second)
	for _, f := range []core.Frame{
		frame("parent", "", "in_progress", 0, core.Payload{SubagentType: "planner", Description: "Plan it", Model: "opus"}),
		frame("child", "parent", "failed", 2*time.Second, core.Payload{SubagentType: "explorer", TotalTokens: 1200}),
		usage,
		launch,
		frame("open", "", "in_progress", 3*time.Second, core.Payload{SubagentType: "writer"}),
		end,
	} {
		rec.Record(context.Background(), f)
	}
	// A backfilled row (history), settled, straight into the store.
	settled := t0.Add(9 * time.Second)
	history := core.Subagent{TaskSessionID: "sess", TaskID: "task", AgentExecutionID: core.UnknownExecution,
		ToolCallID: "old", ID: "m-1", Source: core.SourceBackfill, ObservedAt: t0.Add(8 * time.Second),
		SettledAt: &settled, ToolStatus: ptr("completed"), SubagentType: ptr("explorer")}
	if err := store.Upsert(context.Background(), history); err != nil {
		t.Fatal(err)
	}
	exported := store.(report.Exporter).Export(context.Background(), report.ExportQuery{})
	n, err := bridge.Replay(context.Background(), exported)
	if err != nil || n != 4 {
		t.Fatalf("replay: %d rows with spans, %v; want the four settled", n, err)
	}
	app.RequireStop() // the recorder drains, the bridge closes, the exporter flushes

	rows, total := rcv.byRow()
	if _, ok := rows["open"]; ok {
		t.Error("a row never settled has spans")
	}
	// Live: parent, child, async (two spans each); replay: the same three
	// and old.
	if total != 2*(3+4) {
		t.Errorf("%d spans received, want 14", total)
	}
	for id, p := range rows {
		if p.tool == nil || p.agent == nil {
			t.Fatalf("%s: spans %+v", id, p)
		}
		if string(p.agent.ParentSpanId) != string(p.tool.SpanId) || p.tool.Kind != tracepb.Span_SPAN_KIND_INTERNAL ||
			p.agent.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
			t.Errorf("%s: invoke_agent is not the INTERNAL child of execute_tool", id)
		}
	}
	parent, child, async, old := rows["parent"], rows["child"], rows["async"], rows["old"]
	if string(child.tool.ParentSpanId) != string(parent.agent.SpanId) ||
		string(child.tool.TraceId) != string(parent.tool.TraceId) {
		t.Error("the nested subagent is not under its parent's invoke_agent span")
	}
	if got, want := parent.tool.StartTimeUnixNano, uint64(t0.UnixNano()); got != want {
		t.Errorf("parent starts at %d, want observed_at %d", got, want)
	}
	if got, want := parent.tool.EndTimeUnixNano, uint64(t0.Add(5*time.Second).UnixNano()); got != want {
		t.Errorf("parent ends at %d, want settled_at %d", got, want)
	}
	pa := attributes(parent.agent)
	for k, want := range map[string]string{
		"gen_ai.agent.name": "planner", "gen_ai.agent.description": "Plan it", "gen_ai.request.model": "opus",
		"subagentctx.agent_id": "agent-7", "subagentctx.total_tokens": "9000", "subagentctx.task_session_id": "sess",
		"subagentctx.agent_execution_id": "exec", "subagentctx.source": "live",
	} {
		if pa[k] != want {
			t.Errorf("parent's invoke_agent %s = %q, want %q", k, pa[k], want)
		}
	}
	if _, ok := pa["subagentctx.tool_use_count"]; ok {
		t.Error("an unreported metric is an attribute")
	}
	pt := attributes(parent.tool)
	for k, want := range map[string]string{
		"gen_ai.transfer.mode":        "return_to_caller",
		"gen_ai.transfer.target.type": "agent", "gen_ai.transfer.target.name": "planner",
	} {
		if pt[k] != want {
			t.Errorf("parent's execute_tool %s = %q, want %q", k, pt[k], want)
		}
	}
	if child.agent.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR ||
		parent.agent.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR ||
		attributes(child.agent)["error.type"] != "failed" || attributes(child.tool)["error.type"] != "failed" {
		t.Error("the failed subagent is not an error of type failed, or the completed one is")
	}
	for k, want := range map[string]string{"gen_ai.usage.input_tokens": "7130", "gen_ai.usage.output_tokens": "512",
		"gen_ai.usage.cache_read.input_tokens": "6000", "gen_ai.usage.cache_creation.input_tokens": "1000",
		"subagentctx.requests": "3"} {
		if got := pa[k]; got != want {
			t.Errorf("parent's run usage %s = %q, want %q (input with the cached ones)", k, got, want)
		}
	}
	if _, ok := attributes(child.agent)["gen_ai.usage.input_tokens"]; ok {
		t.Error("a run whose usage was not reported has gen_ai.usage.input_tokens (from total_tokens?)")
	}
	// Every name exported is one the bridge lists (otelbridge/conventions.txt).
	listed, err := os.ReadFile("../../otelbridge/conventions.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rows {
		for _, span := range []*tracepb.Span{p.tool, p.agent} {
			for k := range attributes(span) {
				if !slices.Contains(strings.Split(string(listed), "\n"), k) {
					t.Errorf("span attribute %s is not in otelbridge/conventions.txt", k)
				}
			}
		}
	}
	if attributes(async.tool)["subagentctx.is_async"] != "true" || async.tool.EndTimeUnixNano !=
		uint64(t0.Add(time.Second).UnixNano()) || async.agent.EndTimeUnixNano != uint64(end.EndedAt.UnixNano()) {
		t.Error("the async launch is not async, its call settled at its launch and its agent ended at its end")
	}
	if attributes(old.agent)["subagentctx.source"] != "backfill" {
		t.Error("the backfilled row's spans do not say so")
	}
	// The replay's spans of the live rows are the live path's: the same
	// ids, received twice.
	rcv.mu.Lock()
	seen := map[string]int{}
	for _, s := range rcv.spans {
		seen[fmt.Sprintf("%x/%x", s.TraceId, s.SpanId)]++
	}
	rcv.mu.Unlock()
	twice := 0
	for _, n := range seen {
		if n == 2 {
			twice++
		}
	}
	if twice != 6 {
		t.Errorf("%d span ids sent by both paths, want the live rows' 6", twice)
	}
}

func ptr[T any](v T) *T { return &v }

// bridgedHost starts an fx host on the memory store with the Bridge, its
// spans exported to tracesURL, and opts.
func bridgedHost(t *testing.T, tracesURL string, opts ...fx.Option) (*fxtest.App, *core.Recorder, core.Store,
	*otelbridge.Bridge) {
	var rec *core.Recorder
	var store core.Store
	var bridge *otelbridge.Bridge
	app := fxtest.New(t, append(opts,
		fxmodule.Memory,
		Bridge,
		fx.Provide(func(lc fx.Lifecycle) (trace.TracerProvider, error) { return Tracing(lc, tracesURL) }),
		fx.Populate(&rec, &store, &bridge),
	)...)
	app.RequireStart()
	return app, rec, store, bridge
}

// tracing is the host's tracing, started, exporting to a receiver of the
// test's own; stop the lifecycle to flush it.
func tracing(t *testing.T) (*receiver, trace.TracerProvider, *fxtest.Lifecycle) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	lc := fxtest.NewLifecycle(t)
	tp, err := Tracing(lc, srv.URL+"/v1/traces")
	if err != nil {
		t.Fatal(err)
	}
	lc.RequireStart()
	return rcv, tp, lc
}

// TestFailingExporterCostsNoFrame: an endpoint that refuses every export
// costs the record nothing: every frame is persisted.
func TestFailingExporterCostsNoFrame(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	var rec *core.Recorder
	app := fxtest.New(t,
		fxmodule.Memory,
		Bridge,
		fx.Provide(func(lc fx.Lifecycle) (trace.TracerProvider, error) { return Tracing(lc, srv.URL+"/v1/traces") }),
		fx.Decorate(func(*core.Counters) *core.Counters { return core.NewCounters() }), // this app's own
		fx.Populate(&rec),
	)
	app.RequireStart()
	const n = 500
	for i := range n {
		rec.Record(context.Background(), frame(fmt.Sprint("t", i), "", "completed", time.Duration(i), core.Payload{}))
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := rec.Counters().Values(); v.Persisted != n || v.Failed != 0 {
		t.Errorf("counters %+v, want every frame persisted", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	app.Stop(ctx) // the host's exporter gives up its spans; that is its own business
}

// TestUnderTheHostsTurn: with WithTurn, a subagent without a parent on
// record starts under the span the host gives for its turn.
func TestUnderTheHostsTurn(t *testing.T) {
	rcv, tp, lc := tracing(t)
	turnCtx, turn := tp.Tracer("host").Start(context.Background(), "turn")
	b := otelbridge.New(tp, otelbridge.WithTurn(func(context.Context, core.Subagent) context.Context { return turnCtx }))
	settled := t0.Add(time.Second)
	row := core.Subagent{TaskSessionID: "sess", TaskID: "task", AgentExecutionID: "exec", ToolCallID: "top",
		ID: "r-1", Source: core.SourceLive, ObservedAt: t0, SettledAt: &settled, ToolStatus: ptr("completed")}
	rows := func(yield func(core.Subagent, error) bool) { yield(row, nil) }
	if n, err := b.Replay(context.Background(), rows); n != 1 || err != nil {
		t.Fatalf("replay: %d, %v", n, err)
	}
	turn.End()
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lc.RequireStop()
	got, _ := rcv.byRow()
	if p := got["top"]; p.tool == nil || fmt.Sprintf("%x", p.tool.ParentSpanId) != turn.SpanContext().SpanID().String() {
		t.Errorf("the subagent's execute_tool span is not under the host's turn span: %+v", p.tool)
	}
}

// TestLiveSpansAreTheRecord (docs/CONTRACT.md §9, Decision 8.17): a parent
// and its child recovered from history; the parent's live frames resume
// it under an execution in a later turn, with the host restarting between
// them (a new recorder and bridge); a late live child. The live spans are
// the stored rows' — history's observed_at and source, its turn's trace —
// and equal their replay in ids, times and attributes; the history's child
// sits under its parent's span across the seam.
func TestLiveSpansAreTheRecord(t *testing.T) {
	rcv, tp, lc := tracing(t)
	ctx := context.Background()
	store := memory.New()
	settled := t0.Add(3 * time.Second)
	for _, h := range []core.Subagent{
		{ID: "m-parent", ToolCallID: "parent", ObservedAt: t0, ToolStatus: ptr("in_progress"), TotalTokens: ptr(int64(1000))},
		{ID: "m-child", ToolCallID: "child", ParentToolCallID: ptr("parent"), ObservedAt: t0.Add(time.Second),
			SettledAt: &settled, ToolStatus: ptr("completed"), TotalTokens: ptr(int64(400))},
	} {
		h.TaskSessionID, h.TaskID, h.TurnID, h.AgentExecutionID = "sess", "task", ptr("turn-1"), core.UnknownExecution
		h.Source = core.SourceBackfill
		if err := store.Upsert(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	resumed := func(tool, parent, status string, at time.Duration) core.Frame {
		f := frame(tool, parent, status, at, core.Payload{SubagentType: "planner"})
		f.TurnID = "turn-2" // the session resumed in a later turn
		return f
	}
	boot := func() (*core.Recorder, *otelbridge.Bridge) {
		b := otelbridge.New(tp, otelbridge.WithStore(store))
		rec, err := core.NewRecorder(store, core.WithWritten(b.Written))
		if err != nil {
			t.Fatal(err)
		}
		return rec, b
	}
	rec, b := boot()
	rec.Record(ctx, resumed("parent", "", "in_progress", 10*time.Second))
	rec.Close(ctx)
	b.Close(ctx)
	rec, b = boot() // the host restarted between the parent's frames
	rec.Record(ctx, resumed("parent", "", "completed", 20*time.Second))
	rec.Record(ctx, resumed("late", "parent", "completed", 25*time.Second))
	rec.Close(ctx)
	b.Close(ctx)
	if err := tp.(interface{ ForceFlush(context.Context) error }).ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	live := len(rcv.spans)
	rcv.mu.Unlock()
	if _, err := otelbridge.New(tp).Replay(ctx, store.Export(ctx, report.ExportQuery{})); err != nil {
		t.Fatal(err)
	}
	lc.RequireStop()

	rcv.mu.Lock()
	spans := slices.Clone(rcv.spans)
	rcv.mu.Unlock()
	if live != 4 || len(spans) != 10 {
		t.Fatalf("%d live spans, %d in all; want the parent's and the late child's 4, then 6 replayed", live, len(spans))
	}
	key := func(s *tracepb.Span) string { return fmt.Sprintf("%x/%x", s.TraceId, s.SpanId) }
	replayed := map[string]*tracepb.Span{}
	for _, s := range spans[live:] {
		replayed[key(s)] = s
	}
	for _, s := range spans[:live] {
		r := replayed[key(s)]
		switch {
		case r == nil:
			t.Errorf("live span %s %s has no replay with its ids", s.Name, key(s))
		case string(r.ParentSpanId) != string(s.ParentSpanId) || r.StartTimeUnixNano != s.StartTimeUnixNano ||
			r.EndTimeUnixNano != s.EndTimeUnixNano || fmt.Sprint(attributes(r)) != fmt.Sprint(attributes(s)):
			t.Errorf("live span %s differs from its replay:\n live   %v %d-%d %v\n replay %v %d-%d %v", s.Name,
				s.ParentSpanId, s.StartTimeUnixNano, s.EndTimeUnixNano, attributes(s), r.ParentSpanId,
				r.StartTimeUnixNano, r.EndTimeUnixNano, attributes(r))
		}
	}
	rows, _ := rcv.byRow()
	parent, child, late := rows["parent"], rows["child"], rows["late"]
	pa := attributes(parent.agent)
	if parent.tool.StartTimeUnixNano != uint64(t0.UnixNano()) || pa["subagentctx.source"] != "backfill" ||
		pa["subagentctx.total_tokens"] != "1000" {
		t.Errorf("the parent's spans are not the stored row's (history's observed_at, source, tokens): %v",
			attributes(parent.agent))
	}
	for name, c := range map[string]pair{"history's child": child, "the late child": late} {
		if string(c.tool.ParentSpanId) != string(parent.agent.SpanId) ||
			string(c.tool.TraceId) != string(parent.tool.TraceId) {
			t.Errorf("%s is not under the parent's invoke_agent span", name)
		}
	}
}

// metricsReceiver is an OTLP/HTTP metrics endpoint: it decodes each
// export's protobuf and keeps the last value of each instrument's points,
// by name and outcome (name{outcome}), or by name and every attribute
// (name{k=v,…}, sorted).
type metricsReceiver struct {
	mu     sync.Mutex
	points map[string]int64   // integer sums and gauges
	floats map[string]float64 // floating-point gauges
	counts map[string]uint64  // histograms' counts
	sums   map[string]float64 // histograms' sums
	units  map[string]string  // each instrument's unit, by name
}

func newMetricsReceiver() *metricsReceiver {
	return &metricsReceiver{points: map[string]int64{}, floats: map[string]float64{}, counts: map[string]uint64{},
		sums: map[string]float64{}, units: map[string]string{}}
}

func (r *metricsReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg collectormetrics.ExportMetricsServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil || req.URL.Path != "/v1/metrics" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rm := range msg.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				r.units[m.Name] = m.Unit
				key := func(kvs []*commonpb.KeyValue) string {
					var all []string
					for _, kv := range kvs {
						if kv.Key == "outcome" {
							return m.Name + "{" + kv.Value.GetStringValue() + "}"
						}
						all = append(all, kv.Key+"="+kv.Value.GetStringValue())
					}
					if all == nil {
						return m.Name
					}
					slices.Sort(all)
					return m.Name + "{" + strings.Join(all, ",") + "}"
				}
				for _, p := range append(m.GetSum().GetDataPoints(), m.GetGauge().GetDataPoints()...) {
					if _, ok := p.Value.(*metricspb.NumberDataPoint_AsDouble); ok {
						r.floats[key(p.Attributes)] = p.GetAsDouble()
					} else {
						r.points[key(p.Attributes)] = p.GetAsInt()
					}
				}
				for _, p := range m.GetHistogram().GetDataPoints() {
					r.counts[key(p.Attributes)], r.sums[key(p.Attributes)] = p.Count, p.GetSum()
				}
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// TestMetricsThroughOTLP (docs/CONTRACT.md §9, Metrics): an fx host on
// SQLite with RecorderMetrics exports, through the SDK's OTLP/HTTP metric
// exporter, the recorder's instruments — frames by outcome (the outcomes
// apart: dropped is not failed), pending, the queue's depth, readiness,
// the last write's time, every batch's write duration — with their values
// after the recorder drained at stop.
func TestMetricsThroughOTLP(t *testing.T) {
	rcv := newMetricsReceiver()
	start := time.Now()
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	meteredHost(t, fx.Provide(func(lc fx.Lifecycle) (metric.MeterProvider, error) {
		return Meters(lc, srv.URL+"/v1/metrics", time.Hour) // exported at stop
	}), nil)

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for name, want := range map[string]int64{
		"subagentctx.recorder.frames{persisted}": 41, "subagentctx.recorder.frames{failed}": 0,
		"subagentctx.recorder.frames{skipped}": 1, "subagentctx.recorder.frames{dropped}": 0,
		"subagentctx.recorder.frames.pending": 0, "subagentctx.recorder.queue.depth": 0,
		"subagentctx.recorder.ready": 1, "subagentctx.subagents.stale": 1,
	} {
		if got, ok := rcv.points[name]; !ok || got != want {
			t.Errorf("%s = %d (exported %v), want %d", name, got, ok, want)
		}
	}
	last := rcv.floats["subagentctx.recorder.last_write"]
	if at := time.UnixMicro(int64(last * 1e6)); at.Before(start.Add(-time.Second)) || at.After(time.Now()) {
		t.Errorf("subagentctx.recorder.last_write = %v (%v), want during the test", last, at)
	}
	if c := rcv.counts["subagentctx.recorder.batch.duration{written}"]; c == 0 {
		t.Errorf("no batch write duration exported: %v", rcv.counts)
	}
	if u := rcv.units["subagentctx.recorder.batch.duration"]; u != "s" {
		t.Errorf("the write duration's unit is %q, want s", u)
	}
	if u := rcv.units["subagentctx.recorder.frames"]; u != "{frame}" {
		t.Errorf("the frames' unit is %q, want {frame}", u)
	}
}

// TestAgentMetricsThroughOTLP (docs/CONTRACT.md §9, Metrics): with the
// bridge measuring (WithMetrics), each run that ended is measured once on
// the conventions' agent metrics — its invoke_agent span's duration (a
// background run's to its reported end), its execute_tool span's, its
// tool calls and model requests where reported — with the agent's name,
// model and failure and nothing per run; a run that never ended is not
// measured, nor is a replay, nor a run whose reported end precedes its
// reported start.
func TestAgentMetricsThroughOTLP(t *testing.T) {
	rcv := newMetricsReceiver()
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	spans := httptest.NewServer(&receiver{})
	defer spans.Close()
	app, rec, store, bridge := bridgedHost(t, spans.URL+"/v1/traces",
		fx.Provide(otelbridge.NewMetrics),
		fx.Provide(func(lc fx.Lifecycle) (metric.MeterProvider, error) {
			return Meters(lc, srv.URL+"/v1/metrics", time.Hour) // exported at stop
		}),
	)
	uses, reqs := int64(7), int64(3)
	done := frame("parent", "", "completed", 5*time.Second, core.Payload{ToolUseCount: &uses})
	done.Usage = &core.Usage{Requests: &reqs}
	launch := frame("async", "", "pending", time.Second, core.Payload{SubagentType: "reviewer", IsAsync: true})
	launch.Settled = true
	end := frame("async", "", "", 7*time.Second, core.Payload{Status: "completed"})
	end.EndedAt = t0.Add(7 * time.Second)
	// Two sources whose clocks disagree: an end before the start measures
	// no run (its tool call, 0 s, is measured).
	skewed := frame("skewed", "", "completed", 8*time.Second, core.Payload{SubagentType: "tester"})
	skewed.StartedAt, skewed.EndedAt = t0.Add(10*time.Second), t0.Add(4*time.Second)
	for _, f := range []core.Frame{
		frame("parent", "", "in_progress", 0, core.Payload{SubagentType: "planner", Model: "opus"}),
		frame("child", "parent", "failed", 2*time.Second, core.Payload{SubagentType: "explorer"}),
		done, launch, end, skewed,
		frame("open", "", "in_progress", 3*time.Second, core.Payload{SubagentType: "writer"}),
	} {
		rec.Record(context.Background(), f)
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	exported := store.(report.Exporter).Export(context.Background(), report.ExportQuery{})
	if n, err := bridge.Replay(context.Background(), exported); err != nil || n != 4 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	app.RequireStop()

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	const planner = "gen_ai.agent.name=planner,gen_ai.request.model=opus"
	const task = "gen_ai.tool.name=Task,gen_ai.tool.type=function"
	want := map[string]struct {
		count uint64
		sum   float64
	}{
		"gen_ai.invoke_agent.duration{" + planner + "}":                              {1, 5},
		"gen_ai.invoke_agent.duration{error.type=failed,gen_ai.agent.name=explorer}": {1, 0},
		"gen_ai.invoke_agent.duration{gen_ai.agent.name=reviewer}":                   {1, 6},
		"gen_ai.execute_tool.duration{" + task + "}":                                 {3, 5},
		"gen_ai.execute_tool.duration{error.type=failed," + task + "}":               {1, 0},
		"gen_ai.invoke_agent.tool_calls{" + planner + "}":                            {1, 7},
		"gen_ai.invoke_agent.inference_calls{" + planner + "}":                       {1, 3},
	}
	for k, w := range want {
		if rcv.counts[k] != w.count || rcv.sums[k] != w.sum {
			t.Errorf("%s: %d measurements summing %v, want %d summing %v", k, rcv.counts[k], rcv.sums[k], w.count, w.sum)
		}
	}
	for k := range rcv.counts {
		if _, ok := want[k]; !ok && strings.HasPrefix(k, "gen_ai.") {
			t.Errorf("%s measured (%d), which no run that ended gives", k, rcv.counts[k])
		}
	}
	for name, unit := range map[string]string{"gen_ai.invoke_agent.duration": "s", "gen_ai.execute_tool.duration": "s",
		"gen_ai.invoke_agent.tool_calls": "{tool_call}", "gen_ai.invoke_agent.inference_calls": "{inference_call}"} {
		if rcv.units[name] != unit {
			t.Errorf("%s's unit is %q, want %q", name, rcv.units[name], unit)
		}
	}
}

// meteredHost runs an fx host on SQLite with RecorderMetrics on the
// MeterProvider meters gives, records 40 frames and one without identity,
// calls before (when not nil) with the recorder drained, then stops.
func meteredHost(t *testing.T, meters fx.Option, before func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "host.db")
	db, err := sqlite.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	tables := sqlstore.Tables{}.WithDefaults()
	if err := kandevtest.CreateTables(context.Background(), db, tables); err != nil {
		t.Fatal(err)
	}
	kandevtest.InsertSession(context.Background(), db, tables, "sess", "task")
	var rec *core.Recorder
	var runner *migration.Runner
	app := fxtest.New(t,
		fx.Provide(func() (*sqlstore.Store, error) { return sqlite.New(db) }),
		fxmodule.SQL,
		RecorderMetrics,
		meters,
		fx.Decorate(func(*core.Counters) *core.Counters { return core.NewCounters() }), // this app's own
		fx.Populate(&rec, &runner),
		fx.NopLogger,
	)
	app.RequireStart()
	await.Recv(t, runner.Ready(), "the table ready")
	for i := range 40 {
		rec.Record(context.Background(), frame(fmt.Sprint("t", i), "", "completed", time.Duration(i), core.Payload{}))
	}
	rec.Record(context.Background(), core.Frame{TaskSessionID: "sess"}) // no identity: skipped
	// A background launch two hours ago whose end never came: stale.
	rec.Record(context.Background(), core.Frame{TaskSessionID: "sess", TaskID: "task", ExecutionID: "exec",
		ToolCallID: "t-lost", ToolStatus: "completed", ObservedAt: time.Now().Add(-2 * time.Hour),
		Payload: &core.Payload{Status: "async_launched", IsAsync: true}})
	if before != nil {
		if err := rec.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		before()
	}
	app.RequireStop()
}

// TestMetricsScrapedByPrometheus: the same instruments through
// OpenTelemetry's Prometheus exporter, as a scrape of /metrics reads them.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	var handler http.Handler
	var scrape string
	meteredHost(t, fx.Options(
		fx.Provide(func(lc fx.Lifecycle) (metric.MeterProvider, http.Handler, error) { return Scraped(lc) }),
		fx.Populate(&handler),
	), func() {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		scrape = w.Body.String()
	})
	for _, want := range []string{
		`subagentctx_recorder_frames_total{otel_scope_name="github.com/subagentctx/subagentctx/otelbridge"`,
		`outcome="persisted"} 41`, `outcome="skipped"} 1`, `outcome="dropped"} 0`, "subagentctx_subagents_stale{",
		"subagentctx_recorder_frames_pending", "subagentctx_recorder_queue_depth",
		"subagentctx_recorder_ready{", "subagentctx_recorder_last_write_seconds{",
		"subagentctx_recorder_batch_duration_seconds_bucket",
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", scrape)
	}
}
