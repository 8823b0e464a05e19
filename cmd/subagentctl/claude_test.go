package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// listRows is list --session ID --json, by tool call id.
func listRows(t *testing.T, dsn, session string) map[string]map[string]any {
	t.Helper()
	var rows []map[string]any
	r := cli(t, "", "--db", dsn, "list", "--session", session, "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, row := range rows {
		out[row["tool_call_id"].(string)] = row
	}
	return out
}

// TestClaudeSourcesThroughTheCommandLine (docs/CONTRACT.md §3.4, §7.1), on
// every dialect: the Agent SDK's stream (claude/testdata, in the shapes of
// the SDK's reference) follows a background subagent to its failure after
// launch; hook events whose tool call another input named join the row by
// agent id; an agent no row names is counted unmatched, named, and exits
// 1; stale names the launch that never came back; export carries
// started_at and ended_at.
func TestClaudeSourcesThroughTheCommandLine(t *testing.T) {
	sdk, err := os.ReadFile("../../claude/testdata/sdk-background.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		ctx := context.Background()
		for _, s := range []string{"s1", "s2"} {
			if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, s, "t1"); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{"--db", e.DSN, "record", "--task-session", "s1", "--task", "t1", "--execution", "e1"}
		cli(t, string(sdk), append(args, "--claude-sdk", "-")...).want(t, 0)
		rows := listRows(t, e.DSN, "s1")
		bg, sync := rows["toolu_bg"], rows["toolu_sync"]
		if len(rows) != 2 || bg == nil || sync == nil {
			t.Fatalf("rows %v, want toolu_bg and toolu_sync", rows)
		}
		// Compared as instants: RFC 3339 drops a fraction's trailing zeros,
		// so ".694Z" sorts after ".694132Z" as text.
		instant := func(v any) time.Time {
			at, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(v))
			return at
		}
		if bg["agent_status"] != "failed" || bg["tool_status"] != "completed" || bg["is_async"] != true ||
			bg["started_at"] == nil || bg["ended_at"] == nil || bg["settled_at"] == nil ||
			instant(bg["ended_at"]).Before(instant(bg["started_at"])) {
			t.Errorf("background row: %v; want launched (tool completed), started, failed and ended", bg)
		}
		if sync["agent_status"] != "completed" || sync["ended_at"] != sync["settled_at"] || sync["started_at"] != nil {
			t.Errorf("synchronous row: %v; want its end its tool call's, no start reported", sync)
		}

		// The launch from the stream; the agent's events from hooks, which
		// name no tool call: joined by agent id in the session.
		launch := strings.Join(strings.Split(string(sdk), "\n")[1:4], "\n")
		args[4] = "s2"
		cli(t, launch, append(args, "--claude-sdk", "-")...).want(t, 0)
		hooks := `{"hook_event_name":"SubagentStart","agent_id":"a1b2c3d4","agent_type":"code-reviewer"}
{"hook_event_name":"SubagentStop","agent_id":"a1b2c3d4","agent_type":"code-reviewer"}
{"hook_event_name":"SubagentStop","agent_id":"never-launched","agent_type":"Explore"}
`
		r := cli(t, hooks, append(args, "--claude-hooks", "--json", "-")...).want(t, 1)
		var rep struct {
			Persisted int  `json:"persisted"`
			Unmatched *int `json:"unmatched"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Unmatched == nil || *rep.Unmatched != 1 || rep.Persisted != 2 ||
			!strings.Contains(r.stderr, `"never-launched"`) {
			t.Errorf("report %s, stderr %s; want 2 persisted, 1 unmatched, named", r.stdout, r.stderr)
		}
		got := listRows(t, e.DSN, "s2")["toolu_bg"]
		if got == nil || got["started_at"] == nil || got["ended_at"] == nil || got["agent_status"] != "async_launched" {
			t.Errorf("joined by agent id: %v; want started and ended, its status as launched", got)
		}

		// docs/CONTRACT.md §5.8: what never came back is named, once
		// older than the threshold — the synchronous calls whose result
		// the cut streams lack, and s3's background launch — oldest first.
		if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, "s3", "t1"); err != nil {
			t.Fatal(err)
		}
		args[4] = "s3"
		cli(t, launch, append(args, "--claude-sdk", "-")...).want(t, 0)
		cli(t, "", "--db", e.DSN, "stale").want(t, 0) // not an hour old yet
		var stale []map[string]any
		r = cli(t, "", "--db", e.DSN, "stale", "--older-than", "1ns", "--json").want(t, 1)
		if err := json.Unmarshal([]byte(r.stdout), &stale); err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, r := range stale {
			listed = append(listed, fmt.Sprint(r["task_session_id"], "/", r["tool_call_id"]))
		}
		want := []string{"s2/toolu_sync", "s3/toolu_sync", "s3/toolu_bg"}
		if !slices.Equal(listed, want) || stale[2]["description"] != "Review the diff" ||
			stale[2]["since"] != stale[2]["started_at"] {
			t.Errorf("stale: %v, want %v (the launch since its task_started):\n%s", listed, want, r.stdout)
		}

		// docs/CONTRACT.md §3.5: the transcripts fill the run's usage of
		// every row their agent names (a1b2c3d4 in three sessions,
		// e5f6a7b8's synchronous run in s1); one names no row; a second
		// run changes nothing.
		var filled transcriptsReport
		r = cli(t, "", "--db", e.DSN, "transcripts", "--json", "../../claude/testdata/transcripts").want(t, 0)
		if err := json.Unmarshal([]byte(r.stdout), &filled); err != nil {
			t.Fatal(err)
		}
		if want := (transcriptsReport{Files: 3, Matched: 4, NoRow: 1, SkippedLines: 1}); filled != want {
			t.Errorf("transcripts: %+v, want %+v", filled, want)
		}
		run := listRows(t, e.DSN, "s1")["toolu_bg"]
		for col, want := range map[string]any{"input_tokens": 8.0, "output_tokens": 508.0, "cache_read_tokens": 27120.0,
			"cache_write_tokens": 5760.0, "requests": 2.0, "started_at": "2026-12-05T09:00:01.25Z"} {
			if run[col] != want {
				t.Errorf("after transcripts, toolu_bg's %s = %v, want %v", col, run[col], want)
			}
		}
		r = cli(t, "", "--db", e.DSN, "transcripts", "--json", "../../claude/testdata/transcripts").want(t, 0)
		if err := json.Unmarshal([]byte(r.stdout), &filled); err != nil {
			t.Fatal(err)
		}
		if want := (transcriptsReport{Files: 3, AlreadyComplete: 4, NoRow: 1, SkippedLines: 1}); filled != want {
			t.Errorf("transcripts again: %+v, want %+v", filled, want)
		}

		out := cli(t, "", "--db", e.DSN, "export").want(t, 0).stdout
		if !strings.Contains(out, `"started_at":`) || !strings.Contains(out, `"ended_at":`) {
			t.Errorf("export lacks started_at or ended_at:\n%s", out)
		}
	})
}

// TestRecordSourcesExclusive: one input format at a time, and each names
// what it needs.
func TestRecordSourcesExclusive(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--claude-sdk", "--claude-hooks", "--task-session", "s", "--task", "t"}, "give one input format"},
		{[]string{"--claude-sdk", "--acp", "--task-session", "s", "--task", "t"}, "give one input format"},
		{[]string{"--claude-hooks", "--task", "t"}, "give --task-session ID and --task ID"},
		{[]string{"--claude-sdk", "--agent", "codex", "--task-session", "s", "--task", "t"}, "--agent goes with --acp"},
		{[]string{"--task-session", "s"}, "go with --acp, --claude-sdk or --claude-hooks"},
	} {
		r := cli(t, "", append([]string{"--db", "sqlite:" + t.TempDir() + "/x.db", "record"}, c.args...)...).want(t, 2)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("record %v: stderr %q, want it to say %q", c.args, r.stderr, c.want)
		}
	}
}

// TestStaleThresholdsLearntPerType (docs/CONTRACT.md §5.8), on every
// dialect: without --older-than, each type's threshold is learnt from its
// runs — three times its 95th percentile duration, at least five minutes —
// and an hour for a type with no duration reported, so that a quick type's
// launch twenty minutes old is named and a slow type's two hours old is
// not; --older-than gives one threshold to all.
func TestStaleThresholdsLearntPerType(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		if err := kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s", "t"); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		var lines []string
		frame := func(id, typ string, ago time.Duration, task string) {
			at := now.Add(-ago).Format(time.RFC3339Nano)
			lines = append(lines, fmt.Sprintf(`{"task_session_id":"s","task_id":"t","execution_id":"e",`+
				`"tool_call_id":%q,"tool_status":"completed","observed_at":%q,"started_at":%q,`+
				`"subagent_task":{"subagent_type":%q,%s}}`, id, at, at, typ, task))
		}
		for i, ms := range []int{1000, 2000, 60_000} { // p95 1 min: 3 min, floored to 5
			frame(fmt.Sprint("quick-", i), "quick", 48*time.Hour, fmt.Sprintf(`"duration_ms":%d`, ms))
		}
		frame("slow-0", "slow", 48*time.Hour, `"duration_ms":3600000`) // 3 h
		launch := `"status":"async_launched","is_async":true`
		frame("bg-quick", "quick", 20*time.Minute, launch)
		frame("bg-slow", "slow", 2*time.Hour, launch)
		frame("bg-other", "other", 30*time.Minute, launch)
		frame("bg-other-old", "other", 90*time.Minute, launch)
		cli(t, strings.Join(lines, "\n")+"\n", "--db", e.DSN, "record", "-").want(t, 0)

		named := func(args ...string) (ids []string, thresholds []any) {
			var rows []map[string]any
			r := cli(t, "", append([]string{"--db", e.DSN, "stale", "--json"}, args...)...).want(t, 1)
			if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
				t.Fatal(err)
			}
			for _, row := range rows {
				ids, thresholds = append(ids, row["tool_call_id"].(string)), append(thresholds, row["threshold_seconds"])
			}
			return ids, thresholds
		}
		ids, thresholds := named()
		if want := []string{"bg-other-old", "bg-quick"}; !slices.Equal(ids, want) ||
			fmt.Sprint(thresholds) != "[3600 300]" {
			t.Errorf("learnt thresholds name %v %v, want %v [3600 300]", ids, thresholds, want)
		}
		ids, _ = named("--older-than", "10m")
		if want := []string{"bg-slow", "bg-other-old", "bg-other", "bg-quick"}; !slices.Equal(ids, want) {
			t.Errorf("--older-than 10m names %v, want %v", ids, want)
		}
	})
}
