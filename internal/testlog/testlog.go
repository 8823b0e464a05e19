// Package testlog is a log sink for tests whose logger is written from
// several goroutines (recorder writers, the migration runner) while the
// test reads it.
package testlog

import (
	"bytes"
	"io"
	"log/slog"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Discard is a logger that writes nothing, for code under test whose log
// a test does not read.
var Discard = slog.New(slog.NewTextHandler(io.Discard, nil))
