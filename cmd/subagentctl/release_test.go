package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
)

// previousRelease is the commit of this module's previous release: every
// database it wrote must keep working with every later build.
const previousRelease = "7580611"

// releases are the earlier releases' binaries built in this run, by
// commit: each is built once, whatever the tests that run it.
var releases sync.Map // commit → *release

type release struct {
	once sync.Once
	bin  string
	err  error
}

// buildRelease builds the command line of a commit of this repository
// from its git history, once per run (skipping, saying so, where the
// history is not there).
func buildRelease(t *testing.T, commit string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds an earlier release from the git history")
	}
	v, _ := releases.LoadOrStore(commit, &release{})
	r := v.(*release)
	r.once.Do(func() { r.bin, r.err = buildCommit(t, commit) })
	var missing noHistory
	if errors.As(r.err, &missing) {
		t.Skip(missing.Error())
	} else if r.err != nil {
		t.Fatal(r.err)
	}
	return r.bin
}

// noHistory: the git history with the commit is not here.
type noHistory string

func (n noHistory) Error() string {
	return "the git history with " + string(n) + " is not here: the earlier release's own binary cannot be built " +
		"(the dialect suites still check its table, from its DDL)"
}

// buildCommit builds the command line of commit into the run's directory.
func buildCommit(t *testing.T, commit string) (string, error) {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil || exec.Command("git", "cat-file", "-e", commit+"^{commit}").Run() != nil {
		return "", noHistory(commit)
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", strings.TrimSpace(string(root)), "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin, _ = archive.StdoutPipe()
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		return "", err
	}
	if err := untar.Wait(); err != nil {
		return "", err
	}
	bin := filepath.Join(filepath.Dir(binary), "subagentctl-"+commit)
	build := exec.Command("go", "build", "-o", bin, "./cmd/subagentctl")
	// The releases drive SQLite through go-sqlite3 alone: built with cgo
	// even when this suite runs without.
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", commit, err, out)
	}
	return bin, nil
}

// TestPreviousReleaseDatabase: a database the previous release wrote,
// through its own command line — with the seam doubled as that release
// doubled it: a subagent in flight at its migrate, then its completion
// recorded under an execution id — keeps working with this build, on every
// dialect: migrate repairs the doubled pair and records the schema's
// versions, list, stats and health then count one invocation, and new
// writes go on.
func TestPreviousReleaseDatabase(t *testing.T) {
	old := buildRelease(t, previousRelease)
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		// The previous release creates the table itself.
		e.Exec(t, `DROP TABLE task_session_subagents`)
		e.Exec(t, `DELETE FROM kandev_meta`)
		created := seedInFlight(t, e, &core.Payload{SubagentType: "explorer", Description: "map the repo"})
		run := func(bin string, stdin string, args ...string) string {
			t.Helper()
			return runOn(t, bin, e.DSN, stdin, args...)
		}
		run(old, "", "migrate")
		frames := jsonFrame(
			"s1", "toolu_1", "exec-1", "completed", created.Add(time.Minute),
			`{"description":"","prompt":"","subagent_type":"","total_tokens":5000}`,
		) + "\n" +
			jsonFrame(
				"s1", "toolu_2", "exec-1", "in_progress", created.Add(2*time.Minute),
				`{"description":"later","prompt":"","subagent_type":"reviewer"}`,
			) + "\n"
		run(old, frames, "record")
		if n := e.Count(t); n != 3 {
			t.Fatalf("the previous release wrote %d rows, want 3 (its doubled pair and one more)", n)
		}

		var migrated struct {
			Steps []struct {
				Step, Status, Detail string
				RowsMerged           int64 `json:"rows_merged"`
			}
		}
		if err := json.Unmarshal([]byte(run(binary, "", "migrate", "--json")), &migrated); err != nil {
			t.Fatal(err)
		}
		if len(migrated.Steps) < 2 || migrated.Steps[1].RowsMerged != 1 ||
			!strings.Contains(migrated.Steps[1].Detail, "1 doubled pairs merged") {
			t.Errorf("migrate: %+v", migrated.Steps)
		}
		var rows []core.Subagent
		if err := json.Unmarshal([]byte(run(binary, "", "list", "--session", "s1", "--json")), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].ToolCallID != "toolu_1" || rows[0].AgentExecutionID != "exec-1" ||
			rows[0].Source != core.SourceBackfill ||
			rows[0].Description == nil || *rows[0].Description != "map the repo" || rows[0].TotalTokens == nil ||
			*rows[0].TotalTokens != 5000 {
			t.Errorf("rows after the repair: %s", run(binary, "", "list", "--session", "s1"))
		}
		var st report.Stats
		if err := json.Unmarshal([]byte(run(binary, "", "stats", "--json")), &st); err != nil || st.Subagents != 2 {
			t.Errorf("stats: %d subagents, %v", st.Subagents, err)
		}
		for _, v := range []string{"1", "2", "3", "4"} {
			if k := e.Keys(t); k["subagent_context_schema_v"+v] == "" && !(e.Dialect.Name() == "sqlite" && v == "2") {
				t.Errorf("version %s not recorded: %v", v, k)
			}
		}
		run(
			binary,
			jsonFrame(
				"s1", "toolu_2", "exec-1", "completed", created.Add(3*time.Minute),
				`{"description":"","prompt":"","subagent_type":""}`,
			)+"\n",
			"record",
		)
		if n := e.Count(t); n != 2 {
			t.Errorf("%d rows after a new write, want 2", n)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// runOn runs a build's command line bin on the database dsn with stdin,
// and returns its stdout; a non-zero exit fails the test, with stderr.
func runOn(t *testing.T, bin, dsn, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--db", dsn}, args...)...)
	cmd.Env, cmd.Stdin = append(os.Environ(), "SUBAGENTCTL_DB="), strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s%s", filepath.Base(bin), args, err, out, stderr.String())
	}
	return string(out)
}

// forEarlierRelease empties e's database of this build's table and keys,
// for an earlier release's command line to create its own, and seeds a
// subagent in flight in the host's history (seedInFlight), whose
// message's creation time it returns.
func forEarlierRelease(t *testing.T, e *sqltest.Env) time.Time {
	t.Helper()
	e.Exec(t, `DROP TABLE task_session_subagents`)
	e.Exec(t, `DELETE FROM kandev_meta`)
	return seedInFlight(t, e, &core.Payload{SubagentType: "explorer"})
}

// liveRole is the DSN of a new role of e's database holding exactly what
// grants prints for the live part (the application's role).
func liveRole(t *testing.T, e *sqltest.Env) string {
	t.Helper()
	_, dsn := pgtest.NewRole(t, e.DB, e.DSN, func(role string) []string {
		return printed(cli(t, "", "--db", e.DSN, "grants", "--role", role, "--part", "live").want(t, 0).stdout)
	})
	return dsn
}

// seedInFlight gives the host session s1 (task task-1) and, in its history,
// one message of subagent toolu_1 in flight with payload p, and returns
// the message's creation time.
func seedInFlight(t *testing.T, e *sqltest.Env, p *core.Payload) time.Time {
	t.Helper()
	ctx := context.Background()
	if err := kandevtest.InsertSession(ctx, e.DB, e.Tables, "s1", "task-1"); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	inflight := kandevtest.Subagent("toolu_1", "in_progress", p)
	if err := kandevtest.InsertMessages(ctx, e.DB, e.Tables,
		[]kandevtest.Message{{ID: "m1", TaskSessionID: "s1", TaskID: "task-1", TurnID: "turn-1",
			Metadata: ptr(inflight.JSON()), CreatedAt: created, UpdatedAt: created}}); err != nil {
		t.Fatal(err)
	}
	return created
}

// TestDeployWhileSubagentsRun is the deploy that found the seam, through
// the command line on every dialect: a subagent in flight in the host's
// history, migrate, then its completion recorded under an execution id:
// one row, counted once.
func TestDeployWhileSubagentsRun(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		created := seedInFlight(t, e, &core.Payload{SubagentType: "explorer"})
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0)
		cli(
			t,
			jsonFrame(
				"s1", "toolu_1", "exec-1", "completed", created.Add(time.Minute),
				`{"description":"","prompt":"","subagent_type":"","total_tokens":7}`,
			)+"\n",
			"--db",
			e.DSN,
			"record",
		).want(t, 0)
		var st report.Stats
		if err := json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "stats", "--json").want(t, 0).stdout), &st); err != nil ||
			st.Subagents != 1 || len(st.FanOutPerTurn) != 1 || st.FanOutPerTurn[0].Subagents != 1 {
			t.Errorf("stats: %d subagents, fan-out %v, %v; want one", st.Subagents, st.FanOutPerTurn, err)
		}
		cli(t, "", "--db", e.DSN, "health").want(t, 0)
	})
}

// lastRelease is the release before this build: on PostgreSQL its
// databases carry the trigger that absorbed history, which this build's
// pass drops on one server.
const lastRelease = "e87ca7e"

// TestLastReleaseDatabaseAsApplicationRole: a database the last release
// wrote — migrated and activated by its own command line, a subagent in
// flight in its history — keeps working with this build: its owner
// migrates (its trigger dropped on one server, replaced on Citus), then, on
// PostgreSQL and Citus, an application role holding exactly the live
// part's grants records the subagent's completion, absorbing its history
// into one row; on SQLite this build records it directly.
func TestLastReleaseDatabaseAsApplicationRole(t *testing.T) {
	old := buildRelease(t, lastRelease)
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		created := forEarlierRelease(t, e)
		if out, err := exec.Command(old, "--db", e.DSN, "migrate").CombinedOutput(); err != nil {
			t.Fatalf("the last release's migrate: %v\n%s", err, out)
		}
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0) // this build, as the owner
		writer := e.DSN
		if e.Dialect.Name() == "postgres" {
			writer = liveRole(t, e)
		}
		frame := jsonFrame("s1", "toolu_1", "exec-1", "completed", created.Add(time.Minute),
			`{"description":"","prompt":"","subagent_type":"","total_tokens":7}`) + "\n"
		if r := cli(t, frame, "--db", writer, "record").want(t, 0); !strings.Contains(r.stdout, "persisted 1 ") {
			t.Errorf("record after the upgrade: %s", r.stdout)
		}
		var rows []core.Subagent
		json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "list", "--session", "s1", "--json").want(t, 0).stdout), &rows)
		if len(rows) != 1 || rows[0].AgentExecutionID != "exec-1" || rows[0].Source != core.SourceBackfill ||
			rows[0].TotalTokens == nil || *rows[0].TotalTokens != 7 {
			t.Errorf("rows after the upgrade: %+v, want the history absorbed into exec-1's one row", rows)
		}
		cli(t, "", "--db", e.DSN, "health").want(t, 0)
	})
}

// TestRollbackToLastRelease: a database this build migrated keeps working
// with the last release's binary (a rollback, or its processes still
// running in a rolling deploy): its migrate passes, its record persists
// what it reads, and this build, back again, still has one row per
// invocation.
func TestRollbackToLastRelease(t *testing.T) {
	old := buildRelease(t, lastRelease)
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		created := seedInFlight(t, e, &core.Payload{SubagentType: "explorer"})
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0)
		run := func(stdin string, args ...string) string {
			t.Helper()
			return runOn(t, old, e.DSN, stdin, args...)
		}
		run("", "migrate")
		frame := jsonFrame("s1", "toolu_2", "exec-1", "completed", created.Add(time.Minute),
			`{"description":"","prompt":"","subagent_type":"reviewer"}`) + "\n"
		if out := run(frame, "record"); !strings.Contains(out, "persisted 1 ") {
			t.Errorf("the last release's record: %s", out)
		}
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0)
		frame = jsonFrame("s1", "toolu_1", "exec-1", "completed", created.Add(2*time.Minute),
			`{"description":"","prompt":"","subagent_type":"","total_tokens":7}`) + "\n"
		cli(t, frame, "--db", e.DSN, "record").want(t, 0)
		var rows []core.Subagent
		json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "list", "--session", "s1", "--json").want(t, 0).stdout), &rows)
		if len(rows) != 2 || rows[0].ToolCallID != "toolu_1" || rows[0].AgentExecutionID != "exec-1" ||
			rows[0].Source != core.SourceBackfill || rows[1].ToolCallID != "toolu_2" {
			t.Errorf("rows after the rollback and back: %+v, want toolu_1's history absorbed and toolu_2's row", rows)
		}
	})
}

// TestRollingDeployFromLastRelease is a rolling deploy from the last
// release through both command lines, on every dialect (docs/CONTRACT.md
// §3.2, §4.4): this build's owner migrates; a replica of the last
// release restarts meanwhile, its pass re-creating the trigger this
// build dropped; this build's application role (on PostgreSQL and Citus
// a role with the live part's grants only) still boots and writes — its
// pass reports the trigger left to the owner, wrapping ErrPrivilege where
// the role may not drop it — and the old replica's writes absorb history
// through the re-created trigger; the owner's next pass drops it. Every
// invocation is one row throughout.
func TestRollingDeployFromLastRelease(t *testing.T) {
	old := buildRelease(t, lastRelease)
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		created := forEarlierRelease(t, e)
		second := kandevtest.Subagent("toolu_3", "in_progress", &core.Payload{SubagentType: "reviewer"})
		if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, []kandevtest.Message{{ID: "m3",
			TaskSessionID: "s1", TaskID: "task-1", TurnID: "turn-1", Metadata: ptr(second.JSON()),
			CreatedAt: created, UpdatedAt: created}}); err != nil {
			t.Fatal(err)
		}
		oldRun := func(stdin string, args ...string) string {
			t.Helper()
			return runOn(t, old, e.DSN, stdin, args...)
		}
		oldRun("", "migrate")                           // the last release, deployed and activated
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0) // this build's owner
		oldRun("", "migrate")                           // a replica of the last release restarts
		pg := e.Dialect.Name() == "postgres"
		writer := e.DSN
		if pg {
			writer = liveRole(t, e)
		}
		// This build's application replica boots and writes beside the
		// re-created trigger.
		frame := jsonFrame("s1", "toolu_1", "exec-new", "completed", created.Add(time.Minute),
			`{"description":"","prompt":"","subagent_type":"","total_tokens":7}`) + "\n" +
			jsonFrame("s1", "toolu_2", "exec-new", "completed", created.Add(2*time.Minute),
				`{"description":"new","prompt":"","subagent_type":"tester"}`) + "\n"
		r := cli(t, frame, "--db", writer, "record").want(t, 0)
		if !strings.Contains(r.stdout, "persisted 2 ") {
			t.Errorf("this build's record beside the last release's trigger: %s\n%s", r.stdout, r.stderr)
		}
		var migrated struct {
			Steps []struct{ Step, Status, Detail string }
		}
		m := cli(t, "", "--db", writer, "migrate", "--json").want(t, 0)
		if err := json.Unmarshal([]byte(m.stdout), &migrated); err != nil || len(migrated.Steps) == 0 {
			t.Fatalf("migrate --json: %v\n%s", err, m.stdout)
		}
		left := strings.Contains(migrated.Steps[0].Detail, "waits for the table's owner") &&
			strings.Contains(migrated.Steps[0].Detail, "lacks a privilege")
		sharded := e.Name == "citus"
		if want := pg && !sharded; left != want {
			t.Errorf("the application role's pass, the trigger left to the owner: %t, want %t: %+v", left, want,
				migrated.Steps[0])
		}
		// The last release's replica writes: the re-created trigger absorbs.
		oldRun(jsonFrame("s1", "toolu_3", "exec-old", "completed", created.Add(3*time.Minute),
			`{"description":"","prompt":"","subagent_type":"","total_tokens":9}`)+"\n", "record")
		// The owner's next pass drops the trigger, and says so.
		m = cli(t, "", "--db", e.DSN, "migrate", "--json").want(t, 0)
		if err := json.Unmarshal([]byte(m.stdout), &migrated); err != nil || len(migrated.Steps) == 0 {
			t.Fatalf("migrate --json: %v\n%s", err, m.stdout)
		}
		if dropped := strings.Contains(migrated.Steps[0].Detail, "ran DROP TRIGGER IF EXISTS subagentctx_absorb"); dropped ==
			sharded {
			t.Errorf("the owner's pass after the restart, the trigger's drop reported: %t: %+v", dropped, migrated.Steps[0])
		}
		if pg {
			var triggers int64
			e.DB.Raw(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'task_session_subagents'::regclass
				AND tgname = 'subagentctx_absorb'`).Scan(&triggers)
			if want := map[bool]int64{true: 1, false: 0}[sharded]; triggers != want {
				t.Errorf("%d absorbing triggers after the owner's pass, want %d", triggers, want)
			}
		}
		var rows []core.Subagent
		json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "list", "--session", "s1", "--json").want(t, 0).stdout), &rows)
		got := map[string]string{}
		for _, row := range rows {
			got[row.ToolCallID] += row.AgentExecutionID + "/" + string(row.Source) + " "
		}
		want := map[string]string{"toolu_1": "exec-new/backfill ", "toolu_2": "exec-new/live ",
			"toolu_3": "exec-old/backfill "}
		if len(got) != len(want) || got["toolu_1"] != want["toolu_1"] || got["toolu_2"] != want["toolu_2"] ||
			got["toolu_3"] != want["toolu_3"] {
			t.Errorf("rows after the rolling deploy: %v, want %v", got, want)
		}
		cli(t, "", "--db", e.DSN, "health").want(t, 0)
	})
}

// releaseBefore is the release this build follows.
const releaseBefore = "cc89967"

// TestRollingDeployFromReleaseBefore: a database release cc89967 wrote,
// migrated by this build's owner, keeps a replica of that release working
// as the application role (on PostgreSQL and Citus a role with the live
// part's grants only): its pass finds nothing of this build's to drop,
// and both builds' frames are recorded, one row per invocation.
func TestRollingDeployFromReleaseBefore(t *testing.T) {
	old := buildRelease(t, releaseBefore)
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		created := forEarlierRelease(t, e)
		runOn(t, old, e.DSN, "", "migrate")
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0) // this build's owner
		writer := e.DSN
		if e.Dialect.Name() == "postgres" {
			writer = liveRole(t, e)
		}
		// A replica of the release before restarts, as the application.
		out := runOn(t, old, writer, jsonFrame("s1", "toolu_1", "exec-old", "completed", created.Add(time.Minute),
			`{"description":"","prompt":"","subagent_type":"","total_tokens":7}`)+"\n", "record")
		if !strings.Contains(out, "persisted 1 ") {
			t.Errorf("the release before's record beside this build: %s", out)
		}
		cli(t, jsonFrame("s1", "toolu_2", "exec-new", "completed", created.Add(2*time.Minute),
			`{"description":"","prompt":"","subagent_type":"reviewer"}`)+"\n", "--db", writer, "record").want(t, 0)
		var rows []core.Subagent
		json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "list", "--session", "s1", "--json").want(t, 0).stdout), &rows)
		if len(rows) != 2 || rows[0].ToolCallID != "toolu_1" || rows[0].AgentExecutionID != "exec-old" ||
			rows[0].Source != core.SourceBackfill || rows[1].ToolCallID != "toolu_2" {
			t.Errorf("rows: %+v, want toolu_1's history absorbed by the release before, and toolu_2's row", rows)
		}
		cli(t, "", "--db", e.DSN, "health").want(t, 0)
	})
}

// TestRollingDeployMergesWhatTheLastReleaseDoubled: a process of the last
// release that booted with its trigger keeps recording after this build's
// owner pass dropped it, as in a rolling deploy; its first frame of a pair
// whose history no live frame absorbed doubles the pair on one server
// (health names it, and counts no alarm). This build's next pass merges
// it — one row per invocation, history under the old process's execution
// — and says so. On PostgreSQL an application role's pass, which may not
// delete, merges through the function the owner's pass made, run as its
// owner; where the database took EXECUTE on it from PUBLIC, it leaves the
// merge to the owner, saying so. On a sharded table this build's trigger
// absorbs the frame as it is written.
func TestRollingDeployMergesWhatTheLastReleaseDoubled(t *testing.T) {
	old := buildRelease(t, lastRelease)
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		created := forEarlierRelease(t, e)
		runOn(t, old, e.DSN, "", "migrate")
		// The last release's replica boots (its pass done once its first
		// frame is stored) and waits for frames.
		replica := exec.Command(old, "--db", e.DSN, "record")
		replica.Env = append(os.Environ(), "SUBAGENTCTL_DB=")
		var out, stderr strings.Builder
		replica.Stdout, replica.Stderr = &out, &stderr
		in, err := replica.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := replica.Start(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(in, jsonFrame("s1", "toolu_9", "exec-old", "completed", created.Add(time.Minute),
			`{"description":"","prompt":"","subagent_type":"tester"}`))
		stored := func(tool string) (n int64) {
			e.DB.Raw(`SELECT count(*) FROM task_session_subagents WHERE tool_call_id = ?`, tool).Scan(&n)
			return n
		}
		for deadline := time.Now().Add(30 * time.Second); stored("toolu_9") == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				in.Close()
				replica.Wait()
				t.Fatalf("the last release's replica stored nothing in 30 s:\n%s%s", out.String(), stderr.String())
			}
		}
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0) // this build's owner: the trigger dropped on one server
		// The old replica's frame for the history pair: no trigger absorbs it.
		fmt.Fprintln(in, jsonFrame("s1", "toolu_1", "exec-old", "completed", created.Add(2*time.Minute),
			`{"description":"","prompt":"","subagent_type":"","total_tokens":7}`))
		in.Close()
		if err := replica.Wait(); err != nil || !strings.Contains(out.String(), "persisted 2 ") {
			t.Fatalf("the last release's replica: %v\n%s%s", err, out.String(), stderr.String())
		}
		sharded := e.Name == "citus"
		var health struct {
			Healthy bool  `json:"healthy"`
			Doubled int64 `json:"doubled"`
		}
		json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "health", "--json").want(t, 0).stdout), &health)
		if want := map[bool]int64{true: 0, false: 1}[sharded]; health.Doubled != want || stored("toolu_1") != want+1 {
			t.Errorf("before the next pass: %d doubled pairs, %d rows of toolu_1; want %d and %d",
				health.Doubled, stored("toolu_1"), want, want+1)
		}
		merged := func(dsn string) (int64, string) {
			var migrated struct {
				Steps []struct {
					Step, Detail string
					RowsMerged   int64 `json:"rows_merged"`
				}
			}
			m := cli(t, "", "--db", dsn, "migrate", "--json").want(t, 0)
			if err := json.Unmarshal([]byte(m.stdout), &migrated); err != nil || len(migrated.Steps) < 2 {
				t.Fatalf("migrate --json: %v\n%s", err, m.stdout)
			}
			return migrated.Steps[1].RowsMerged, migrated.Steps[1].Detail
		}
		doubled := !sharded // this build's trigger absorbed it on Citus
		if e.Dialect.Name() == "postgres" && doubled {
			// The application role's pass merges through the function the
			// owner's pass made; where the database took EXECUTE on it from
			// PUBLIC, it leaves the merge to the owner, saying so.
			var fn string
			e.DB.Raw(`SELECT oid::regprocedure::text FROM pg_proc WHERE proname LIKE 'subagentctx\_seam\_check\_%'`).
				Scan(&fn)
			writer := liveRole(t, e)
			e.Exec(t, `REVOKE EXECUTE ON FUNCTION `+fn+` FROM PUBLIC`)
			if n, detail := merged(writer); n != 0 || !strings.Contains(detail, "waits for the table's owner") ||
				!strings.Contains(detail, "lacks a privilege") || stored("toolu_1") != 2 {
				t.Errorf("the application role's pass without EXECUTE on %s: %d merged, %q, %d rows of toolu_1; "+
					"want the merge left to the owner", fn, n, detail, stored("toolu_1"))
			}
			e.Exec(t, `GRANT EXECUTE ON FUNCTION `+fn+` TO PUBLIC`)
			if n, detail := merged(writer); n != 1 || !strings.Contains(detail, "1 doubled pairs merged") {
				t.Errorf("the application role's pass: %d merged (%q), want 1", n, detail)
			}
			doubled = false
		}
		if n, detail := merged(e.DSN); n != map[bool]int64{true: 1}[doubled] ||
			doubled && !strings.Contains(detail, "1 doubled pairs merged") {
			t.Errorf("the owner's next pass: %d merged (%q)", n, detail)
		}
		if n, _ := merged(e.DSN); n != 0 {
			t.Errorf("the pass after: %d merged, want 0", n)
		}
		var rows []core.Subagent
		json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "list", "--session", "s1", "--json").want(t, 0).stdout), &rows)
		got := map[string]string{}
		for _, row := range rows {
			got[row.ToolCallID] += row.AgentExecutionID + "/" + string(row.Source) + " "
		}
		if len(got) != 2 || got["toolu_1"] != "exec-old/backfill " || got["toolu_9"] != "exec-old/live " {
			t.Errorf("rows after the rolling deploy: %v, want one each: toolu_1 exec-old/backfill, toolu_9 exec-old/live",
				got)
		}
		json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "health", "--json").want(t, 0).stdout), &health)
		if health.Doubled != 0 {
			t.Errorf("after the pass: %d doubled pairs", health.Doubled)
		}
	})
}
