package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

var binary string

// TestMain builds the binary once; the tests run it, as an operator would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "subagentctl-test-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "subagentctl")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func cli(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "SUBAGENTCTL_DB=")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errOut.String()}
}

func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

func jsonFrame(session, tool, exec, status string, at time.Time, task string) string {
	return fmt.Sprintf(
		`{"task_session_id":%q,"task_id":"task-1","turn_id":"turn-1","execution_id":%q,"tool_call_id":%q,"tool_status":%q,`+
			`"observed_at":%q,"subagent_task":%s}`,
		session,
		exec,
		tool,
		status,
		at.Format(time.RFC3339Nano),
		task,
	)
}

func TestCommandsOnEveryDialect(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		db := "--db=" + e.DSN
		ctx := context.Background()
		kandevtest.InsertSession(ctx, e.DB, e.Tables, "s1", "task-1")

		// Not activated yet: health exits 3.
		r := cli(t, "", db, "health").want(t, 3)
		if !strings.Contains(r.stdout, "not run") {
			t.Errorf("health before activation: %s", r.stdout)
		}
		r = cli(t, "", db, "migrate").want(t, 0)
		for _, step := range []string{"table", "shape", "execution_key", "backfill"} {
			if !strings.Contains(r.stdout, step) {
				t.Errorf("migrate output lacks step %s:\n%s", step, r.stdout)
			}
		}
		// The host's messages lack an index the reads need: named, with
		// the statement that creates it; once created, quiet.
		if !strings.Contains(r.stderr, "warning: no index on task_session_messages(created_at)") ||
			!strings.Contains(r.stderr, "CREATE INDEX task_session_messages_created_at_idx") {
			t.Errorf("migrate without the host's indexes: %q", r.stderr)
		}
		missing, err := e.Store.MissingHostIndexes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range missing {
			e.Exec(t, x.Statement())
		}
		if r = cli(t, "", db, "migrate").want(t, 0); r.stderr != "" {
			t.Errorf("migrate printed on a non-terminal stderr: %q", r.stderr)
		}

		now := time.Now().UTC()
		completed := kandevtest.ClaudeCompleted
		task, _ := json.Marshal(completed)
		input := strings.Join([]string{
			jsonFrame(
				"s1", "toolu_01", "exec-1", "in_progress", now.Add(time.Second),
				`{"description":"x","prompt":"","subagent_type":"general-purpose"}`,
			),
			jsonFrame("s1", "toolu_01", "exec-1", "completed", now.Add(2*time.Second), string(task)),
			`not json`,
			`[1, 2]`,
			"",
			jsonFrame(
				"s1", "toolu_02", "", "completed", now.Add(3*time.Second),
				`{"description":"bg","prompt":"","subagent_type":"explorer","status":"async_launched","is_async":true}`,
			),
			jsonFrame("s1", "", "exec-1", "completed", now, `{}`),
		}, "\n")
		r = cli(t, input, db, "record", "-").want(t, 1)
		if !strings.Contains(r.stderr, "line 3:") || !strings.Contains(r.stderr, "line 4:") ||
			strings.Contains(r.stderr, "line 5") {
			t.Errorf("bad lines not reported by number:\n%s", r.stderr)
		}
		if !strings.Contains(r.stdout, "attempted 4  persisted 3  skipped_no_identity 1  failed 0") ||
			!strings.Contains(r.stdout, "bad_lines 2") {
			t.Errorf("record counters: %s", r.stdout)
		}
		if !strings.Contains(r.stderr, "subagentctl: warning: line 3: ") ||
			strings.Count(r.stderr, "subagentctl: warning: line") != 2 {
			t.Errorf("bad lines must be warnings naming the line:\n%s", r.stderr)
		}

		r = cli(t, "", db, "list", "--session", "s1", "--json").want(t, 0)
		var rows []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
			t.Fatalf("list --json: %v\n%s", err, r.stdout)
		}
		if len(rows) != 2 || rows[0]["tool_call_id"] != "toolu_01" || rows[0]["total_tokens"] != float64(275717) ||
			rows[1]["total_tokens"] != nil || rows[1]["is_async"] != true || rows[1]["agent_execution_id"] != "unknown" {
			t.Errorf("list --json rows: %v", rows)
		}
		want := now.Add(time.Second).Truncate(time.Microsecond).Format(time.RFC3339Nano)
		if obs, _ := rows[0]["observed_at"].(string); obs != want {
			t.Errorf("observed_at %q: want RFC 3339 UTC with microseconds", obs)
		}
		for _, col := range []string{"id", "task_session_id", "task_id", "turn_id", "agent_execution_id", "tool_call_id",
			"parent_tool_call_id",
			"subagent_type", "description", "agent_id", "child_session_id", "model", "agent_status", "tool_status", "is_async",
			"total_tokens", "tool_use_count", "duration_ms", "source", "observed_at", "settled_at", "updated_at"} {
			if _, ok := rows[0][col]; !ok {
				t.Errorf("list --json lacks column %s", col)
			}
		}
		r = cli(t, "", db, "list", "--turn", "turn-1").want(t, 0)
		if !strings.Contains(r.stdout, "toolu_02") || !strings.Contains(r.stdout, "2 rows") {
			t.Errorf("list --turn table:\n%s", r.stdout)
		}

		r = cli(t, "", db, "stats", "--session", "s1", "--json").want(t, 0)
		var st report.Stats
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatal(err)
		}
		if st.Subagents != 2 || st.TotalTokens.All.Reported != 1 || st.TotalTokens.All.Unreported != 1 ||
			len(st.Sessions) != 1 || st.Sessions[0].Coverage != report.Known {
			t.Errorf("stats --json: %+v", st) // all of s1's activity is after activation: known
		}
		r = cli(t, "", db, "activation", "--json").want(t, 0)
		var a report.Activation
		if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || a.State != report.Activated || !a.NothingToRecover {
			t.Errorf("activation --json: %+v %v", a, err)
		}

		// Healthy (no subagent messages since activation), then a message
		// the writer never saw: shortfall, exit 1.
		r = cli(t, "", db, "health", "--json").want(t, 0)
		var h report.Health
		if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || !h.Ran || h.Shortfall != 0 {
			t.Errorf("health --json: %+v %v", h, err)
		}
		meta := kandevtest.Subagent("toolu_unseen", "completed", &completed).JSON()
		kandevtest.InsertMessages(
			ctx,
			e.DB,
			e.Tables,
			[]kandevtest.Message{{ID: "m-unseen", TaskSessionID: "s1", TaskID: "task-1",
				TurnID: "turn-1", Metadata: &meta, CreatedAt: time.Now().UTC().Add(time.Minute)}},
		)
		r = cli(t, "", db, "health").want(t, 1)
		if !strings.Contains(r.stdout, "SHORTFALL") || !strings.Contains(r.stdout, "s1  toolu_unseen") {
			t.Errorf("health, the missing pair named:\n%s", r.stdout)
		}
		r = cli(t, "", db, "health", "--json", "--pairs", "1").want(t, 1)
		if err := json.Unmarshal([]byte(r.stdout), &h); err != nil || len(h.Missing) != 1 ||
			h.Missing[0].ToolCallID != "toolu_unseen" {
			t.Errorf("health --json --pairs 1: %+v %v", h, err)
		}
		// A window that starts after the unseen message: healthy again.
		cli(t, "", db, "health", "--since", time.Now().UTC().Add(2*time.Minute).Format(time.RFC3339Nano)).want(t, 0)
		cli(t, "", db, "health", "--since", "yesterday-ish").want(t, 2)

		// Export: every row, by session then id; CSV with a header; resumed
		// after the first row.
		r = cli(t, "", db, "export").want(t, 0)
		if next := strings.TrimPrefix(strings.TrimSpace(r.stderr), "next since: "); next == r.stderr ||
			!strings.HasPrefix(next, now.Format("2006-01-02")) {
			t.Errorf("export says where the next window starts: %q", r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		var first core.Subagent
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || len(lines) != 2 {
			t.Fatalf("export: %v\n%s", err, r.stdout)
		}
		r = cli(t, "", db, "export", "--format", "csv").want(t, 0)
		if !strings.HasPrefix(r.stdout, "id,task_session_id,task_id,turn_id,agent_execution_id,") ||
			strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stdout, ",false,") ||
			!strings.Contains(r.stdout, ",true,") {
			t.Errorf("export --format csv:\n%s", r.stdout)
		}
		r = cli(t, "", db, "export", "--after-session", first.TaskSessionID, "--after-id", first.ID).want(t, 0)
		if strings.Count(r.stdout, "\n") != 1 || strings.Contains(r.stdout, first.ID) {
			t.Errorf("export resumed after the first row:\n%s", r.stdout)
		}
		cli(t, "", db, "export", "--format", "xml").want(t, 2)

		// Prune up to a minute before the frames here (they stay; the
		// dialect suites check what goes): the boundary is recorded.
		r = cli(t, "", db, "prune", "--before", now.Add(-time.Minute).Format(time.RFC3339Nano), "--json").want(t, 0)
		var pr core.PruneResult
		if err := json.Unmarshal([]byte(r.stdout), &pr); err != nil || pr.Deleted != 0 || !pr.Advanced {
			t.Errorf("prune --json: %+v %v\n%s", pr, err, r.stdout)
		}
		if r = cli(t, "", db, "activation").want(t, 0); !strings.Contains(r.stdout, storekit.PrunedBeforeKey) {
			t.Errorf("activation after a prune:\n%s", r.stdout)
		}
		cli(t, "", db, "prune", "--before", "-1h").want(t, 2)
		cli(t, "", db, "prune").want(t, 2)
		// No meta table: not activated, whatever the reason (exit 3); a
		// messages table the database does not have: an error.
		cli(t, "", db, "--meta-table=no_such_meta", "health").want(t, 3)
		cli(t, "", db, "--messages-table=no_such_messages", "health").want(t, 2)
	})
}

func TestUsageErrorsTouchNoDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "never.db")
	for name, args := range map[string][]string{
		"unknown command":  {"--db", path, "frobnicate"},
		"unknown flag":     {"--db", path, "--verbose", "health"},
		"missing session":  {"--db", path, "list"},
		"both scopes":      {"--db", path, "list", "--session", "a", "--turn", "b"},
		"bad dsn":          {"--db", "mysql://u:hunter2@h/db", "health"},
		"no command":       {"--db", path},
		"bad table name":   {"--db", path, "--sessions-table", "a b", "health"},
		"command flag":     {"--db", path, "stats", "--nope"},
		"stats two scopes": {"--db", path, "stats", "--session", "a", "--task", "b"},
	} {
		// One line naming what was wrong and where the command's help is.
		r := cli(t, "", args...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "subagentctl: error: ") ||
			!strings.Contains(r.stderr, "(see subagentctl help") {
			t.Errorf("%s: exit %d, stderr:\n%s", name, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "hunter2") {
			t.Errorf("%s: password in output", name)
		}
	}
	if r := cli(t, "", "--db", path, "stats", "--nope"); !strings.HasSuffix(r.stderr, "(see subagentctl help stats)\n") {
		t.Errorf("a command's usage error does not name its help: %q", r.stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("a usage error created the database file")
	}
}

func TestPasswordsNeverPrinted(t *testing.T) {
	e := testenv.Postgres().Env(t)
	// The test server trusts loopback, so any password is accepted: the
	// commands succeed and must still never print it.
	dsn := strings.Replace(e.DSN, "postgres@", "postgres:S3cretPw@", 1)
	if dsn == e.DSN {
		t.Fatalf("cannot add a password to %s", e.DSN)
	}
	for _, args := range [][]string{
		{"migrate"}, {"activation"}, {"health"}, {"stats"}, {"list", "--session", "x"}, {"--meta-table=missing", "health"},
	} {
		r := cli(t, "", append([]string{"--db", dsn}, args...)...)
		if strings.Contains(r.stdout+r.stderr, "S3cretPw") {
			t.Errorf("%v printed the password:\n%s%s", args, r.stdout, r.stderr)
		}
	}
	unreachable := "postgres://u:S3cretPw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"
	r := cli(t, "", "--db", unreachable, "health")
	if r.code != 2 || strings.Contains(r.stdout+r.stderr, "S3cretPw") ||
		!strings.Contains(r.stderr, "xxxxx") && !strings.Contains(r.stderr, "refused") {
		t.Errorf("unreachable: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestDemo(t *testing.T) {
	r := cli(t, "", "demo").want(t, 0)
	for _, want := range []string{"migration pass", "backfill", "14 rows", "state: activated", "health: healthy",
		"collisions     1",
		"└─ toolu_20_child"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

// TestRecordKeepsAFileLongerThanTheQueue: a file of more frames than the
// recorder's queue holds (32,768), written through a deliberately slow
// table, is persisted whole: record waits for room instead of dropping.
func TestRecordKeepsAFileLongerThanTheQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: records more frames than a queue holds")
	}
	e := testenv.SQLite().Env(t)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s1", "task-1")
	const n = core.DefaultQueueSize + 7232
	input := filepath.Join(t.TempDir(), "frames.jsonl")
	var b strings.Builder
	t0 := time.Now().UTC()
	for i := range n {
		b.WriteString(jsonFrame("s1", fmt.Sprint("toolu_", i), "exec-1", "in_progress", t0, `{}`))
		b.WriteByte('\n')
	}
	os.WriteFile(input, []byte(b.String()), 0o600)
	e.Exec(t, `CREATE TRIGGER slow AFTER INSERT ON task_session_subagents BEGIN SELECT length(hex(zeroblob(20000))); END`)
	r := cli(t, "", "--db", e.DSN, "record", input).want(t, 0)
	if want := fmt.Sprintf("attempted %d  persisted %d  ", n, n); !strings.Contains(r.stdout, want) ||
		!strings.Contains(r.stdout, "dropped 0") {
		t.Errorf("record of %d frames: %s, want %q and dropped 0", n, r.stdout, want)
	}
	if got := e.Count(t); got != n {
		t.Errorf("%d rows stored, want %d", got, n)
	}
}

// TestRecordReadsWhatAnEditorWrites: a byte order mark at the start of
// the input and CRLF line ends read as plain lines; a field record does
// not know (a column that belongs in subagent_task) makes its line bad,
// naming the field, rather than be dropped without a word.
func TestRecordReadsWhatAnEditorWrites(t *testing.T) {
	e := testenv.SQLite().Env(t)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s1", "task-1")
	t0 := time.Now().UTC()
	input := "\ufeff" + jsonFrame("s1", "toolu_a", "exec-1", "in_progress", t0, `{}`) + "\r\n\r\n" +
		`{"task_session_id":"s1","task_id":"task-1","tool_call_id":"toolu_b","agent_execution_id":"exec-1"}` + "\r\n" +
		`{"task_session_id":"s1","task_id":"task-1","tool_call_id":"toolu_c","agent_status":"running"}` + "\n"
	r := cli(t, input, "--db", e.DSN, "record").want(t, 1)
	if !strings.Contains(r.stdout, "persisted 2 ") || !strings.Contains(r.stdout, "bad_lines 1") ||
		!strings.Contains(r.stderr, `line 4: not a frame object: json: unknown field "agent_status"`) ||
		strings.Contains(r.stderr, "line 1") {
		t.Errorf("record: stdout %q, stderr %q; want 2 persisted and line 4 bad, naming the field", r.stdout, r.stderr)
	}
	var execs []string
	e.DB.Raw(`SELECT agent_execution_id FROM task_session_subagents ORDER BY tool_call_id`).Scan(&execs)
	if !slices.Equal(execs, []string{"exec-1", "exec-1"}) {
		t.Errorf("execution ids %v, want exec-1 for both (execution_id, and the column's name)", execs)
	}
}

// TestProgressOnlyOnATerminal: record on a large input prints progress on
// stderr when stderr is a terminal (run under script(1) for a pty), and
// nothing when it is not.
func TestProgressOnlyOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the command under a terminal for seconds")
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not installed: no pseudo-terminal to test with")
	}
	e := testenv.SQLite().Env(t)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s1", "task-1")
	input := filepath.Join(t.TempDir(), "frames.jsonl")
	var b strings.Builder
	t0 := time.Now().UTC()
	for i := range 6000 {
		b.WriteString(
			jsonFrame(
				"s1", fmt.Sprint("toolu_", i%500), "exec-1", "in_progress", t0.Add(time.Duration(i)*time.Millisecond), `{}`,
			),
		)
		b.WriteByte('\n')
	}
	os.WriteFile(input, []byte(b.String()), 0o600)
	// Quiet when stderr is not a terminal.
	r := cli(t, "", "--db", e.DSN, "record", input).want(t, 0)
	if r.stderr != "" {
		t.Errorf("progress printed to a non-terminal: %q", r.stderr)
	}
	// Throttle the writer so the run lasts past the first tick.
	e.Exec(t, `CREATE TRIGGER slow AFTER UPDATE ON task_session_subagents BEGIN SELECT length(hex(zeroblob(400000))); END`)
	out, _ := exec.Command(script, "-qec", binary+" --db "+e.DSN+" record "+input, "/dev/null").CombinedOutput()
	if !strings.Contains(string(out), "recorded ") || !strings.Contains(string(out), "/s)") {
		t.Errorf("no progress on a terminal:\n%s", out)
	}
}

// TestConventions: --version and help; global flags after the command;
// one error prefix; .sqlite3 paths; a read command never creates a file.
func TestConventions(t *testing.T) {
	r := cli(t, "", "--version").want(t, 0)
	if !strings.HasPrefix(r.stdout, "subagentctl "+core.Version) {
		t.Errorf("--version: %q, want the module version %s", r.stdout, core.Version)
	}
	if v := cli(t, "", "version").want(t, 0); v.stdout != r.stdout {
		t.Errorf("version command %q differs from --version %q", v.stdout, r.stdout)
	}
	if r := cli(t, "", "help").want(t, 0); !strings.Contains(r.stdout, "usage: subagentctl") {
		t.Errorf("help: %s", r.stdout)
	}
	if r := cli(t, "", "help", "list").want(t, 0); !strings.HasPrefix(r.stdout, "list (--session ID | --turn ID)") {
		t.Errorf("help list: %q", r.stdout)
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sqlite3")
	r = cli(t, "", "health", "--db", missing, "--json")
	if r.code != 2 || !strings.HasPrefix(r.stderr, "subagentctl: error: no SQLite database at "+missing) {
		t.Errorf("flags after the command, a .sqlite3 path that does not exist: exit %d %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"migrate"}, {"record"}, {"list", "--session", "s"}, {"stats"}} {
		if r := cli(t, "", append(args, "--db", missing)...); r.code == 0 ||
			!strings.HasPrefix(r.stderr, "subagentctl: error: ") {
			t.Errorf("%v on a missing file: exit %d %q", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Error("a command created the database file")
	}
}

// TestMigrateWithoutHostTables: migrate on a database without the host's
// sessions table creates nothing and says why, naming the table; the
// report does not promise a retry (a one-shot command retries nothing).
func TestMigrateWithoutHostTables(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		e.Exec(t, `DROP TABLE task_session_subagents`)
		e.Exec(t, `DROP TABLE task_session_messages`)
		e.Exec(t, `DROP TABLE task_session_turns`)
		e.Exec(t, `DROP TABLE task_sessions`)
		r := cli(t, "", "migrate", "--db", e.DSN, "--json").want(t, 1)
		var report struct {
			Steps []struct{ Step, Status, Detail string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || len(report.Steps) == 0 ||
			report.Steps[0].Status != "failed" || !strings.Contains(report.Steps[0].Detail, `"task_sessions"`) {
			t.Errorf("migrate --json: %v %s", err, r.stdout)
		}
		if strings.Contains(r.stdout+r.stderr, "next pass") || !strings.HasPrefix(r.stderr, "subagentctl: warning: ") {
			t.Errorf("stderr: %q", r.stderr)
		}
		if ok, _ := e.Dialect.TableExists(context.Background(), e.DB, "task_session_subagents"); ok {
			t.Error("migrate created the library's table beside no host tables")
		}
	})
}

// TestGrantsNameTheMetaTableInUse: without --db, grants names this
// library's meta table and says how to get the one a database uses; with
// --db, the one that database uses — kandev_meta on a database an earlier
// release (or the reference host) set up, subagentctx_meta on a fresh one
// — and --meta-table wins over both (Decision 8.2).
func TestGrantsNameTheMetaTableInUse(t *testing.T) {
	metaGrant := func(stdout string) string {
		for _, line := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(line, "GRANT SELECT ON ") && !strings.Contains(line, "task_session") {
				return strings.Fields(line)[3]
			}
		}
		return ""
	}
	r := cli(t, "", "grants", "--role", "app", "--part", "live").want(t, 0)
	if got := metaGrant(r.stdout); got != `"subagentctx_meta"` || !strings.Contains(r.stdout, "with --db") {
		t.Errorf("grants without --db: meta table %s\n%s", got, r.stdout)
	}
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		r := cli(t, "", "--db", e.DSN, "grants", "--role", "app", "--part", "live").want(t, 0)
		if got := metaGrant(r.stdout); got != `"kandev_meta"` || strings.Contains(r.stdout, "with --db") {
			t.Errorf("grants --db on kandev_meta: meta table %s\n%s", got, r.stdout)
		}
		r = cli(t, "", "--db", e.DSN, "--meta-table", "host_meta", "grants", "--role", "app").want(t, 0)
		if got := metaGrant(r.stdout); got != `"host_meta"` {
			t.Errorf("grants --meta-table host_meta: meta table %s\n%s", got, r.stdout)
		}
		e.Exec(t, `DROP TABLE kandev_meta`)
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0)
		r = cli(t, "", "--db", e.DSN, "grants", "--role", "app", "--part", "read").want(t, 0)
		if got := metaGrant(r.stdout); got != `"subagentctx_meta"` {
			t.Errorf("grants --db after a fresh migrate: meta table %s\n%s", got, r.stdout)
		}
	})
}

// TestJSONEverywhere: every reporting command's --json is one object (or
// array) whose keys are all snake_case.
func TestJSONEverywhere(t *testing.T) {
	e := testenv.SQLite().Env(t)
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, "s1", "task-1")
	frameLine := jsonFrame("s1", "toolu_01", "e", "completed", time.Now(), `{"total_tokens":5}`)
	for _, args := range [][]string{
		{"migrate"}, {"record"}, {"list", "--session", "s1"}, {"stats"}, {"stats", "--session", "s1"}, {"activation"},
		{"health"},
	} {
		r := cli(t, frameLine, append(append([]string{"--db", e.DSN}, args...), "--json")...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d %s", args, r.code, r.stderr)
		}
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("%v --json: %v\n%s", args, err, r.stdout)
		}
		if bad := nonSnake(v, ""); bad != "" {
			t.Errorf("%v --json has the key %q", args, bad)
		}
	}
}

func nonSnake(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if k != strings.ToLower(k) || strings.ContainsAny(k, " -") {
				return path + k
			}
			if bad := nonSnake(child, path+k+"."); bad != "" {
				return bad
			}
		}
	case []any:
		for _, child := range x {
			if bad := nonSnake(child, path); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// TestWithoutCgo: the command built without cgo is one static binary (no
// program interpreter, no shared library) whose demo runs on SQLite
// (modernc.org/sqlite) to a healthy record, whose commands read and write
// an SQLite file, and which serves PostgreSQL too. The rest of this
// package's tests run on that driver when the suite is run without cgo
// (scripts/test does).
func TestWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the command line a second time")
	}
	bin := filepath.Join(t.TempDir(), "subagentctl-nocgo")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build without cgo: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("built without cgo, the binary names a program interpreter: not static")
		}
	}
	f.Close()
	if len(libs) > 0 {
		t.Errorf("built without cgo, the binary links %v: not static", libs)
	}
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "SUBAGENTCTL_DB=")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := run("demo"); code != 0 || !strings.Contains(out, "health: healthy") {
		t.Errorf("demo without cgo: exit %d\n%s", code, out)
	}
	// One file for both builds: each records into it, and both read the
	// same rows from it (this test's own binary has cgo unless the suite
	// runs without).
	e := testenv.SQLite().Env(t)
	e.Session(t, "s")
	frames := filepath.Join(t.TempDir(), "frames.jsonl")
	if err := os.WriteFile(frames, []byte(`{"task_session_id":"s","task_id":"task-s","tool_call_id":"c1",`+
		`"observed_at":"2026-01-02T03:04:05.123456Z"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := run("--db", e.DSN, "record", frames); code != 0 {
		t.Errorf("record on SQLite without cgo: exit %d\n%s", code, out)
	}
	second := jsonFrame("s", "c2", "", "completed", time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), `{"description":"d"}`)
	cli(t, second, "--db", e.DSN, "record").want(t, 0)
	if code, out := run("--db", e.DSN, "stats", "--json"); code != 0 || !strings.Contains(out, `"subagents": 2`) {
		t.Errorf("stats on SQLite without cgo: exit %d\n%s", code, out)
	}
	export := func(bin string) string {
		out, err := exec.Command(bin, "--db", e.DSN, "export").Output()
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		return string(out)
	}
	if pure, own := export(bin), export(binary); pure != own || !strings.Contains(pure, `"tool_call_id":"c1"`) ||
		!strings.Contains(pure, `"observed_at":"2026-01-02T03:04:05.123456Z"`) {
		t.Errorf("export without cgo:\n%s\nwith this suite's build:\n%s", pure, own)
	}
	pg := testenv.Postgres().Env(t)
	if code, out := run("--db", pg.DSN, "activation"); code != 0 || !strings.Contains(out, "state") {
		t.Errorf("PostgreSQL without cgo: exit %d\n%s", code, out)
	}
}

// TestCSVKeepsTextText (docs/CONTRACT.md §3.3): a text a spreadsheet would
// read as a formula is written with a ' before it; is_async is true or
// false, never empty; NULL is empty.
func TestCSVKeepsTextText(t *testing.T) {
	var b strings.Builder
	write := exportCSV(&b)
	for _, desc := range []string{"=1+1", "+A1", "-2", "@SUM(A1)", "\tx", "\rx", "plain", "a=b"} {
		d := desc
		if err := write(&core.Subagent{ID: "i", TaskSessionID: "s", TaskID: "t", AgentExecutionID: "e",
			ToolCallID: "c", Description: &d, Source: core.SourceLive}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	want := []string{"'=1+1", "'+A1", "'-2", "'@SUM(A1)", "'\tx", "'\rx", "plain", "a=b"}
	for i, w := range want {
		r := rows[i+1]
		if r[col("description")] != w || r[col("is_async")] != "false" || r[col("model")] != "" {
			t.Errorf("row %d: description %q is_async %q model %q, want %q, false and empty", i,
				r[col("description")], r[col("is_async")], r[col("model")], w)
		}
	}
}

// TestTextOutputQuotesControls: an identifier a frame carried with a
// newline, an escape sequence or a line separator is printed quoted, in
// the row listing, the tree and a warning, so that it neither ends a line
// (and forges the next) nor reaches the operator's terminal raw.
func TestTextOutputQuotesControls(t *testing.T) {
	hostile := "c\nFAKE level=ERROR\x1b[31m"
	sep := "p\u2028q"
	row := core.Subagent{ToolCallID: hostile, AgentExecutionID: "e\r1", ParentToolCallID: &sep, TurnID: &hostile,
		Source: core.SourceLive}
	var list, tree, warned strings.Builder
	printRows(&list, []core.Subagent{row})
	printTree(&tree, []core.Subagent{row})
	slog.New(&warnings{e: &env{stderr: &warned}}).Warn("subagentctx: write failed", "tool_call_id", hostile)
	for name, c := range map[string]struct {
		out   string
		lines int
	}{"list": {list.String(), 3}, "tree": {tree.String(), 3}, "warning": {warned.String(), 1}} {
		if n := strings.Count(c.out, "\n"); n != c.lines || strings.ContainsAny(c.out, "\x1b\r\u2028") {
			t.Errorf("%s printed %d lines (want %d), raw controls %v:\n%s", name, n, c.lines,
				strings.ContainsAny(c.out, "\x1b\r\u2028"), c.out)
		}
		if !strings.Contains(c.out, strconv.Quote(hostile)) {
			t.Errorf("%s does not show %q quoted:\n%s", name, hostile, c.out)
		}
	}
}

// TestBoundedInBytes (docs/CONTRACT.md §3.1), through the command line on
// every dialect: a description of a megabyte is stored cut to 64 KiB at a
// character boundary, marked, and counted truncated — never refused for
// its length; a line longer than 16 MiB is a bad line, named, and the
// lines after it are still read; import stops at such a line, naming it.
func TestBoundedInBytes(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		ctx := context.Background()
		kandevtest.InsertSession(ctx, e.DB, e.Tables, "s1", "task-1")
		cli(t, "", "--db", e.DSN, "migrate").want(t, 0)
		long := strings.Repeat("é", 1<<19) // a megabyte of two-byte characters
		huge := `{"task_session_id":"s1","description":"` + strings.Repeat("x", 17<<20) + `"}` + "\n"
		in := huge + jsonFrame("s1", "toolu_1", "exec-1", "completed", time.Now().UTC(),
			`{"description":"`+long+`","prompt":"","subagent_type":"explorer"}`) + "\n"
		r := cli(t, in, "--db", e.DSN, "record", "--json").want(t, 1)
		var counters map[string]int64
		if err := json.Unmarshal([]byte(r.stdout), &counters); err != nil {
			t.Fatal(err)
		}
		if counters["persisted"] != 1 || counters["truncated"] != 1 || counters["bad_lines"] != 1 ||
			!strings.Contains(r.stderr, "line 1: longer than 16777216 bytes") {
			t.Errorf("counters %v\n%s", counters, r.stderr)
		}
		var rows []core.Subagent
		if err := json.Unmarshal([]byte(cli(t, "", "--db", e.DSN, "list", "--session", "s1", "--json").want(t, 0).stdout),
			&rows); err != nil || len(rows) != 1 || rows[0].Description == nil {
			t.Fatalf("rows %v, %v", rows, err)
		}
		d := *rows[0].Description
		if len(d) > 64<<10 || !utf8.ValidString(d) || !strings.HasSuffix(d, "…[truncated]") ||
			!strings.HasPrefix(d, "éééé") {
			t.Errorf("stored description: %d bytes, valid %v, ends %q", len(d), utf8.ValidString(d), d[max(len(d)-20, 0):])
		}
		r = cli(t, huge, "--db", e.DSN, "import")
		if r.code == 0 || !strings.Contains(r.stderr, "line 1: longer than 16777216 bytes") {
			t.Errorf("import of a line too long: exit %d\n%s", r.code, r.stderr)
		}
	})
}
