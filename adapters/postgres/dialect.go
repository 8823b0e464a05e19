package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Dialect is PostgreSQL's sqldialect.Dialect: its fragments here, its
// message view in messages.go, its catalog and upgrade steps in
// catalog.go, its placement on Citus in citus.go.
type Dialect struct{}

var (
	_ sqldialect.Dialect          = Dialect{}
	_ sqldialect.Placement        = Dialect{}
	_ sqldialect.Pipeliner        = Dialect{}
	_ sqldialect.PassLocker       = Dialect{}
	_ sqldialect.PrivilegeChecker = Dialect{}
)

// Name implements sqldialect.Fragments.
func (Dialect) Name() string { return "postgres" }

// ColumnType implements sqldialect.Fragments. Metrics are BIGINT (the
// upstream 32-bit INTEGER was a defect, docs/CONTRACT.md §8.1); timestamps
// are TIMESTAMPTZ: instants, so neither writing nor comparing depends on
// the session's TimeZone.
func (Dialect) ColumnType(t storekit.Type) string {
	switch t {
	case storekit.Int64:
		return "BIGINT"
	case storekit.Bool:
		return "INTEGER"
	case storekit.Time:
		return "TIMESTAMPTZ"
	}
	return "TEXT"
}

// Instant implements sqldialect.Fragments. EXTRACT(EPOCH …) is exact
// (numeric) and independent of the session time zone for TIMESTAMPTZ.
func (Dialect) Instant(x string) string { return "(EXTRACT(EPOCH FROM " + x + ") * 1000000)::bigint" }

// Within implements sqldialect.Fragments: timestamptz compares as the
// instant, at the microsecond, whatever the session's time zone.
func (Dialect) Within(x string, since, until time.Time) (string, []any) {
	var conds []string
	var args []any
	if !since.IsZero() {
		conds, args = append(conds, x+" >= ?"), append(args, storekit.CeilMicro(since))
	}
	if !until.IsZero() {
		conds, args = append(conds, x+" < ?"), append(args, storekit.CeilMicro(until))
	}
	if len(conds) == 0 {
		return "TRUE", nil
	}
	return strings.Join(conds, " AND "), args
}

// ThroughIndex implements sqldialect.Fragments: the table; PostgreSQL's
// histograms estimate a time range.
func (Dialect) ThroughIndex(table, _ string) string { return table }

// Extreme implements sqldialect.Fragments: timestamptz orders as the
// instant.
func (d Dialect) Extreme(fn, x string) string { return d.Instant(fn + "(" + x + ")") }

// Ordered implements sqldialect.Fragments: timestamptz sorts as the instant,
// at the microsecond.
func (Dialect) Ordered(x string) string { return x }

// OrderedArg implements sqldialect.Fragments.
func (Dialect) OrderedArg(t time.Time) any { return storekit.CanonicalTime(t) }

// Bytewise implements sqldialect.Fragments: the C collation compares bytes,
// whatever the database's own (an ICU locale orders linguistically).
func (Dialect) Bytewise(x string) string { return x + ` COLLATE "C"` }

// Upsert implements sqldialect.Fragments: the INSERT … ON CONFLICT of the
// parts, after a statement, in the write's transaction, that moves each
// pair's backfilled row to the execution of the row that will absorb it
// (docs/CONTRACT.md §8.5): the row's upsert then lands on it by its key
// and merges by the ordinary rules, history as the stored row. Any
// trigger on the table would cost every inserting statement its WHEN
// clause's planning, or a function call (1.08–1.15× the upsert before it
// did anything), so one server has none, and the pass drops the one
// earlier builds absorbed with, and its functions. A sharded table keeps
// a trigger (absorbTrigger): Citus refuses Absorb's subqueries there, and
// would run it on every shard.
func (Dialect) Upsert(u sqldialect.UpsertParts) sqldialect.UpsertForm {
	t := sqlstore.Table
	// Each named row probes its pair's history by the unique key; where
	// there is history, its own key and the holder of its id by theirs
	// (unqualified columns in each subquery are that subquery's table's),
	// and the first of the pair's rows whose key has no row and whose id
	// is not another's absorbs. The table's row is then reached by its
	// primary key only, so that no statistics can make the plan read
	// history, or a session, whole. The CASE leaves a row that another
	// transaction moved meanwhile (the update then reads it again) where
	// it is: the frame's upsert makes a row of its own.
	frame := map[string]string{"task_session_id": "f.session", "tool_call_id": "f.tool_call"}
	history := u.History(func(c string) string { return frame[c] })
	absorb := `UPDATE ` + t + ` AS h
SET agent_execution_id = CASE WHEN h.agent_execution_id = '` + core.UnknownExecution + `' THEN a.execution
	ELSE h.agent_execution_id END
FROM (SELECT DISTINCT ON (f.session, f.tool_call) f.session, f.execution, f.history
	FROM (SELECT f.*, (SELECT id FROM ` + t + ` WHERE ` + history + `) AS history
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY
			AS f (session, tool_call, execution, row_id, n)
		OFFSET 0) AS f
	WHERE f.history IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM ` + t + ` WHERE task_session_id = f.session
			AND agent_execution_id = f.execution AND tool_call_id = f.tool_call)
		AND NOT EXISTS (SELECT 1 FROM ` + t + ` WHERE task_session_id = f.session AND id = f.row_id
			AND id <> f.history)
	ORDER BY f.session, f.tool_call, f.n) AS a
WHERE h.task_session_id = a.session AND h.id = a.history`
	// Writes that share a pair take turns, whole: each takes a lock per
	// pair of its rows before anything else, in one order (the pairs'
	// hashes, ascending), so that no two of them ever wait for each
	// other's rows — a write absorbing first locks history of later pairs
	// before the rows of earlier ones, and two writes' upserts come in
	// orders of their own. Advisory locks, held to the transaction's end:
	// they cost no write of a row, nor a read of the table, and are planned
	// once. The key's first half marks them as this library's pairs.
	lock := `SELECT count(pg_advisory_xact_lock(hashtext('subagentctx pair'), s.k))
FROM (SELECT DISTINCT hashtext(length(p.session) || ':' || p.session || p.tool_call) AS k
	FROM unnest($1::text[], $2::text[]) AS p (session, tool_call)
	ORDER BY k OFFSET 0) AS s`
	// Planned afresh for each write, with no scan of the table and no join
	// that reads an index whole: a plan cached while the table was small,
	// or chosen on statistics taken while it was, would read history, or
	// a session, whole for every write once it is large. For that
	// statement only: the settings as they were are kept in a setting of
	// the transaction and set back after it, so that neither the upserts
	// (whose cached plans are what make them cheap) nor a host's own
	// statements run under them.
	settings := [][2]string{{"enable_seqscan", "off"}, {"enable_hashjoin", "off"}, {"enable_mergejoin", "off"},
		{"plan_cache_mode", "force_custom_plan"}}
	var set, was, restore []string
	for i, kv := range settings {
		set = append(set, "set_config('"+kv[0]+"', '"+kv[1]+"', true)")
		was = append(was, "current_setting('"+kv[0]+"')")
		restore = append(restore, fmt.Sprintf("set_config('%s', split_part(current_setting('%s'), ',', %d), true)",
			kv[0], saved, i+1))
	}
	// The trigger and its functions, in this schema — but the earlier
	// releases' (legacyAbsorbers), which stay with this build's body;
	// present when none is.
	fns := `SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname LIKE 'subagentctx\_absorb\_%'
	AND p.proname NOT IN (` + legacyNames() + `)
	AND p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass('` + t + `'))`
	drop := sqldialect.SchemaObject{
		Create: `DO $do$ DECLARE f regprocedure; BEGIN
DROP TRIGGER IF EXISTS subagentctx_absorb ON ` + t + `;
FOR f IN ` + fns + ` LOOP
	EXECUTE 'DROP FUNCTION ' || f;
END LOOP;
END $do$`,
		Present: `SELECT NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('` + t + `')
	AND tgname = 'subagentctx_absorb') AND NOT EXISTS (` + fns + `)`,
		Cleanup: true,
	}
	absorbs := absorbFunction(u)
	legacy := legacyAbsorber(absorbs)
	return sqldialect.UpsertForm{
		Statement: u.Into + " VALUES " + u.Values(func(n int, _ storekit.Column) string { return "$" + strconv.Itoa(n) }) +
			" ON CONFLICT " + u.Key + " DO UPDATE SET " + u.Set,
		Schema: []sqldialect.SchemaObject{drop, legacy},
		Absorb: &sqldialect.Absorbing{
			Statement: absorb,
			Lock:      lock,
			// Saved in the subquery, whose row the settings' projection waits for.
			Plan: "SELECT " + strings.Join(set, ",\n\t") + "\nFROM (SELECT set_config('" + saved + "', concat_ws(',',\n\t\t" +
				strings.Join(was, ",\n\t\t") + "), true) OFFSET 0) AS saved",
			Restore: "SELECT " + strings.Join(restore, ",\n\t"),
		},
		Sharded: []sqldialect.SchemaObject{absorbTrigger(absorbs), legacy},
	}
}

// saved is the setting in which a write's transaction keeps the planner's
// settings while it absorbs history.
const saved = "subagentctx.planner"

// NearestRanks implements sqldialect.Fragments with percentile_disc, one
// sort of each group's durations where window functions took two sorts
// and four window aggregates over all of them (a third of the 7-day
// overview at 1 M rows). percentile_disc(p) is the value at rank
// ceil(p·m) with p·m in double precision: exact for 0.5; for 0.95 off by
// less than 0.05, the least distance of 0.95·m from an integer it is not,
// while m < 10¹⁴ — so the rank is storekit.Rank's (checked one by one up
// to m = 2·10⁸).
func (Dialect) NearestRanks(durations []string) string {
	return `SELECT g.dim, g.k, g.source, g.m, r.rn, r.value
FROM (SELECT dim, k, CASE WHEN GROUPING(source) = 1 THEN 'all' ELSE source END AS source, count(*) AS m,
		percentile_disc(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY duration_ms) AS p
	FROM (` + strings.Join(durations, "\n\tUNION ALL ") + `) AS ds
	GROUP BY GROUPING SETS ((dim, k), (dim, k, source))) g
	CROSS JOIN LATERAL (VALUES ((50 * g.m + 99) / 100, g.p[1]), ((95 * g.m + 99) / 100, g.p[2])) AS r (rn, value)`
}

// InFew implements sqldialect.Fragments: an array built once (an InitPlan)
// and looked up by the index, where IN (subquery) would be planned from
// the subquery's estimated size — a guess that, for a window's few
// sessions, chooses a scan of every message.
func (Dialect) InFew(expr, subquery string) string { return expr + " = ANY(ARRAY(" + subquery + "))" }

// Classify implements sqldialect.Fragments with docs/CONTRACT.md §6.1's
// table. A constraint anywhere in err comes first (the frame's own fault,
// whatever a rollback added); then a failure to reach the server: a
// refusal at connect carries a SQLSTATE too (53300, too many
// connections), and is the database's passing state whatever the code.
func (Dialect) Classify(err error) error {
	// A constraint is the frame's own, whatever came with it.
	if sqldialect.Any(err, func(e error) bool {
		pgErr, ok := e.(*pgconn.PgError)
		return ok && strings.HasPrefix(pgErr.Code, "23")
	}) {
		return core.ErrConstraint
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return core.ErrUnavailable
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classifySQLState(pgErr.Code)
	}
	if pgconn.SafeToRetry(err) {
		return core.ErrUnavailable
	}
	return nil
}

// classifySQLState is §6.1's table for a server's error code.
func classifySQLState(code string) error {
	switch {
	case strings.HasPrefix(code, "23"): // integrity constraint violation: the frame's own
		return core.ErrConstraint
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "53"),                     // insufficient resources: connections, memory, disk
		strings.HasPrefix(code, "58"),                     // system error: I/O
		code == "57P01", code == "57P02", code == "57P03", // shutdown, crash, cannot connect now
		code == "57014",                  // a statement timeout or cancellation: the database did not finish in time
		code == "40001", code == "40P01", // serialization failure, deadlock: the retry succeeds
		code == "55P03", // lock not available (lock_timeout)
		code == "25006", // read-only transaction: a standby, a failover window
		code == "42501": // insufficient privilege: the operator's GRANT makes the retry succeed
		return core.ErrUnavailable
	}
	return nil
}

// CheckHandle implements sqldialect.Fragments: the database must be UTF-8,
// the encoding every identifier and text rule of the contract is stated in
// (docs/CONTRACT.md §2, §4.2).
func (Dialect) CheckHandle(ctx context.Context, db *gorm.DB) error {
	var encoding string
	if err := db.WithContext(ctx).Raw(`SHOW server_encoding`).Scan(&encoding).Error; err != nil {
		return err
	}
	if encoding != "UTF8" {
		return fmt.Errorf(
			"%w: the database's encoding is %s: subagentctx needs a UTF8 database (CREATE DATABASE … ENCODING 'UTF8')",
			sqlstore.ErrHandleSettings,
			encoding,
		)
	}
	return nil
}

// Writers implements sqldialect.Fragments: PostgreSQL writes rows of
// different keys in parallel.
func (Dialect) Writers() int { return 4 }

// Pipeline implements sqldialect.Pipeliner through pgx's batch protocol: the
// statements of one transaction travel in one round trip instead of one
// each (measured: about 5 times the frames a second on a local server,
// where the round trip dominates). A pool whose driver is not pgx's stdlib
// is declined.
func (Dialect) Pipeline(ctx context.Context, pool *sql.DB, stmts []sqldialect.Statement) (at int, ok bool, err error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return -1, true, err
	}
	defer conn.Close()
	at, ok = -1, true
	err = conn.Raw(func(driverConn any) (err error) {
		c, isPgx := driverConn.(*stdlib.Conn)
		if !isPgx {
			ok = false
			return nil
		}
		defer func() {
			// A connection the server closed (a terminated backend, a
			// failover) fails whatever ran on it — pgx reports it as an I/O
			// error or, in newer releases, as a plain "conn closed" — and is
			// the database's passing state (§6.1); database/sql drops it.
			if err != nil && c.Conn().IsClosed() {
				err = errors.Join(err, driver.ErrBadConn)
			}
		}()
		// Each statement prepared on its own first (once per connection):
		// pgx 5.5 prepares a batch's new statements in one round trip and
		// caches none when one of them fails — a Parse waits for the
		// table's lock, and may time out — so that the next batch's Parse
		// of one that succeeded is refused as already existing (42P05).
		for k, st := range stmts {
			if k > 0 && st.SQL == stmts[k-1].SQL {
				continue
			}
			if _, err := c.Conn().Prepare(ctx, st.SQL, st.SQL); err != nil {
				// A Parse the server completed in a statement that then
				// failed (its statement_timeout firing before the Sync)
				// leaves the statement on the server but not in pgx's
				// map, and every later Prepare of it on this connection is
				// refused as existing (42P05): the connection is dropped,
				// and the write retried on another.
				if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P05" {
					return errors.Join(err, driver.ErrBadConn)
				}
				return err
			}
		}
		tx, err := c.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		var b pgx.Batch
		for _, st := range stmts {
			b.Queue(st.SQL, st.Args...)
		}
		results := tx.SendBatch(ctx, &b)
		for i := range stmts {
			if _, err := results.Exec(); err != nil {
				at = i
				return errors.Join(err, results.Close(), tx.Rollback(ctx))
			}
		}
		if err := results.Close(); err != nil {
			return errors.Join(err, tx.Rollback(ctx))
		}
		return tx.Commit(ctx)
	})
	return at, ok, err
}
