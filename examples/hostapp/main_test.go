package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
)

// TestHostApp runs the host on every dialect: the stream is recorded, the
// pass completes, the library's lines reach zap, and no goroutine outlives
// the host's stop.
func TestHostApp(t *testing.T) {
	dialects := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "host.db") },
		"postgres": func(t *testing.T) string { return pgtest.NewDatabase(t) },
	}
	for name, database := range dialects {
		t.Run(name, func(t *testing.T) {
			dsn := database(t)
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
