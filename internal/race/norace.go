//go:build !race

// Package race says whether the test binary runs under the race detector:
// a test that decodes tens of megabytes on one goroutine, or measures the
// heap (which the detector's shadow memory distorts), skips under -race and
// runs in scripts/test's run without it (built without cgo), where it is
// cheap and its figures are the real ones.
package race

// Enabled reports whether the binary was built with -race.
const Enabled = false
