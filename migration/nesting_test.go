package migration_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/fanout"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// invocation is one subagent call of a generated tree: its place in the
// tree, and how the record learns of it.
type invocation struct {
	session, tool, parent, exec string
	history                     bool // the host's message holds it (backfilled)
	live                        int  // its frames recorded live, under exec
	liveParent                  bool // its live frames name the parent
	reuse                       bool // another execution reusing a root's tool call id, after all else (AC-32)
	turn                        string
	at                          time.Time
}

// nestedTrees generates, per session, trees of subagents under two
// executions — roots, children, grandchildren — each known from history,
// from live frames, or both, and a few later invocations of another
// execution that reuse a root's tool call id.
func nestedTrees(rng *rand.Rand) []invocation {
	var out []invocation
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	n := 0
	for s := range 2 {
		session := fmt.Sprint("nest-", s)
		for tree := range 3 {
			exec := fmt.Sprintf("exec-%d", tree%2)
			var add func(parent string, depth int)
			add = func(parent string, depth int) {
				n++
				inv := invocation{session: session, tool: fmt.Sprintf("toolu_%d", n), parent: parent, exec: exec,
					turn: fmt.Sprint("turn-", tree), at: t0.Add(time.Duration(n) * time.Second)}
				switch rng.IntN(3) {
				case 0:
					inv.history = true
				case 1:
					inv.live = 1 + rng.IntN(2)
				default:
					inv.history, inv.live = true, 1+rng.IntN(2)
				}
				inv.liveParent = !inv.history || rng.IntN(2) == 0
				out = append(out, inv)
				if depth < 2 {
					for range rng.IntN(3) {
						add(inv.tool, depth+1)
					}
				}
				if parent == "" && inv.live > 0 && rng.IntN(2) == 0 {
					reuse := inv
					reuse.exec, reuse.reuse, reuse.history, reuse.live = "exec-reuse", true, false, 1
					out = append(out, reuse)
				}
			}
			add("", 0)
		}
	}
	return out
}

// TestNestingAcrossTheSeam (docs/CONTRACT.md Decision 8.17): nested trees
// whose members history and live frames wrote in any mix, the pass running
// while the frames flow, on every store: every row's parent, as the
// readers resolve it (report.Parents, through the fan-out tree the command
// line and the web view draw), is the row of its parent invocation; the
// reuse of a root's tool call id by another execution is a root of its
// own, and nobody's parent.
func TestNestingAcrossTheSeam(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	t.Run("memory", func(t *testing.T) {
		for round := range 20 {
			invs := nestedTrees(rand.New(rand.NewPCG(seed, uint64(round))))
			s := memory.New()
			ctx := context.Background()
			for _, inv := range invs { // history first, as the backfill writes it, then the frames
				if inv.history {
					if err := s.Upsert(ctx, historyRow(inv)); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, f := range liveFrames(invs, false) {
				s.Upsert(ctx, normalized(f))
			}
			for _, f := range liveFrames(invs, true) {
				s.Upsert(ctx, normalized(f))
			}
			checkNesting(t, round, invs, s)
		}
	})
	for _, d := range drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			for round := range 3 {
				rng := rand.New(rand.NewPCG(seed, uint64(round)))
				invs := nestedTrees(rng)
				e := d.Env(t)
				ctx := context.Background()
				var msgs []kandevtest.Message
				for _, inv := range invs {
					e.Session(t, inv.session)
					if inv.history {
						meta := kandevtest.Subagent(inv.tool, "completed", &core.Payload{TotalTokens: 100})
						meta.ParentToolCallID = inv.parent
						m := meta.JSON()
						msgs = append(msgs, kandevtest.Message{ID: "m-" + inv.tool, TaskSessionID: inv.session,
							TaskID: "task", TurnID: inv.turn, Metadata: &m, CreatedAt: inv.at})
					}
				}
				if err := kandevtest.InsertMessages(ctx, e.DB, e.Tables, msgs); err != nil {
					t.Fatal(err)
				}
				rec, err := core.NewRecorder(e.Store, core.WithWriters(4), core.WithBatch(4),
					core.WithLogger(testlog.Discard))
				if err != nil {
					t.Fatal(err)
				}
				frames := liveFrames(invs, false)
				pass := make(chan migration.Report, 1)
				start := rng.IntN(len(frames) + 1)
				for i := 0; i <= len(frames); i++ {
					if i == start {
						go func() {
							pass <- migration.New(e.Store, migration.WithLogger(testlog.Discard)).Run(ctx)
						}()
					}
					if i < len(frames) {
						rec.Record(ctx, frames[i])
						time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
					}
				}
				if r := await.Recv(t, pass, "the pass"); r.Failed() {
					t.Fatalf("round %d: the pass:\n%s", round, r)
				}
				if err := rec.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				for _, f := range liveFrames(invs, true) {
					rec.Record(ctx, f)
				}
				drain, cancel := context.WithTimeout(ctx, time.Minute)
				err = rec.Close(drain)
				cancel()
				if v := rec.Counters().Values(); err != nil || v.Failed != 0 {
					t.Fatalf("round %d: recorder: %v, %+v", round, err, v)
				}
				checkNesting(t, round, invs, e.Store)
			}
		})
	}
}

// historyRow is what the backfill makes of an invocation's message.
func historyRow(inv invocation) core.Subagent {
	r := normalized(core.Frame{TaskSessionID: inv.session, TaskID: "task", TurnID: inv.turn,
		ToolCallID: inv.tool, ParentToolCallID: inv.parent, ToolStatus: "completed", ObservedAt: inv.at,
		Payload: &core.Payload{TotalTokens: 100}})
	r.ID, r.Source = "m-"+inv.tool, core.SourceBackfill
	return r
}

func normalized(f core.Frame) core.Subagent {
	r, _ := core.Normalize(f)
	return r
}

// liveFrames are the invocations' live frames (the reuses' alone, or all
// the others'), shuffled across invocations, each one's in order.
func liveFrames(invs []invocation, reuses bool) []core.Frame {
	var out []core.Frame
	for _, inv := range invs {
		if inv.reuse != reuses {
			continue
		}
		for k := range inv.live {
			f := core.Frame{TaskSessionID: inv.session, TaskID: "task", TurnID: inv.turn, ExecutionID: inv.exec,
				ToolCallID: inv.tool, ToolStatus: "in_progress", ObservedAt: inv.at.Add(time.Minute),
				Payload: &core.Payload{SubagentType: "explorer"}}
			if inv.liveParent {
				f.ParentToolCallID = inv.parent
			}
			if k == inv.live-1 {
				f.ToolStatus = "completed"
			}
			out = append(out, f)
		}
	}
	return out
}

// checkNesting compares every session's tree, as the fan-out reader
// builds it, with the generated one.
func checkNesting(t *testing.T, round int, invs []invocation, r core.Store) {
	t.Helper()
	type id struct{ session, tool string }
	want, reused := map[id]string{}, map[id]bool{}
	sessions := map[string]bool{}
	for _, inv := range invs {
		sessions[inv.session] = true
		if inv.reuse {
			reused[id{inv.session, inv.tool}] = true
		} else {
			want[id{inv.session, inv.tool}] = inv.parent
		}
	}
	for session := range sessions {
		rows, err := r.ListBySession(context.Background(), session, core.Page{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[id]int{}
		var walk func(nodes []*fanout.Node, parent *core.Subagent)
		walk = func(nodes []*fanout.Node, parent *core.Subagent) {
			for _, n := range nodes {
				k := id{session, n.Row.ToolCallID}
				got := ""
				if parent != nil {
					got = parent.ToolCallID
					if parent.AgentExecutionID == "exec-reuse" {
						t.Errorf("round %d: %s is under the reuse of %s", round, k.tool, got)
					}
				}
				switch {
				case n.Row.AgentExecutionID == "exec-reuse":
					if !reused[k] || parent != nil {
						t.Errorf("round %d: the reuse of %s is not a root of its own (under %q)", round, k.tool, got)
					}
				case got != want[k]:
					t.Errorf("round %d: %s is under %q, want %q (row %+v)", round, k.tool, got, want[k], n.Row.Key())
				default:
					seen[k]++
				}
				walk(n.Children, &n.Row)
			}
		}
		for _, turn := range fanout.Build(rows) {
			walk(turn.Roots, nil)
		}
		for k := range want {
			if k.session == session && seen[k] != 1 {
				t.Errorf("round %d: %s has %d rows in the tree, want 1", round, k.tool, seen[k])
			}
		}
	}
}
