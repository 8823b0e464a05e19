// Package kandevtest is a Kandev-shaped host for examples, tests, benchmarks
// and the demo: it creates Kandev's host tables (sessions, turns, messages,
// meta) and writes rows into them, and it builds realistic subagent payloads,
// message metadata, frame streams and message histories of every provider's
// shape. The library itself never calls it: on a real host these tables
// belong to the host and are never created or altered by subagentctx.
//
// Stability: a test fixture, not covered by the module's semver promise: it
// may change in any version (README, Stability).
package kandevtest

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
)

// The columns and types are Kandev's (apps/backend/internal/task/repository/
// sqlite/base_schema.go), trimmed of columns this project never reads. The
// messages table's foreign key to turns is left out so that a message may
// carry the empty turn id Kandev writes for turnless messages.
const (
	sessionsDDL = `CREATE TABLE IF NOT EXISTS %s (
	id TEXT PRIMARY KEY,
	task_id TEXT NOT NULL,
	agent_execution_id TEXT NOT NULL DEFAULT '',
	state TEXT NOT NULL DEFAULT 'CREATED',
	metadata TEXT DEFAULT '{}',
	started_at TIMESTAMP NOT NULL,
	completed_at TIMESTAMP,
	updated_at TIMESTAMP NOT NULL
)`
	turnsDDL = `CREATE TABLE IF NOT EXISTS %s (
	id TEXT PRIMARY KEY,
	task_session_id TEXT NOT NULL,
	task_id TEXT NOT NULL,
	started_at TIMESTAMP NOT NULL,
	completed_at TIMESTAMP,
	metadata TEXT DEFAULT '{}',
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL,
	FOREIGN KEY (task_session_id) REFERENCES %s(id) ON DELETE CASCADE
)`
	messagesDDL = `CREATE TABLE IF NOT EXISTS %s (
	id TEXT PRIMARY KEY,
	task_session_id TEXT NOT NULL,
	task_id TEXT DEFAULT '',
	turn_id TEXT NOT NULL,
	author_type TEXT NOT NULL DEFAULT 'user',
	author_id TEXT DEFAULT '',
	content TEXT NOT NULL,
	requests_input INTEGER DEFAULT 0,
	type TEXT NOT NULL DEFAULT 'message',
	metadata TEXT DEFAULT '{}',
	created_at TIMESTAMP NOT NULL,
	updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
	FOREIGN KEY (task_session_id) REFERENCES %s(id) ON DELETE CASCADE
)`
	metaDDL = `CREATE TABLE IF NOT EXISTS %s (key TEXT PRIMARY KEY, value TEXT NOT NULL DEFAULT '')`
)

// TurnsTable is the name of the turns table CreateTables makes.
const TurnsTable = "task_session_turns"

// CreateTables creates the host tables, if absent, under the given names
// (Kandev's for those not given: its meta table is kandev_meta).
func CreateTables(ctx context.Context, db *gorm.DB, tables sqlstore.Tables) error {
	if err := tables.Validate(); err != nil {
		return err
	}
	t := kandevNames(tables)
	q := func(name string) string { return `"` + name + `"` }
	stmts := []string{
		fmt.Sprintf(sessionsDDL, q(t.Sessions)),
		fmt.Sprintf(turnsDDL, q(TurnsTable), q(t.Sessions)),
		fmt.Sprintf(messagesDDL, q(t.Messages), q(t.Sessions)),
		fmt.Sprintf(metaDDL, q(t.Meta)),
		`CREATE INDEX IF NOT EXISTS idx_messages_session_id ON ` + q(t.Messages) + `(task_session_id)`,
	}
	// In one transaction, as a host's migration runs: a migration pass
	// polling for the sessions table sees it only with the meta table
	// beside it, and never creates that table at the same time.
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, stmt := range stmts {
			if err := tx.Exec(stmt).Error; err != nil {
				return fmt.Errorf("kandevtest: %w", err)
			}
		}
		return nil
	})
}

// Distribute makes the host's tables (CreateTables') those of a host on
// Citus, in shards shards: a distributed table's keys must include its
// distribution column, so the turns' and messages' primary keys become
// (task_session_id, id); the sessions are distributed by id, the turns and
// messages colocated with them, and the meta table is a reference table.
// The sessions start a colocation group of their own: with Citus's default
// every test schema's sessions would join one shared group, and a CI run
// once failed creating them ("relation with OID … does not exist") while
// other schemas were being dropped; a group per schema shares nothing.
func Distribute(ctx context.Context, db *gorm.DB, tables sqlstore.Tables, shards int) error {
	t := kandevNames(tables)
	q := func(name string) string { return `"` + name + `"` }
	for _, stmt := range []string{
		`ALTER TABLE ` + q(TurnsTable) + ` DROP CONSTRAINT ` + q(TurnsTable+"_pkey") +
			`, ADD PRIMARY KEY (task_session_id, id)`,
		`ALTER TABLE ` + q(t.Messages) + ` DROP CONSTRAINT ` + q(t.Messages+"_pkey") +
			`, ADD PRIMARY KEY (task_session_id, id)`,
		fmt.Sprintf(`SELECT create_distributed_table('%s', 'id', shard_count => %d, colocate_with => 'none')`,
			q(t.Sessions), shards),
		`SELECT create_distributed_table('` + q(TurnsTable) + `', 'task_session_id', colocate_with => '` +
			q(t.Sessions) + `')`,
		`SELECT create_distributed_table('` + q(t.Messages) + `', 'task_session_id', colocate_with => '` +
			q(t.Sessions) + `')`,
		`SELECT create_reference_table('` + q(t.Meta) + `')`,
	} {
		if err := db.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fmt.Errorf("kandevtest: %s: %w", stmt, err)
		}
	}
	return nil
}

// kandevNames fills the names not given with Kandev's.
func kandevNames(t sqlstore.Tables) sqlstore.Tables {
	t = t.WithDefaults() // Kandev's sessions and messages tables
	if t.Meta == "" {
		t.Meta = sqlstore.KandevMetaTable
	}
	return t
}

// InsertSession inserts a host session (ignored when it exists).
func InsertSession(ctx context.Context, db *gorm.DB, tables sqlstore.Tables, id, taskID string) error {
	now := time.Now().UTC()
	err := db.WithContext(ctx).Exec(`INSERT INTO `+`"`+tables.WithDefaults().Sessions+`"`+
		` (id, task_id, started_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, id, taskID, now, now).Error
	if err != nil {
		return fmt.Errorf("kandevtest: insert session %s: %w", id, err)
	}
	return nil
}

// DeleteSession deletes a host session; foreign keys cascade to its rows.
func DeleteSession(ctx context.Context, db *gorm.DB, tables sqlstore.Tables, id string) error {
	return db.WithContext(ctx).Exec(`DELETE FROM `+`"`+tables.WithDefaults().Sessions+`"`+` WHERE id = ?`, id).Error
}

// Message is one host message row. Metadata is stored as given (any text,
// malformed included); CreatedAt and UpdatedAt are bound as UTC time.Time,
// as Kandev writes them through its driver.
type Message struct {
	ID, TaskSessionID, TaskID, TurnID string
	Content                           string
	Metadata                          *string // nil stores SQL NULL
	CreatedAt, UpdatedAt              time.Time
}

// InsertMessages inserts messages in one statement per batch of 500.
func InsertMessages(ctx context.Context, db *gorm.DB, tables sqlstore.Tables, msgs []Message) error {
	const batch = 500
	table := `"` + tables.WithDefaults().Messages + `"`
	for start := 0; start < len(msgs); start += batch {
		end := min(start+batch, len(msgs))
		sql := `INSERT INTO ` + table +
			` (id, task_session_id, task_id, turn_id, author_type, content, type, metadata, created_at, updated_at) VALUES `
		args := make([]any, 0, (end-start)*8)
		for i, m := range msgs[start:end] {
			if i > 0 {
				sql += ", "
			}
			sql += "(?, ?, ?, ?, 'agent', ?, 'tool_call', ?, ?, ?)"
			updated := m.UpdatedAt
			if updated.IsZero() {
				updated = m.CreatedAt
			}
			args = append(
				args, m.ID, m.TaskSessionID, m.TaskID, m.TurnID, m.Content, m.Metadata, m.CreatedAt.UTC(), updated.UTC(),
			)
		}
		if err := db.WithContext(ctx).Exec(sql, args...).Error; err != nil {
			return fmt.Errorf("kandevtest: insert messages: %w", err)
		}
	}
	return nil
}
