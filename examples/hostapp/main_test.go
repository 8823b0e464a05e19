package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/subagentctx/subagentctx/internal/testenv"
)

// TestHostApp runs the host on every dialect: the stream is recorded, the
// pass completes, the library's lines reach zap, and no goroutine outlives
// the host's stop.
func TestHostApp(t *testing.T) {
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			_, dsn := d.Open(t)
			before := goleak.IgnoreCurrent()
			var out, logs bytes.Buffer
			if err := run(context.Background(), &out, &logs, dsn); err != nil {
				t.Fatalf("%v\n%s", err, logs.String())
			}
			if !strings.Contains(out.String(), "sess-1: 14 subagents (14 live), state activated") {
				t.Errorf("output:\n%s", out.String())
			}
			if !strings.Contains(logs.String(), `"msg":"subagentctx: migration step ran"`) ||
				!strings.Contains(logs.String(), `"step":"backfill"`) {
				t.Errorf("the library's lines did not reach zap:\n%s", logs.String())
			}
			goleak.VerifyNone(t, before)
		})
	}
}
