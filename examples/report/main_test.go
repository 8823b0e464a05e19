package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestReport: each read answers what the record holds — the record is
// activated, the failed subagent is named and costed apart, the nested
// subagent sits under its parent.
func TestReport(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "host.db")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"activation: activated (an absence is a real absence); healthy: true, shortfall 0, excess 5\n",
		"sess-a: 4 subagents, tokens 25000 over 4 reported\n",
		"  1 turn(s) launched 4 subagents\n",
		"  coverage of sess-a: known (zero means zero)\n",
		"overview: 5 rows, 1 failed\n",
		"    explorer           3 invoked, 0 failed, tokens 22000, median 20000 ms\n",
		"  failed, by type:\n    security-reviewer  1 invoked, 1 failed, tokens 3000, median 9000 ms\n",
		"from +0s: 4 invoked, 1 failed\n",
		"from +30m0s: 1 invoked, 0 failed\n",
		"failed: sess-a toolu_2 (security-reviewer)\n",
		"session sess-b: 1 subagents, 1 open, coverage known\nsession sess-a: 4 subagents, 0 open, coverage known\n",
		"toolu_3 completed\n  toolu_4 completed\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
