package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/testenv"
	"github.com/subagentctx/subagentctx/internal/testlog"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/migration"
)

// placed is a table's row in Citus's catalog: method, distribution column,
// colocation group ("" and 0 when absent).
func placed(t *testing.T, db *gorm.DB, table string) (method, column string, colocation int64) {
	t.Helper()
	var p []struct {
		Method, Column string
		Colocation     int64
	}
	if err := db.Raw(`SELECT partmethod AS method, COALESCE(column_to_column_name(logicalrelid, partkey), '') AS column,
			colocationid AS colocation
		FROM pg_dist_partition WHERE logicalrelid = to_regclass(?)`, table).Scan(&p).Error; err != nil {
		t.Fatal(err)
	}
	if len(p) == 0 {
		return "", "", 0
	}
	return p[0].Method, p[0].Column, p[0].Colocation
}

// TestCitusPlacement (docs/CONTRACT.md §8.10): with the host's sessions
// distributed, the table is distributed by task_session_id, colocated with
// them, without any setting; a row lives on its session's shard and goes
// with it.
func TestCitusPlacement(t *testing.T) {
	e := testenv.Citus().Env(t)
	_, _, sessions := placed(t, e.DB, "task_sessions")
	if method, column, group := placed(t, e.DB, sqlstore.Table); method != "h" || column != "task_session_id" ||
		group != sessions {
		t.Fatalf(
			"task_session_subagents: method %q by %q in group %d; want hash by task_session_id in the sessions' group %d",
			method, column, group, sessions,
		)
	}
	ctx := context.Background()
	e.Session(t, "s1")
	row, _ := core.Normalize(
		core.Frame{
			TaskSessionID: "s1",
			TaskID:        "task-s1",
			ToolCallID:    "toolu_1",
			ExecutionID:   "exec-1",
			ObservedAt:    time.Now(),
		},
	)
	if err := e.Store.Upsert(ctx, row); err != nil {
		t.Fatal(err)
	}
	// The row is on the node of its session.
	var same bool
	err := e.DB.Raw(`SELECT (SELECT nodeport FROM citus_shards
			WHERE shardid = get_shard_id_for_distribution_column('task_session_subagents', 's1'))
		= (SELECT nodeport FROM citus_shards
			WHERE shardid = get_shard_id_for_distribution_column('task_sessions', 's1'))`).Scan(&same).Error
	if err != nil {
		t.Fatal(err)
	}
	if !same {
		t.Error("the row's shard is not on the node of its session's shard")
	}
	if err := kandevtest.DeleteSession(ctx, e.DB, e.Tables, "s1"); err != nil {
		t.Fatal(err)
	}
	if n := e.Count(t); n != 0 {
		t.Errorf("%d rows left after the session was deleted, want 0 (AC-16 on the cluster)", n)
	}
}

// TestCitusMetaCreatedAsReference: a meta table the pass creates on a
// cluster is a reference table (on every node); the host's own meta
// table is left as the host made it.
func TestCitusMetaCreatedAsReference(t *testing.T) {
	d := testenv.Citus()
	host := d.Host
	d.Host = func(t testing.TB, db *gorm.DB) {
		host(t, db)
		if err := db.Exec(`DROP TABLE kandev_meta`).Error; err != nil {
			t.Fatal(err)
		}
	}
	e := d.Env(t)
	if method, _, _ := placed(t, e.DB, sqlstore.DefaultMetaTable); method != "n" {
		t.Errorf("%s created by the pass: method %q, want a reference table (n)", sqlstore.DefaultMetaTable, method)
	}
	quiet := migration.WithLogger(testlog.Discard)
	if r := migration.New(e.Store, quiet).Run(context.Background()); r.Failed() {
		t.Fatalf("pass: %s", r)
	}
	if e.Keys(t)[storekit.CaptureSinceKey] == "" {
		t.Error("no capture_since in the reference meta table after the pass")
	}
}

// TestCitusSessionsNotDistributedByID: sessions distributed by another
// column cannot have the record colocated (its foreign key is on the
// session id): the table step fails saying why, and no table is made.
func TestCitusSessionsNotDistributedByID(t *testing.T) {
	d := testenv.Citus()
	db, _ := d.Open(t)
	if err := kandevtest.CreateTables(context.Background(), db, sqlstore.Tables{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TABLE task_session_turns`, `DROP TABLE task_session_messages`,
		`ALTER TABLE task_sessions DROP CONSTRAINT task_sessions_pkey, ADD PRIMARY KEY (task_id, id)`,
		`SELECT create_distributed_table('task_sessions', 'task_id', shard_count => 4, colocate_with => 'none')`,
	} {
		if err := db.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := postgres.New(db)
	if err != nil {
		t.Fatal(err)
	}
	err = s.EnsureSchema(context.Background())
	if err == nil || !strings.Contains(err.Error(), `distributed by "task_id", not by id`) {
		t.Fatalf("EnsureSchema: %v; want the sessions' distribution column named", err)
	}
	if method, _, _ := placed(t, db, sqlstore.Table); method != "" {
		t.Errorf("task_session_subagents placed (%q) although the step failed", method)
	}
}

// TestCitusEarlierTableDistributed: a table an earlier build made on the
// coordinator alone (primary key id) gets the new key and is distributed
// by the migration pass, every row kept.
func TestCitusEarlierTableDistributed(t *testing.T) {
	d := testenv.Citus()
	e := d.Env(t)
	ctx := context.Background()
	e.Session(t, "s1")
	for _, id := range []string{"toolu_1", "toolu_2"} {
		row, _ := core.Normalize(
			core.Frame{TaskSessionID: "s1", TaskID: "task-s1", ToolCallID: id, ObservedAt: time.Now()},
		)
		if err := e.Store.Upsert(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	d.EarlierTable(t, e.DB)
	if method, _, _ := placed(t, e.DB, sqlstore.Table); method != "" {
		t.Fatalf("the earlier table is already placed (%q)", method)
	}
	r := migration.New(e.Store, migration.WithLogger(testlog.Discard)).Run(ctx)
	if r.Failed() {
		t.Fatalf("pass: %s", r)
	}
	if method, column, _ := placed(t, e.DB, sqlstore.Table); method != "h" || column != "task_session_id" {
		t.Errorf("after the pass: method %q by %q, want hash by task_session_id", method, column)
	}
	if n := e.Count(t); n != 2 {
		t.Errorf("%d rows after the upgrade, want the 2 kept", n)
	}
}

// TestPartitionedTableUsedUnchanged: a table an operator hash-partitioned
// by session before the first pass stays partitioned, and its rows spread
// over the partitions (the dialect suite runs on it too, TestSQL).
func TestPartitionedTableUsedUnchanged(t *testing.T) {
	e := testenv.PostgresPartitioned().Env(t)
	ctx := context.Background()
	for i := range 20 {
		s := "s" + string(rune('a'+i))
		e.Session(t, s)
		row, _ := core.Normalize(
			core.Frame{TaskSessionID: s, TaskID: "task-" + s, ToolCallID: "toolu_1", ObservedAt: time.Now()},
		)
		if err := e.Store.Upsert(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	if r := migration.New(e.Store, migration.WithLogger(testlog.Discard)).Run(ctx); r.Failed() {
		t.Fatalf("pass: %s", r)
	}
	var kind string
	var used int64
	err := e.DB.Raw(`SELECT relkind FROM pg_class WHERE oid = to_regclass('task_session_subagents')`).Scan(&kind).Error
	if err != nil {
		t.Fatal(err)
	}
	if err := e.DB.Raw(`SELECT count(DISTINCT tableoid) FROM task_session_subagents`).Scan(&used).Error; err != nil {
		t.Fatal(err)
	}
	if kind != "p" || used < 2 {
		t.Errorf("relkind %q with rows in %d partitions; want a partitioned table (p) with rows spread", kind, used)
	}
}
