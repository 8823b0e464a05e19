package core_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// FuzzDecodeFrame: any input either decodes or is refused with an error;
// a decoded frame normalises without panicking into a row whose invariants
// hold.
func FuzzDecodeFrame(f *testing.F) {
	for _, seed := range []string{
		`{"task_session_id":"s","task_id":"t","tool_call_id":"c","tool_status":"completed",` +
			`"observed_at":"2026-08-12T09:00:00.123456Z",` +
			`"subagent_task":{"description":"d","prompt":"p","subagent_type":"x","status":"async_launched","is_async":true}}`,
		`{"task_session_id":"s","task_id":"t","tool_call_id":"c","subagent_task":{"tool_use_count":0,"total_tokens":-5}}`,
		`[1,2]`, `null`, `"s"`, `{"observed_at":"yesterday"}`, `{"subagent_task":{"tool_use_count":"3"}}`,
		`{"task_session_id":"\u0000","task_id":"\xff","tool_call_id":"c"}`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := core.DecodeFrame(data)
		if err != nil {
			return
		}
		if fr.ObservedAt.IsZero() {
			fr.ObservedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		checkNormalized(t, fr)
	})
}

// FuzzNormalize: Normalize never panics and its rows keep the contract's
// invariants whatever the frame holds.
func FuzzNormalize(f *testing.F) {
	f.Add(
		"s", "t", "turn", "e", "c", "p", "completed", "running", "model", int64(5), int64(-1), int64(0), true, true,
		int64(1786000000123456789),
	)
	f.Add("", "t", "", "", "c", "", "", "", "", int64(0), int64(0), int64(0), false, false, int64(0))
	f.Add(
		"s\x00", "t\xff", "\xc3", "e", "c", "p\x00", "error", "\x00", "m\xfe", int64(-9), int64(9), int64(-1), true, false,
		int64(-62135596800000000),
	)
	f.Fuzz(func(t *testing.T, sess, task, turn, exec, tool, parent, toolStatus, agentStatus, model string,
		tokens, duration, uses int64, reportUses, async bool, nanos int64) {
		p := &core.Payload{Status: agentStatus, Model: model, TotalTokens: tokens, DurationMs: duration, IsAsync: async}
		if reportUses {
			p.ToolUseCount = &uses
		}
		checkNormalized(
			t,
			core.Frame{TaskSessionID: sess, TaskID: task, TurnID: turn, ExecutionID: exec, ToolCallID: tool,
				ParentToolCallID: parent, ToolStatus: toolStatus, ObservedAt: time.Unix(0, nanos), Payload: p},
		)
	})
}

func checkNormalized(t *testing.T, f core.Frame) {
	t.Helper()
	row, v := core.Normalize(f)
	if v.NoIdentity != (f.TaskSessionID == "" || f.TaskID == "" || f.ToolCallID == "") {
		t.Fatalf("identity gate: %+v for %+v", v, f)
	}
	if v.NoIdentity {
		return
	}
	if v.UnknownExecution != (f.ExecutionID == "") || row.AgentExecutionID == "" {
		t.Fatalf("execution sentinel: %q %+v", row.AgentExecutionID, v)
	}
	texts := map[string]*string{
		"turn": row.TurnID, "parent": row.ParentToolCallID, "tool_status": row.ToolStatus, "agent_status": row.AgentStatus,
		"model": row.Model, "type": row.SubagentType, "description": row.Description,
	}
	for name, p := range texts {
		if p != nil && *p == "" {
			t.Fatalf("%s stored as '' instead of NULL", name)
		}
		if p != nil && name != "turn" && (!utf8.ValidString(*p) || strings.ContainsRune(*p, 0)) {
			t.Fatalf("%s not sanitized: %q", name, *p)
		}
	}
	for name, m := range map[string]*int64{"total_tokens": row.TotalTokens, "duration_ms": row.DurationMs} {
		if m != nil && *m <= 0 {
			t.Fatalf("%s stored as %d", name, *m)
		}
	}
	if row.ToolUseCount != nil && *row.ToolUseCount < 0 {
		t.Fatalf("tool_use_count stored as %d", *row.ToolUseCount)
	}
	if (row.SettledAt != nil) != canon.IsTerminalToolStatus(f.ToolStatus) {
		t.Fatalf("settled_at %v for tool_status %q", row.SettledAt, f.ToolStatus)
	}
	if row.ObservedAt.Location() != time.UTC || row.ObservedAt.Nanosecond()%1000 != 0 {
		t.Fatalf("observed_at not canonical: %v", row.ObservedAt)
	}
	if err := storekit.Validate(&row); err != nil {
		// Only ids no adapter could store, or times outside years 1-9999,
		// are refused; nothing else may be.
		if !strings.Contains(err.Error(), "_id ") && !strings.Contains(err.Error(), "outside years") {
			t.Fatalf("a normalised row fails validation: %v", err)
		}
	}
}
