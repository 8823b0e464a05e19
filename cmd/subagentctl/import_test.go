package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
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
			KeysWritten  []string `json:"keys_written"`
			KeysReplaced []string `json:"keys_replaced"`
		}
		json.Unmarshal([]byte(r.stdout), &res)
		if got := reads(t, envs[i].DSN, ids); got != want || len(res.KeysWritten) != 0 ||
			len(res.KeysReplaced) != 0 {
			t.Errorf("%s: a second import changed something (%s)", chain[i].Name, r.stdout)
		}
	}

	// Into a target whose host booted on its moved tables first: its own
	// pass backfilled the same history, rows whose ids are the messages'
	// as the source's that absorbed history keep them. Every row moves.
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

// TestImportReproducesTheRecordInABootedTarget (docs/CONTRACT.md §3.3,
// Moving the record), on every dialect: a record moved into a target
// whose host booted first — its pass read the same messages, later, when
// one had completed and one more had been written — reads as the source
// does (rows, activation, health, statistics), in either row order: the
// invocation recorded live stays live, the one whose history a live row
// absorbed keeps the source's settled_at, and the tool call id a second
// execution reused keeps both rows and the first's hold on history. A
// pair whose history the target's own live frame absorbed, where the
// record holds it unabsorbed, ends as one row.
func TestImportReproducesTheRecordInABootedTarget(t *testing.T) {
	testenv.Each(t, func(t *testing.T, src *sqltest.Env) {
		base := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
		msg := func(id, sess, tool, status string, created, updated time.Time) kandevtest.Message {
			m := kandevtest.Subagent(tool, status, &core.Payload{SubagentType: "explorer", Description: id})
			return kandevtest.Message{ID: id, TaskSessionID: sess, TaskID: sess + "-task", TurnID: "turn-1",
				Metadata: ptr(m.JSON()), CreatedAt: created, UpdatedAt: updated}
		}
		ids := []string{"s1", "s2"}
		history := []kandevtest.Message{
			msg("m1", "s1", "toolu_h1", "in_progress", base, base),
			msg("m2", "s1", "toolu_h2", "completed", base.Add(time.Minute), base.Add(time.Minute)),
			msg("m4", "s2", "toolu_r", "in_progress", base.Add(2*time.Minute), base.Add(2*time.Minute)),
		}
		hostData(t, src, ids, history)
		cli(t, "", "--db", src.DSN, "migrate").want(t, 0)
		// After the source's capture: an invocation recorded live (its
		// message too), m1 completing, the reused tool call id.
		now := time.Now().UTC()
		later := []kandevtest.Message{msg("m3", "s1", "toolu_l3", "completed", now, now)}
		if err := kandevtest.InsertMessages(context.Background(), src.DB, src.Tables, later); err != nil {
			t.Fatal(err)
		}
		completed := kandevtest.Subagent("toolu_h1", "completed", &core.Payload{SubagentType: "explorer",
			Description: "m1"}).JSON()
		src.Exec(t, `UPDATE task_session_messages SET metadata = ?, updated_at = ? WHERE id = 'm1'`, completed,
			now.Add(time.Second))
		task := `{"description":"","prompt":"","subagent_type":"","total_tokens":7}`
		cli(t, jsonFrame("s1", "toolu_l3", "exec-1", "completed", now.Add(2*time.Second), task)+"\n"+
			jsonFrame("s1", "toolu_h1", "exec-1", "completed", now.Add(3*time.Second), task)+"\n"+
			jsonFrame("s2", "toolu_r", "exec-1", "completed", now.Add(4*time.Second), task)+"\n"+
			jsonFrame("s2", "toolu_r", "exec-2", "in_progress", now.Add(5*time.Second), task)+"\n",
			"--db", src.DSN, "record").want(t, 0)
		want := reads(t, src.DSN, ids)
		exported := cli(t, "", "--db", src.DSN, "export", "--keys").want(t, 0).stdout
		lines := strings.SplitAfter(strings.TrimSuffix(exported, "\n"), "\n")
		reversed := lines[0] // the keys first, then the rows backwards
		for i := len(lines) - 1; i > 0; i-- {
			reversed += strings.TrimSuffix(lines[i], "\n") + "\n"
		}
		booted := func() *sqltest.Env {
			dst := src.Driver.Env(t)
			hostData(t, dst, ids, append(slices.Clone(history), later...))
			dst.Exec(t, `UPDATE task_session_messages SET metadata = ?, updated_at = ? WHERE id = 'm1'`, completed,
				now.Add(time.Second))
			cli(t, "", "--db", dst.DSN, "migrate").want(t, 0) // its pass reads m1 completed, and m3
			return dst
		}
		for name, record := range map[string]string{"in the export's order": exported, "backwards": reversed} {
			dst := booted()
			cli(t, record, "--db", dst.DSN, "import").want(t, 0)
			if got := reads(t, dst.DSN, ids); got != want {
				t.Errorf("%s, %s: the booted target after the import differs from the source:\n--- source\n%s\n"+
					"--- target\n%s", src.Name, name, want, got)
			}
			cli(t, record, "--db", dst.DSN, "import").want(t, 0) // again: nothing changes
			if got := reads(t, dst.DSN, ids); got != want {
				t.Errorf("%s, %s: a second import changed the record:\n%s", src.Name, name, got)
			}
		}
		// The target's own live frame absorbed m2's history, which the
		// record holds unabsorbed: one row, the live one holding history.
		dst := booted()
		cli(t, jsonFrame("s1", "toolu_h2", "exec-9", "completed", now.Add(6*time.Second), task)+"\n",
			"--db", dst.DSN, "record").want(t, 0)
		var res struct {
			Merged int64 `json:"merged"`
		}
		json.Unmarshal([]byte(cli(t, exported, "--db", dst.DSN, "import", "--json").want(t, 0).stdout), &res)
		var rows []core.Subagent
		json.Unmarshal([]byte(cli(t, "", "--db", dst.DSN, "list", "--session", "s1", "--json").want(t, 0).stdout),
			&rows)
		var h2 []string
		for _, r := range rows {
			if r.ToolCallID == "toolu_h2" {
				h2 = append(h2, r.AgentExecutionID+"/"+string(r.Source)+"/"+r.ID)
			}
		}
		if len(h2) != 1 || h2[0] != "exec-9/backfill/m2" || res.Merged != 1 {
			t.Errorf("%s: toolu_h2 after the import into a target whose live frame absorbed it: %v (%d merged), "+
				"want exec-9/backfill/m2 alone", src.Name, h2, res.Merged)
		}
	})
}
