package core

import (
	"slices"
	"strings"
	"testing"
	"time"
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
		if IsFailedToolStatus(s) != slices.Contains(want, s) {
			t.Errorf("%q: failed %v", s, IsFailedToolStatus(s))
		}
	}
	for _, s := range []string{"Failed", "in_progress", "", "errored"} {
		if IsFailedToolStatus(s) {
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
	if !IsTerminalToolStatus("complete") || TerminalToolStatuses()[0] != "complete" {
		t.Error("a caller mutated the terminal set through the returned slice")
	}
	for _, s := range want {
		if !IsTerminalToolStatus(s) {
			t.Errorf("%q must be terminal", s)
		}
	}
	for _, s := range []string{
		"", "pending", "in_progress", "running", "async_launched", "Completed", "canceled", "cancelled ", "done",
	} {
		if IsTerminalToolStatus(s) {
			t.Errorf("%q must not be terminal", s)
		}
	}
}

func TestAC2_IdentityGate(t *testing.T) {
	full := Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "c", ObservedAt: t0}
	for name, mutate := range map[string]func(*Frame){
		"no session":   func(f *Frame) { f.TaskSessionID = "" },
		"no task":      func(f *Frame) { f.TaskID = "" },
		"no tool call": func(f *Frame) { f.ToolCallID = "" },
	} {
		f := full
		mutate(&f)
		if _, v := Normalize(f); !v.NoIdentity {
			t.Errorf("%s: want NoIdentity", name)
		}
	}
	if _, v := Normalize(full); v.NoIdentity {
		t.Error("full identity: want a row")
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name  string
		frame Frame
		check func(t *testing.T, r Subagent, v Verdict)
	}{
		{"AC31 empty execution id uses the sentinel", Frame{}, func(t *testing.T, r Subagent, v Verdict) {
			if r.AgentExecutionID != UnknownExecution || !v.UnknownExecution {
				t.Errorf("execution %q verdict %+v", r.AgentExecutionID, v)
			}
		}},
		{"AC30 execution id verbatim", Frame{ExecutionID: " Exec-1 "}, func(t *testing.T, r Subagent, v Verdict) {
			if r.AgentExecutionID != " Exec-1 " || v.UnknownExecution {
				t.Errorf("execution %q verdict %+v", r.AgentExecutionID, v)
			}
		}},
		{"empty text is NULL", Frame{Payload: &Payload{}}, func(t *testing.T, r Subagent, v Verdict) {
			for name, p := range map[string]*string{"turn": r.TurnID, "parent": r.ParentToolCallID, "type": r.SubagentType,
				"description": r.Description, "agent": r.AgentID, "child": r.ChildSessionID, "model": r.Model,
				"agent_status": r.AgentStatus, "tool_status": r.ToolStatus} {
				if p != nil {
					t.Errorf("%s: want NULL, got %q", name, *p)
				}
			}
		}},
		{
			"AC11 a frame the host says is settled settles, its status verbatim",
			Frame{ToolStatus: "in_progress", Settled: true},
			func(t *testing.T, r Subagent, v Verdict) {
				if r.SettledAt == nil || !r.SettledAt.Equal(r.ObservedAt) || r.ToolStatus == nil ||
					*r.ToolStatus != "in_progress" {
					t.Errorf("settled_at %v, tool_status %v", r.SettledAt, r.ToolStatus)
				}
			},
		},
		{
			"AC7 unreported metrics are NULL",
			Frame{Payload: &Payload{Status: "async_launched"}},
			func(t *testing.T, r Subagent, v Verdict) {
				if r.TotalTokens != nil || r.ToolUseCount != nil || r.DurationMs != nil || v.Anomalous {
					t.Errorf("metrics %v %v %v", r.TotalTokens, r.ToolUseCount, r.DurationMs)
				}
			},
		},
		{
			"AC8 reported zero tool uses is 0",
			Frame{Payload: &Payload{ToolUseCount: ptr(int64(0))}},
			func(t *testing.T, r Subagent, v Verdict) {
				if r.ToolUseCount == nil || *r.ToolUseCount != 0 {
					t.Errorf("tool_use_count %v", r.ToolUseCount)
				}
			},
		},
		{
			"AC9 negatives are NULL, counted once, others kept",
			Frame{Payload: &Payload{TotalTokens: -1, DurationMs: -2, ToolUseCount: ptr(int64(-3)), Model: "m"}},
			func(t *testing.T, r Subagent, v Verdict) {
				if r.TotalTokens != nil || r.DurationMs != nil || r.ToolUseCount != nil || !v.Anomalous ||
					r.Model == nil || *r.Model != "m" {
					t.Errorf("row %+v verdict %+v", r, v)
				}
			},
		},
		{
			"AC9 one negative leaves the other metrics",
			Frame{Payload: &Payload{TotalTokens: 10, DurationMs: -2, ToolUseCount: ptr(int64(4))}},
			func(t *testing.T, r Subagent, v Verdict) {
				if *r.TotalTokens != 10 || r.DurationMs != nil || *r.ToolUseCount != 4 || !v.Anomalous {
					t.Errorf("row %+v verdict %+v", r, v)
				}
			},
		},
		{
			"AC11 terminal tool status settles at observation",
			Frame{ToolStatus: "failed"},
			func(t *testing.T, r Subagent, v Verdict) {
				if r.SettledAt == nil || !r.SettledAt.Equal(t0.Truncate(time.Microsecond)) ||
					r.SettledAt.Location() != time.UTC {
					t.Errorf("settled_at %v", r.SettledAt)
				}
			},
		},
		{
			"AC10a agent status never settles",
			Frame{ToolStatus: "in_progress", Payload: &Payload{Status: "completed"}},
			func(t *testing.T, r Subagent, v Verdict) {
				if r.SettledAt != nil || *r.AgentStatus != "completed" {
					t.Errorf("settled_at %v agent_status %v", r.SettledAt, r.AgentStatus)
				}
			},
		},
		{"observed_at is UTC microseconds", Frame{}, func(t *testing.T, r Subagent, v Verdict) {
			if r.ObservedAt.Location() != time.UTC || r.ObservedAt.Nanosecond() != 123456000 || r.Source != SourceLive {
				t.Errorf("observed_at %v source %s", r.ObservedAt, r.Source)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.frame
			f.TaskSessionID, f.TaskID, f.ToolCallID, f.ObservedAt = "s", "t", "c", t0
			r, v := Normalize(f)
			tc.check(t, r, v)
		})
	}
}

func TestMergeWriteOnceAndSticky(t *testing.T) {
	stored := Subagent{ID: "id-1", TaskSessionID: "s", TaskID: "t1", AgentExecutionID: "e", ToolCallID: "c",
		Source: SourceBackfill, ObservedAt: t0, IsAsync: true, TurnID: ptr("turn-1"),
		ToolStatus: ptr("completed"), SettledAt: ptr(t0)}
	in := Subagent{ID: "id-2", TaskSessionID: "s", TaskID: "t2", AgentExecutionID: "e", ToolCallID: "c",
		Source: SourceLive, ObservedAt: t0.Add(time.Hour), TurnID: ptr("turn-2"), ToolStatus: ptr("in_progress"),
		SettledAt: ptr(t0.Add(time.Hour)), Model: ptr("late"), UpdatedAt: t0.Add(time.Hour)}
	got := Merge(&stored, in)
	if got.ID != "id-1" || got.TaskID != "t1" || got.Source != SourceBackfill || !got.ObservedAt.Equal(t0) ||
		*got.TurnID != "turn-1" || *got.ToolStatus != "completed" || !got.SettledAt.Equal(t0) || !got.IsAsync ||
		*got.Model != "late" || !got.UpdatedAt.Equal(in.UpdatedAt) {
		t.Errorf("merge = %+v", got)
	}
	if first := Merge(nil, Subagent{ToolCallID: "c"}); first.Source != SourceLive {
		t.Errorf("first insert source = %q, want live", first.Source)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	ok := Subagent{
		TaskSessionID:    "s",
		TaskID:           "t",
		AgentExecutionID: "e",
		ToolCallID:       "c",
		Source:           SourceLive,
		ObservedAt:       t0,
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for field, mutate := range map[string]func(*Subagent){
		"task_session_id": func(s *Subagent) { s.TaskSessionID = "" },
		"observed_at":     func(s *Subagent) { s.ObservedAt = time.Time{} },
		"source":          func(s *Subagent) { s.Source = "imported" },
		"duration_ms":     func(s *Subagent) { s.DurationMs = ptr(int64(-1)) },
		"model":           func(s *Subagent) { s.Model = ptr("") },
	} {
		r := ok
		mutate(&r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v does not name the field", field, err)
		}
	}
}

// TestFailuresOfAnEmptyPage: the reference's empty page is an empty list,
// as every store answers it (a page after the last failure).
func TestFailuresOfAnEmptyPage(t *testing.T) {
	if got := FailuresOf(nil, FailureQuery{}); got == nil || len(got) != 0 {
		t.Errorf("FailuresOf with nothing failed: %#v, want an empty, non-nil list", got)
	}
}
