package acp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/acp/acpsdk"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/race"
)

func line(sess, kind, tool string, fields string) []byte {
	return []byte(
		fmt.Sprintf(`{"sessionId":%q,"update":{"sessionUpdate":%q,"toolCallId":%q%s}}`, sess, kind, tool, fields),
	)
}

// typed hands a notification to the tracker on the SDK's path.
func typed(t *testing.T, tr *acp.Tracker, id acp.Identity, n sdk.SessionNotification) []core.Frame {
	t.Helper()
	f, err := acpsdk.Update(tr, id, n)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func rowsOf(t *testing.T, frames []core.Frame) map[string]core.Subagent {
	t.Helper()
	rows := map[string]core.Subagent{}
	for _, f := range frames {
		r, v := core.Normalize(f)
		if v.NoIdentity {
			t.Fatalf("frame without identity: %+v", f)
		}
		prev, ok := rows[r.ToolCallID]
		if ok {
			r = storekit.Merge(&prev, r)
		}
		rows[r.ToolCallID] = r
	}
	return rows
}

// TestUnknownKindIgnored: the SDK decodes an unknown sessionUpdate kind
// that has a tool call's fields as a tool call, without error; the
// tracker checks the raw kind and ignores it, on both paths.
func TestUnknownKindIgnored(t *testing.T) {
	raw := line("s", "tool_call_preview", "toolu_9", `,"title":"Task","_meta":{"claudeCode":{"toolName":"Agent"}}`)
	var n sdk.SessionNotification
	if err := json.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	if n.Update.ToolCall == nil {
		t.Fatal("the SDK no longer decodes an unknown kind as a tool call: this test no longer tests the guard")
	}
	tr := acp.NewTracker()
	if f := typed(t, tr, identity("s"), n); len(f) != 0 {
		t.Errorf("typed: %d frames from an unknown kind", len(f))
	}
	if f, err := tr.UpdateJSON(identity("s"), raw); err != nil || len(f) != 0 {
		t.Errorf("raw: %d frames, %v", len(f), err)
	}
}

// TestTypedAndRawAgree: the same traffic gives the same rows whether the
// host hands over the SDK's typed notifications or the raw params.
func TestTypedAndRawAgree(t *testing.T) {
	id := identity("s")
	rawTracker, typedTracker := acp.NewTracker(acp.WithClock(clock())), acp.NewTracker(acp.WithClock(clock()))
	var rawFrames, typedFrames []core.Frame
	for _, l := range [][]byte{
		line("a", "tool_call", "t1", `,"title":"Task","status":"pending",`+
			`"rawInput":{"description":"d","subagent_type":"x"},`+
			`"_meta":{"claudeCode":{"toolName":"Agent","parentToolUseId":"p"}}`),
		line("a", "tool_call_update", "t1", `,"status":"completed"`),
		line("a", "tool_call_update", "t1",
			`,"_meta":{"claudeCode":{"toolResponse":{"totalTokens":12,"totalToolUseCount":0,"status":"completed"}}}`),
		line("a", "tool_call", "t2", `,"title":"sub-agent-planner: Plan it"`),
	} {
		f, err := rawTracker.UpdateJSON(id, l)
		if err != nil {
			t.Fatal(err)
		}
		rawFrames = append(rawFrames, f...)
		var n sdk.SessionNotification
		if err := json.Unmarshal(l, &n); err != nil {
			t.Fatal(err)
		}
		typedFrames = append(typedFrames, typed(t, typedTracker, id, n)...)
	}
	a, b := rowsOf(t, rawFrames), rowsOf(t, typedFrames)
	if len(a) != 2 ||
		fmt.Sprint(describe(a["t1"]), describe(a["t2"])) != fmt.Sprint(describe(b["t1"]), describe(b["t2"])) {
		t.Errorf(
			"raw:   %s | %s\ntyped: %s | %s", describe(a["t1"]), describe(a["t2"]), describe(b["t1"]), describe(b["t2"]),
		)
	}
	if r := a["t1"]; r.ToolUseCount == nil || *r.ToolUseCount != 0 || r.TotalTokens == nil || *r.TotalTokens != 12 ||
		r.SettledAt == nil {
		t.Errorf("t1: %s; want a reported 0 tool uses, 12 tokens, settled", describe(r))
	}
}

// TestStatusVerbatim: ACP's status is stored as it is; a call that never
// reported one has NULL; a non-terminal status leaves the row open.
func TestStatusVerbatim(t *testing.T) {
	tr := acp.NewTracker()
	var frames []core.Frame
	for _, l := range [][]byte{
		line("a", "tool_call", "none", `,"title":"sub-agent-x: no status"`),
		line("a", "tool_call", "prog", `,"title":"sub-agent-x: running","status":"in_progress"`),
		line("a", "tool_call", "odd", `,"title":"sub-agent-x: odd","status":"Weird-Status"`),
	} {
		f, _ := tr.UpdateJSON(identity("s"), l)
		frames = append(frames, f...)
	}
	rows := rowsOf(t, frames)
	if r := rows["none"]; r.ToolStatus != nil || r.SettledAt != nil {
		t.Errorf("no status: %s", describe(r))
	}
	if r := rows["prog"]; r.ToolStatus == nil || *r.ToolStatus != "in_progress" || r.SettledAt != nil {
		t.Errorf("in_progress: %s", describe(r))
	}
	if r := rows["odd"]; r.ToolStatus == nil || *r.ToolStatus != "Weird-Status" {
		t.Errorf("verbatim: %s", describe(r))
	}
}

// TestCodexOnlyWhenTheHostSaysSo: Codex's metadata is recognised only
// for a session the host says is Codex's.
func TestCodexOnlyWhenTheHostSaysSo(t *testing.T) {
	if f := traffic(t, acp.NewTracker(), identity("s"), "codex.jsonl"); len(f) != 0 {
		t.Errorf("%d frames from Codex traffic without the host saying the agent is Codex", len(f))
	}
}

// TestNotSubagents: other tools — Claude Code's Read with a title of
// "Task", a title merely containing "task", a Cursor read — make nothing.
func TestNotSubagents(t *testing.T) {
	tr := acp.NewTracker()
	for _, l := range [][]byte{
		line("a", "tool_call", "r", `,"title":"Task","_meta":{"claudeCode":{"toolName":"Read"}}`),
		line("a", "tool_call", "b", `,"title":"run task list"`),
		line("a", "tool_call", "c", `,"title":"Read","rawInput":{"_toolName":"read_file"}`),
		line("a", "tool_call", "d", `,"title":"sub-agent-: nothing"`),
		line("a", "tool_call_update", "", `,"title":"Task"`),
	} {
		if f, err := tr.UpdateJSON(identity("s"), l); err != nil || len(f) != 0 {
			t.Errorf("%s: %d frames, %v", l, len(f), err)
		}
	}
}

// TestBounded: a session's calls are capped, the least recently used
// session goes past the sessions' cap, and the host's end of a turn or of
// a session releases what it says.
func TestBounded(t *testing.T) {
	tr := acp.NewTracker(acp.WithMaxCalls(3), acp.WithMaxSessions(2))
	for i := range 10 {
		tr.UpdateJSON(identity("s"), line("a", "tool_call", fmt.Sprint("t", i), `,"title":"bash"`))
	}
	if n := tr.Calls(); n != 3 {
		t.Errorf("%d calls kept in a session capped at 3", n)
	}
	for _, s := range []string{"b", "c", "d"} {
		tr.UpdateJSON(identity("s"), line(s, "tool_call", "t", `,"title":"bash"`))
	}
	if n := tr.Calls(); n != 2 {
		t.Errorf("%d calls kept over sessions capped at 2 (one call each)", n)
	}
	tr = acp.NewTracker()
	tr.UpdateJSON(identity("s"), line("a", "tool_call", "done", `,"title":"sub-agent-x: y","status":"completed"`))
	tr.UpdateJSON(identity("s"), line("a", "tool_call", "open", `,"title":"sub-agent-x: y","status":"in_progress"`))
	tr.UpdateJSON(identity("s"), line("a", "tool_call", "other", `,"title":"bash"`))
	tr.EndTurn("a")
	if n := tr.Calls(); n != 1 {
		t.Errorf("%d calls after the turn ended, want the open subagent only", n)
	}
	// Its result after the turn still reaches a frame.
	f, _ := tr.UpdateJSON(identity("s"), line("a", "tool_call_update", "open", `,"status":"completed"`))
	if len(f) != 1 || f[0].Payload.SubagentType != "x" {
		t.Errorf("the open call's result after its turn: %+v", f)
	}
	tr.EndSession("a")
	if n := tr.Calls(); n != 0 {
		t.Errorf("%d calls after the session ended", n)
	}
}

// TestConcurrent: sessions fed from many goroutines at once, some sharing
// a session, each call's frames complete (run under -race).
func TestConcurrent(t *testing.T) {
	tr := acp.NewTracker()
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess := fmt.Sprint("s", g%4)
			for i := range 50 {
				tool := fmt.Sprint("g", g, "-", i)
				for _, l := range [][]byte{
					line(sess, "tool_call", tool, `,"title":"sub-agent-w: x","status":"pending"`),
					line(sess, "tool_call_update", tool, `,"status":"completed"`),
				} {
					f, err := tr.UpdateJSON(identity("s"), l)
					if err != nil || len(f) != 1 {
						t.Errorf("%s: %d frames, %v", l, len(f), err)
						return
					}
					mu.Lock()
					counts[f[0].ToolCallID]++
					mu.Unlock()
				}
				if i%10 == 9 {
					tr.EndTurn(sess)
				}
			}
		}()
	}
	wg.Wait()
	if len(counts) != 16*50 {
		t.Errorf("%d calls framed, want %d", len(counts), 16*50)
	}
}

// FuzzTracker: no input makes the tracker panic or return a frame without
// the host's identity and a tool call id.
func FuzzTracker(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a","update":{"sessionUpdate":"tool_call",` +
			`"toolCallId":"t","title":"Task","_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"totalTokens":1e400,` +
			`"totalToolUseCount":-1}}}}}}`,
		`{"method":"cursor/task","params":{"toolCallId":"t","agentId":[1],"model":{"x":1}}}`,
		`{"sessionId":"a","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","rawInput":[],"rawOutput":"x",` +
			`"_meta":{"codex":{"collaboration":{"tool":"spawnAgent","receiverThreadIds":[null,1]}}}}}`,
		`{"sessionId":"a","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"task",` +
			`"rawOutput":{"metadata":{"model":"m","sessionId":3}}}}`,
		`{"update":null}`, `[]`, `null`, `{"method":"session/update","params":7}`,
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, l string, codex bool) {
		tr := acp.NewTracker(acp.WithMaxCalls(4))
		id := identity("s")
		if codex {
			id.Agent = acp.AgentCodex
		}
		for range 2 {
			frames, _ := tr.Line(id, []byte(l))
			for _, fr := range frames {
				if fr.TaskSessionID != id.TaskSessionID || fr.TaskID != id.TaskID || fr.ToolCallID == "" ||
					fr.Payload == nil {
					t.Fatalf("frame %+v", fr)
				}
			}
		}
		tr.EndTurn("a")
	})
}

// TestReplayGate: while a session's traffic is a replay — between
// Replay(s, true) and Replay(s, false), or between a session/load request
// and its response (a result or an error) — nothing of it is recorded,
// on the typed path as on the raw one; other sessions are not affected;
// an unanswered load past the tracker's session bound ends its replay.
func TestReplayGate(t *testing.T) {
	task := `,"title":"Task","rawInput":{"subagent_type":"explorer"},"_meta":{"claudeCode":{"toolName":"Agent"}}`
	id := acp.Identity{TaskSessionID: "s", TaskID: "t", ExecutionID: "e"}
	tr := acp.NewTracker(acp.WithMaxSessions(2))
	send := func(l string) int {
		frames, err := tr.Line(id, []byte(l))
		if err != nil {
			t.Fatal(err)
		}
		return len(frames)
	}
	call := func(sess, tool string) int { return send(string(line(sess, "tool_call", tool, task))) }

	tr.Replay("a", true)
	var n sdk.SessionNotification
	if err := json.Unmarshal(line("a", "tool_call", "typed", task), &n); err != nil {
		t.Fatal(err)
	}
	if got := len(typed(t, tr, id, n)) + call("a", "raw") + call("b", "other"); got != 1 {
		t.Errorf("explicit replay of a: %d frames, want 1 (b's)", got)
	}
	tr.Replay("a", false)
	if call("a", "after") != 1 {
		t.Error("a is not recorded once its replay ended")
	}

	for _, end := range []string{`{"jsonrpc":"2.0","id":"L1","result":{}}`,
		`{"jsonrpc":"2.0","id":"L1","error":{"code":-32603,"message":"no such session"}}`} {
		send(`{"jsonrpc":"2.0","id":"L1","method":"session/load","params":{"sessionId":"c"}}`)
		if call("c", "replayed") != 0 {
			t.Error("a call between session/load and its response was recorded")
		}
		if send(`{"jsonrpc":"2.0","id":1,"result":{}}`); call("c", "still") != 0 {
			t.Error("the response to another id ended the replay")
		}
		send(end)
		if call("c", "live") != 1 {
			t.Errorf("after %s: c is not recorded", end)
		}
	}

	// Three unanswered loads with room for two: the first is taken as
	// answered.
	for _, s := range []string{"x", "y", "z"} {
		send(`{"jsonrpc":"2.0","id":"` + s + `","method":"session/load","params":{"sessionId":"` + s + `"}}`)
	}
	if call("x", "x1") != 1 || call("y", "y1") != 0 || call("z", "z1") != 0 {
		t.Error("the oldest unanswered load did not end its replay past the bound")
	}
}

// TestBoundedInBytes: a turn of 256 finished non-subagent calls of 64
// KiB each keeps none of their payload; open subagent calls with large
// inputs are held within WithMaxBytes, the oldest forgotten first, and the
// account returns to 0 when every session ends.
func TestBoundedInBytes(t *testing.T) {
	if race.Enabled {
		t.Skip("-race: 16 MiB through one goroutine (scripts/test runs it without -race)")
	}
	big := strings.Repeat("x", 64<<10)
	tr := acp.NewTracker()
	for i := range 256 {
		tr.UpdateJSON(identity("s"), line("a", "tool_call", fmt.Sprint("read", i),
			`,"title":"Read","status":"completed","rawInput":{"file_path":"f"},"rawOutput":{"content":"`+big+`"}`))
	}
	if n := tr.Bytes(); n != 0 {
		t.Errorf("finished non-subagent calls hold %d bytes, want 0", n)
	}
	const limit = 1 << 20
	tr = acp.NewTracker(acp.WithMaxBytes(limit))
	var last []core.Frame
	for i := range 64 {
		f, err := tr.UpdateJSON(identity("s"), line("a", "tool_call", fmt.Sprint("task", i),
			`,"title":"sub-agent-x: y","status":"in_progress","rawInput":{"prompt":"`+big+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		last = f
		if n := tr.Bytes(); n > limit {
			t.Fatalf("after %d open subagent calls the tracker holds %d bytes, over its bound %d", i+1, n, limit)
		}
	}
	if len(last) != 1 {
		t.Error("the newest call gave no frame")
	}
	if n := tr.Calls(); n == 64 || n == 0 {
		t.Errorf("%d calls kept of 64 of 64 KiB under a 1 MiB bound", n)
	}
	// The newest call is still followed: its result reaches its row.
	f, _ := tr.UpdateJSON(identity("s"), line("a", "tool_call_update", "task63", `,"status":"completed"`))
	if len(f) != 1 || f[0].Payload.SubagentType != "x" || f[0].ToolStatus != "completed" {
		t.Errorf("the newest call's result: %+v", f)
	}
	tr.EndSession("a")
	if tr.Bytes() != 0 || tr.Calls() != 0 {
		t.Errorf("after the session ended: %d bytes, %d calls", tr.Bytes(), tr.Calls())
	}
}

// TestTapCards: a host's UI gets, for each notification, the frame it
// implied and the card — the call as Tracker.Current gives it then —
// with the call's ACP session, which the frame does not carry.
func TestTapCards(t *testing.T) {
	tr := acp.NewTracker(acp.WithContent(func(string) bool { return false }))
	stream := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"session/update","params":` + string(line("acp-7", "tool_call", "toolu_1",
			`,"title":"Task","status":"pending","rawInput":{"description":"Review","prompt":"Review the diff",`+
				`"subagent_type":"reviewer"},"_meta":{"claudeCode":{"toolName":"Agent"}}`)) + `}`,
		`{"jsonrpc":"2.0","method":"session/update","params":` + string(line("acp-7", "tool_call_update", "toolu_1",
			`,"status":"completed","_meta":{"claudeCode":{"toolName":"Agent"}}`)) + `}`,
	}, "\n") + "\n"
	var cards []acp.Card
	passed, err := io.ReadAll(acp.TapCards(strings.NewReader(stream), tr, identity, func(c acp.Card) {
		cards = append(cards, c)
	}))
	if err != nil || string(passed) != stream {
		t.Fatalf("the stream passed on: %v, %q", err, passed)
	}
	if len(cards) != 2 {
		t.Fatalf("%d cards, want 2", len(cards))
	}
	last := cards[1]
	now := tr.Current("acp-7", "toolu_1")
	if last.ACPSession != "acp-7" || last.Frame.ToolStatus != "completed" || len(now) != 1 ||
		!reflect.DeepEqual(last.Current, now[0]) || last.Current.Payload.Prompt != "Review the diff" {
		t.Errorf("the completion's card: session %q, card %+v; Current %+v", last.ACPSession, last.Current, now)
	}
}

// TestByteBoundBoundsTheHeap: under hostile payload shapes — long arrays
// of zeros, of empty strings, of one-key objects, objects of many keys —
// what a tracker keeps under WithMaxBytes holds at most twice the bound
// in heap, measured after a collection (counted by JSON length, an 8 MiB
// bound held 45–171 MiB).
func TestByteBoundBoundsTheHeap(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("-short or -race: decodes tens of megabytes and measures the heap (scripts/test runs it without -race)")
	}
	repeat := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	keys := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%d":0`, i)
		}
		return b.String()
	}
	const limit = 8 << 20
	for name, input := range map[string]string{
		"zeros":         "[" + repeat(20_000, "0") + "]",
		"empty strings": "[" + repeat(13_000, `""`) + "]",
		"small objects": "[" + repeat(5_000, `{"a":0}`) + "]",
		"many keys":     "{" + keys(4_000) + "}",
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			tr := acp.NewTracker(acp.WithMaxBytes(limit))
			for i := range 3 * limit / len(input) {
				if _, err := tr.UpdateJSON(identity("s"), line("a", "tool_call", fmt.Sprint("task", i),
					`,"title":"sub-agent-x: y","status":"in_progress","rawInput":{"prompt":`+input+`}`)); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("%s: %d calls kept, %d bytes counted, heap +%.1f MiB under a bound of %d MiB", name, tr.Calls(),
				tr.Bytes(), float64(held)/(1<<20), limit>>20)
			if tr.Bytes() > limit || tr.Calls() == 0 {
				t.Errorf("%d bytes counted in %d calls, want at most %d in at least one", tr.Bytes(), tr.Calls(), limit)
			}
			if held > 2*limit {
				t.Errorf("the tracker holds %.1f MiB of heap under a bound of %d MiB: over twice its bound",
					float64(held)/(1<<20), limit>>20)
			}
			runtime.KeepAlive(tr)
		})
	}
}

// TestCodexCorrelation (docs/CONTRACT.md §7, Codex): activities reach the
// row of the spawn that named their thread across tool call ids, after the
// spawn settled and its turn ended; a non-terminal one under another id
// leaves the spawn's tool status alone, a terminal one settles it; a
// result naming no child is ambiguous, and ignored, where two children
// share the wire id; a child's state never moves back.
func TestCodexCorrelation(t *testing.T) {
	tr := acp.NewTracker()
	id := identity("s")
	id.Agent = "codex-acp"
	var frames []core.Frame
	feed := func(kind, tool, fields string) {
		f, err := tr.UpdateJSON(id, line("acp-1", kind, tool, fields))
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f...)
	}
	spawn := func(tool, child, status string) {
		feed("tool_call", tool, `,"status":"in_progress","rawInput":{"prompt":"Do `+child+`","agentsStates":{"`+child+
			`":{"status":"`+status+`"}}},"_meta":{"codex":{"collaboration":{"tool":"spawnAgent",`+
			`"senderThreadId":"main","receiverThreadIds":["`+child+`"]}}}`)
	}
	activity := func(tool, child, activity, status string) {
		feed("tool_call", tool, `,"status":"`+status+`","_meta":{"codex":{"subagent":{"threadId":"`+child+
			`","path":"/root/worker_agent","activity":"`+activity+`"}}}`)
	}
	spawn("spawn-a", "thr-a", "running")
	activity("act-1", "thr-a", "started", "completed") // another id, not terminal: the spawn's status stays
	feed("tool_call_update", "spawn-a", `,"status":"completed"`)
	tr.EndTurn("acp-1") // the spawn settled and its turn ended: the correlation stays
	activity("act-2", "thr-a", "completed", "completed")
	activity("act-3", "thr-a", "started", "in_progress") // late: the state does not move back
	spawn("shared", "thr-b", "running")
	spawn("shared", "thr-c", "running")
	feed("tool_call_update", "shared", `,"status":"failed"`) // whose? ambiguous
	activity("act-4", "thr-unknown", "interrupted", "completed")
	rows := rowsOf(t, frames)
	want := map[string]string{
		"spawn-a": `spawn-a type=worker_agent desc="Do thr-a" tool=completed settled agent=completed async=false ` +
			`tokens=- uses=- ms=- parent=- child=thr-a model=- id=-`,
		"shared": `shared type=- desc="Do thr-b" tool=in_progress open agent=running async=false tokens=- uses=- ms=- ` +
			`parent=- child=thr-b model=- id=-`,
		"shared/thr-c": `shared/thr-c type=- desc="Do thr-c" tool=in_progress open agent=running async=false ` +
			`tokens=- uses=- ms=- parent=- child=thr-c model=- id=-`,
	}
	for tool, r := range rows {
		if got := describe(r); got != want[tool] {
			t.Errorf("row %s\n got %s\nwant %s", tool, got, want[tool])
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d (no row for a terminal activity no spawn announced)", len(rows), len(want))
	}
}

// TestProviderDetails (docs/CONTRACT.md §7): OpenCode's model from either
// half of rawOutput.metadata.model, or both as provider/model; Auggie's
// rawInput description and subagent_type over its title, which fills only
// what the input lacks.
func TestProviderDetails(t *testing.T) {
	for _, c := range []struct {
		name, fields string
		want         []string
	}{
		{"opencode provider only", `,"title":"task","status":"completed","rawOutput":{"metadata":{"model":` +
			`{"providerID":"opencode"}}}`, []string{`model=opencode `}},
		{"opencode model only", `,"title":"task","status":"completed","rawOutput":{"metadata":{"model":` +
			`{"modelID":"big-pickle"}}}`, []string{`model=big-pickle `}},
		{"opencode both", `,"title":"task","status":"completed","rawOutput":{"metadata":{"model":` +
			`{"providerID":"opencode","modelID":"big-pickle"}}}`, []string{`model=opencode/big-pickle `}},
		{"auggie input wins", `,"title":"sub-agent-explorer: Map it","status":"completed","rawInput":` +
			`{"description":"Map the auth module","subagent_type":"code-explorer"}`,
			[]string{`type=code-explorer `, `desc="Map the auth module"`}},
		{"auggie title fills", `,"title":"sub-agent-explorer: Map it","status":"completed","rawInput":` +
			`{"subagent_type":"code-explorer"}`, []string{`type=code-explorer `, `desc="Map it"`}},
	} {
		frames, err := acp.NewTracker().UpdateJSON(identity("s"), line("acp", "tool_call", "call-1", c.fields))
		if err != nil {
			t.Fatal(err)
		}
		got := describe(rowsOf(t, frames)["call-1"])
		for _, want := range c.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s: %s, want %s", c.name, got, want)
			}
		}
	}
}

// TestTapWritesFollowsRequests: the host's stream to the agent passes
// through TapWrites unchanged, in any chunking; a session/load request
// on it starts its session's replay (the agent's replayed history then
// records nothing), a line too long to follow is passed on unread
// without confusing the lines after it, and the host's answer to the
// agent's own request of the same id does not end the replay.
func TestTapWritesFollowsRequests(t *testing.T) {
	tr := acp.NewTracker()
	var out strings.Builder
	w := acp.TapWrites(&out, tr)
	long := `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":"` + strings.Repeat("x", 2<<20) + `"}}`
	load := `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"acp-9","cwd":"/"}}`
	// The host answers the agent's own request 2 (ids are per direction)
	// during the replay: not the session/load's answer.
	answer := `{"jsonrpc":"2.0","id":2,"result":{"content":"file text"}}`
	in := long + "\n" + load + "\n" + answer + "\n"
	for i := 0; i < len(in); i += 4093 { // chunks that split lines anywhere
		if _, err := w.Write([]byte(in[i:min(i+4093, len(in))])); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != in {
		t.Error("TapWrites changed what it passed on")
	}
	replayed := line("acp-9", "tool_call", "toolu_old", `,"title":"Task","status":"completed",`+
		`"_meta":{"claudeCode":{"toolName":"Agent"}}`)
	if f, err := tr.UpdateJSON(identity("s"), replayed); err != nil || len(f) != 0 {
		t.Errorf("the replayed history after a session/load the host wrote: %d frames, %v", len(f), err)
	}
	if _, err := tr.Line(identity("s"), []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`)); err != nil {
		t.Fatal(err)
	}
	if f, err := tr.UpdateJSON(identity("s"), replayed); err != nil || len(f) != 1 {
		t.Errorf("after the load's response: %d frames, %v; want the live call's", len(f), err)
	}
}

// TestBoundIsTotal (docs/CONTRACT.md §7, Memory): everything the tracker
// keeps counts toward WithMaxBytes and Bytes — cursor/task metadata
// waiting for a tool call that never comes (4,000 of 64 KiB, naming no
// session and naming one), and Codex's correlations of child threads —
// so under a 1 MiB bound neither Bytes nor the heap grows with the
// stream; the newest waiting metadata still reaches its call. Native
// child sessions count too.
func TestBoundIsTotal(t *testing.T) {
	if testing.Short() || race.Enabled {
		t.Skip("-short or -race: fills the bound many times and measures the heap (scripts/test runs it without -race)")
	}
	const limit = 1 << 20
	tr := acp.NewTracker(acp.WithMaxBytes(limit))
	big := strings.Repeat("m", 64<<10)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 4000 {
		sess := ""
		if i%2 == 1 {
			sess = `"sessionId":"cur-1",`
		}
		msg := `{"jsonrpc":"2.0","id":` + fmt.Sprint(i) + `,"method":"cursor/task","params":{` + sess +
			`"toolCallId":"tc_` + fmt.Sprint(i) + `","agentId":"bc","description":"` + big + `"}}`
		if _, err := tr.Line(identity("s"), []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if n := tr.Bytes(); n > limit || n <= 0 {
			t.Fatalf("after %d cursor/task messages Bytes is %d, want within (0, %d]", i+1, n, limit)
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Errorf("the heap grew by %d MiB under a 1 MiB bound", grew>>20)
	}
	f, err := tr.UpdateJSON(identity("s"), line("cur-1", "tool_call", "tc_3999",
		`,"title":"Task","status":"completed","rawInput":{"_toolName":"Task"}`))
	if err != nil || len(f) != 1 || f[0].Payload.AgentID != "bc" {
		t.Errorf("the newest waiting metadata did not reach its call: %+v, %v", f, err)
	}

	codex := acp.NewTracker(acp.WithMaxBytes(limit))
	id := identity("s")
	id.Agent = acp.AgentCodex
	thread := strings.Repeat("t", 4<<10)
	for i := range 2000 {
		codex.UpdateJSON(id, line("acp-1", "tool_call", fmt.Sprint("spawn-", i), `,"status":"completed",`+
			`"rawInput":{"agentsStates":{"`+thread+fmt.Sprint(i)+`":{"status":"completed"}}},`+
			`"_meta":{"codex":{"collaboration":{"tool":"spawnAgent"}}}`))
		codex.EndTurn("acp-1") // the calls go; their correlations stay, counted
		if n := codex.Bytes(); n > limit {
			t.Fatalf("after %d spawns Codex's correlations hold %d bytes, over %d", i+1, n, limit)
		}
	}
	if codex.Bytes() == 0 {
		t.Error("Codex's correlations are not counted")
	}
	natives := acp.NewTracker(acp.WithMaxBytes(limit))
	for i := range 2000 { // native child sessions, each named by 4 KiB
		natives.UpdateJSON(identity("s"), []byte(`{"sessionId":"acp-n","update":{"sessionUpdate":"subagent_spawned",`+
			`"subagentSessionId":"child-`+fmt.Sprint(i)+`","name":"`+thread+`"}}`))
		if n := natives.Bytes(); n > limit || n == 0 {
			t.Fatalf("after %d native children Bytes is %d, want within (0, %d]", i+1, n, limit)
		}
	}
	codex.EndSession("acp-1")
	tr.EndSession("cur-1")
	if codex.Bytes() != 0 {
		t.Errorf("after the session ended: %d bytes", codex.Bytes())
	}
}

// TestNativeTaskIsContent: a native child session's task (its prompt)
// reaches the caller's frame only with WithContent, and never a column.
func TestNativeTaskIsContent(t *testing.T) {
	spawned := []byte(`{"sessionId":"acp-n","update":{"sessionUpdate":"subagent_spawned",` +
		`"subagentSessionId":"child-1","name":"Fix the build","task":"Make the build pass"}}`)
	done := []byte(`{"sessionId":"acp-n","update":{"sessionUpdate":"subagent_state_update",` +
		`"subagentSessionId":"child-1","state":"completed"}}`)
	for _, content := range []bool{false, true} {
		var opts []acp.Option
		if content {
			opts = append(opts, acp.WithContent(nil))
		}
		tr := acp.NewTracker(opts...)
		var frames []core.Frame
		for _, l := range [][]byte{spawned, done} {
			f, err := tr.UpdateJSON(identity("s"), l)
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, f...)
		}
		if len(frames) != 1 || frames[0].Payload.Description != "Fix the build" ||
			(frames[0].Payload.Prompt == "Make the build pass") != content {
			t.Fatalf("content %v: %+v", content, frames)
		}
		if r := rowsOf(t, frames)["child-1"]; strings.Contains(describe(r), "Make the build pass") {
			t.Errorf("the task reached the row: %s", describe(r))
		}
	}
}

// TestContentAsTheHostReadsIt: WithContent's result text is Claude Code's
// text blocks that hold more than white space (a block of another type,
// or of blanks, is no result, as the reference host reads them), and
// without a readable check the agent's own canReadOutputFile decides
// whether the output file can be read.
func TestContentAsTheHostReadsIt(t *testing.T) {
	launch := line("a", "tool_call", "toolu_c", `,"title":"Task","status":"pending",`+
		`"_meta":{"claudeCode":{"toolName":"Agent"}}`)
	done := func(blocks, readable string) []byte {
		return line("a", "tool_call_update", "toolu_c", `,"status":"completed","_meta":{"claudeCode":{"toolName":"Agent",`+
			`"toolResponse":{"status":"completed","outputFile":"/tmp/a.output"`+readable+`,"content":[`+blocks+`]}}}`)
	}
	for _, tc := range []struct {
		name, blocks, readable string
		result                 string
		canRead                bool
	}{
		{"text", `{"type":"text","text":"No issues."}`, `,"canReadOutputFile":true`, "No issues.", true},
		{"blanks and another type", `{"type":"text","text":"  \n"},{"type":"image","text":"alt"},` +
			`{"type":"text","text":"Done."}`, "", "Done.", false},
		{"blanks only", `{"type":"text","text":" "}`, `,"canReadOutputFile":false`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := acp.NewTracker(acp.WithContent(nil))
			tr.UpdateJSON(identity("s"), launch)
			f, err := tr.UpdateJSON(identity("s"), done(tc.blocks, tc.readable))
			if err != nil || len(f) != 1 {
				t.Fatalf("frames %+v, %v", f, err)
			}
			if p := f[0].Payload; p.ResultText != tc.result || p.CanReadOutputFile != tc.canRead {
				t.Errorf("result %q, readable %v; want %q, %v", p.ResultText, p.CanReadOutputFile, tc.result, tc.canRead)
			}
		})
	}
}
