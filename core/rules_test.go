package core

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 8, 12, 9, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))

func ptr[T any](v T) *T { return &v }

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
