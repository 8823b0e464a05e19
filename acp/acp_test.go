package acp_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/acp"
	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// clock is a tracker clock that advances a second a call.
func clock() func() time.Time {
	var mu sync.Mutex
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return t0.Add(time.Duration(n) * time.Second)
	}
}

func identity(sess string) acp.Identity {
	return acp.Identity{TaskSessionID: sess, TaskID: "task-" + sess, TurnID: "turn-1", ExecutionID: "exec-1"}
}

// traffic reads a testdata file's lines through a tracker.
func traffic(t *testing.T, tr *acp.Tracker, id acp.Identity, name string) []core.Frame {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var frames []core.Frame
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out, err := tr.Line(id, sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		frames = append(frames, out...)
	}
	return frames
}

// describe is a row as the tests compare it.
func describe(r core.Subagent) string {
	s := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	n := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	settled := "open"
	if r.SettledAt != nil {
		settled = "settled"
	}
	return fmt.Sprintf(
		"%s type=%s desc=%q tool=%s %s agent=%s async=%v tokens=%s uses=%s ms=%s parent=%s child=%s model=%s id=%s",
		r.ToolCallID, s(r.SubagentType), s(r.Description), s(r.ToolStatus), settled, s(r.AgentStatus), r.IsAsync,
		n(r.TotalTokens), n(r.ToolUseCount), n(r.DurationMs), s(r.ParentToolCallID), s(r.ChildSessionID), s(r.Model),
		s(r.AgentID),
	)
}

// providers are the replays: each provider's recorded-style traffic and
// the rows it must leave.
var providers = []struct {
	name  string
	agent acp.Agent
	want  []string
}{
	{"claude", "", []string{
		`toolu_01A type=general-purpose desc="Find flaky tests" tool=completed settled agent=completed async=false ` +
			`tokens=275717 uses=23 ms=48211 parent=- child=- model=claude-sonnet-4-5-20250929 id=a1b2c3`,
		`toolu_01C type=explorer desc="Bisect the failing test" tool=failed settled agent=- async=false tokens=- uses=- ` +
			`ms=- parent=toolu_01A child=- model=- id=-`,
		`toolu_02 type=security-reviewer desc="Audit auth middleware" tool=pending settled agent=async_launched ` +
			`async=true tokens=- uses=- ms=- parent=- child=- model=- id=d4e5`,
	}},
	{"opencode", "", []string{
		`call_8 type=general desc="Review the migration" tool=completed settled agent=- async=false tokens=- uses=- ms=- ` +
			`parent=- child=ses_child_1 model=anthropic/claude-sonnet-4 id=-`,
	}},
	{"cursor", "", []string{
		`tc_1 type=general desc="Refactor the parser" tool=completed settled agent=- async=false tokens=- uses=- ms=5300 ` +
			`parent=- child=- model=gpt-5 id=bc-1`,
		`tc_2 type=- desc="Write the changelog" tool=completed settled agent=- async=true tokens=- uses=- ms=- parent=- ` +
			`child=- model=claude-4-sonnet id=bc-2`,
	}},
	{"auggie", "", []string{
		`aug_2 type=explorer desc="Map the auth module" tool=completed settled agent=- async=false tokens=- uses=- ms=- ` +
			`parent=- child=- model=- id=-`,
	}},
	// A resume: the agent replays the session's history between the
	// session/load request and its response; only the live call after it
	// is recorded.
	{"resume", "", []string{
		`toolu_new1 type=general-purpose desc="Fix the flaky test" tool=completed settled agent=- async=false ` +
			`tokens=- uses=- ms=- parent=- child=- model=- id=-`,
	}},
	// Codex as codex-acp speaks: siblings on one spawn, their states and
	// model in rawInput, activity frames (a thread no spawn named is a row
	// of its own when it starts, typed and described by its path; a second
	// thread on one wire id a row apart; a terminal activity settles; a
	// status never moves back), the proposed toolName/subAgent shape, a
	// spawn from a child's thread nested.
	{"codex-real", acp.AgentCodex, []string{
		`act_11 type=explorer desc="explorer" tool=completed settled agent=completed async=false tokens=- uses=- ms=- ` +
			`parent=- child=thr-r model=- id=-`,
		`act_11/thr-s type=explorer desc="explorer" tool=in_progress open agent=started async=false tokens=- uses=- ` +
			`ms=- ` +
			`parent=- child=thr-s model=- id=-`,
		`agent_1 type=reviewer desc="Review the diff" tool=completed settled agent=- async=false tokens=- uses=- ms=- ` +
			`parent=- child=thr-n model=gpt-5 id=run-7`,
		`spawn_10 type=explorer desc="Find the parser" tool=completed settled agent=- async=false tokens=- uses=- ` +
			`ms=- parent=spawn_9/thr-q child=thr-z model=- id=-`,
		`spawn_9 type=worker desc="Port the flags" tool=completed settled agent=completed async=false tokens=- ` +
			`uses=- ms=- parent=- child=thr-p model=gpt-5.1-codex id=-`,
		`spawn_9/thr-q type=worker desc="Write the tests" tool=completed settled agent=running async=false ` +
			`tokens=- uses=- ms=- parent=- child=thr-q model=gpt-5.1-codex id=-`,
	}},
	// Native subagent sessions, as ACP's draft has them (both forms): a
	// row per child session, keyed by the parent tool use its frames name
	// or by its session id; the child's own calls are no rows.
	{"native", "", []string{
		`child-2 type=- desc="reviewer" tool=failed settled agent=failed async=false tokens=- uses=- ` +
			`ms=- parent=- child=child-2 model=- id=-`,
		`child-3 type=- desc="helper" tool=completed settled agent=completed async=false tokens=- ` +
			`uses=- ms=- parent=toolu_P1 child=child-3 model=- id=-`,
		`toolu_P1 type=explorer desc="Map the repo" tool=completed settled agent=completed async=false tokens=- ` +
			`uses=- ms=- parent=- child=child-1 model=- id=-`,
	}},
	{"codex", acp.AgentCodex, []string{
		`spawn_1 type=worker desc="Port the CLI flags" tool=completed settled agent=running async=false tokens=- uses=- ` +
			`ms=- parent=- child=thr-a model=gpt-5-codex id=-`,
		`spawn_2 type=explorer desc="Find the flag parser" tool=completed settled agent=- async=false tokens=- uses=- ` +
			`ms=- parent=spawn_1 child=thr-b model=- id=-`,
	}},
}

// TestReplay: each provider's traffic, through the tracker and the
// Recorder, leaves exactly the expected rows on every store.
func TestReplay(t *testing.T) {
	run := func(t *testing.T, s core.Store, session func(string)) {
		for _, p := range providers {
			t.Run(p.name, func(t *testing.T) {
				id := identity("s-" + p.name + "-" + t.Name()[len(t.Name())-4:])
				id.Agent = p.agent
				session(id.TaskSessionID)
				frames := traffic(t, acp.NewTracker(acp.WithClock(clock())), id, p.name+".jsonl")
				testenv.Record(t, s, frames)
				rows, err := s.ListBySession(context.Background(), id.TaskSessionID, core.Page{})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rows {
					if r.TaskID != id.TaskID || r.AgentExecutionID != id.ExecutionID || r.TurnID == nil ||
						*r.TurnID != id.TurnID {
						t.Errorf(
							"%s: identity %s %s %v, want the host's", r.ToolCallID, r.TaskID, r.AgentExecutionID, r.TurnID,
						)
					}
					got = append(got, describe(r))
				}
				slices.Sort(got)
				if strings.Join(got, "\n") != strings.Join(p.want, "\n") {
					t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(p.want, "\n"))
				}
			})
		}
	}
	t.Run("memory", func(t *testing.T) { run(t, memory.New(), func(string) {}) })
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		run(t, e.Store, func(id string) { e.Session(t, id) })
	})
}

// TestAgentNames: the names hosts give their agents (the agent's own, its
// ACP adapter's) all reach the agent's rules — Codex's traffic read under
// "codex-acp" gives Codex's rows — and an unknown name is an error, never
// rules silently off.
func TestAgentNames(t *testing.T) {
	for name, want := range map[string]acp.Agent{
		"codex": acp.AgentCodex, "codex-acp": acp.AgentCodex, "Codex-ACP": acp.AgentCodex,
		"claude-agent-acp": acp.AgentClaudeCode, "claude-code": acp.AgentClaudeCode, "opencode": acp.AgentOpenCode,
		"cursor-agent": acp.AgentCursor, "auggie": acp.AgentAuggie, "": "",
		// the reference host's names, and <agent>-acp for every agent
		"claude-acp": acp.AgentClaudeCode, "cursor-acp": acp.AgentCursor, "claude-code-acp": acp.AgentClaudeCode,
		"opencode-acp": acp.AgentOpenCode, "auggie-acp": acp.AgentAuggie, "cursor-agent-acp": acp.AgentCursor,
	} {
		if got, err := acp.ParseAgent(name); err != nil || got != want {
			t.Errorf("ParseAgent(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, unknown := range []string{"gpt-engineer", "gpt-engineer-acp", "-acp", "codex-acp-acp"} {
		if _, err := acp.ParseAgent(unknown); err == nil || !strings.Contains(err.Error(), "codex-acp") {
			t.Errorf("the unknown agent %q: %v, want an error listing the known names", unknown, err)
		}
	}
	for _, name := range []acp.Agent{acp.AgentCodex, "codex-acp"} {
		id := identity("s-names")
		id.Agent = name
		frames := traffic(t, acp.NewTracker(acp.WithClock(clock())), id, "codex.jsonl")
		if len(frames) == 0 {
			t.Errorf("Codex's traffic under the name %q: no frame", name)
		}
	}
}
