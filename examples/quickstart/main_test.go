package main

import (
	"os"
	"testing"
)

// TestMain gives the program a temporary directory of its own, so its
// database starts empty and leaves nothing behind.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "quickstart")
	if err != nil {
		panic(err)
	}
	os.Setenv("TMPDIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The README's first program records one subagent from its two frames,
// as one row.
func Example() {
	main()
	// Output: toolu_1 explorer Map the repo completed 51234
}
