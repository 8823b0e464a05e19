package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/kandevtest/pgtest"
)

// TestServe: serve prints exactly where it listens as its first line,
// serves the overview and the session pages read-only, never shows the
// DSN, refuses writes, and stops cleanly on SIGINT and on SIGTERM.
func TestServe(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		ctx := context.Background()
		kandevtest.InsertSession(ctx, e.DB, e.Tables, "s1", "task-1")
		dsn := strings.Replace(e.DSN, "postgres@", "postgres:S3cretPw@", 1) // loopback trusts any password
		cli(t, "", "--db", dsn, "migrate").want(t, 0)
		now := time.Now().UTC()
		cli(
			t,
			jsonFrame(
				"s1", "toolu_01", "exec-1", "completed", now,
				`{"description":"<script>alert(1)</script>","prompt":"","subagent_type":"explorer"}`,
			),
			"--db",
			dsn,
			"record",
		).want(t, 0)
		before := e.Count(t)

		// SIGINT at the root, SIGTERM below a base path (behind a proxy).
		for sig, basePath := range map[syscall.Signal]string{syscall.SIGINT: "", syscall.SIGTERM: "/admin/subagents"} {
			base, stop := serve(t, basePath, "--db", dsn, "--base-path", basePath)
			for _, path := range []string{"", "session?id=s1", "style.css"} {
				res, err := http.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				page := string(body)
				if res.StatusCode != 200 || path != "style.css" && !strings.Contains(page, "s1") ||
					strings.Contains(page, "<script>") ||
					strings.Contains(page, "S3cretPw") || strings.Contains(page, e.DSN) {
					t.Errorf("%s: %d, or a script or the DSN in the page:\n%s", path, res.StatusCode, page)
				}
			}
			res, err := http.Post(base+"session?id=s1", "text/plain", strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("POST: %d, want 405", res.StatusCode)
			}
			stop(sig)
		}
		if n := e.Count(t); n != before {
			t.Errorf("serving changed the table: %d rows, then %d", before, n)
		}
	})
}

// serve starts subagentctl serve on a free loopback port with args and
// returns the view's base URL (below basePath) and how to stop it with a
// signal, checking that it exits cleanly.
func serve(t *testing.T, basePath string, args ...string) (base string, stop func(os.Signal)) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("no first line: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`^listening on (http://127\.0\.0\.1:[1-9][0-9]*` + regexp.QuoteMeta(basePath) +
		`/)\n$`).FindStringSubmatch(line)
	if m == nil {
		cmd.Process.Kill()
		t.Fatalf("first line %q, want \"listening on http://127.0.0.1:PORT%s/\"", line, basePath)
	}
	return m[1], func(sig os.Signal) {
		t.Helper()
		cmd.Process.Signal(sig)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("after %v: %v\n%s", sig, err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("still running 10 s after %v", sig)
		}
	}
}

// TestServeFromAReplica: serve --db naming a PostgreSQL hot standby (which
// refuses every write) shows what the primary recorded once the standby
// has replayed it — rows, activation keys and health from the same
// handle — with its reads bounded by --read-timeout and --max-reads; the
// two flags refuse what is not a bound, by name.
func TestServeFromAReplica(t *testing.T) {
	cli(t, "", "--db", "sqlite:x.db", "serve", "--read-timeout", "0s").want(t, 2)
	r := cli(t, "", "--db", "sqlite:x.db", "serve", "--max-reads", "0").want(t, 2)
	if !strings.Contains(r.stderr, "--max-reads 0: want at least 1") {
		t.Errorf("stderr %q", r.stderr)
	}
	primary := pgtest.StartServer(t)
	dsn := primary.DSN("pw")
	db := pgtest.Open(t, dsn)
	tables := sqlstore.Tables{}.WithDefaults()
	ctx := context.Background()
	if err := kandevtest.CreateTables(ctx, db, tables); err != nil {
		t.Fatal(err)
	}
	kandevtest.InsertSession(ctx, db, tables, "s-replica", "task-1")
	cli(t, "", "--db", dsn, "migrate").want(t, 0)
	cli(t, jsonFrame("s-replica", "toolu_r1", "exec-1", "completed", time.Now().UTC(),
		`{"description":"on the primary","prompt":"","subagent_type":"explorer"}`), "--db", dsn, "record").want(t, 0)
	standby := primary.StartStandby(t)
	replica := standby.DSN("pw")
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r := cli(t, "", "--db", replica, "list", "--session", "s-replica"); strings.Contains(r.stdout, "toolu_r1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby did not replay the primary's row in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	base, stop := serve(t, "", "--db", replica, "--read-timeout", "5s", "--max-reads", "1")
	defer stop(syscall.SIGTERM)
	for path, want := range map[string]string{"?range=all": "s-replica", "session?id=s-replica": "on the primary"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) ||
			path == "?range=all" && !strings.Contains(string(body), "capture_since") {
			t.Errorf("%s: %d, want %q in\n%s", path, res.StatusCode, want, body)
		}
	}
}

// TestRecordACP: record --acp reads ACP traffic (JSON-RPC messages and
// bare params), records the subagent calls under the host's identity
// (none of a session/load's replay),
// reports a line that is not JSON by its number (exit 1), and refuses a
// command line without the identity ACP lacks.
func TestRecordACP(t *testing.T) {
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		ctx := context.Background()
		kandevtest.InsertSession(ctx, e.DB, e.Tables, "s-acp", "task-acp")
		traffic, err := os.ReadFile("../../acp/testdata/claude.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		resume, err := os.ReadFile("../../acp/testdata/resume.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		input := string(traffic) + string(resume) + "not json\n" +
			`{"sessionId":"acp-claude","update":{"sessionUpdate":"tool_call","toolCallId":"aug",` +
			`"title":"sub-agent-planner: Plan"}}` + "\n"
		r := cli(
			t, input, "--db", e.DSN, "record", "--acp", "--task-session", "s-acp", "--task", "task-acp", "--turn", "t1",
			"--execution", "x1", "--json",
		).want(t, 1)
		var counters map[string]int64
		if err := json.Unmarshal([]byte(r.stdout), &counters); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		if counters["persisted"] == 0 || counters["failed"] != 0 || counters["bad_lines"] != 1 ||
			!strings.Contains(r.stderr, "line 23:") {
			t.Errorf("counters %v, stderr %q", counters, r.stderr)
		}
		rows, err := e.Store.ListBySession(ctx, "s-acp", core.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, row := range rows {
			ids = append(ids, row.ToolCallID+"/"+row.AgentExecutionID+"/"+*row.TurnID)
		}
		slices.Sort(ids)
		if fmt.Sprint(ids) != "[aug/x1/t1 toolu_01A/x1/t1 toolu_01C/x1/t1 toolu_02/x1/t1 toolu_new1/x1/t1]" {
			t.Errorf("rows %v", ids)
		}
	})
	cli(t, "", "record", "--acp", "--task", "t").want(t, 2)
	cli(t, "", "record", "--task-session", "s").want(t, 2)
	// An agent the tracker does not know: refused before any database is
	// touched, never recorded with its rules silently off.
	r := cli(t, "", "record", "--acp", "--task-session", "s", "--task", "t", "--agent", "gpt-engineer").want(t, 2)
	if !strings.Contains(r.stderr, "codex-acp") {
		t.Errorf("an unknown --agent: %s", r.stderr)
	}
}
