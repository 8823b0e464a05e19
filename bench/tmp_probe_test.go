package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	ctx := context.Background()
	c := sizes["small"]
	c.tmp = t.TempDir()
	c.pgAdmin = os.Getenv("SUBAGENTCTX_TEST_POSTGRES_DSN")
	for _, d := range []string{"sqlite", "postgres"} {
		s, cleanup, err := newStore(ctx, c, d)
		if err != nil {
			t.Fatal(err)
		}
		seed(ctx, c, s, 100000)
		dl := s.Dialect()
		sqlDB, _ := s.DB().DB()
		q := func(name, sql string) {
			start := time.Now()
			var n int64
			if err := sqlDB.QueryRowContext(ctx, sql).Scan(&n); err != nil {
				t.Fatal(name, err)
			}
			fmt.Printf("%s %-40s %v (%d)\n", d, name, time.Since(start), n)
		}
		docq := `(SELECT id, task_session_id, task_id, created_at, ` + dl.MessageDocument("metadata") + ` AS doc FROM task_session_messages ` + dl.Fence() + `) x`
		q("bare", `SELECT count(*) FROM `+docq+` WHERE `+dl.JSONText("x.doc", "normalized", "kind")+` = 'subagent_task'`)
		q("bare+instant", `SELECT count(*) FROM `+docq+` WHERE `+dl.JSONText("x.doc", "normalized", "kind")+` = 'subagent_task' AND `+dl.Instant("x.created_at")+` IS NOT NULL`)
		q("instant all", `SELECT count(*) FROM task_session_messages WHERE `+dl.Instant("created_at")+` IS NOT NULL`)
		q("plain count", `SELECT count(*) FROM task_session_messages`)
		q("doc only", `SELECT count(*) FROM `+docq)
		cleanup()
	}
}

func TestProbeBackfill(t *testing.T) {
	ctx := context.Background()
	c := sizes["small"]
	c.tmp = t.TempDir()
	c.pgAdmin = os.Getenv("SUBAGENTCTX_TEST_POSTGRES_DSN")
	s, cleanup, err := newStore(ctx, c, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	seed(ctx, c, s, 100000)
	dl := s.Dialect()
	sqlDB, _ := s.DB().DB()
	run := func(name, q string) {
		start := time.Now()
		var n int64
		if err := sqlDB.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(name, err)
		}
		fmt.Printf("%-30s %v (%d)\n", name, time.Since(start), n)
	}
	docq := `(SELECT id, task_session_id, task_id, created_at, ` + dl.MessageDocument("metadata") + ` AS doc FROM task_session_messages ` + dl.Fence() + `) x`
	where := ` WHERE ` + dl.JSONText("x.doc", "normalized", "kind") + ` = 'subagent_task'`
	run("bare", `SELECT count(*) FROM `+docq+where)
	var cols []string
	for _, k := range []string{"status", "subagent_type", "description", "agent_id", "child_session_id", "model"} {
		cols = append(cols, dl.JSONText("x.doc", "normalized", "subagent_task", k))
	}
	for _, k := range []string{"total_tokens", "tool_use_count", "duration_ms"} {
		cols = append(cols, dl.JSONInt("x.doc", 0, "normalized", "subagent_task", k))
	}
	run("18 extractions", `SELECT count(*) FROM (SELECT `+strings.Join(cols, ", ")+` FROM `+docq+where+`) y`)
	run("instant", `SELECT count(*) FROM (SELECT `+dl.Instant("x.created_at")+` FROM `+docq+where+` OFFSET 0) y`)
}
