package migration_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlite"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// TestKilledBackfillHelper is not a test: it is the child process of
// TestKilledMidBackfill, running a pass until it is killed.
func TestKilledBackfillHelper(t *testing.T) {
	dialect, dsn := os.Getenv("SUBAGENTCTX_KILL_DIALECT"), os.Getenv("SUBAGENTCTX_KILL_DSN")
	if dialect == "" {
		t.Skip("child process of TestKilledMidBackfill")
	}
	ctx := context.Background()
	var store *sqlstore.Store
	var err error
	if dialect == "sqlite" {
		store, err = sqlite.Open(ctx, strings.TrimPrefix(dsn, "sqlite:"))
	} else {
		store, err = postgres.Open(ctx, dsn)
	}
	if err != nil {
		t.Fatal(err)
	}
	m := migration.New(
		store,
		migration.WithLogger(testlog.Discard),
		migration.WithHook(func(stage string) error {
			if stage == os.Getenv("SUBAGENTCTX_KILL_STAGE") {
				fmt.Println("REACHED", stage)
				time.Sleep(time.Hour) // killed here
			}
			return nil
		}),
	)
	fmt.Println("STARTED")
	m.Run(ctx)
	fmt.Println("DONE")
}

// TestKilledMidBackfill: a process killed (SIGKILL) in the middle of a large
// backfill leaves no key and no partial rows; the next pass completes it.
var t0 = time.Date(2026, 8, 12, 9, 0, 0, 123456000, time.UTC)

func TestKilledMidBackfill(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		const sessions, perSession = 20, 1500
		var msgs []kandevtest.Message
		for s := range sessions {
			sid := fmt.Sprint("s", s)
			e.Session(t, sid)
			for i := range perSession {
				meta := kandevtest.Subagent(fmt.Sprint("tc-", i), "completed", &kandevtest.ClaudeCompleted)
				if i%3 == 0 {
					meta.Normalized.Kind = "execute" // not a subagent
				}
				m := meta.JSON()
				msgs = append(
					msgs,
					kandevtest.Message{
						ID:            fmt.Sprintf("m-%d-%d", s, i),
						TaskSessionID: sid,
						TaskID:        "task-" + sid,
						TurnID:        "turn-1",
						Metadata:      &m,
						CreatedAt:     t0.Add(time.Duration(i) * time.Second),
					},
				)
			}
		}
		if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, msgs); err != nil {
			t.Fatal(err)
		}
		want := sessions * (perSession - perSession/3)
		for _, stage := range []string{"inserted", "wrote " + storekit.BackfillThroughKey} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestKilledBackfillHelper$", "-test.v")
			cmd.Env = append(
				os.Environ(), "SUBAGENTCTX_KILL_DIALECT="+e.Dialect.Name(), "SUBAGENTCTX_KILL_DSN="+e.DSN,
				"SUBAGENTCTX_KILL_STAGE="+stage,
			)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(out)
			reached := false
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "REACHED") {
					reached = true
					cmd.Process.Kill() // SIGKILL: no deferred cleanup, no rollback from the client
					break
				}
			}
			cmd.Wait()
			if !reached {
				t.Fatalf("child never reached %q", stage)
			}
			// execution_since only: written before the backfill, in its own step.
			if k := e.ActivationKeys(t); len(k) != 1 {
				t.Errorf("killed at %q: keys %v, want none of the backfill's", stage, k)
			}
			var n int64
			e.DB.Raw(`SELECT count(*) FROM task_session_subagents`).Scan(&n)
			if n != 0 {
				t.Errorf("killed at %q: %d partial rows", stage, n)
			}
		}
		r := migration.New(e.Store, migration.WithLogger(testlog.Discard)).Run(context.Background())
		var n int64
		e.DB.Raw(`SELECT count(*) FROM task_session_subagents`).Scan(&n)
		if n != int64(want) || r.Step(migration.StepBackfill).RowsInserted != int64(want) ||
			len(e.ActivationKeys(t)) != 3 {
			t.Errorf("next pass: %d rows (want %d), keys %v", n, want, e.ActivationKeys(t))
		}
	})
}
