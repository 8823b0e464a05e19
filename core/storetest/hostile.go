package storetest

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// testHostileFrames: text that some databases refuse, huge values, extreme
// metrics and times, oversized ids. Each is stored with the same value on
// every adapter (descriptive text sanitized by storekit.Sanitize), or rejected
// with ErrInvalidRow, and no other row changes.
func testHostileFrames(t *testing.T, s *suite) {
	sess := s.session(t, "hostile")
	bystander := s.frame(sess, "bystander")
	s.write(t, bystander)
	before := s.one(t, sess)
	big := strings.Repeat("subagent ", 1<<20/9) // ≈1 MiB
	stored := []struct {
		name  string
		set   func(f *core.Frame)
		check func(r core.Subagent) bool
	}{
		{"NUL byte", func(f *core.Frame) { f.Payload.Description = "a\x00b" },
			func(r core.Subagent) bool { return show(r.Description) == show(str("a\uFFFDb")) }},
		{"invalid UTF-8", func(f *core.Frame) { f.Payload.Model = "m\xff\xfe-\xc3" },
			func(r core.Subagent) bool { return show(r.Model) == show(str("m\uFFFD-\uFFFD")) }},
		{"control characters", func(f *core.Frame) { f.Payload.SubagentType = "t\x01\x1b[31m\r\n\t" },
			func(r core.Subagent) bool { return show(r.SubagentType) == show(str("t\x01\x1b[31m\r\n\t")) }},
		{
			"SQL metacharacters",
			func(f *core.Frame) { f.Payload.AgentID = `'); DROP TABLE task_session_subagents; --"\` },
			func(r core.Subagent) bool {
				return show(r.AgentID) == show(str(`'); DROP TABLE task_session_subagents; --"\`))
			},
		},
		// Stored cut at the text bound, marked, never refused (docs/CONTRACT.md §3.1).
		{"1 MiB of text", func(f *core.Frame) { f.Payload.Description = big },
			func(r core.Subagent) bool {
				return r.Description != nil && len(*r.Description) <= canon.MaxTextBytes &&
					*r.Description == big[:len(*r.Description)-len(canon.TruncatedMark)]+canon.TruncatedMark
			}},
		{"64-bit limits", func(f *core.Frame) {
			f.Payload.TotalTokens, f.Payload.DurationMs, f.Payload.ToolUseCount = math.MaxInt64, math.MinInt64, i64(
				math.MaxInt64,
			)
		}, func(r core.Subagent) bool {
			return show(r.TotalTokens) == show(i64(math.MaxInt64)) && r.DurationMs == nil &&
				show(r.ToolUseCount) == show(i64(math.MaxInt64))
		}},
		{"far past", func(f *core.Frame) {
			f.ObservedAt = time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)
			f.ToolStatus = "completed"
		},
			func(r core.Subagent) bool {
				return r.ObservedAt.Equal(time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)) && r.SettledAt != nil &&
					r.SettledAt.Equal(r.ObservedAt)
			}},
		{"far future", func(f *core.Frame) { f.ObservedAt = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC) },
			func(r core.Subagent) bool {
				return r.ObservedAt.Equal(time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC))
			}},
		{"key of three ids at the limit", func(f *core.Frame) {
			f.ToolCallID, f.ExecutionID = strings.Repeat("x", storekit.MaxIDBytes), strings.Repeat("€", storekit.MaxIDBytes/3)
		}, func(r core.Subagent) bool {
			return len(r.ToolCallID) == storekit.MaxIDBytes && len(r.AgentExecutionID) == storekit.MaxIDBytes/3*3
		}},
	}
	for _, c := range stored {
		t.Run(c.name, func(t *testing.T) {
			f := s.bare(sess, "h-"+c.name, 1)
			c.set(&f)
			row := s.write(t, f)
			var got *core.Subagent
			for _, r := range s.rows(t, sess) {
				if r.ToolCallID == row.ToolCallID {
					got = &r
				}
			}
			if got == nil || !c.check(*got) {
				t.Errorf("%s: stored %+v", c.name, got)
			}
		})
	}
	rejected := []struct {
		name string
		set  func(f *core.Frame)
	}{
		{"id of 10 KiB", func(f *core.Frame) { f.ToolCallID = strings.Repeat("y", 10<<10) }},
		{"id one byte over the limit", func(f *core.Frame) { f.ToolCallID = strings.Repeat("z", storekit.MaxIDBytes+1) }},
		{
			"execution id over the limit",
			func(f *core.Frame) { f.ExecutionID = strings.Repeat("é", storekit.MaxIDBytes/2+1) },
		},
		{
			"parent id over the limit",
			func(f *core.Frame) { f.ParentToolCallID = strings.Repeat("p", storekit.MaxIDBytes+1) },
		},
		{"execution id with NUL", func(f *core.Frame) { f.ExecutionID = "e\x00" }},
		{"turn id not UTF-8", func(f *core.Frame) { f.TurnID = "turn\xff" }},
		{"year 10000", func(f *core.Frame) { f.ObservedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"year 0", func(f *core.Frame) { f.ObservedAt = time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC) }},
	}
	for _, c := range rejected {
		f := s.bare(sess, "bystander", 2)
		c.set(&f)
		row, _ := core.Normalize(f)
		if err := s.Store.Upsert(context.Background(), row); !errors.Is(err, core.ErrInvalidRow) {
			WantError(t, c.name, err, core.ErrInvalidRow)
		}
	}
	for _, r := range s.rows(t, sess) {
		if r.ToolCallID == before.ToolCallID {
			assertRow(t, before, r)
		}
	}
}
