package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/webview"
)

// benchView measures the web view's page for a large session (600
// subagents, nested in threes, one turn) beside what it cannot do without:
// listing the session's rows.
func benchView() result {
	s := memory.New()
	rec, _ := core.NewRecorder(s)
	t0 := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	for i := range 600 {
		f := core.Frame{
			TaskSessionID: "big",
			TaskID:        "task",
			TurnID:        "turn",
			ExecutionID:   "e",
			ToolCallID:    fmt.Sprint("tool-", i),
			ToolStatus:    "completed",
			ObservedAt:    t0.Add(time.Duration(i) * 50 * time.Millisecond),
			Payload:       &core.Payload{SubagentType: "worker", Description: "a realistic description of the task"},
		}
		if i%3 != 0 {
			f.ParentToolCallID = fmt.Sprint("tool-", i-i%3)
		}
		rec.Record(context.Background(), f)
	}
	h := webview.New(s)
	page := testing.Benchmark(func(b *testing.B) {
		for range b.N {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/session?id=big", nil))
			if w.Code != 200 {
				b.Fatalf("the session page: %d", w.Code)
			}
			io.Copy(io.Discard, w.Body)
		}
	})
	list := testing.Benchmark(func(b *testing.B) {
		for range b.N {
			s.ListBySession(context.Background(), "big", core.Page{})
		}
	})
	p, l := time.Duration(page.NsPerOp()), time.Duration(list.NsPerOp())
	return result{What: "session page (web view)", Dialect: "memory", Size: "600 subagents, nested",
		Library:  p.Round(10 * time.Microsecond).String(),
		Baseline: l.Round(10*time.Microsecond).String() + " (list the rows)",
		Ratio:    p.Seconds() / l.Seconds(), Target: "< 50 ms a page", Pass: p < 50*time.Millisecond}
}
