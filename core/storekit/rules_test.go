package storekit

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/canon"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

var t0 = time.Date(2026, 8, 12, 9, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))

func ptr[T any](v T) *T { return &v }

// The overview's failed set (docs/CONTRACT.md §5.4) is exactly the
// terminal statuses that are not a success.
func TestFailedToolStatusesPinned(t *testing.T) {
	want := []string{"error", "failed", "cancelled"}
	if got := FailedToolStatuses(); !slices.Equal(got, want) {
		t.Fatalf("FailedToolStatuses() = %v, want %v", got, want)
	}
	for _, s := range TerminalToolStatuses() {
		if canon.IsFailedToolStatus(s) != slices.Contains(want, s) {
			t.Errorf("%q: failed %v", s, canon.IsFailedToolStatus(s))
		}
	}
	for _, s := range []string{"Failed", "in_progress", "", "errored"} {
		if canon.IsFailedToolStatus(s) {
			t.Errorf("%q counted as failed", s)
		}
	}
}

// AC-11: the terminal set is exactly these six values; a change here must be
// deliberate.
func TestAC11_TerminalToolStatusesPinned(t *testing.T) {
	want := []string{"complete", "completed", "success", "error", "failed", "cancelled"}
	if got := TerminalToolStatuses(); !slices.Equal(got, want) {
		t.Fatalf("TerminalToolStatuses() = %v, want %v", got, want)
	}
	TerminalToolStatuses()[0] = "mutated"
	if !canon.IsTerminalToolStatus("complete") || TerminalToolStatuses()[0] != "complete" {
		t.Error("a caller mutated the terminal set through the returned slice")
	}
	for _, s := range want {
		if !canon.IsTerminalToolStatus(s) {
			t.Errorf("%q must be terminal", s)
		}
	}
	for _, s := range []string{
		"", "pending", "in_progress", "running", "async_launched", "Completed", "canceled", "cancelled ", "done",
	} {
		if canon.IsTerminalToolStatus(s) {
			t.Errorf("%q must not be terminal", s)
		}
	}
}

func TestMergeWriteOnceAndSticky(t *testing.T) {
	stored := core.Subagent{ID: "id-1", TaskSessionID: "s", TaskID: "t1", AgentExecutionID: "e", ToolCallID: "c",
		Source: core.SourceBackfill, ObservedAt: t0, IsAsync: true, TurnID: ptr("turn-1"),
		ToolStatus: ptr("completed"), SettledAt: ptr(t0)}
	in := core.Subagent{ID: "id-2", TaskSessionID: "s", TaskID: "t2", AgentExecutionID: "e", ToolCallID: "c",
		Source: core.SourceLive, ObservedAt: t0.Add(time.Hour), TurnID: ptr("turn-2"), ToolStatus: ptr("in_progress"),
		SettledAt: ptr(t0.Add(time.Hour)), Model: ptr("late"), UpdatedAt: t0.Add(time.Hour)}
	got := Merge(&stored, in)
	if got.ID != "id-1" || got.TaskID != "t1" || got.Source != core.SourceBackfill || !got.ObservedAt.Equal(t0) ||
		*got.TurnID != "turn-1" || *got.ToolStatus != "completed" || !got.SettledAt.Equal(t0) || !got.IsAsync ||
		*got.Model != "late" || !got.UpdatedAt.Equal(in.UpdatedAt) {
		t.Errorf("merge = %+v", got)
	}
	if first := Merge(nil, core.Subagent{ToolCallID: "c"}); first.Source != core.SourceLive {
		t.Errorf("first insert source = %q, want live", first.Source)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	ok := core.Subagent{
		TaskSessionID:    "s",
		TaskID:           "t",
		AgentExecutionID: "e",
		ToolCallID:       "c",
		Source:           core.SourceLive,
		ObservedAt:       t0,
	}
	if err := Validate(&ok); err != nil {
		t.Fatal(err)
	}
	for field, mutate := range map[string]func(*core.Subagent){
		"task_session_id": func(s *core.Subagent) { s.TaskSessionID = "" },
		"observed_at":     func(s *core.Subagent) { s.ObservedAt = time.Time{} },
		"source":          func(s *core.Subagent) { s.Source = "imported" },
		"duration_ms":     func(s *core.Subagent) { s.DurationMs = ptr(int64(-1)) },
		"model":           func(s *core.Subagent) { s.Model = ptr("") },
	} {
		r := ok
		mutate(&r)
		err := Validate(&r)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v does not name the field", field, err)
		}
	}
}

// TestFailuresOfAnEmptyPage: the reference's empty page is an empty list,
// as every store answers it (a page after the last failure).
func TestFailuresOfAnEmptyPage(t *testing.T) {
	if got := FailuresOf(nil, report.FailureQuery{}); got == nil || len(got) != 0 {
		t.Errorf("FailuresOf with nothing failed: %#v, want an empty, non-nil list", got)
	}
}

// TestSPIConstantsAreTheLibrarys: the bounds a store author reads here are
// the ones every store and the recorder apply.
func TestSPIConstantsAreTheLibrarys(t *testing.T) {
	if MaxIDBytes != canon.MaxIDBytes || Prefix != liberr.Prefix {
		t.Errorf("MaxIDBytes %d, Prefix %q; the library applies %d and %q", MaxIDBytes, Prefix, canon.MaxIDBytes,
			liberr.Prefix)
	}
}
