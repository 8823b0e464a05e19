package storetest

import (
	"context"
	"testing"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/testlog"
)

// testRecorderAlike: a Recorder answers the same whatever the store
// (docs/CONTRACT.md §6): a frame whose caller's context is already
// cancelled is still written (the write outlives the call); a frame
// recorded after Close is counted failed and not written; after Close
// nothing is pending. The one declared difference: a Synchronous store's
// row is readable as soon as Record returns, before any Flush.
func testRecorderAlike(t *testing.T, s *suite) {
	if _, ok := s.Store.(storekit.Synchronous); ok != s.Features.Synchronous {
		t.Fatalf("the store implements storekit.Synchronous: %v; declared: %v", ok, s.Features.Synchronous)
	}
	sess := s.session(t, "rec")
	rec, err := core.NewRecorder(s.Store, core.WithLogger(testlog.Discard))
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	rec.Record(cancelled, s.frame(sess, "before"))
	if s.Features.Synchronous {
		if rows := s.rows(t, sess); len(rows) != 1 {
			t.Errorf("a Synchronous store: %d rows right after Record, want 1", len(rows))
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec.Record(context.Background(), s.frame(sess, "after"))
	v := rec.Counters().Values()
	if v.Attempted != 2 || v.Persisted != 1 || v.Failed != 1 || v.Pending != 0 {
		t.Errorf("counters %+v: want the frame before Close persisted, the one after it failed", v)
	}
	rows := s.rows(t, sess)
	if len(rows) != 1 || rows[0].ToolCallID != s.id("tool", "before") {
		t.Errorf("rows %v: want only the frame recorded before Close", rows)
	}
}
