package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuning: the refused frame is named, every other frame is written in
// batches the observer saw, the session pages four rows at a time, and a
// prune of nothing that old deletes nothing.
func TestTuning(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "host.db")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"refused: a frame without a session, task or tool call id\n",
		"frames written: 10\n",
		"recorder: ready, last write ",
		"page 1: 4 rows (4 live), toolu_00 … toolu_03\n",
		"page 2: 4 rows (4 live), toolu_04 … toolu_07\n",
		"page 3: 2 rows (2 live), toolu_08 … toolu_09\n",
		"pruned 0 rows (boundary advanced: true)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
