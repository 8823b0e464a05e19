package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// TestAC14_ConcurrentWritersOverSharedHistoryNeverDeadlock: four writers, each
// on a pool of its own as four processes are, write batches of the same
// invocations in orders of their own over history the pass recovered —
// each batch absorbing history and upserting rows another batch holds.
// The library's own writers never deadlock one another (counted: no batch
// fails with 40P01), and the record ends one row per invocation, each
// holding its history.
func TestAC14_ConcurrentWritersOverSharedHistoryNeverDeadlock(t *testing.T) {
	e := testenv.Postgres().Env(t)
	ctx := context.Background()
	const sessions, calls, writers, rounds, batch = 8, 16, 4, 12, 48
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	var msgs []kandevtest.Message
	for s := range sessions {
		session := fmt.Sprintf("s%d", s)
		kandevtest.InsertSession(ctx, e.DB, e.Tables, session, "task")
		for c := range calls {
			meta := kandevtest.Subagent(fmt.Sprintf("tc%d", c), "in_progress",
				&core.Payload{SubagentType: "explorer"}).JSON()
			msgs = append(msgs, kandevtest.Message{ID: fmt.Sprintf("m%d-%d", s, c), TaskSessionID: session,
				TaskID: "task", TurnID: "turn", Metadata: &meta, CreatedAt: start, UpdatedAt: start})
		}
	}
	if err := kandevtest.InsertMessages(ctx, e.DB, e.Tables, msgs); err != nil {
		t.Fatal(err)
	}
	if r := migration.New(e.Store, migration.WithLogger(testlog.Discard)).Run(ctx); r.Failed() {
		t.Fatalf("pass: %s", r)
	}

	var deadlocks, failed int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range writers {
		s := storeAs(t, e.DSN)
		rnd := rand.New(rand.NewPCG(uint64(w), 1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range rounds {
				rows := make([]core.Subagent, batch)
				for i := range rows {
					f := core.Frame{TaskSessionID: fmt.Sprintf("s%d", rnd.IntN(sessions)), TaskID: "task",
						ExecutionID: "exec", ToolCallID: fmt.Sprintf("tc%d", rnd.IntN(calls)), ToolStatus: "in_progress",
						ObservedAt: start.Add(time.Duration(round*batch+i) * time.Millisecond),
						Payload:    &core.Payload{TotalTokens: int64(w*1000 + round)}}
					rows[i], _ = core.Normalize(f)
				}
				_, err := s.UpsertBatch(ctx, rows)
				var pg *pgconn.PgError
				mu.Lock()
				switch {
				case errors.As(err, &pg) && pg.Code == "40P01":
					deadlocks++
				case err != nil:
					failed++
					t.Errorf("writer %d, round %d: %v", w, round, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if deadlocks > 0 {
		t.Errorf("%d of %d batches deadlocked with another writer's", deadlocks, writers*rounds)
	}
	var n, unabsorbed int64
	e.DB.Raw(`SELECT count(*) FROM task_session_subagents`).Scan(&n)
	e.DB.Raw(`SELECT count(*) FROM task_session_subagents WHERE agent_execution_id = 'unknown'`).Scan(&unabsorbed)
	var written int64
	e.DB.Raw(`SELECT count(*) FROM task_session_subagents WHERE agent_execution_id = 'exec'`).Scan(&written)
	if n != sessions*calls || written+unabsorbed != n || failed > 0 {
		t.Errorf("%d rows (%d written, %d history alone), want %d: one per invocation", n, written, unabsorbed,
			sessions*calls)
	}
}
