package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
)

// TestQuickstart: the README's first program records one subagent from
// its two frames, as one row.
func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "host.db")); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "toolu_1 explorer Map the repo completed 51234\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}
