package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// metadataFunction is the function the message view calls: the metadata
// text parsed once as a jsonb object, or {} when it is NULL, longer than
// jsonb.MaxBytes, not JSON jsonb accepts, not an object, or nested
// jsonb.MaxDepth levels deep (docs/CONTRACT.md §4.2). PostgreSQL 15 has no
// non-raising JSON test, so the cast runs in an exception block. It is
// PARALLEL UNSAFE: an exception block opens a subtransaction, which a
// parallel worker cannot ("cannot start subtransactions during a parallel
// operation" on any table big enough for a parallel scan). Created once,
// never replaced (a concurrent CREATE OR REPLACE can fail with "tuple
// concurrently updated"); a new body gets a new name.
const metadataFunction = `DO $do$ BEGIN
IF to_regprocedure('subagentctx_metadata_v1(text)') IS NULL THEN
CREATE FUNCTION subagentctx_metadata_v1(doc text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $f$
DECLARE j jsonb;
BEGIN
	IF doc IS NULL OR octet_length(doc) > 16777216 THEN RETURN '{}'::jsonb; END IF;
	j := doc::jsonb;
	IF jsonb_typeof(j) <> 'object' OR j @? 'strict $.**{1000}' THEN RETURN '{}'::jsonb; END IF;
	RETURN j;
EXCEPTION WHEN others THEN
	RETURN '{}'::jsonb;
END $f$;
END IF;
END $do$`

// The microsecond bounds of a readable host instant: after Go's zero time,
// before year 10000 (docs/CONTRACT.md §4.2).
var (
	minInstant = time.Time{}.UnixMicro() + 1
	maxInstant = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// HostTimeText implements sqldialect.MessageView: the host's timestamps are
// TIMESTAMPTZ or TIMESTAMP, at the microsecond.
func (Dialect) HostTimeText() bool { return false }

// HostInstant implements sqldialect.MessageView: Unix microseconds, for
// either column type. EXTRACT(EPOCH …) reads a TIMESTAMPTZ as its instant
// and a TIMESTAMP as UTC wall time (what a Go host's driver writes for a
// UTC time.Time), never through the session's TimeZone. Infinite values
// and years outside 1-9999 are NULL.
func (Dialect) HostInstant(x string) string {
	e := "(EXTRACT(EPOCH FROM " + x + ") * 1000000)"
	return fmt.Sprintf(
		"CASE WHEN isfinite(%s) THEN CASE WHEN %s BETWEEN %d AND %d THEN %s::bigint END END", x, e, minInstant, maxInstant, e,
	)
}

// HostWithin implements sqldialect.MessageView. The raw column compares
// with the bound in its own type: a timestamptz as the instant, and a
// timestamp as its UTC wall time, which is how HostInstant reads one; so
// an index on it serves the window, and HostInstant decides exactly.
func (d Dialect) HostWithin(x string, since, until time.Time) (string, []any) {
	var conds []string
	var args []any
	if !since.IsZero() {
		conds = append(conds, x+" >= ?", d.HostInstant(x)+" >= ?")
		args = append(args, since.UTC(), d.HostInstantArg(since))
	}
	if !until.IsZero() {
		conds = append(conds, x+" < ?", d.HostInstant(x)+" < ?")
		args = append(args, storekit.CeilMicro(until).UTC(), d.HostInstantArg(until))
	}
	if len(conds) == 0 {
		return "1 = 1", nil
	}
	return strings.Join(conds, " AND "), args
}

// HostInstantArg implements sqldialect.MessageView: host instants are
// microseconds, so the bound is t rounded up to the next one.
func (Dialect) HostInstantArg(t time.Time) any { return storekit.CeilMicro(t).UnixMicro() }

// ParseHostInstant implements sqldialect.MessageView.
func (Dialect) ParseHostInstant(v any) (*time.Time, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		t := time.UnixMicro(x).UTC()
		return &t, nil
	}
	return nil, fmt.Errorf("host instant %v is a %T, want an integer", v, v)
}

// SubagentKeys implements sqldialect.MessageView: the view's first layer,
// the columns that decide whether a message is recoverable, without the
// rest of the metadata's readings, which the planner would otherwise
// simplify on every plan only to drop them (a quarter of the health
// check's planning: 2.6 → 1.9 ms).
func (d Dialect) SubagentKeys(t sqlstore.Tables, where string) string {
	return `SELECT k.` + strings.Join(sqldialect.MessageKeyColumns(), ", k.") + `
	FROM (` + d.keyed(t, where) + `) k`
}

// SubagentMessages implements sqldialect.MessageView with jsonb, whose rules
// the Go reference (history.Recover) follows exactly: every column that
// declares a metadata path reads it as its type says (jsonValue). Only
// messages whose text can spell the kind (literally, or through a \u
// escape) are parsed, once each: the function is called in FROM
// (LATERAL), where it is evaluated once per message, not in a subquery's
// select list, which the planner would copy into every reference. (An
// OFFSET 0 fence would do the same on one server, but keeps Citus from
// pushing the query down to shards.)
func (d Dialect) SubagentMessages(t sqlstore.Tables, where string) string {
	return d.messages(t, where, "")
}

// NewestSubagentMessages implements sqldialect.MessageView: the messages
// are ranked on what decides whether they are recoverable and which is
// newest, and only the newest of each pair has the rest of its metadata
// read (about a tenth of the backfill where every pair has two messages).
func (d Dialect) NewestSubagentMessages(t sqlstore.Tables, window string) string {
	return d.messages(t, "", window)
}

// keyRead are the metadata's columns read before ranking: with the
// message's own, they decide whether a message is recoverable.
var keyRead = map[string]bool{"tool_call_id": true, "parent_tool_call_id": true}

// keyed is the view's first layer over the messages where selects (all
// when ""): the metadata parsed (d), then the columns that decide whether
// a message is recoverable and which of a pair's is newest (k).
func (d Dialect) keyed(t sqlstore.Tables, where string) string {
	if where != "" {
		where = " AND (" + where + ")"
	}
	var keys, checked []string
	for _, c := range storekit.Columns() {
		if c.Metadata != nil && keyRead[c.Name] {
			keys = append(keys, jsonValue(c)+" AS "+c.Name)
		}
		if c.Identifier && c.Name != "agent_execution_id" { // from the message: stored exactly as given or not at all
			name := c.Name
			if name == "id" {
				name = "message_id"
			}
			if c.Metadata != nil && !keyRead[c.Name] {
				panic("postgres: identifier " + c.Name + " from the metadata decides recoverable: read it before ranking")
			}
			checked = append(checked, fmt.Sprintf("COALESCE(octet_length(k.%s), 0) <= %d", name, storekit.MaxIDBytes))
		}
	}
	return `SELECT k.*, CASE WHEN k.task_session_id <> '' AND k.task_id <> '' AND k.message_id <> ''
			AND k.tool_call_id IS NOT NULL AND k.created IS NOT NULL
			AND ` + strings.Join(checked, "\n\t\t\tAND ") + ` THEN 1 ELSE 0 END AS recoverable
		FROM (SELECT d.*, ` + strings.Join(keys, ",\n\t\t\t") + `
			FROM (SELECT m.id::text AS message_id, m.task_session_id::text AS task_session_id,
					m.task_id::text AS task_id, NULLIF(m.turn_id::text, '') AS turn_id,
					` + d.HostInstant("m.created_at") + ` AS created,
					` + d.HostInstant("m.updated_at") + ` AS updated,
					f.doc
				FROM "` + t.Messages + `" m CROSS JOIN LATERAL subagentctx_metadata_v1(m.metadata::text) AS f(doc)
				WHERE (strpos(m.metadata::text, 'subagent_task') > 0 OR strpos(m.metadata::text, E'\\u') > 0)` +
		where + `) d
			WHERE d.doc #>> '{normalized,kind}' = 'subagent_task') k`
}

// messages is the message view over the messages where selects: its
// first layer (k), then, when window ranks them, only the recoverable
// first of each pair by it, then the other columns the metadata gives
// (e), then those computed from them.
func (d Dialect) messages(t sqlstore.Tables, where, window string) string {
	var fromDoc, out []string
	for _, c := range storekit.Columns() {
		if c.Metadata != nil && !keyRead[c.Name] {
			fromDoc = append(fromDoc, jsonValue(c)+" AS "+c.Name)
		}
	}
	terminal := storekit.TerminalToolStatuses()
	for i, s := range terminal {
		terminal[i] = "'" + s + "'"
	}
	for _, c := range sqldialect.HistoryColumns() {
		switch {
		case c.Metadata != nil, c.Name == "turn_id":
			out = append(out, "e."+c.Name)
		case c.Name == "observed_at":
			out = append(out, fromMicros("e.created")+" AS observed_at")
		case c.Name == storekit.SettledAtColumn:
			settled := "CASE WHEN e.tool_status IN (" + strings.Join(terminal, ", ") + ")" +
				" THEN " + fromMicros("e.updated") + " END AS settled_at"
			out = append(out, settled)
		default:
			panic("postgres: the message view has no reading for column " + c.Name + ": declare its metadata path")
		}
	}
	k := d.keyed(t, where)
	if window != "" {
		k = `SELECT * FROM (SELECT k.*, ` + window + ` AS rn FROM (` + k + `) k WHERE k.recoverable = 1) k
		WHERE k.rn = 1`
	}
	return `SELECT e.message_id, e.task_session_id, e.task_id, e.tool_call_id, e.recoverable, e.created,
		` + strings.Join(out, ",\n\t\t") + `
	FROM (SELECT k.*, ` + strings.Join(fromDoc, ",\n\t\t") + `
		FROM (` + k + `) k) e`
}

// jsonValue reads a column's metadata path from doc as its type says
// (docs/CONTRACT.md §4.2, history.Read): a JSON string's value for text
// (” ⇒ NULL); for a metric, a JSON number whose value is an integer
// within 64 bits and at least the column's Min (1e3 and 2.0 count; 1.5
// and 2^63 do not), nested CASEs fixing the order of evaluation so that
// the cast runs only on a number; for a boolean, 1 for true or a number
// equal to 1, else 0 (the searched CASE, not CASE x WHEN …, because Citus
// deparses the simple form, once the planner has rewritten it, into SQL
// the workers reject).
func jsonValue(c storekit.Column) string {
	p := "'{" + strings.Join(c.Metadata, ",") + "}'"
	typ, text := "jsonb_typeof(doc #> "+p+")", "(doc #>> "+p+")"
	switch c.Type {
	case storekit.Int64:
		v := text + "::numeric"
		return fmt.Sprintf("CASE WHEN %s = 'number' THEN CASE WHEN %s = trunc(%s) AND %s BETWEEN %d AND %d "+
			"THEN %s::bigint END END", typ, v, v, v, c.Min, int64(math.MaxInt64), v)
	case storekit.Bool:
		return "CASE WHEN " + typ + " = 'boolean' THEN CASE WHEN " + text + " = 'true' THEN 1 ELSE 0 END" +
			" WHEN " + typ + " = 'number' THEN CASE WHEN " + text + "::numeric = 1 THEN 1 ELSE 0 END ELSE 0 END"
	}
	return "CASE WHEN " + typ + " = 'string' THEN NULLIF(" + text + ", '') END"
}

// fromMicros is the TIMESTAMPTZ of a Unix time in microseconds. A bigint
// times an interval goes through a double, which cannot hold every
// microsecond of years 1-9999 (9999-12-31T23:59:59.999999 would round to
// the year 10000): whole seconds and the remainder are added apart, each
// exact. The sum is a TIMESTAMP read as UTC, every step immutable: Citus
// refuses a stable function (a TIMESTAMPTZ plus an interval) over a
// column in an UPDATE, and the backfill's merge reads the view's newest
// messages, whose instants are computed above the ranking.
func fromMicros(us string) string {
	return "(TIMESTAMP 'epoch' + (" + us + " / 1000000) * INTERVAL '1 second'" +
		" + (" + us + " % 1000000) * INTERVAL '1 microsecond') AT TIME ZONE 'UTC'"
}

// BackfillForm implements sqldialect.MessageView: one statement with a
// writable CTE, or on Citus one per part pushed down to the shards, after
// a lock and a plan. The lock (SHARE ROW EXCLUSIVE, which the live
// upserts' ROW EXCLUSIVE waits for, and reads do not) serialises the
// backfill with the live writes: its snapshot, taken after the lock, sees
// every row written live before it, and every live write after it sees
// the backfill's rows (docs/CONTRACT.md §8.5). On Citus the coordinator's
// lock holds the writes that route through it. The insert anti-joins the
// table it inserts into, and the planner can only guess how many messages
// match (a function's result decides). Planned as a nested loop over a
// table its statistics call empty (new, or emptied by a rolled-back pass
// and vacuumed), each probe re-reads every row inserted so far: quadratic
// in the history. With nested loops disabled, the joins are hashed or
// merged, linear whatever the estimates (the LATERAL call, which only a
// nested loop can run, still gets one). A disabled plan type inflates the
// costs past jit_above_cost, and compiling the statement would take longer
// than running it, so JIT is off too. On Citus the settings travel with
// the shards' statements.
func (Dialect) BackfillForm(distributed bool) sqldialect.BackfillForm {
	plan := []string{"SET LOCAL enable_nestloop = off", "SET LOCAL jit = off"}
	if distributed {
		plan = append([]string{"SET LOCAL citus.propagate_set_commands = 'local'"}, plan...)
	}
	return sqldialect.BackfillForm{Lock: "LOCK TABLE " + sqlstore.Table + " IN SHARE ROW EXCLUSIVE MODE", Plan: plan}
}

// WithConn implements sqldialect.MessageView: nothing to prepare; fn runs on
// one connection (the backfill's transaction needs one), which a handle on
// a connection or a transaction already is.
func (Dialect) WithConn(ctx context.Context, db *gorm.DB, fn func(*gorm.DB) error) error {
	switch db.Statement.ConnPool.(type) {
	case *sql.Conn, *sql.Tx:
		return fn(db.WithContext(ctx))
	}
	return db.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		// Each statement on its own, so one's error does not stop the next (a ROLLBACK).
		return fn(conn.Session(&gorm.Session{}))
	})
}
