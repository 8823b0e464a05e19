package migration_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/faultproxy"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// TestRunnerRetriesInProcess: a failed backfill is retried in the
// background with backoff until it succeeds; Ready opens once the table is
// in its declared shape, Done once the pass completed.
func TestRunnerRetriesInProcess(t *testing.T) {
	e := testenv.SQLite().Env(t)
	e.Session(t, "s")
	meta := kandevtest.Subagent("poison", "completed", &kandevtest.ClaudeCompleted).JSON()
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, []kandevtest.Message{
		{ID: "m1", TaskSessionID: "s", TaskID: "task-s", TurnID: "t", Metadata: &meta, CreatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	stop := e.FailInserts(t, e.DB, "poison")
	var logs testlog.Buffer
	r := migration.NewRunner(migration.New(e.Store, migration.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))),
		migration.WithRetry(5*time.Millisecond, 20*time.Millisecond))
	r.Start(context.Background())
	select {
	case <-r.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("never ready")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "retrying in the background") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-r.Done():
		t.Fatal("done although the backfill fails")
	default:
	}
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	report, err := r.Wait(ctx)
	if err != nil || report.Failed() || report.Step(migration.StepBackfill).RowsInserted != 1 {
		t.Errorf("after the retry: %v\n%s", err, report)
	}
}

// TestRunnerStopIsCancellation: stopping a pass in the middle of its
// backfill reports it cancelled, logs no failure, writes nothing that
// claims success, and Wait says it was stopped.
func TestRunnerStopIsCancellation(t *testing.T) {
	e := testenv.SQLite().Env(t)
	var logs testlog.Buffer
	reached, release := make(chan struct{}), make(chan struct{})
	r := migration.NewRunner(migration.New(e.Store, migration.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		migration.WithHook(func(stage string) error {
			if stage == "inserted" {
				close(reached)
				if _, err := await.Within(release, await.Limit); err != nil {
					return err
				}
				return context.Canceled
			}
			return nil
		})))
	r.Start(context.Background())
	await.Recv(t, reached, "the backfill's insert")
	stopped := make(chan error)
	go func() { stopped <- r.Stop(context.Background()) }()
	time.Sleep(10 * time.Millisecond)
	close(release)
	if err := await.Recv(t, stopped, "Stop"); err != nil {
		t.Fatal(err)
	}
	report, err := r.Wait(context.Background())
	if !errors.Is(err, migration.ErrStopped) || report.Step(migration.StepBackfill).Status != migration.Cancelled ||
		report.Failed() {
		t.Errorf("stopped pass: %v\n%s", err, report)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a stop logged a warning: %s", logs.String())
	}
	if len(e.ActivationKeys(t)) != 1 { // execution_since only
		t.Errorf("keys after a cancelled backfill: %v", e.ActivationKeys(t))
	}
}

// TestReportAfterAnAmbiguousCommit: the backfill's COMMIT reaches
// PostgreSQL, which commits, but its answer never comes back (the
// connection then resets): the attempt is reported failed and retried,
// and the retry — finding the keys its own attempt wrote — reports that
// the backfill ran in this boot, not "already activated".
func TestReportAfterAnAmbiguousCommit(t *testing.T) {
	e := testenv.Postgres().Env(t)
	ctx := context.Background()
	ids, msgs := kandevtest.History("amb-", 2, 20, time.Now().UTC().Add(-time.Hour)) // 2 subagents a session
	for _, id := range ids {
		kandevtest.InsertSession(ctx, e.DB, e.Tables, id, id+"-task")
	}
	if err := kandevtest.InsertMessages(ctx, e.DB, e.Tables, msgs); err != nil {
		t.Fatal(err)
	}
	proxy, dsn := faultproxy.Between(t, e.DSN)
	store := testenv.PostgresStore(t, dsn)
	var once sync.Once
	deafAtCommit := migration.WithHook(func(stage string) error {
		if stage == "before commit" {
			once.Do(func() {
				proxy.Set(faultproxy.Deaf) // COMMIT goes through; its answer does not
				go func() {
					time.Sleep(500 * time.Millisecond)
					proxy.Set(faultproxy.Refuse)
					time.Sleep(100 * time.Millisecond)
					proxy.Set(faultproxy.Pass)
				}()
			})
		}
		return nil
	})
	runner := migration.NewRunner(migration.New(store, deafAtCommit, migration.WithLogger(testlog.Discard)),
		migration.WithRetry(50*time.Millisecond, 100*time.Millisecond))
	runner.Start(ctx)
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	report, err := runner.Wait(wait)
	st := report.Step(migration.StepBackfill)
	if err != nil || st.Status != migration.Ran || !strings.Contains(st.Detail, "ran in this boot") {
		t.Errorf("after an ambiguous commit: %v, backfill %s (%s)", err, st.Status, st.Detail)
	}
	var rows int64
	e.DB.Raw(`SELECT count(*) FROM task_session_subagents`).Scan(&rows)
	if rows != 4 {
		t.Errorf("%d rows, want 4 (the first attempt's, committed once)", rows)
	}
}

// TestATimedOutPassFails: a pass that runs out of its deadline is failed,
// not cancelled — logged at WARN, its Err wrapping
// context.DeadlineExceeded — so that a host warning on failures sees it;
// a pass cancelled is cancelled (INFO), Err saying so; a pass that ran
// has no Err.
func TestATimedOutPassFails(t *testing.T) {
	e := testenv.SQLite().Env(t)
	var logs testlog.Buffer
	m := migration.New(e.Store, migration.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	r := m.Run(expired)
	if !r.Failed() || r.Cancelled() || !errors.Is(r.Err(), context.DeadlineExceeded) ||
		!strings.Contains(logs.String(), "level=WARN msg=\"subagentctx: migration step failed\"") {
		t.Errorf("a pass past its deadline: %s, Err %v\n%s", r, r.Err(), logs.String())
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	if r := m.Run(stopped); r.Failed() || !r.Cancelled() || !errors.Is(r.Err(), context.Canceled) {
		t.Errorf("a pass cancelled: %s, Err %v", r, r.Err())
	}
	if r := m.Run(context.Background()); r.Err() != nil {
		t.Errorf("a pass that ran: %s, Err %v", r, r.Err())
	}
}
