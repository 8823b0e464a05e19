package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subagentctx/subagentctx/core"
)

func TestFxHost(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "host.db"), "127.0.0.1:0", false); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	i := strings.Index(line, core.ExpvarName+": ")
	if i < 0 {
		t.Fatalf("no counters in output: %s", line)
	}
	var v core.CounterValues
	if err := json.Unmarshal([]byte(strings.TrimSpace(line[i+len(core.ExpvarName)+2:])), &v); err != nil {
		t.Fatalf("counters not JSON: %v: %s", err, line)
	}
	// kandevtest.Stream: 28 frames, one without a tool call id.
	if v.Attempted != 28 || v.Persisted != 27 || v.SkippedNoIdentity != 1 || v.Failed != 0 {
		t.Errorf("/debug/vars counters: %+v", v)
	}
}
