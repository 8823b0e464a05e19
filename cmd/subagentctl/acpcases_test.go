package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqltest"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// acpCase is one recognition case of the reference host, restated as
// traffic in and rows out (acp/testdata/codex-cases.json): lines fed to
// record --acp, and the columns each row must hold afterwards. A key of
// expect starting with "*" is a row whose tool call id the case does not
// fix; {"any_of": […]} takes any of the values, {"id_of": KEY} the tool
// call id of the row matched by KEY, "settled" whether settled_at is set.
type acpCase struct {
	Name      string                    `json:"name"`
	Agent     string                    `json:"agent"`
	Lines     []json.RawMessage         `json:"lines"`
	Expect    map[string]map[string]any `json:"expect"`
	ExactRows bool                      `json:"exact_rows"`
	Note      string                    `json:"note"`
}

// TestCodexCasesThroughTheCommandLine (docs/CONTRACT.md §7): every case,
// fed as the reference host feeds it (record --acp --agent codex-acp) into
// every dialect (a session of its own in one database per dialect),
// leaves exactly the rows it expects.
func TestCodexCasesThroughTheCommandLine(t *testing.T) {
	data, err := os.ReadFile("../../acp/testdata/codex-cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []acpCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	testenv.Each(t, func(t *testing.T, e *sqltest.Env) {
		for i, c := range cases {
			t.Run(c.Name, func(t *testing.T) { runCase(t, c, e, fmt.Sprintf("s%d", i)) })
		}
	})
}

// runCase feeds a case to record --acp as a session of its own (the
// dialect's database is shared: each case's rows are its session's) and
// compares the rows list --session then prints.
func runCase(t *testing.T, c acpCase, e *sqltest.Env, session string) {
	kandevtest.InsertSession(context.Background(), e.DB, e.Tables, session, "t1")
	var in bytes.Buffer
	for _, l := range c.Lines {
		if err := json.Compact(&in, l); err != nil {
			t.Fatal(err)
		}
		in.WriteByte('\n')
	}
	cli(t, in.String(), "--db", e.DSN, "record", "--acp", "--task-session", session, "--task", "t1", "--turn", "u1",
		"--execution", "e1", "--agent", c.Agent, "-").want(t, 0)
	var rows []map[string]any
	r := cli(t, "", "--db", e.DSN, "list", "--session", session, "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	if msg := matchRows(c, rows); msg != "" {
		t.Errorf("%s\nnote: %s\nrows: %s", msg, c.Note, r.stdout)
	}
}

// matchRows says how rows differ from the case's expectation ("" when
// they match).
func matchRows(c acpCase, rows []map[string]any) string {
	byID := map[string]map[string]any{}
	for _, r := range rows {
		byID[fmt.Sprint(r["tool_call_id"])] = r
	}
	claimed := map[string]bool{}
	matched := map[string]map[string]any{}
	var problems []string
	for key := range c.Expect {
		if strings.HasPrefix(key, "*") {
			continue
		}
		r, ok := byID[key]
		if !ok {
			problems = append(problems, "no row "+key)
			continue
		}
		claimed[key], matched[key] = true, r
	}
	for key, want := range c.Expect {
		if !strings.HasPrefix(key, "*") {
			continue
		}
		for id, r := range byID {
			if !claimed[id] && columnsMatch(want, r, matched) == "" {
				claimed[id], matched[key] = true, r
				break
			}
		}
		if matched[key] == nil {
			problems = append(problems, "no row matches "+key)
		}
	}
	for key, want := range c.Expect {
		if r := matched[key]; r != nil {
			if msg := columnsMatch(want, r, matched); msg != "" {
				problems = append(problems, key+": "+msg)
			}
		}
	}
	if c.ExactRows && len(rows) != len(c.Expect) {
		problems = append(problems, fmt.Sprintf("%d rows, want exactly %d", len(rows), len(c.Expect)))
	}
	return strings.Join(problems, "; ")
}

func columnsMatch(want, row map[string]any, matched map[string]map[string]any) string {
	var problems []string
	for col, w := range want {
		got := row[col]
		if col == "settled" {
			got = row["settled_at"] != nil
		}
		ok := reflect.DeepEqual(got, w)
		if m, isMap := w.(map[string]any); isMap {
			switch {
			case m["any_of"] != nil:
				for _, v := range m["any_of"].([]any) {
					ok = ok || reflect.DeepEqual(got, v)
				}
			case m["id_of"] != nil:
				if r := matched[fmt.Sprint(m["id_of"])]; r != nil {
					ok = reflect.DeepEqual(got, r["tool_call_id"])
				}
			}
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s = %v, want %v", col, got, w))
		}
	}
	return strings.Join(problems, ", ")
}
