package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/await"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// hostData is the host's side of a moved record, which the host moves
// itself: its sessions and messages.
func hostData(t *testing.T, e *sqltest.Env, ids []string, msgs []kandevtest.Message) {
	t.Helper()
	for _, id := range ids {
		kandevtest.InsertSession(context.Background(), e.DB, e.Tables, id, id+"-task")
	}
	if err := kandevtest.InsertMessages(context.Background(), e.DB, e.Tables, msgs); err != nil {
		t.Fatal(err)
	}
}

// rowsOf are the rows of the sessions, through the command line, their
// updated_at aside (the import's write).
func rowsOf(t *testing.T, dsn string, sessions []string) string {
	t.Helper()
	var b strings.Builder
	for _, id := range sessions {
		var rows []map[string]any
		json.Unmarshal([]byte(cli(t, "", "--db", dsn, "list", "--session", id, "--json").want(t, 0).stdout), &rows)
		for _, r := range rows {
			delete(r, "updated_at")
			fmt.Fprintln(&b, r)
		}
	}
	return b.String()
}

// reads are every read of a record, through the command line, as the
// round trip compares them: the rows (updated_at aside: the import's
// write), the keys, health (its last write aside) and the statistics.
func reads(t *testing.T, dsn string, sessions []string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(rowsOf(t, dsn, sessions))
	b.WriteString(cli(t, "", "--db", dsn, "activation").want(t, 0).stdout)
	var h map[string]any
	json.Unmarshal([]byte(cli(t, "", "--db", dsn, "health", "--json").stdout), &h)
	delete(h, "last_write_at")
	fmt.Fprintln(&b, h)
	b.WriteString(cli(t, "", "--db", dsn, "stats").want(t, 0).stdout)
	return b.String()
}

// TestImportRoundTrip (docs/CONTRACT.md §3.3, Moving the record): a record
// moved SQLite → PostgreSQL → Citus → SQLite by export --keys and import
// reads the same everywhere — every row, the keys byte for byte, health,
// statistics; a second import changes nothing; an import into a target
// whose live frames flow merges by the rules and loses none of them.
func TestImportRoundTrip(t *testing.T) {
	ids, msgs := kandevtest.History("mv-", 3, 40, time.Now().UTC().Add(-2*time.Hour))
	chain := []*sqltest.Driver{testenv.SQLite(), testenv.Postgres(), testenv.Citus(), testenv.SQLite()}
	envs := make([]*sqltest.Env, len(chain))
	for i, d := range chain {
		envs[i] = d.Env(t)
		hostData(t, envs[i], ids, msgs)
	}
	src := envs[0]
	cli(t, "", "--db", src.DSN, "migrate").want(t, 0)
	var live strings.Builder
	for i := range 20 {
		live.WriteString(jsonFrame(ids[i%3], fmt.Sprint("toolu_live", i), "exec-1", "completed",
			time.Now().UTC().Add(-time.Duration(i)*time.Second), `{"description":"d","prompt":"","subagent_type":"x",`+
				`"total_tokens":`+fmt.Sprint(100+i)+`}`) + "\n")
	}
	// A frame of an invocation in the history: its row absorbs the
	// backfilled one and keeps its id, the message's, which the targets'
	// own passes give their backfilled rows too.
	live.WriteString(jsonFrame(ids[0], "toolu_h0_3", "exec-1", "completed", time.Now().UTC(),
		`{"description":"","prompt":"","subagent_type":"","model":"m-live"}`) + "\n")
	cli(t, live.String(), "--db", src.DSN, "record").want(t, 0)
	cli(t, "", "--db", src.DSN, "prune", "--before", "3h").want(t, 0) // a retention boundary, before every row
	want := reads(t, src.DSN, ids)
	absorbed := `agent_execution_id:exec-1 .*id:` + ids[0] + `-m00003 .*source:backfill .*tool_call_id:toolu_h0_3 `
	if !regexp.MustCompile(absorbed).MatchString(want) {
		t.Fatalf("the source has no row that absorbed history under the message's id:\n%s", want)
	}

	dir := t.TempDir()
	for i := 1; i < len(envs); i++ {
		dump := filepath.Join(dir, fmt.Sprint("step", i, ".jsonl"))
		r := cli(t, "", "--db", envs[i-1].DSN, "export", "--keys").want(t, 0)
		os.WriteFile(dump, []byte(r.stdout), 0o600)
		cli(t, "", "--db", envs[i].DSN, "import", dump).want(t, 0)
		if got := reads(t, envs[i].DSN, ids); got != want {
			t.Fatalf("%s after the import differs from the source:\n--- source\n%s\n--- %s\n%s", chain[i].Name, want,
				chain[i].Name, got)
		}
		r = cli(t, "", "--db", envs[i].DSN, "import", "--json", dump).want(t, 0) // again: nothing changes
		var res struct {
			KeysWritten []string `json:"keys_written"`
			KeysKept    []string `json:"keys_kept"`
		}
		json.Unmarshal([]byte(r.stdout), &res)
		if got := reads(t, envs[i].DSN, ids); got != want || len(res.KeysWritten) != 0 || len(res.KeysKept) != 0 {
			t.Errorf("%s: a second import changed something (%s)", chain[i].Name, r.stdout)
		}
	}

	// Into a target whose host booted on its moved tables first: its own
	// pass backfilled the same history, rows whose ids are the messages'
	// as the source's that absorbed history keep them. Every row moves;
	// the target keeps its own activation keys (a key is written once).
	for _, d := range []*sqltest.Driver{testenv.SQLite(), testenv.Postgres(), testenv.Citus()} {
		booted := d.Env(t)
		hostData(t, booted, ids, msgs)
		cli(t, "", "--db", booted.DSN, "migrate").want(t, 0)
		dump := filepath.Join(dir, "booted.jsonl")
		os.WriteFile(dump, []byte(cli(t, "", "--db", src.DSN, "export", "--keys").want(t, 0).stdout), 0o600)
		cli(t, "", "--db", booted.DSN, "import", dump).want(t, 0)
		if got, want := rowsOf(t, booted.DSN, ids), rowsOf(t, src.DSN, ids); got != want {
			t.Errorf("%s, booted before the import: rows differ from the source's:\n--- source\n%s\n--- %s\n%s",
				d.Name, want, d.Name, got)
		}
	}

	// Into a live target: frames of the same and of new invocations flow
	// while the record is imported; every frame lands, history merges.
	target := testenv.Postgres().Env(t)
	hostData(t, target, ids, msgs)
	dump := filepath.Join(dir, "live.jsonl")
	os.WriteFile(dump, []byte(cli(t, "", "--db", src.DSN, "export", "--keys").want(t, 0).stdout), 0o600)
	var flowing strings.Builder
	for i := range 200 {
		flowing.WriteString(jsonFrame(ids[i%3], fmt.Sprint("toolu_live", i%40), "exec-1", "completed",
			time.Now().UTC(), `{"description":"","prompt":"","subagent_type":"","model":"m-live"}`) + "\n")
	}
	done := make(chan result, 1)
	go func() { done <- cli(t, flowing.String(), "--db", target.DSN, "record") }()
	cli(t, "", "--db", target.DSN, "import", dump).want(t, 0)
	if r := await.Recv(t, done, "the record during the import"); r.code != 0 ||
		!strings.Contains(r.stdout, "persisted 200 ") {
		t.Errorf("frames during the import: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var rows []core.Subagent
	for _, id := range ids {
		var got []core.Subagent
		json.Unmarshal([]byte(cli(t, "", "--db", target.DSN, "list", "--session", id, "--json").stdout), &got)
		rows = append(rows, got...)
	}
	byKey := map[string]core.Subagent{}
	for _, r := range rows {
		byKey[r.TaskSessionID+"/"+r.ToolCallID+"/"+r.AgentExecutionID] = r
	}
	for i := range 20 {
		r, ok := byKey[ids[i%3]+"/"+fmt.Sprint("toolu_live", i)+"/exec-1"]
		if !ok || r.Model == nil || *r.Model != "m-live" || r.TotalTokens == nil || *r.TotalTokens != int64(100+i) {
			t.Errorf("toolu_live%d after the import and the frames: %+v", i, r)
		}
	}
	if n := len(byKey); n != len(rows) || reflect.DeepEqual(rows, nil) {
		t.Errorf("%d keys for %d rows", n, len(rows))
	}
}

// TestImportMovesTheKeysByteForByte (docs/CONTRACT.md §3.3, AC-24d/f), on
// every dialect: a record whose pass found nothing to recover
// (backfill_through ”) moves into a fresh target with that ” — so the
// target never holds capture_since without backfill_through — and its
// activation reads the same on both sides; an activation key that is not
// an instant is refused by name before anything is written.
func TestImportMovesTheKeysByteForByte(t *testing.T) {
	testenv.Each(t, func(t *testing.T, src *sqltest.Env) {
		hostData(t, src, []string{"s1"}, nil)
		cli(t, "", "--db", src.DSN, "migrate").want(t, 0)
		cli(t, jsonFrame("s1", "toolu_1", "exec-1", "completed", time.Now().UTC(), `{}`)+"\n", "--db", src.DSN,
			"record").want(t, 0)
		exported := cli(t, "", "--db", src.DSN, "export", "--keys").want(t, 0).stdout
		if !strings.Contains(exported, `"subagent_context_backfill_through":""`) {
			t.Fatalf("the source's keys: %s", exported)
		}
		dst := src.Driver.Env(t)
		hostData(t, dst, []string{"s1"}, nil)
		garbage := strings.Replace(exported, `"subagent_context_backfill_through":""`,
			`"subagent_context_backfill_through":"garbage"`, 1)
		r := cli(t, garbage, "--db", dst.DSN, "import")
		if r.code == 0 || !strings.Contains(r.stderr, `subagent_context_backfill_through is "garbage"`) ||
			strings.Count(r.stderr, "subagentctx:") > 1 {
			t.Errorf("import of a key that is no instant: exit %d\n%s", r.code, r.stderr)
		}
		if n := dst.Count(t); n != 0 {
			t.Errorf("the refused import wrote %d rows", n)
		}
		cli(t, exported, "--db", dst.DSN, "import").want(t, 0)
		activation := func(dsn string) string {
			return cli(t, "", "--db", dsn, "activation", "--json").want(t, 0).stdout
		}
		if a, b := activation(src.DSN), activation(dst.DSN); a != b {
			t.Errorf("activation after the move:\nsource %s\ntarget %s", a, b)
		}
	})
}

// TestImportCountsWhatCommitted (docs/CONTRACT.md §3.3): a row the target
// refuses (its session is not there) stops the import with its error, and
// the count printed is what the target holds: the others of its batch are
// committed, and counted (it said 0).
func TestImportCountsWhatCommitted(t *testing.T) {
	testenv.Each(t, func(t *testing.T, src *sqltest.Env) {
		hostData(t, src, []string{"s1", "s2"}, nil)
		cli(t, "", "--db", src.DSN, "migrate").want(t, 0)
		at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
		cli(t, jsonFrame("s1", "toolu_1", "exec-1", "completed", at, `{}`)+"\n"+
			jsonFrame("s2", "toolu_2", "exec-1", "completed", at, `{}`)+"\n"+
			jsonFrame("s1", "toolu_3", "exec-1", "completed", at, `{}`)+"\n", "--db", src.DSN, "record").want(t, 0)
		exported := cli(t, "", "--db", src.DSN, "export", "--keys").want(t, 0).stdout
		dst := src.Driver.Env(t)
		hostData(t, dst, []string{"s1"}, nil) // the host moved s1 alone
		r := cli(t, exported, "--db", dst.DSN, "import")
		if r.code == 0 || !strings.Contains(r.stderr, "imported 2 rows before the error") {
			t.Errorf("import with a refused row: exit %d\n%s", r.code, r.stderr)
		}
		if n := dst.Count(t); n != 2 {
			t.Errorf("the target holds %d rows, want s1's 2", n)
		}
	})
}
