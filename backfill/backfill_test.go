package backfill_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/backfill"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

func TestMain(m *testing.M) {
	time.Local = time.FixedZone("UTC-07", -7*3600) // nothing may depend on TZ
	os.Exit(m.Run())
}

var t0 = time.Date(2026, 8, 12, 9, 0, 0, 123456000, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func ptr[T any](v T) *T { return &v }

func run(t *testing.T, e *testenv.Env, opts ...backfill.Option) backfill.Report {
	t.Helper()
	m, err := backfill.New(e.Store, append([]backfill.Option{backfill.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m.Run(context.Background())
}

func mustRun(t *testing.T, e *testenv.Env) backfill.Report {
	t.Helper()
	r := run(t, e)
	if r.Failed() {
		t.Fatalf("pass failed:\n%s", r)
	}
	return r
}

func keys(t *testing.T, e *testenv.Env) map[string]string {
	t.Helper()
	var kv []struct{ Key, Value string }
	if err := e.DB.Raw(`SELECT "key", value FROM kandev_meta`).Scan(&kv).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range kv {
		out[p.Key] = p.Value
	}
	return out
}

func session(t *testing.T, e *testenv.Env, id string) {
	t.Helper()
	if err := kandevtest.InsertSession(context.Background(), e.DB, e.Tables, id, "task-"+id); err != nil {
		t.Fatal(err)
	}
}

func insert(t *testing.T, e *testenv.Env, msgs ...kandevtest.Message) {
	t.Helper()
	for _, m := range msgs {
		session(t, e, m.TaskSessionID)
	}
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, msgs); err != nil {
		t.Fatal(err)
	}
}

// msg is a subagent message in session s with the given metadata.
func msg(id, s, turn string, created time.Time, meta kandevtest.Metadata) kandevtest.Message {
	return kandevtest.Message{ID: id, TaskSessionID: s, TaskID: "task-" + s, TurnID: turn,
		Metadata: ptr(meta.JSON()), CreatedAt: created, UpdatedAt: created.Add(30 * time.Second)}
}

func raw(id, s string, created time.Time, metadata *string) kandevtest.Message {
	return kandevtest.Message{ID: id, TaskSessionID: s, TaskID: "task-" + s, TurnID: "turn-1", Metadata: metadata, CreatedAt: created}
}

func rows(t *testing.T, e *testenv.Env, s string) map[string]core.Subagent {
	t.Helper()
	list, err := e.Store.ListBySession(context.Background(), s, core.Page{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]core.Subagent{}
	for _, r := range list {
		out[r.ToolCallID+"/"+r.AgentExecutionID] = r
	}
	return out
}

// snapshot renders schema, rows and keys, to compare passes.
func snapshot(t *testing.T, e *testenv.Env) string {
	t.Helper()
	var b strings.Builder
	shape, err := e.Store.Dialect().Shape(context.Background(), e.DB)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "shape %+v\n", shape)
	var all []map[string]any
	e.DB.Raw(`SELECT * FROM task_session_subagents ORDER BY id`).Scan(&all)
	for _, r := range all {
		delete(r, "updated_at")
		fmt.Fprintf(&b, "%v\n", r)
	}
	fmt.Fprintf(&b, "keys %v\n", keys(t, e))
	return b.String()
}

func show[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}

func TestFreshPassAndReplay(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		insert(t, e,
			msg("m1", "s1", "turn-1", at(1), kandevtest.Subagent("toolu_async", "complete", &kandevtest.ClaudeAsyncLaunch)),
			msg("m2", "s1", "turn-1", at(2), kandevtest.Subagent("toolu_done", "completed", &kandevtest.ClaudeCompleted)),
			msg("m3", "s1", "", at(3), kandevtest.Subagent("oc_1", "in_progress", &kandevtest.OpenCodeTask)),
			msg("m4", "s2", "turn-2", at(4), kandevtest.Subagent("cur_1", "success", &kandevtest.CursorTask)),
			msg("m5", "s2", "turn-2", at(5), kandevtest.Subagent("aug_1", "pending", &kandevtest.AuggieSubAgent)),
			msg("m6", "s2", "turn-2", at(6), kandevtest.Subagent("codex_1", "failed", &kandevtest.CodexChild)),
		)
		nested := kandevtest.Subagent("toolu_child", "completed", &kandevtest.ClaudeCompleted)
		nested.ParentToolCallID = "toolu_done"
		insert(t, e, msg("m7", "s1", "turn-1", at(7), nested))

		before := time.Now()
		r := mustRun(t, e)
		after := time.Now()
		for _, want := range []struct {
			step   string
			status backfill.Status
		}{{backfill.StepTable, backfill.Ran}, {backfill.StepShape, backfill.Skipped}, {backfill.StepExecutionKey, backfill.Ran}, {backfill.StepBackfill, backfill.Ran}} {
			if got := r.Step(want.step); got.Status != want.status {
				t.Errorf("step %s: %s (%s), want %s", want.step, got.Status, got.Detail, want.status)
			}
		}
		if got := r.Step(backfill.StepBackfill); got.RowsInserted != 7 || len(got.KeysWritten) != 2 {
			t.Errorf("backfill: %d rows, keys %v; want 7 rows, 2 keys", got.RowsInserted, got.KeysWritten)
		}
		k := keys(t, e)
		if k[core.KeyBackfillThrough] != at(7).Format(time.RFC3339Nano) {
			t.Errorf("backfill_through = %q, want newest created_at %q", k[core.KeyBackfillThrough], at(7).Format(time.RFC3339Nano))
		}
		for _, key := range []string{core.KeyCaptureSince, core.KeyExecutionSince} {
			ts, err := time.Parse(time.RFC3339Nano, k[key])
			if err != nil || ts.Before(before.Truncate(time.Microsecond)) || ts.After(after) || !strings.HasSuffix(k[key], "Z") {
				t.Errorf("%s = %q: want RFC3339Nano UTC within the pass", key, k[key])
			}
		}

		s1, s2 := rows(t, e, "s1"), rows(t, e, "s2")
		async := s1["toolu_async/unknown"]
		if async.TotalTokens != nil || async.ToolUseCount != nil || async.DurationMs != nil || !async.IsAsync ||
			show(async.AgentStatus) != "async_launched" || show(async.ToolStatus) != "complete" || async.SettledAt == nil ||
			!async.SettledAt.Equal(at(1).Add(30*time.Second)) || async.Source != core.SourceBackfill || !async.ObservedAt.Equal(at(1)) ||
			async.ID != "m1" || show(async.TurnID) != "turn-1" || show(async.SubagentType) != "security-reviewer" || show(async.AgentID) != "a1b2c3" {
			t.Errorf("claude async launch row: %+v", async)
		}
		done := s1["toolu_done/unknown"]
		if show(done.TotalTokens) != "275717" || show(done.ToolUseCount) != "23" || show(done.DurationMs) != "48211" ||
			show(done.Model) != "claude-sonnet-4-5-20250929" || done.IsAsync {
			t.Errorf("claude completed row: tokens %s uses %s duration %s model %s", show(done.TotalTokens), show(done.ToolUseCount), show(done.DurationMs), show(done.Model))
		}
		oc := s1["oc_1/unknown"]
		if oc.TurnID != nil || oc.SettledAt != nil || show(oc.ChildSessionID) != "ses_7f3a" || show(oc.ToolStatus) != "in_progress" || show(oc.AgentStatus) != "completed" {
			t.Errorf("opencode row (no turn, not settled: agent status never settles): turn %s settled %v child %s", show(oc.TurnID), oc.SettledAt, show(oc.ChildSessionID))
		}
		if show(s1["toolu_child/unknown"].ParentToolCallID) != "toolu_done" {
			t.Errorf("nested row parent = %s", show(s1["toolu_child/unknown"].ParentToolCallID))
		}
		if cur := s2["cur_1/unknown"]; show(cur.ToolUseCount) != "0" || cur.TotalTokens != nil || show(cur.DurationMs) != "900" {
			t.Errorf("cursor row: reported 0 tool uses must be 0: uses %s tokens %s", show(cur.ToolUseCount), show(cur.TotalTokens))
		}
		if aug := s2["aug_1/unknown"]; aug.SettledAt != nil || show(aug.AgentStatus) != "running" {
			t.Errorf("auggie row: %+v", aug)
		}
		if cx := s2["codex_1/unknown"]; show(cx.TotalTokens) != "18044" || cx.SettledAt == nil || show(cx.ChildSessionID) != "thread_01J9" {
			t.Errorf("codex row: %+v", cx)
		}

		// AC-18/AC-34: a second pass changes nothing, and says so.
		snap := snapshot(t, e)
		r2 := mustRun(t, e)
		if got := r2.Step(backfill.StepBackfill); got.Status != backfill.Skipped || got.RowsInserted != 0 {
			t.Errorf("second pass backfill: %s %s", got.Status, got.Detail)
		}
		if got := r2.Step(backfill.StepExecutionKey); got.Status != backfill.Skipped || len(got.KeysWritten) != 0 {
			t.Errorf("second pass execution key: %s %v", got.Status, got.KeysWritten)
		}
		if again := snapshot(t, e); again != snap {
			t.Errorf("second pass changed the store:\n%s\nvs\n%s", snap, again)
		}
	})
}

// TestMalformedMetadataNeverAborts: AC-23b and AC-23 on both dialects.
func TestMalformedMetadataNeverAborts(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		sub := func(task string) *string {
			return ptr(`{"tool_call_id":"TC","status":"completed","normalized":{"kind":"subagent_task","subagent_task":` + task + `}}`)
		}
		cases := []struct {
			name string
			meta *string
		}{
			{"null", nil}, {"empty", ptr("")}, {"json null", ptr("null")}, {"invalid", ptr(`{"normalized": {"kind": "subagent_task"`)},
			{"array", ptr(`[{"normalized":{"kind":"subagent_task"}}, "subagent_task"]`)}, {"scalar", ptr(`"subagent_task"`)},
			{"normalized not object", ptr(`{"tool_call_id":"x","normalized":"subagent_task"}`)},
			{"nul escape", ptr(`{"tool_call_id":"x\u0000","normalized":{"kind":"subagent_task","subagent_task":{}}}`)},
		}
		var msgs []kandevtest.Message
		for i, c := range cases {
			msgs = append(msgs, raw(fmt.Sprint("bad", i), "s", at(i), c.meta))
		}
		metricCases := map[string]string{
			"string metrics":  `{"total_tokens":"12","duration_ms":"5","tool_use_count":"3","is_async":"true","model":7}`,
			"fractions":       `{"total_tokens":1.5,"duration_ms":2.0,"tool_use_count":1e0,"is_async":1.0}`,
			"booleans":        `{"total_tokens":true,"duration_ms":false,"tool_use_count":true,"is_async":true}`,
			"beyond 64 bits":  `{"total_tokens":9223372036854775808,"duration_ms":99999999999999999999,"tool_use_count":-9223372036854775809,"is_async":1}`,
			"negatives/zero":  `{"total_tokens":-5,"duration_ms":0,"tool_use_count":-1,"model":""}`,
			"exponent":        `{"total_tokens":1e3,"duration_ms":1E3,"tool_use_count":0}`,
			"int64 max":       `{"total_tokens":9223372036854775807,"duration_ms":1,"tool_use_count":9223372036854775807}`,
			"objects/arrays":  `{"total_tokens":{"n":1},"duration_ms":[1],"tool_use_count":null,"subagent_type":["x"]}`,
			"subagent string": `"not an object"`,
		}
		i := 0
		for name, task := range metricCases {
			m := raw("metric-"+name, "s", at(100+i), sub(task))
			*m.Metadata = strings.Replace(*m.Metadata, `"TC"`, `"`+name+`"`, 1)
			msgs = append(msgs, m)
			i++
		}
		msgs = append(msgs, msg("good", "s", "turn-1", at(500), kandevtest.Subagent("good", "completed", &kandevtest.ClaudeCompleted)))
		insert(t, e, msgs...)
		r := mustRun(t, e)
		got := rows(t, e, "s")
		if len(got) != len(metricCases)+1 {
			t.Errorf("rows: %d, want %d (the well-formed and metric rows); report:\n%s", len(got), len(metricCases)+1, r)
		}
		if g := got["good/unknown"]; show(g.TotalTokens) != "275717" {
			t.Errorf("well-formed row: %+v", g)
		}
		want := map[string][4]string{ // tokens, duration, uses, is_async
			"string metrics":  {"NULL", "NULL", "NULL", "false"},
			"fractions":       {"NULL", "2", "1", "true"}, // 1.5 is a fraction; 2.0, 1e0 and 1.0 are integral
			"booleans":        {"NULL", "NULL", "NULL", "true"},
			"beyond 64 bits":  {"NULL", "NULL", "NULL", "true"},
			"negatives/zero":  {"NULL", "NULL", "NULL", "false"},
			"exponent":        {"1000", "1000", "0", "false"},
			"int64 max":       {"9223372036854775807", "1", "9223372036854775807", "false"},
			"objects/arrays":  {"NULL", "NULL", "NULL", "false"},
			"subagent string": {"NULL", "NULL", "NULL", "false"},
		}
		for name, w := range want {
			r, ok := got[name+"/unknown"]
			if !ok {
				t.Errorf("%s: row missing", name)
				continue
			}
			g := [4]string{show(r.TotalTokens), show(r.DurationMs), show(r.ToolUseCount), fmt.Sprint(r.IsAsync)}
			if g != w {
				t.Errorf("%s: tokens/duration/uses/async = %v, want %v", name, g, w)
			}
			if r.Model != nil || r.SubagentType != nil {
				t.Errorf("%s: non-string text must be NULL: model %s type %s", name, show(r.Model), show(r.SubagentType))
			}
		}
	})
}

// TestSkipRules: AC-21a and AC-2 on the backfill; the tiebreak of AC-21b;
// AC-22 over a live row.
func TestSkipRulesTiebreakAndLiveRows(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		p := kandevtest.ClaudeCompleted
		noTool := kandevtest.Subagent("", "completed", &p)
		notSubagent := kandevtest.Subagent("tc-x", "completed", &p)
		notSubagent.Normalized.Kind = "execute"
		noTask := msg("no-task", "s", "turn-1", at(1), kandevtest.Subagent("tc-nt", "completed", &p))
		noTask.TaskID = ""
		older := kandevtest.ClaudeAsyncLaunch
		newer := kandevtest.ClaudeCompleted
		insert(t, e,
			msg("no-tool", "s", "turn-1", at(1), noTool),
			msg("other-kind", "s", "turn-1", at(2), notSubagent),
			noTask,
			// AC-21b: newest created_at wins ...
			msg("dup-a", "s", "turn-1", at(10), kandevtest.Subagent("tc-dup", "in_progress", &older)),
			msg("dup-b", "s", "turn-1", at(20), kandevtest.Subagent("tc-dup", "completed", &newer)),
			msg("dup-c", "s", "turn-1", at(5), kandevtest.Subagent("tc-dup", "pending", &older)),
			// ... ties broken by the greatest message id.
			msg("tie-1", "s", "turn-1", at(30), kandevtest.Subagent("tc-tie", "pending", &kandevtest.AuggieSubAgent)),
			msg("tie-9", "s", "turn-1", at(30), kandevtest.Subagent("tc-tie", "completed", &kandevtest.CodexChild)),
			msg("tie-5", "s", "turn-1", at(30), kandevtest.Subagent("tc-tie", "failed", &kandevtest.OpenCodeTask)),
			// A live row already holds this key.
			msg("live-msg", "s", "turn-9", at(40), kandevtest.Subagent("tc-live", "completed", &kandevtest.CodexChild)),
		)
		live, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "task-s", TurnID: "turn-live", ToolCallID: "tc-live",
			ToolStatus: "in_progress", ObservedAt: at(41), Payload: &core.Payload{Model: "live-model"}})
		live.AgentExecutionID = core.UnknownExecution // same key as the backfill's
		if err := e.Store.Upsert(context.Background(), live); err != nil {
			t.Fatal(err)
		}
		mustRun(t, e)
		got := rows(t, e, "s")
		if len(got) != 3 {
			t.Fatalf("rows %d, want 3 (dup, tie, live): %v", len(got), got)
		}
		if d := got["tc-dup/unknown"]; d.ID != "dup-b" || !d.ObservedAt.Equal(at(20)) || show(d.TotalTokens) != "275717" {
			t.Errorf("AC-21b newest wins: id %s observed %v", d.ID, d.ObservedAt)
		}
		if d := got["tc-tie/unknown"]; d.ID != "tie-9" || show(d.Model) != "gpt-5-codex" {
			t.Errorf("AC-21b tie: id %s, want tie-9", d.ID)
		}
		if l := got["tc-live/unknown"]; l.Source != core.SourceLive || show(l.Model) != "live-model" || show(l.TurnID) != "turn-live" ||
			!l.ObservedAt.Equal(at(41)) || l.TotalTokens != nil || l.SettledAt != nil {
			t.Errorf("AC-22 live row overwritten: %+v", l)
		}
		if k := keys(t, e); k[core.KeyBackfillThrough] != at(40).Format(time.RFC3339Nano) {
			t.Errorf("backfill_through %q covers the predicate (including the live-held key), want %s", k[core.KeyBackfillThrough], at(40).Format(time.RFC3339Nano))
		}
	})
}

func TestNothingToBackfill(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		insert(t, e, raw("plain", "s", at(1), ptr(`{"normalized":{"kind":"execute"}}`)))
		r := mustRun(t, e)
		k := keys(t, e)
		v, ok := k[core.KeyBackfillThrough]
		if !ok || v != core.BackfillNothing || r.Step(backfill.StepBackfill).RowsInserted != 0 {
			t.Errorf("AC-24f: backfill_through = %q (present %v), want the '' sentinel", v, ok)
		}
		if _, ok := k[core.KeyCaptureSince]; !ok {
			t.Error("capture_since missing")
		}
	})
}

// TestKeysWriteOnce: keys already present, in any form, stay byte-identical;
// a partial pair is completed (AC-24).
func TestKeysWriteOnceAndPartialPairs(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		insert(t, e, msg("m1", "s", "turn-1", at(1), kandevtest.Subagent("tc", "completed", &kandevtest.ClaudeCompleted)))
		old := "2026-01-01T00:00:00Z" // second precision, by an older build
		e.Exec(t, `INSERT INTO kandev_meta ("key", value) VALUES (?, ?), (?, ?)`, core.KeyCaptureSince, old, core.KeyExecutionSince, old)
		r := mustRun(t, e)
		k := keys(t, e)
		if k[core.KeyCaptureSince] != old || k[core.KeyExecutionSince] != old {
			t.Errorf("present keys rewritten: %v", k)
		}
		if k[core.KeyBackfillThrough] != at(1).Format(time.RFC3339Nano) || r.Step(backfill.StepBackfill).RowsInserted != 1 {
			t.Errorf("partial pair (capture_since only) not completed: %v\n%s", k, r)
		}
		if got := r.Step(backfill.StepBackfill).KeysWritten; len(got) != 1 || got[0] != core.KeyBackfillThrough {
			t.Errorf("keys written %v", got)
		}
	})
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		e.Exec(t, `INSERT INTO kandev_meta ("key", value) VALUES (?, '')`, core.KeyBackfillThrough)
		mustRun(t, e)
		k := keys(t, e)
		if k[core.KeyBackfillThrough] != "" || k[core.KeyCaptureSince] == "" {
			t.Errorf("partial pair (backfill_through only) not completed: %v", k)
		}
	})
}

// TestBackfillFailureWritesNoKey: an injected failure in the middle of the
// INSERT … SELECT writes neither key nor any row; the next pass succeeds.
func TestBackfillFailureWritesNoKey(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		insert(t, e,
			msg("m1", "s", "turn-1", at(1), kandevtest.Subagent("ok-1", "completed", &kandevtest.ClaudeCompleted)),
			msg("m2", "s", "turn-1", at(2), kandevtest.Subagent("poison", "completed", &kandevtest.ClaudeCompleted)),
			msg("m3", "s", "turn-1", at(3), kandevtest.Subagent("ok-2", "completed", &kandevtest.ClaudeCompleted)))
		e.FailInsertsOf(t, "poison")
		var logs bytes.Buffer
		m, _ := backfill.New(e.Store, backfill.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		r := m.Run(context.Background())
		st := r.Step(backfill.StepBackfill)
		if st.Status != backfill.Failed || !strings.Contains(st.Detail, "injected failure") || st.RowsInserted != 0 || st.KeysWritten != nil {
			t.Errorf("backfill step: %+v", st)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "step=backfill") {
			t.Errorf("no WARN naming the step: %s", logs.String())
		}
		k := keys(t, e)
		if _, ok := k[core.KeyCaptureSince]; ok {
			t.Errorf("capture_since written by a failed backfill: %v", k)
		}
		if _, ok := k[core.KeyBackfillThrough]; ok {
			t.Errorf("backfill_through written by a failed backfill: %v", k)
		}
		if n := len(rows(t, e, "s")); n != 0 {
			t.Errorf("%d partial rows", n)
		}
		e.StopFailing(t)
		if r := mustRun(t, e); r.Step(backfill.StepBackfill).RowsInserted != 3 || len(keys(t, e)) != 3 {
			t.Errorf("retry: %s", r)
		}
	})
}

// TestSecondKeyFailureWritesNeither: AC-24d.
func TestSecondKeyFailureWritesNeither(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		insert(t, e, msg("m1", "s", "turn-1", at(1), kandevtest.Subagent("tc", "completed", &kandevtest.ClaudeCompleted)))
		boom := errors.New("injected: second key write")
		r := run(t, e, backfill.WithHook(func(stage string) error {
			if stage == "wrote "+core.KeyBackfillThrough {
				return boom
			}
			return nil
		}))
		if st := r.Step(backfill.StepBackfill); st.Status != backfill.Failed || !errors.Is(st.Err, boom) {
			t.Errorf("backfill: %+v", st)
		}
		k := keys(t, e)
		if _, ok := k[core.KeyBackfillThrough]; ok || k[core.KeyCaptureSince] != "" {
			t.Errorf("keys after a failed second write: %v", k)
		}
		if n := len(rows(t, e, "s")); n != 0 {
			t.Errorf("%d rows committed without their keys", n)
		}
		mustRun(t, e)
		if n := len(rows(t, e, "s")); n != 1 || len(keys(t, e)) != 3 {
			t.Errorf("retry: %d rows, keys %v", n, keys(t, e))
		}
	})
}

func legacyRows(t *testing.T, e *testenv.Env) {
	t.Helper()
	session(t, e, "s")
	for i, tc := range []string{"tc-1", "tc-2", "tc-3"} {
		e.Exec(t, `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, model, total_tokens,
			tool_use_count, source, observed_at, updated_at) VALUES (?, 's', 'task-s', 'turn-1', ?, 'm', ?, 0, 'live', ?, ?)`,
			fmt.Sprint("legacy-", i), tc, 1000+i, at(i), at(i))
	}
	e.Exec(t, `CREATE INDEX idx_host_custom ON task_session_subagents(model)`)
}

// TestLegacyUpgrade: AC-33, 33b, 33c.
func TestLegacyUpgrade(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		e.CreateLegacyTable(t)
		legacyRows(t, e)
		insert(t, e, msg("m1", "s", "turn-1", at(50), kandevtest.Subagent("tc-1", "completed", &kandevtest.ClaudeCompleted)),
			msg("m2", "s", "turn-1", at(51), kandevtest.Subagent("tc-new", "completed", &kandevtest.CodexChild)))
		r := mustRun(t, e)
		if st := r.Step(backfill.StepShape); st.Status != backfill.Ran || !strings.Contains(st.Detail, "3 rows kept") {
			t.Errorf("shape step: %+v", st)
		}
		shape, _ := e.Store.Dialect().Shape(context.Background(), e.DB)
		if !shape.EndState() {
			t.Fatalf("not in end shape after upgrade: %+v", shape)
		}
		got := rows(t, e, "s")
		for i, tc := range []string{"tc-1", "tc-2", "tc-3"} {
			r, ok := got[tc+"/unknown"]
			if !ok || r.ID != fmt.Sprint("legacy-", i) || show(r.TotalTokens) != fmt.Sprint(1000+i) || show(r.ToolUseCount) != "0" ||
				r.Source != core.SourceLive || !r.ObservedAt.Equal(at(i)) {
				t.Errorf("legacy row %s not kept as it was: %+v", tc, r)
			}
		}
		if _, ok := got["tc-new/unknown"]; !ok || len(got) != 4 {
			t.Errorf("backfill after upgrade: %d rows", len(got))
		}
		var idx int64
		if e.Dialect == "sqlite" {
			e.DB.Raw(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'idx_host_custom'`).Scan(&idx)
		} else {
			e.DB.Raw(`SELECT count(*) FROM pg_indexes WHERE indexname = 'idx_host_custom'`).Scan(&idx)
		}
		if idx != 1 {
			t.Error("the host's own index on the table was lost in the upgrade")
		}
		if _, ok := keys(t, e)[core.KeyExecutionSince]; !ok {
			t.Error("execution_since not written after the upgrade")
		}
		// The upgraded table takes live writes with execution ids.
		row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "task-s", ExecutionID: "exec-1", ToolCallID: "tc-1", ObservedAt: at(60)})
		if err := e.Store.Upsert(context.Background(), row); err != nil {
			t.Fatal(err)
		}
		if n := len(rows(t, e, "s")); n != 5 {
			t.Errorf("live write after upgrade: %d rows, want 5", n)
		}
	})
}

// TestLegacyUpgradeFailureKeepsOldShape: AC-33a; and while the end state
// does not hold, the backfill does not run and no key is written.
func TestLegacyUpgradeFailureKeepsOldShape(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *testenv.Env) {
		e.CreateLegacyTable(t)
		legacyRows(t, e)
		insert(t, e, msg("m1", "s", "turn-1", at(50), kandevtest.Subagent("tc-new", "completed", &kandevtest.CodexChild)))
		before := snapshot(t, e)
		stages := map[string][]string{
			"sqlite":   {"create new table", "copy rows", "drop old table", "rename", "before commit"},
			"postgres": {"add column", "drop legacy key", "add key", "widen metrics", "timestamps to timestamptz", "create indexes", "before commit"},
		}[e.Dialect]
		for _, stage := range stages {
			var reached bool
			r := run(t, e, backfill.WithHook(func(s string) error {
				if s == stage {
					reached = true
					return errors.New("injected at " + s)
				}
				return nil
			}))
			if !reached {
				t.Fatalf("stage %q never reached: the list is stale", stage)
			}
			if st := r.Step(backfill.StepShape); st.Status != backfill.Failed || !strings.Contains(st.Detail, "injected at "+stage) {
				t.Errorf("stage %s: shape step %+v", stage, st)
			}
			if st := r.Step(backfill.StepBackfill); st.Status != backfill.Skipped {
				t.Errorf("stage %s: backfill on the old shape: %+v", stage, st)
			}
			if st := r.Step(backfill.StepExecutionKey); st.Status != backfill.Skipped {
				t.Errorf("stage %s: execution key on the old shape: %+v", stage, st)
			}
			if after := snapshot(t, e); after != before {
				t.Errorf("stage %s: a failed upgrade changed the store:\n%s\nvs\n%s", stage, before, after)
			}
		}
		if k := keys(t, e); len(k) != 0 {
			t.Errorf("keys written while the end state does not hold: %v", k)
		}
		mustRun(t, e)
		if n := len(rows(t, e, "s")); n != 4 {
			t.Errorf("retry: %d rows, want 4", n)
		}
	})
}

// TestLegacyOrphanRowBlocksUpgrade (SQLite): a legacy row whose session is
// gone (foreign keys were off when it was written) makes the copy fail; the
// table keeps its old shape and rows, and the step says why.
func TestLegacyOrphanRowBlocksUpgrade(t *testing.T) {
	e := testenv.SQLite(t)
	e.CreateLegacyTable(t)
	legacyRows(t, e)
	e.Exec(t, `PRAGMA foreign_keys = OFF`)
	e.Exec(t, `DELETE FROM task_sessions WHERE id = 's'`)
	e.Exec(t, `PRAGMA foreign_keys = ON`)
	before := snapshot(t, e)
	r := run(t, e)
	if st := r.Step(backfill.StepShape); st.Status != backfill.Failed || !strings.Contains(st.Detail, "FOREIGN KEY") {
		t.Errorf("shape step: %+v", st)
	}
	if after := snapshot(t, e); after != before {
		t.Errorf("failed upgrade changed the store")
	}
}

// TestBackfillUnderParallelPlans (PostgreSQL): with parallel plans made
// free, the planner scans the messages with parallel workers; the backfill
// and the health check must still work (the JSON function opens a
// subtransaction, which a parallel worker cannot).
func TestBackfillUnderParallelPlans(t *testing.T) {
	e := testenv.Postgres(t)
	var msgs []kandevtest.Message
	for i := range 3000 {
		meta := kandevtest.Metadata{Normalized: kandevtest.Normalized{Kind: "message"}}
		if i%100 == 7 {
			meta = kandevtest.Subagent(fmt.Sprint("tc-", i), "completed", &kandevtest.ClaudeCompleted)
		}
		msgs = append(msgs, msg(fmt.Sprint("m", i), "s", "turn-1", at(i), meta))
	}
	insert(t, e, msgs...)
	db, err := postgres.OpenDB(e.DSN + "&parallel_setup_cost=0&parallel_tuple_cost=0&min_parallel_table_scan_size=0&max_parallel_workers_per_gather=2")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sqlDB, _ := db.DB(); sqlDB.Close() }()
	var plan []string
	db.Raw(`EXPLAIN SELECT count(*) FROM task_session_messages WHERE strpos(metadata, 'x') > 0`).Scan(&plan)
	if !strings.Contains(strings.Join(plan, "\n"), "Parallel") {
		t.Fatalf("the test does not get a parallel plan:\n%s", strings.Join(plan, "\n"))
	}
	s, err := postgres.New(context.Background(), db, core.HostTables{})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := backfill.New(s, backfill.WithLogger(slog.New(slog.DiscardHandler)))
	if r := m.Run(context.Background()); r.Failed() || r.Step(backfill.StepBackfill).RowsInserted != 30 {
		t.Fatalf("pass under parallel plans:\n%s", r)
	}
	if h, err := s.Health(context.Background()); err != nil || !h.Ran {
		t.Errorf("health under parallel plans: %+v %v", h, err)
	}
}
