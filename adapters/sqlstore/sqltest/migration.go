package sqltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

var migrationTests = []test{
	{"AC17_AC18_FreshPassAndReplay", testFreshPassAndReplay},
	{"AC23b_MalformedMetadataNeverAborts", testMalformedMetadata},
	{"AC21a_AC21b_AC22_SkipRulesTiebreakLiveRows", testSkipRules},
	{"NoSecondRowForALiveInvocation", testNoSecondRow},
	{"OverlongIdentifiersSkipped", testOverlongIdentifiers},
	{"HostTimestamps", testHostTimestamps},
	{"AC24f_NothingToBackfill", testNothingToBackfill},
	{"AC24_KeysWriteOnceAndPartialPairs", testKeysWriteOnce},
	{"AC24a_BackfillFailureWritesNoKey", testBackfillFailure},
	{"AC24d_SecondKeyFailureWritesNeither", testSecondKeyFailure},
	{"AC33_LegacyUpgrade", testLegacyUpgrade},
	{"AC33a_LegacyUpgradeFailureKeepsOldShape", testLegacyUpgradeFailure},
	{"AC34_ReplayAfterLegacyUpgrade", testReplayAfterUpgrade},
	{"PrimaryKeyUpgrade", testPrimaryKeyUpgrade},
	{"NoHostTablesNoTable", testNoHostTables},
	{"CancelledIsNotFailed", testCancelled},
	{"ConcurrentPassesSerialise", testConcurrentPasses},
	{"AC32_OneAbsorberPerPair", testOneAbsorberPerPair},
	{"AC14_BatchesEndAsFrameByFrame", testBatchesEndAsFrames},
	{"AC32_AbsorbsOnAHostHandle", testAbsorbsOnAHostHandle},
}

func testFreshPassAndReplay(t *testing.T, d *Driver) {
	e := d.Env(t)
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
		status migration.Status
	}{{migration.StepTable, migration.Ran}, {migration.StepShape, migration.Skipped},
		{migration.StepExecutionKey, migration.Ran}, {migration.StepBackfill, migration.Ran}} {
		got := r.Step(want.step)
		if got.Status != want.status &&
			!(d.Host != nil && want.step == migration.StepShape && strings.Contains(got.Detail, "placed at version")) {
			t.Errorf(
				"step %s: %s (%s), want %s (or, on a table the host created, its placement)", want.step, got.Status, got.Detail,
				want.status,
			)
		}
	}
	if got := r.Step(migration.StepBackfill); got.RowsInserted != 7 || len(got.KeysWritten) != 2 {
		t.Errorf("backfill: %d rows, keys %v; want 7 rows, 2 keys", got.RowsInserted, got.KeysWritten)
	}
	k := e.Keys(t)
	if k[storekit.BackfillThroughKey] != at(7).Format(time.RFC3339Nano) {
		t.Errorf(
			"backfill_through = %q, want newest created_at %q", k[storekit.BackfillThroughKey], at(7).Format(time.RFC3339Nano),
		)
	}
	for _, key := range []string{storekit.CaptureSinceKey, storekit.ExecutionSinceKey} {
		ts, err := time.Parse(time.RFC3339Nano, k[key])
		if err != nil || ts.Before(before.Truncate(time.Microsecond)) || ts.After(after) ||
			!strings.HasSuffix(k[key], "Z") {
			t.Errorf("%s = %q: want RFC 3339 UTC within the pass", key, k[key])
		}
	}

	s1, s2 := rows(t, e, "s1"), rows(t, e, "s2")
	async := s1["toolu_async/unknown"]
	if async.TotalTokens != nil || async.ToolUseCount != nil || async.DurationMs != nil || !async.IsAsync ||
		show(async.AgentStatus) != "async_launched" || show(async.ToolStatus) != "complete" || async.SettledAt == nil ||
		!async.SettledAt.Equal(at(1).Add(30*time.Second)) || async.Source != core.SourceBackfill ||
		!async.ObservedAt.Equal(at(1)) ||
		async.ID != "m1" || show(async.TurnID) != "turn-1" || show(async.SubagentType) != "security-reviewer" ||
		show(async.AgentID) != "a1b2c3" {
		t.Errorf("claude async launch row: %+v", async)
	}
	done := s1["toolu_done/unknown"]
	if show(done.TotalTokens) != "275717" || show(done.ToolUseCount) != "23" || show(done.DurationMs) != "48211" ||
		show(done.Model) != "claude-sonnet-4-5-20250929" || done.IsAsync {
		t.Errorf(
			"claude completed row: tokens %s uses %s duration %s model %s", show(done.TotalTokens), show(done.ToolUseCount),
			show(done.DurationMs), show(done.Model),
		)
	}
	oc := s1["oc_1/unknown"]
	if oc.TurnID != nil || oc.SettledAt != nil || show(oc.ChildSessionID) != "ses_7f3a" ||
		show(oc.ToolStatus) != "in_progress" || show(oc.AgentStatus) != "completed" {
		t.Errorf(
			"opencode row (no turn, not settled: agent status never settles): turn %s settled %v child %s", show(oc.TurnID),
			oc.SettledAt, show(oc.ChildSessionID),
		)
	}
	if show(s1["toolu_child/unknown"].ParentToolCallID) != "toolu_done" {
		t.Errorf("nested row parent = %s", show(s1["toolu_child/unknown"].ParentToolCallID))
	}
	if cur := s2["cur_1/unknown"]; show(cur.ToolUseCount) != "0" || cur.TotalTokens != nil ||
		show(cur.DurationMs) != "900" {
		t.Errorf(
			"cursor row: reported 0 tool uses must be 0: uses %s tokens %s", show(cur.ToolUseCount), show(cur.TotalTokens),
		)
	}
	if aug := s2["aug_1/unknown"]; aug.SettledAt != nil || show(aug.AgentStatus) != "running" {
		t.Errorf("auggie row: %+v", aug)
	}
	if cx := s2["codex_1/unknown"]; show(cx.TotalTokens) != "18044" || cx.SettledAt == nil ||
		show(cx.ChildSessionID) != "thread_01J9" {
		t.Errorf("codex row: %+v", cx)
	}

	// AC-18/AC-34: a second pass changes nothing, and says so.
	snap := snapshot(t, e)
	r2 := mustRun(t, e)
	if got := r2.Step(migration.StepBackfill); got.Status != migration.Skipped || got.RowsInserted != 0 {
		t.Errorf("second pass backfill: %s %s", got.Status, got.Detail)
	}
	if got := r2.Step(migration.StepExecutionKey); got.Status != migration.Skipped || len(got.KeysWritten) != 0 {
		t.Errorf("second pass execution key: %s %v", got.Status, got.KeysWritten)
	}
	if again := snapshot(t, e); again != snap {
		t.Errorf("second pass changed the store:\n%s\nvs\n%s", snap, again)
	}
}

// testMalformedMetadata: AC-23b and AC-23.
func testMalformedMetadata(t *testing.T, d *Driver) {
	e := d.Env(t)
	sub := func(task string) *string {
		return ptr(
			`{"tool_call_id":"TC","status":"completed","normalized":{"kind":"subagent_task","subagent_task":` + task + `}}`,
		)
	}
	cases := []struct {
		name string
		meta *string
	}{
		{
			"null",
			nil,
		}, {"empty", ptr("")}, {"json null", ptr("null")}, {"invalid", ptr(`{"normalized": {"kind": "subagent_task"`)},
		{
			"array",
			ptr(`[{"normalized":{"kind":"subagent_task"}}, "subagent_task"]`),
		}, {"scalar", ptr(`"subagent_task"`)},
		{"normalized not object", ptr(`{"tool_call_id":"x","normalized":"subagent_task"}`)},
		{"nul escape", ptr(`{"tool_call_id":"x\u0000","normalized":{"kind":"subagent_task","subagent_task":{}}}`)},
		{"lone surrogate", ptr(`{"tool_call_id":"x",` +
			`"normalized":{"kind":"subagent_task","subagent_task":{"model":"\ud800"}}}`)},
		{"too deep", ptr(`{"tool_call_id":"x","normalized":{"kind":"subagent_task"},"deep":` +
			strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`)},
		{"number beyond numeric", ptr(`{"tool_call_id":"x","normalized":{"kind":"subagent_task"},"n":1e-16384}`)},
	}
	var msgs []kandevtest.Message
	for i, c := range cases {
		msgs = append(msgs, raw(fmt.Sprint("bad", i), "s", at(i), c.meta))
	}
	metricCases := map[string]string{
		"string metrics": `{"total_tokens":"12","duration_ms":"5","tool_use_count":"3","is_async":"true","model":7}`,
		"fractions":      `{"total_tokens":1.5,"duration_ms":2.0,"tool_use_count":1e0,"is_async":1.0}`,
		"booleans":       `{"total_tokens":true,"duration_ms":false,"tool_use_count":true,"is_async":true}`,
		"beyond 64 bits": `{"total_tokens":9223372036854775808,"duration_ms":99999999999999999999,` +
			`"tool_use_count":-9223372036854775809,"is_async":1}`,
		"negatives/zero": `{"total_tokens":-5,"duration_ms":0,"tool_use_count":-1,"model":""}`,
		"exponent":       `{"total_tokens":1e3,"duration_ms":1E3,"tool_use_count":0}`,
		"int64 max":      `{"total_tokens":9223372036854775807,"duration_ms":1,"tool_use_count":9223372036854775807}`,
		"large reals": `{"total_tokens":9223372036854775807.0,"duration_ms":9.223372036854775807e18,` +
			`"tool_use_count":92233720368547758.07e2}`,
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
	msgs = append(
		msgs,
		msg("good", "s", "turn-1", at(500), kandevtest.Subagent("good", "completed", &kandevtest.ClaudeCompleted)),
	)
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
		"large reals":     {"9223372036854775807", "9223372036854775807", "9223372036854775807", "false"},
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
}

// testSkipRules: AC-21a and AC-2 on the backfill; the tiebreak of AC-21b
// (byte order); AC-22 over a live row.
func testSkipRules(t *testing.T, d *Driver) {
	e := d.Env(t)
	p := kandevtest.ClaudeCompleted
	noTool := kandevtest.Subagent("", "completed", &p)
	notSubagent := kandevtest.Subagent("tc-x", "completed", &p)
	notSubagent.Normalized.Kind = "execute"
	noTask := msg("no-task", "s", "turn-1", at(1), kandevtest.Subagent("tc-nt", "completed", &p))
	noTask.TaskID = ""
	older, newer := kandevtest.ClaudeAsyncLaunch, kandevtest.ClaudeCompleted
	insert(t, e,
		msg("no-tool", "s", "turn-1", at(1), noTool),
		msg("other-kind", "s", "turn-1", at(2), notSubagent),
		noTask,
		// AC-21b: newest created_at wins …
		msg("dup-a", "s", "turn-1", at(10), kandevtest.Subagent("tc-dup", "in_progress", &older)),
		msg("dup-b", "s", "turn-1", at(20), kandevtest.Subagent("tc-dup", "completed", &newer)),
		msg("dup-c", "s", "turn-1", at(5), kandevtest.Subagent("tc-dup", "pending", &older)),
		// … ties broken by the greatest message id, byte by byte ("Z" < "a"
		// in bytes; a linguistic collation says otherwise).
		msg("tie-a", "s", "turn-1", at(30), kandevtest.Subagent("tc-tie", "pending", &kandevtest.AuggieSubAgent)),
		msg("tie-Z", "s", "turn-1", at(30), kandevtest.Subagent("tc-tie", "completed", &kandevtest.CodexChild)),
		msg("tie-B", "s", "turn-1", at(30), kandevtest.Subagent("tc-tie", "failed", &kandevtest.OpenCodeTask)),
		// A live row already holds this key.
		msg("live-msg", "s", "turn-9", at(40), kandevtest.Subagent("tc-live", "completed", &kandevtest.CodexChild)),
	)
	live, _ := core.Normalize(
		core.Frame{TaskSessionID: "s", TaskID: "task-s", TurnID: "turn-live", ToolCallID: "tc-live",
			ToolStatus: "in_progress", ObservedAt: at(41), Payload: &core.Payload{Model: "live-model"}},
	)
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
	if d := got["tc-tie/unknown"]; d.ID != "tie-a" || show(d.AgentStatus) != "running" {
		t.Errorf("AC-21b tie: id %s, want tie-a (the greatest in byte order)", d.ID)
	}
	// AC-22 with docs/CONTRACT.md §8.5: no live value is overwritten;
	// history, the earlier observation, gives the row its observation,
	// turn and settling, and fills what live did not report.
	if l := got["tc-live/unknown"]; l.Source != core.SourceBackfill || show(l.Model) != "live-model" ||
		show(l.TurnID) != "turn-9" ||
		!l.ObservedAt.Equal(at(40)) || show(l.TotalTokens) != "18044" || show(l.ToolStatus) != "completed" ||
		l.SettledAt == nil || !l.SettledAt.Equal(at(40).Add(30*time.Second)) {
		t.Errorf("AC-22 live row after the backfill: %+v", l)
	}
	if k := e.Keys(t); k[storekit.BackfillThroughKey] != at(40).Format(time.RFC3339Nano) {
		t.Errorf(
			"backfill_through %q covers the predicate (including the live-held key), want %s",
			k[storekit.BackfillThroughKey],
			at(40).Format(time.RFC3339Nano),
		)
	}
}

// testNoSecondRow: a pass that runs after live rows exist (a retry, or the
// gap before a host's background backfill) never gives an invocation
// already recorded live, under any execution id, a second 'unknown' row
// (docs/CONTRACT.md §8.5); statistics and health count it once.
func testNoSecondRow(t *testing.T, d *Driver) {
	e := d.Env(t)
	insert(t, e, msg("m1", "s", "turn-1", at(1), kandevtest.Subagent("tc-1", "completed", &kandevtest.ClaudeCompleted)),
		msg("m2", "s", "turn-1", at(2), kandevtest.Subagent("tc-2", "completed", &kandevtest.ClaudeCompleted)))
	record(t, e, "s", "tc-1", "exec-live", at(1))
	r := mustRun(t, e)
	got := rows(t, e, "s")
	if _, dup := got["tc-1/unknown"]; dup || len(got) != 2 || r.Step(migration.StepBackfill).RowsInserted != 1 {
		t.Errorf(
			"rows %v (inserted %d): want the live row of tc-1 and one backfilled row for tc-2",
			got,
			r.Step(migration.StepBackfill).RowsInserted,
		)
	}
	st, err := e.Store.Stats(context.Background(), report.StatsQuery{TaskSessionID: "s"})
	if err != nil || st.Subagents != 2 {
		t.Errorf("stats count the invocation once: %d subagents, %v", st.Subagents, err)
	}
}

// testOverlongIdentifiers: a message whose identifiers could not be stored
// live is skipped like one without identity, and the pass completes.
func testOverlongIdentifiers(t *testing.T, d *Driver) {
	e := d.Env(t)
	long := strings.Repeat("x", 3000)
	limit := strings.Repeat("k", storekit.MaxIDBytes)
	parent := kandevtest.Subagent("tc-parent-long", "completed", &kandevtest.CodexChild)
	parent.ParentToolCallID = long
	insert(
		t,
		e,
		msg("m-long", "s", "turn-1", at(1), kandevtest.Subagent(long, "completed", &kandevtest.ClaudeCompleted)),
		msg("m-parent", "s", "turn-1", at(2), parent),
		msg(
			strings.Repeat("i", storekit.MaxIDBytes+1), "s", "turn-1", at(3),
			kandevtest.Subagent("tc-long-id", "completed", &kandevtest.CodexChild),
		),
		msg(
			"m-turn", "s", strings.Repeat("t", storekit.MaxIDBytes+1), at(4),
			kandevtest.Subagent("tc-long-turn", "completed", &kandevtest.CodexChild),
		),
		msg("m-ok", "s", "turn-1", at(5), kandevtest.Subagent("tc-ok", "completed", &kandevtest.CodexChild)),
	)
	e.Session(t, limit)
	insert(t, e, kandevtest.Message{ID: limit, TaskSessionID: limit, TaskID: limit, TurnID: limit, CreatedAt: at(6),
		Metadata: ptr(kandevtest.Subagent(limit, "completed", &kandevtest.CodexChild).JSON())})
	r := mustRun(t, e)
	if got := rows(t, e, "s"); len(got) != 1 || got["tc-ok/unknown"].ID != "m-ok" {
		t.Errorf("rows %v: want only tc-ok", got)
	}
	if got := rows(t, e, limit); len(got) != 1 {
		t.Errorf(
			"identifiers at the limit (%d bytes, four of them in one row): %d rows, want 1", storekit.MaxIDBytes, len(got),
		)
	}
	if k := e.Keys(t); k[storekit.CaptureSinceKey] == "" ||
		k[storekit.BackfillThroughKey] != at(6).Format(time.RFC3339Nano) ||
		r.Failed() {
		t.Errorf("the pass must complete with its keys: %v\n%s", k, r)
	}
}

// testHostTimestamps: created_at orders newest-wins at the host's full
// precision, is stored canonical (UTC, microseconds), and a message whose
// created_at cannot be read is not recovered (docs/CONTRACT.md §4.2).
func testHostTimestamps(t *testing.T, d *Driver) {
	e := d.Env(t)
	meta := func(tool, status string) string {
		return kandevtest.Subagent(tool, status, &kandevtest.CodexChild).JSON()
	}
	e.Session(t, "s")
	put := func(id, tool, status string, created, updated any) {
		e.Exec(
			t,
			`INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, content, metadata, created_at, updated_at)
			VALUES (?, 's', 'task-s', 'turn-1', '', ?, ?, ?)`,
			id,
			meta(tool, status),
			created,
			updated,
		)
	}
	if !d.Dialect.HostTimeText() {
		t.Log("declared: host timestamps are typed (microseconds); the text forms are SQLite's")
		put("a", "tc", "pending", at(1), at(1))
		put("b", "tc", "completed", at(1).Add(time.Microsecond), at(9))
		mustRun(t, e)
		if r := rows(t, e, "s")["tc/unknown"]; r.ID != "b" || !r.ObservedAt.Equal(at(1).Add(time.Microsecond)) ||
			!r.SettledAt.Equal(at(9)) {
			t.Errorf("newest by microsecond: %+v", r)
		}
		return
	}
	// One microsecond, 900 ns apart: the host's precision decides.
	put("z-earlier", "tc-ns", "pending", "2026-08-12 09:00:00.000001100+00:00", "2026-08-12 09:00:01")
	put("a-later", "tc-ns", "completed", "2026-08-12 09:00:00.000001999Z", "2026-08-12T11:00:02.5+02:00")
	// Offsets, T or space, no seconds: read as instants, stored canonical.
	put("m-offset", "tc-offset", "completed", "2026-08-12T11:30:00.123456789+02:30", "2026-08-12 09:00")
	// Unreadable created_at: not recovered; unreadable updated_at: not settled.
	put("m-bad-created", "tc-bad", "completed", "yesterday", "2026-08-12 09:00:00")
	put("m-feb30", "tc-feb30", "completed", "2026-02-30 10:00:00", "2026-02-30 10:00:00")
	put("m-zero", "tc-zero", "completed", "0001-01-01 00:00:00", "0001-01-01 00:00:00")
	put("m-bad-updated", "tc-unsettled", "completed", "2026-08-12 09:00:03", "not a time")
	r := mustRun(t, e)
	got := rows(t, e, "s")
	ns := got["tc-ns/unknown"]
	if ns.ID != "a-later" || !ns.ObservedAt.Equal(time.Date(2026, 8, 12, 9, 0, 0, 1000, time.UTC)) ||
		ns.SettledAt == nil || !ns.SettledAt.Equal(time.Date(2026, 8, 12, 9, 0, 2, 500000000, time.UTC)) {
		t.Errorf("newest at nanosecond precision, stored at microseconds: %+v", ns)
	}
	if o := got["tc-offset/unknown"]; !o.ObservedAt.Equal(time.Date(2026, 8, 12, 9, 0, 0, 123456000, time.UTC)) ||
		o.SettledAt == nil || !o.SettledAt.Equal(time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("offset forms: %+v", o)
	}
	for _, tool := range []string{"tc-bad", "tc-feb30", "tc-zero"} {
		if _, ok := got[tool+"/unknown"]; ok {
			t.Errorf("%s: a message whose created_at cannot be read was recovered", tool)
		}
	}
	if u, ok := got["tc-unsettled/unknown"]; !ok || u.SettledAt != nil {
		t.Errorf("unreadable updated_at: want the row, not settled: %+v", u)
	}
	if k := e.Keys(t); k[storekit.BackfillThroughKey] != "2026-08-12T09:00:03Z" || r.Failed() {
		t.Errorf("backfill_through %q, want the newest readable created_at", k[storekit.BackfillThroughKey])
	}
}

func testNothingToBackfill(t *testing.T, d *Driver) {
	e := d.Env(t)
	insert(t, e, raw("plain", "s", at(1), ptr(`{"normalized":{"kind":"execute"}}`)))
	r := mustRun(t, e)
	k := e.Keys(t)
	v, ok := k[storekit.BackfillThroughKey]
	if !ok || v != storekit.BackfillNothing || r.Step(migration.StepBackfill).RowsInserted != 0 {
		t.Errorf("AC-24f: backfill_through = %q (present %v), want the '' sentinel", v, ok)
	}
	if _, ok := k[storekit.CaptureSinceKey]; !ok {
		t.Error("capture_since missing")
	}
}

// testKeysWriteOnce: keys already present, in any form, stay
// byte-identical; a partial pair is completed (AC-24).
func testKeysWriteOnce(t *testing.T, d *Driver) {
	e := d.Env(t)
	insert(t, e, msg("m1", "s", "turn-1", at(1), kandevtest.Subagent("tc", "completed", &kandevtest.ClaudeCompleted)))
	old := "2026-01-01T00:00:00Z" // second precision, by an older build
	e.Exec(
		t, `INSERT INTO `+e.meta(t)+` ("key", value) VALUES (?, ?), (?, ?)`, storekit.CaptureSinceKey, old,
		storekit.ExecutionSinceKey,
		old,
	)
	r := mustRun(t, e)
	k := e.Keys(t)
	if k[storekit.CaptureSinceKey] != old || k[storekit.ExecutionSinceKey] != old {
		t.Errorf("present keys rewritten: %v", k)
	}
	if k[storekit.BackfillThroughKey] != at(1).Format(time.RFC3339Nano) ||
		r.Step(migration.StepBackfill).RowsInserted != 1 {
		t.Errorf("partial pair (capture_since only) not completed: %v\n%s", k, r)
	}
	if got := r.Step(migration.StepBackfill).KeysWritten; len(got) != 1 || got[0] != storekit.BackfillThroughKey {
		t.Errorf("keys written %v", got)
	}

	e = d.Env(t)
	e.Exec(t, `INSERT INTO `+e.meta(t)+` ("key", value) VALUES (?, '')`, storekit.BackfillThroughKey)
	mustRun(t, e)
	if k := e.Keys(t); k[storekit.BackfillThroughKey] != "" || k[storekit.CaptureSinceKey] == "" {
		t.Errorf("partial pair (backfill_through only) not completed: %v", k)
	}
}

// testBackfillFailure: an injected failure in the middle of the INSERT …
// SELECT writes neither key nor any row; the next pass succeeds (AC-24a).
func testBackfillFailure(t *testing.T, d *Driver) {
	e := d.Env(t)
	insert(t, e,
		msg("m1", "s", "turn-1", at(1), kandevtest.Subagent("ok-1", "completed", &kandevtest.ClaudeCompleted)),
		msg("m2", "s", "turn-1", at(2), kandevtest.Subagent("poison", "completed", &kandevtest.ClaudeCompleted)),
		msg("m3", "s", "turn-1", at(3), kandevtest.Subagent("ok-2", "completed", &kandevtest.ClaudeCompleted)))
	stop := d.FailInserts(t, e.DB, "poison")
	var logs bytes.Buffer
	r := migration.New(e.Store, migration.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))).Run(context.Background())
	st := r.Step(migration.StepBackfill)
	if st.Status != migration.Failed || !strings.Contains(st.Detail, "injected failure") || st.RowsInserted != 0 ||
		st.KeysWritten != nil {
		t.Errorf("backfill step: %+v", st)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "step=backfill") {
		t.Errorf("no WARN naming the step: %s", logs.String())
	}
	k := e.Keys(t)
	if _, ok := k[storekit.CaptureSinceKey]; ok {
		t.Errorf("capture_since written by a failed backfill: %v", k)
	}
	if _, ok := k[storekit.BackfillThroughKey]; ok {
		t.Errorf("backfill_through written by a failed backfill: %v", k)
	}
	if n := len(rows(t, e, "s")); n != 0 {
		t.Errorf("%d partial rows", n)
	}
	stop()
	if r := mustRun(t, e); r.Step(migration.StepBackfill).RowsInserted != 3 || len(e.ActivationKeys(t)) != 3 {
		t.Errorf("retry: %s", r)
	}
}

// testSecondKeyFailure: AC-24d.
func testSecondKeyFailure(t *testing.T, d *Driver) {
	e := d.Env(t)
	insert(t, e, msg("m1", "s", "turn-1", at(1), kandevtest.Subagent("tc", "completed", &kandevtest.ClaudeCompleted)))
	boom := errors.New("injected: second key write")
	r := run(t, e, migration.WithHook(func(stage string) error {
		if stage == "wrote "+storekit.BackfillThroughKey {
			return boom
		}
		return nil
	}))
	if st := r.Step(migration.StepBackfill); st.Status != migration.Failed || !errors.Is(st.Err, boom) {
		t.Errorf("backfill: %+v", st)
	}
	k := e.Keys(t)
	if _, ok := k[storekit.BackfillThroughKey]; ok || k[storekit.CaptureSinceKey] != "" {
		t.Errorf("keys after a failed second write: %v", k)
	}
	if n := len(rows(t, e, "s")); n != 0 {
		t.Errorf("%d rows committed without their keys", n)
	}
	mustRun(t, e)
	if n := len(rows(t, e, "s")); n != 1 || len(e.ActivationKeys(t)) != 3 {
		t.Errorf("retry: %d rows, keys %v", n, e.Keys(t))
	}
}

func legacyRows(t testing.TB, e *Env) {
	t.Helper()
	e.Session(t, "s")
	for i, tc := range []string{"tc-1", "tc-2", "tc-3"} {
		e.Exec(
			t,
			`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, model, total_tokens,
			tool_use_count, source, observed_at, updated_at) VALUES (?, 's', 'task-s', 'turn-1', ?, 'm', ?, 0, 'live', ?, ?)`,
			fmt.Sprint("legacy-", i),
			tc,
			1000+i,
			at(i),
			at(i),
		)
	}
	e.Exec(t, `CREATE INDEX idx_host_custom ON task_session_subagents(model)`)
}

func hasIndex(t *testing.T, e *Env, name, columns string) bool {
	t.Helper()
	for _, x := range e.describe(t, sqlstore.Table).Indexes {
		if x.Name == name {
			return strings.Join(x.Columns, ",") == columns
		}
	}
	return false
}

// stages are the shape step's fault-injection stages on a dialect: every
// numbered step's, the seam repair's, and the commit.
func stages(d *Driver) []string {
	var out []string
	for _, st := range d.Dialect.Steps() {
		for _, s := range st.Stages {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return append(out, "merge doubled pairs", "remove merged rows", "before commit")
}

// testLegacyUpgrade: AC-33, 33b, 33c.
func testLegacyUpgrade(t *testing.T, d *Driver) {
	e := d.Env(t)
	d.legacyTable(t, e.DB)
	legacyRows(t, e)
	insert(
		t, e, msg("m1", "s", "turn-1", at(50), kandevtest.Subagent("tc-1", "completed", &kandevtest.ClaudeCompleted)),
		msg("m2", "s", "turn-1", at(51), kandevtest.Subagent("tc-new", "completed", &kandevtest.CodexChild)),
	)
	m := migration.New(e.Store, migration.WithLogger(testlog.Discard))
	r := m.Prepare(context.Background())
	if st := r.Step(migration.StepShape); st.Status != migration.Ran || !strings.Contains(st.Detail, "3 rows remain") ||
		r.Failed() {
		t.Errorf("shape step: %+v", st)
	}
	if !e.shapeHolds(t) {
		t.Fatalf("not in the declared shape after the upgrade: %+v", e.describe(t, sqlstore.Table))
	}
	got := rows(t, e, "s")
	for i, tc := range []string{"tc-1", "tc-2", "tc-3"} {
		r, ok := got[tc+"/unknown"]
		if !ok || r.ID != fmt.Sprint("legacy-", i) || show(r.TotalTokens) != fmt.Sprint(1000+i) ||
			show(r.ToolUseCount) != "0" || r.Source != core.SourceLive || !r.ObservedAt.Equal(at(i)) {
			t.Errorf("legacy row %s not kept as it was: %+v", tc, r)
		}
	}
	if !hasIndex(t, e, "idx_host_custom", "model") {
		t.Error("the host's own index on the table was lost in the upgrade")
	}
	if _, ok := e.Keys(t)[storekit.ExecutionSinceKey]; !ok {
		t.Error("execution_since not written after the upgrade")
	}
	// The backfill: tc-new's message gets its row; tc-1's, which the first
	// draft recorded live, merges into it as the earlier observation
	// (docs/CONTRACT.md §8.5): history's observation and settling, the
	// live values it reported.
	if st := m.Backfill(context.Background()); st.Status != migration.Ran || st.RowsInserted != 1 || st.RowsMerged != 1 {
		t.Errorf("backfill after the upgrade: %+v", st)
	}
	got = rows(t, e, "s")
	if r := got["tc-1/unknown"]; len(got) != 4 || r.ID != "legacy-0" || r.Source != core.SourceBackfill ||
		!r.ObservedAt.Equal(at(50)) || show(r.TotalTokens) != "1000" || show(r.Model) != "m" || r.SettledAt == nil ||
		!r.SettledAt.Equal(at(50).Add(30*time.Second)) {
		t.Errorf("tc-1 after the backfill: %+v (of %d rows)", r, len(got))
	}
	// A live frame under an execution id absorbs the row history now
	// holds; the other legacy rows were recorded live and keep apart.
	record(t, e, "s", "tc-1", "exec-1", at(60))
	record(t, e, "s", "tc-2", "exec-1", at(61))
	got = rows(t, e, "s")
	if r, ok := got["tc-1/exec-1"]; len(got) != 5 || !ok || r.Source != core.SourceBackfill ||
		!r.ObservedAt.Equal(at(50)) {
		t.Errorf("live writes after the upgrade: %d rows, tc-1 %+v", len(got), r)
	}
}

// testLegacyUpgradeFailure: AC-33a, a fault injected at every stage of the
// upgrade; while the end state does not hold, the backfill does not run
// and no key is written.
func testLegacyUpgradeFailure(t *testing.T, d *Driver) {
	e := d.Env(t)
	d.legacyTable(t, e.DB)
	legacyRows(t, e)
	insert(t, e, msg("m1", "s", "turn-1", at(50), kandevtest.Subagent("tc-new", "completed", &kandevtest.CodexChild)))
	before := snapshot(t, e)
	for _, stage := range stages(d) {
		var reached bool
		r := run(t, e, migration.WithHook(func(s string) error {
			if s == stage {
				reached = true
				return errors.New("injected at " + s)
			}
			return nil
		}))
		if !reached {
			t.Fatalf("stage %q never reached: a step's Stages are stale", stage)
		}
		if st := r.Step(migration.StepShape); st.Status != migration.Failed ||
			!strings.Contains(st.Detail, "injected at "+stage) {
			t.Errorf("stage %s: shape step %+v", stage, st)
		}
		if st := r.Step(migration.StepBackfill); st.Status != migration.Skipped {
			t.Errorf("stage %s: backfill on the old shape: %+v", stage, st)
		}
		if st := r.Step(migration.StepExecutionKey); st.Status != migration.Skipped {
			t.Errorf("stage %s: execution key on the old shape: %+v", stage, st)
		}
		if after := snapshot(t, e); after != before {
			t.Errorf("stage %s: a failed upgrade changed the store:\n%s\nvs\n%s", stage, before, after)
		}
	}
	if k := e.ActivationKeys(t); len(k) != 0 {
		t.Errorf("keys written while the declared shape does not hold: %v", k)
	}
	mustRun(t, e)
	if n := len(rows(t, e, "s")); n != 4 {
		t.Errorf("retry: %d rows, want 4", n)
	}
}

// testReplayAfterUpgrade: AC-34. After the legacy upgrade and its backfill,
// replaying the same live frames merges into the upgraded rows (their key
// is now (session, 'unknown', tool)) and a second pass changes nothing.
func testReplayAfterUpgrade(t *testing.T, d *Driver) {
	e := d.Env(t)
	d.legacyTable(t, e.DB)
	legacyRows(t, e)
	insert(
		t, e, msg("m1", "s", "turn-1", at(50), kandevtest.Subagent("tc-1", "completed", &kandevtest.ClaudeCompleted)),
	)
	mustRun(t, e)
	replay := func() {
		for i, tc := range []string{"tc-1", "tc-2", "tc-3"} {
			row, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "task-s", TurnID: "turn-2", ToolCallID: tc,
				ToolStatus: "completed", ObservedAt: at(70 + i), Payload: &core.Payload{Model: "replayed"}})
			if err := e.Store.Upsert(context.Background(), row); err != nil {
				t.Fatal(err)
			}
		}
	}
	replay()
	snap := snapshot(t, e)
	replay()
	mustRun(t, e)
	if again := snapshot(t, e); again != snap {
		t.Errorf("a replay after the upgrade changed the store:\n%s\nvs\n%s", snap, again)
	}
	got := rows(t, e, "s")
	for i, tc := range []string{"tc-1", "tc-2", "tc-3"} {
		observed, settled := at(i), at(70+i)
		if tc == "tc-1" { // its history (m1) came first: observed and settled then
			observed, settled = at(50), at(50).Add(30*time.Second)
		}
		r := got[tc+"/unknown"]
		if len(got) != 3 || r.ID != fmt.Sprint("legacy-", i) || show(r.Model) != "replayed" ||
			show(r.TurnID) != "turn-1" || !r.ObservedAt.Equal(observed) || r.SettledAt == nil || !r.SettledAt.Equal(settled) {
			t.Errorf("replayed %s: %+v (of %d rows)", tc, r, len(got))
		}
	}
}

// testPrimaryKeyUpgrade: a table of an earlier build (primary key id
// alone, docs/CONTRACT.md §8.9) is upgraded to the primary key
// (task_session_id, id), every row kept, with the legacy upgrade's
// all-or-nothing guarantee: a fault at any stage keeps the old shape.
func testPrimaryKeyUpgrade(t *testing.T, d *Driver) {
	earlier := func() *Env {
		e := d.Env(t)
		e.Session(t, "s")
		record(t, e, "s", "tc-1", "e1", at(1))
		record(t, e, "s", "tc-2", "e1", at(2))
		d.earlierTable(t, e.DB)
		if e.shapeHolds(t) {
			t.Fatalf("the earlier table holds the declared shape: %+v", e.describe(t, sqlstore.Table))
		}
		return e
	}
	reached := 0
	for _, stage := range stages(d) {
		e := earlier()
		before := snapshot(t, e)
		var hit bool
		r := run(t, e, migration.WithHook(func(s string) error {
			if s == stage {
				hit = true
				return errors.New("injected at " + s)
			}
			return nil
		}))
		if !hit {
			continue // a stage this shape does not need
		}
		reached++
		if r.Step(migration.StepShape).Status != migration.Failed || snapshot(t, e) != before {
			t.Errorf("stage %s: a failed primary-key upgrade changed the store: %s", stage, r)
		}
	}
	if reached < 2 {
		t.Errorf("only %d upgrade stages reached", reached)
	}
	e := earlier()
	mustRun(t, e)
	if got := rows(t, e, "s"); !e.shapeHolds(t) || len(got) != 2 || !got["tc-1/e1"].ObservedAt.Equal(at(1)) {
		t.Errorf("after the upgrade: %+v, rows %v", e.describe(t, sqlstore.Table), got)
	}
}

// testNoHostTables: on a database without the host's tables the pass
// creates nothing and its table step names the missing table.
func testNoHostTables(t *testing.T, d *Driver) {
	db, _ := d.Open(t)
	s, err := d.New(db)
	if err != nil {
		t.Fatal(err)
	}
	r := migration.New(s, migration.WithLogger(testlog.Discard)).Run(context.Background())
	if st := r.Step(migration.StepTable); st.Status != migration.Failed ||
		!errors.Is(st.Err, sqlstore.ErrNoSessionsTable) {
		t.Errorf("table step without the host's tables: %+v", st)
	}
	if ok, _ := d.Dialect.TableExists(context.Background(), db, sqlstore.Table); ok {
		t.Error("the pass created the table beside no host tables")
	}
}

// testCancelled: a pass whose context is cancelled reports its steps as
// cancelled, not failed, and logs no WARN.
func testCancelled(t *testing.T, d *Driver) {
	e := d.Env(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var logs bytes.Buffer
	r := migration.New(e.Store, migration.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))).Run(ctx)
	for _, st := range r.Steps {
		if st.Status != migration.Cancelled {
			t.Errorf("step %s: %s (%s), want cancelled", st.Step, st.Status, st.Detail)
		}
	}
	if r.Failed() || strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a cancelled pass is not a failure: failed=%v logs %s", r.Failed(), logs.String())
	}
}

// testConcurrentPasses: eight passes started together — replicas booting
// at once — on a fresh database and on the previous release's table, each
// on a store of its own over the same database: none fails; they run one
// after the other on the pass's lock (docs/CONTRACT.md §4), so exactly one
// creates or upgrades the table, exactly one backfills, and the others
// find it done and say so.
func testConcurrentPasses(t *testing.T, d *Driver) {
	for _, from := range []string{"fresh", "previous release"} {
		t.Run(from, func(t *testing.T) {
			var e *Env
			if from == "previous release" {
				e = d.Env(t)
				d.previousRelease(t, e.DB)
			} else {
				db, dsn := d.Open(t)
				e = &Env{Driver: d, DB: db, DSN: dsn, Tables: sqlstore.KandevTables()}
				if err := kandevtest.CreateTables(context.Background(), db, e.Tables); err != nil {
					t.Fatal(err)
				}
				if d.Host != nil {
					d.Host(t, db) // the operator's table, on a partitioned deployment
				}
			}
			db := e.DB
			insert(t, e,
				msg("m1", "s1", "turn-1", at(1), kandevtest.Subagent("toolu_1", "completed", &kandevtest.ClaudeCompleted)),
				msg("m2", "s2", "turn-2", at(2), kandevtest.Subagent("toolu_2", "in_progress", &kandevtest.OpenCodeTask)),
			)
			const passes = 8
			reports := make([]migration.Report, passes)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range passes {
				s, err := d.New(db)
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _ = await.Within(start, await.Limit) // all at once
					reports[i] = migration.New(s, migration.WithLogger(testlog.Discard)).Run(context.Background())
				}()
			}
			close(start)
			wg.Wait()
			backfilled, shaped := 0, 0
			for i, r := range reports {
				if r.Failed() {
					t.Errorf("pass %d of %d failed:\n%s", i+1, passes, r)
				}
				if r.Step(migration.StepBackfill).Status == migration.Ran {
					backfilled++
				}
				if r.Step(migration.StepShape).Status == migration.Ran {
					shaped++
				}
			}
			// A fresh table is created in its shape (or, made by an
			// operator, completed once); an earlier one is upgraded once.
			if backfilled != 1 || shaped > 1 || (from == "previous release" && shaped != 1) {
				t.Errorf("%d passes backfilled and %d changed the shape, want 1 and at most 1 (1 from the previous "+
					"release)", backfilled, shaped)
			}
			if n := e.Count(t); n != 2 {
				t.Errorf("%d rows after %d passes, want 2", n, passes)
			}
			if k := e.ActivationKeys(t); len(k) != 3 {
				t.Errorf("activation keys after %d passes: %v", passes, k)
			}
		})
	}
}

// testOneAbsorberPerPair (AC-32, docs/CONTRACT.md §8.5): the first frames
// of two executions reusing a backfilled pair's tool call id, written at
// the same instant on two connections: exactly one of them absorbs the
// history — one row holds its values and its tokens, the other keeps
// apart — on every dialect, Citus's shards included.
func testOneAbsorberPerPair(t *testing.T, d *Driver) {
	e := d.Env(t)
	mustRun(t, e) // activated: the rows below are history
	const pairs = 40
	e.Session(t, "s")
	for i := range pairs {
		h := row("s", fmt.Sprint("tc-", i), core.UnknownExecution, core.SourceBackfill, at(1))
		h.TotalTokens = ptr(int64(1000))
		e.insertRaw(t, h)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs)
	for i := range pairs {
		start := make(chan struct{})
		for _, exec := range []string{"e1", "e2"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = await.Within(start, await.Limit)
				f, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "task-s", ExecutionID: exec,
					ToolCallID: fmt.Sprint("tc-", i), ToolStatus: "in_progress", ObservedAt: at(5)})
				errs <- e.Store.Upsert(context.Background(), f)
			}()
		}
		close(start)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got struct{ Absorbing, History, Rows, Tokens int64 }
	e.DB.Raw(`SELECT count(*) FILTER (WHERE source = 'backfill' AND agent_execution_id <> 'unknown') AS absorbing,
		count(*) FILTER (WHERE agent_execution_id = 'unknown') AS history, count(*) AS rows,
		coalesce(sum(total_tokens), 0) AS tokens FROM task_session_subagents`).Scan(&got)
	if got.Absorbing != pairs || got.History != 0 || got.Rows != 2*pairs || got.Tokens != 1000*pairs {
		t.Errorf("%d absorbing rows, %d left as history, %d rows, %d tokens; want %d, 0, %d, %d", got.Absorbing,
			got.History, got.Rows, got.Tokens, pairs, 2*pairs, 1000*pairs)
	}
}
