package claude

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

var t0 = time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)

// clock ticks one second per reading, so that each line of a file has an
// instant of its own: line n (from 1) is observed at t0 + n s.
func clock() func() time.Time {
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
}

var id = Identity{TaskSessionID: "s1", TaskID: "t1", TurnID: "u1", ExecutionID: "e1"}

// replay reads a file line by line through read and folds the frames into
// rows, as a store would (storekit.Write).
func replay(t *testing.T, name string, read func(Identity, []byte) ([]core.Frame, error),
	rows map[core.RowKey]core.Subagent) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		frames, err := read(id, sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, fr := range frames {
			row, v := core.Normalize(fr)
			if v.NoIdentity {
				t.Fatalf("a frame without identity: %+v", fr)
			}
			storekit.Write(rows, row)
		}
	}
}

func row(t *testing.T, rows map[core.RowKey]core.Subagent, tool string) core.Subagent {
	t.Helper()
	r, ok := rows[core.RowKey{TaskSessionID: "s1", AgentExecutionID: "e1", ToolCallID: tool}]
	if !ok {
		t.Fatalf("no row for %s; rows: %v", tool, rows)
	}
	return r
}

func at(sec int) string { return t0.Add(time.Duration(sec) * time.Second).Format(time.RFC3339) }

func show[T any](p *T) any {
	if p == nil {
		return "NULL"
	}
	if t, ok := any(*p).(time.Time); ok {
		return t.Format(time.RFC3339)
	}
	return *p
}

// TestSDKStreamFollowsABackgroundAgentToItsEnd (docs/CONTRACT.md §3.4,
// §7.1): testdata/sdk-background.jsonl is a session's stream-json in the
// shapes of the Agent SDK's reference (SDKAssistantMessage's tool_use,
// SDKUserMessage's tool_use_result of the Agent tool — AgentOutput's
// async_launched and completed forms —, SDKTaskStartedMessage,
// SDKTaskProgressMessage, SDKTaskUpdatedMessage, SDKTaskNotificationMessage):
// one background subagent that fails after its launch, one synchronous
// one, and a shell task that is no subagent.
func TestSDKStreamFollowsABackgroundAgentToItsEnd(t *testing.T) {
	rows := map[core.RowKey]core.Subagent{}
	s := NewStreamAt(clock())
	replay(t, "testdata/sdk-background.jsonl", s.SDK, rows)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want the two Agent calls' (no row for the shell task): %v", len(rows), rows)
	}
	bg := row(t, rows, "toolu_bg")
	for _, c := range []struct{ col, got, want any }{
		{"tool_status", show(bg.ToolStatus), "completed"},
		{"settled_at (the launch)", show(bg.SettledAt), at(4)},
		{"is_async", bg.IsAsync, true},
		{"agent_id", show(bg.AgentID), "a1b2c3d4"},
		{"subagent_type", show(bg.SubagentType), "code-reviewer"},
		{"started_at (task_started)", show(bg.StartedAt), at(3)},
		{"agent_status (task_notification)", show(bg.AgentStatus), "failed"},
		{"ended_at (task_updated's end, first)", show(bg.EndedAt), at(10)},
		{"total_tokens (no final request reported)", show(bg.TotalTokens), "NULL"},
	} {
		if c.got != c.want {
			t.Errorf("background row: %s = %v, want %v", c.col, c.got, c.want)
		}
	}
	sync := row(t, rows, "toolu_sync")
	for _, c := range []struct{ col, got, want any }{
		{"tool_status", show(sync.ToolStatus), "completed"},
		{"agent_status", show(sync.AgentStatus), "completed"},
		{"ended_at (its tool call's end)", show(sync.EndedAt), at(8)},
		{"started_at (no source reported it)", show(sync.StartedAt), "NULL"},
		{"total_tokens", show(sync.TotalTokens), int64(48211)},
		{"tool_use_count", show(sync.ToolUseCount), int64(12)},
		{"duration_ms", show(sync.DurationMs), int64(61234)},
		{"is_async", sync.IsAsync, false},
	} {
		if c.got != c.want {
			t.Errorf("synchronous row: %s = %v, want %v", c.col, c.got, c.want)
		}
	}
	if p := s.Pending(); len(p) != 0 {
		t.Errorf("reports left pending: %+v", p)
	}
}

// TestHooksFollowAnAgentWokenAgain (docs/CONTRACT.md §3.4, §7.1):
// testdata/hooks.jsonl is hook input in the shapes of Claude Code's hooks
// reference (PreToolUse and PostToolUse of the Agent tool, SubagentStart,
// SubagentStop with agent_transcript_path, a Notification): the agent's
// start comes before the response that names its tool call, so it is held
// until then; the agent stops, is woken again, and runs.
func TestHooksFollowAnAgentWokenAgain(t *testing.T) {
	rows := map[core.RowKey]core.Subagent{}
	s := NewStreamAt(clock())
	replay(t, "testdata/hooks.jsonl", s.Hook, rows)
	r := row(t, rows, "toolu_h1")
	for _, c := range []struct{ col, got, want any }{
		{"started_at (the first SubagentStart)", show(r.StartedAt), at(2)},
		{"ended_at (woken again at 5: running)", show(r.EndedAt), "NULL"},
		{"settled_at (the launch)", show(r.SettledAt), at(3)},
		{"agent_status", show(r.AgentStatus), "async_launched"},
		{"description", show(r.Description), "Audit the migrations"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.col, c.got, c.want)
		}
	}
	if c := s.Counts(); c.Held != 1 || c.Forgotten != 0 || len(s.Pending()) != 0 {
		t.Errorf("counts %+v, pending %d: want the early start held once, then released", c, len(s.Pending()))
	}
}

// TestAReportWithoutItsToolCallIsHeldThenResolved: an end whose tool call
// the stream never saw is held, and joins the row that names its agent;
// one no row names stays pending; past the bound the oldest is forgotten
// and counted.
func TestAReportWithoutItsToolCallIsHeldThenResolved(t *testing.T) {
	s := NewStreamAt(clock())
	for _, agent := range []string{"known", "stranger"} {
		out, err := s.Hook(id, []byte(`{"hook_event_name":"SubagentStop","agent_id":"`+agent+`"}`))
		if err != nil || len(out) != 0 {
			t.Fatalf("an end without its call: %v frames, %v", out, err)
		}
	}
	agent := "known"
	stored := core.Subagent{TaskSessionID: "s1", TaskID: "t1", AgentExecutionID: "e9", ToolCallID: "toolu_9",
		AgentID: &agent}
	got := s.Resolve([]core.Subagent{stored})
	if len(got) != 1 || got[0].ToolCallID != "toolu_9" || got[0].ExecutionID != "e9" ||
		!got[0].EndedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("resolved %+v, want one end keyed by the row (toolu_9, e9) at %s", got, at(1))
	}
	if p := s.Pending(); len(p) != 1 || p[0].AgentID != "stranger" {
		t.Fatalf("pending %+v, want the stranger's end", p)
	}
	for range MaxPending {
		if _, err := s.Hook(id, []byte(`{"hook_event_name":"SubagentStart","agent_id":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if c := s.Counts(); c.Forgotten != 1 || len(s.Pending()) != MaxPending {
		t.Errorf("past the bound: counts %+v, %d pending; want 1 forgotten, %d held", c, len(s.Pending()), MaxPending)
	}
}

// TestBadLinesNamed: a line that is not one JSON object, or a hook line
// without its event's name, is an error; the stream goes on.
func TestBadLinesNamed(t *testing.T) {
	s := NewStream()
	for _, l := range []string{`{"type":`, `[1]`, `{"a":1} {"b":2}`} {
		if _, err := s.SDK(id, []byte(l)); err == nil {
			t.Errorf("SDK %q: no error", l)
		}
	}
	if _, err := s.Hook(id, []byte(`{"session_id":"x"}`)); err == nil {
		t.Error("a hook line without hook_event_name: no error")
	}
}

func readFile(t *testing.T, name string) Transcript {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadTranscript(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func figures(u core.Usage) string {
	return fmt.Sprintf("in=%v out=%v read=%v write=%v requests=%v", show(u.InputTokens), show(u.OutputTokens),
		show(u.CacheReadTokens), show(u.CacheWriteTokens), show(u.Requests))
}

// TestTranscriptCountsEachRequestOnce (docs/CONTRACT.md §3.5): a subagent
// transcript in Claude Code's shape (assistant lines with message.id,
// requestId, model, timestamp and usage; one request's content blocks on
// lines of their own repeating its usage) gives the run's usage with each
// request once, its models, its first and last instants, and an end where
// its last message ended its turn; a partial last line — the agent still
// writing — is skipped and means no end yet.
func TestTranscriptCountsEachRequestOnce(t *testing.T) {
	dir := "testdata/transcripts/cc-1/subagents/"
	done := readFile(t, dir+"agent-a1b2c3d4.jsonl")
	want := "in=8 out=508 read=27120 write=5760 requests=2"
	if got := figures(done.Usage); got != want || done.Requests != 2 {
		t.Errorf("usage %s (requests %d), want %s", got, done.Requests, want)
	}
	if !done.Ended || done.First.Format(time.RFC3339Nano) != "2026-12-05T09:00:01.25Z" ||
		done.Last.Format(time.RFC3339Nano) != "2026-12-05T09:00:11.75Z" || done.Skipped != 0 || done.Lines != 6 ||
		len(done.Models) != 1 || done.Models[0] != "claude-sonnet-4-5" {
		t.Errorf("a finished transcript: %+v", done)
	}
	writing := readFile(t, dir+"agent-e5f6a7b8.jsonl")
	if got := figures(writing.Usage); got != want || writing.Ended || writing.Skipped != 1 {
		t.Errorf("a transcript still written: usage %s ended %v skipped %d; want the same usage, no end, "+
			"the partial line skipped", got, writing.Ended, writing.Skipped)
	}
	f := done.Frame(core.Subagent{TaskSessionID: "s", TaskID: "t", AgentExecutionID: "e", ToolCallID: "c"})
	if f.Usage == nil || !f.StartedAt.Equal(done.First) || !f.EndedAt.Equal(done.Last) || f.ToolCallID != "c" {
		t.Errorf("the transcript's frame: %+v", f)
	}
	if f := writing.Frame(core.Subagent{ToolCallID: "c"}); !f.EndedAt.IsZero() {
		t.Error("a transcript still written gave an end")
	}
}

// TestTranscriptBoundedLines: a line longer than the bound (a huge tool
// result) is read past and skipped, in bounded memory; the rest counts.
func TestTranscriptBoundedLines(t *testing.T) {
	data, err := os.ReadFile("testdata/transcripts/cc-1/subagents/agent-a1b2c3d4.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	huge := `{"type":"user","message":{"content":"` + strings.Repeat("x", maxLineBytes) + `"}}` + "\n"
	tr, err := ReadTranscript(io.MultiReader(strings.NewReader(huge), bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Skipped != 1 || tr.Lines != 7 || *tr.Usage.Requests != 2 {
		t.Errorf("lines %d skipped %d requests %v; want the long line skipped, the rest read", tr.Lines, tr.Skipped,
			show(tr.Usage.Requests))
	}
}

// TestTranscriptWithoutRequests: no assistant usage, no figures — NULL,
// never 0.
func TestTranscriptWithoutRequests(t *testing.T) {
	tr, err := ReadTranscript(strings.NewReader(`{"type":"user","message":{"content":"hi"}}` + "\n"))
	if err != nil || tr.Usage.InputTokens != nil || tr.Requests != 0 || tr.Frame(core.Subagent{}).Usage != nil {
		t.Errorf("a transcript without requests: %+v, %v", tr, err)
	}
}

// TestTranscriptOfManyRequests: a long run — more requests than the
// reader keeps by key, each on two lines repeating its usage — is summed
// exactly, each request once, in memory that does not grow with it.
func TestTranscriptOfManyRequests(t *testing.T) {
	var b strings.Builder
	const n = 3*keptRequests + 7
	for i := range n {
		line := fmt.Sprintf(`{"type":"assistant","requestId":"req_%d","timestamp":"2026-12-05T09:00:00Z",`+
			`"message":{"id":"msg_%d","model":"m","usage":{"input_tokens":%d,"output_tokens":2,`+
			`"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}}`, i, i, i)
		b.WriteString(line + "\n" + line + "\n")
	}
	tr, err := ReadTranscript(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("in=%d out=%d read=%d write=%d requests=%d", n*(n-1)/2, 2*n, 3*n, 4*n, n)
	if got := figures(tr.Usage); got != want || tr.Requests != n {
		t.Errorf("usage %s (requests %d), want %s", got, tr.Requests, want)
	}
}
