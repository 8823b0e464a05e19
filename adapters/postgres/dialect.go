package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Dialect is PostgreSQL's sqlstore.Dialect: its fragments here, its
// message view in messages.go, its catalog and upgrade steps in
// catalog.go, its placement on Citus in citus.go.
type Dialect struct{}

var (
	_ sqlstore.Dialect          = Dialect{}
	_ sqlstore.Placement        = Dialect{}
	_ sqlstore.Pipeliner        = Dialect{}
	_ sqlstore.PassLocker       = Dialect{}
	_ sqlstore.PrivilegeChecker = Dialect{}
)

// Name implements sqlstore.Fragments.
func (Dialect) Name() string { return "postgres" }

// ColumnType implements sqlstore.Fragments. Metrics are BIGINT (the
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

// Instant implements sqlstore.Fragments. EXTRACT(EPOCH …) is exact
// (numeric) and independent of the session time zone for TIMESTAMPTZ.
func (Dialect) Instant(x string) string { return "(EXTRACT(EPOCH FROM " + x + ") * 1000000)::bigint" }

// Within implements sqlstore.Fragments: timestamptz compares as the
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

// ThroughIndex implements sqlstore.Fragments: the table; PostgreSQL's
// histograms estimate a time range.
func (Dialect) ThroughIndex(table, _ string) string { return table }

// Extreme implements sqlstore.Fragments: timestamptz orders as the
// instant.
func (d Dialect) Extreme(fn, x string) string { return d.Instant(fn + "(" + x + ")") }

// Ordered implements sqlstore.Fragments: timestamptz sorts as the instant,
// at the microsecond.
func (Dialect) Ordered(x string) string { return x }

// OrderedArg implements sqlstore.Fragments.
func (Dialect) OrderedArg(t time.Time) any { return storekit.CanonicalTime(t) }

// Bytewise implements sqlstore.Fragments: the C collation compares bytes,
// whatever the database's own (an ICU locale orders linguistically).
func (Dialect) Bytewise(x string) string { return x + ` COLLATE "C"` }

// Upsert implements sqlstore.Fragments: the INSERT … ON CONFLICT as it
// is, and a row trigger after it that absorbs the pair's backfilled row
// into an inserted one (docs/CONTRACT.md §8.5). It runs only for a row
// actually inserted under an execution id (a frame whose key has a row
// updates it, and the trigger does not fire). On one server and on a
// partitioned table the trigger's statements name the table and keep
// their plans; on Citus it fires on a shard, where it must name the shard
// (a statement on the distributed table from inside a shard is refused),
// so its statements are built for the shard, planned on each call.
// Creating a trigger on a distributed table needs
// citus.enable_unsafe_triggers, set for the statement only; the name of
// the function carries a digest of its body, so a new body (a new
// column) is a new function, and the trigger is moved to it.
func (d Dialect) Upsert(u sqlstore.UpsertParts) ([]sqlstore.SchemaObject, string) {
	t := sqlstore.Table
	self := func(c string) string { return "t." + c }
	params := map[string]string{"task_session_id": "$1", "tool_call_id": "$2"}
	shard := u.History(func(c string) string { return params[c] })
	body := `DECLARE b record; tbl text; here boolean := TG_TABLE_NAME = '` + t + `';
BEGIN
	IF NOT here THEN -- a partition of the table, or a Citus shard
		here := (SELECT c.relname FROM pg_class c WHERE c.oid = pg_partition_root(TG_RELID)) = '` + t + `';
	END IF;
	IF here THEN
		DELETE FROM ` + t + ` WHERE ` + u.History(func(c string) string { return "NEW." + c }) + ` RETURNING * INTO b;
		IF FOUND THEN
			UPDATE ` + t + ` AS t SET ` + u.Absorb(func(c string) string { return "b." + c }, self) + `
			WHERE t.task_session_id = NEW.task_session_id AND t.id = NEW.id;
		END IF;
	ELSE -- a Citus shard: its own name, planned on each call
		tbl := quote_ident(TG_TABLE_SCHEMA) || '.' || quote_ident(TG_TABLE_NAME);
		-- Deleted first, as above, in the statement that merges it: the
		-- row lock makes a second absorber wait, then find nothing (one
		-- absorber per pair).
		EXECUTE 'WITH h AS (DELETE FROM ' || tbl || $q$ WHERE ` + shard + ` RETURNING *)
			UPDATE $q$ || tbl || $q$ AS t SET ` + u.Absorb(func(c string) string { return "h." + c }, self) + `
			FROM h WHERE t.task_session_id = $1 AND t.id = $3$q$
			USING NEW.task_session_id, NEW.tool_call_id, NEW.id;
	END IF;
	RETURN NULL;
END`
	// SECURITY DEFINER: the trigger runs as its owner (the role that
	// migrated), so the live path needs no DELETE (docs/CONTRACT.md §4.4);
	// its search_path is pinned to the table's schema, pg_temp last, so
	// that no caller's objects stand in for the table's. enable_seqscan
	// off: the probe is an index probe whatever the statistics say — a
	// table analysed while empty otherwise gets a cached sequential scan
	// that costs each frame the whole table until the planner replans.
	function := `RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET enable_seqscan = off AS $f$
` + body + `
$f$`
	sum := sha256.Sum256([]byte(function))
	fn := "subagentctx_absorb_" + hex.EncodeToString(sum[:4])
	create := `DO $do$ BEGIN
IF to_regprocedure('` + fn + `()') IS NULL THEN
CREATE FUNCTION ` + fn + `() ` + function + `;
EXECUTE format('ALTER FUNCTION ` + fn + `() SET search_path = %I, pg_temp',
	(SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = '` + t + `'::regclass));
END IF;
IF NOT EXISTS (SELECT 1 FROM pg_trigger
		WHERE tgrelid = '` + t + `'::regclass AND tgname = 'subagentctx_absorb'
		AND tgfoid = '` + fn + `()'::regprocedure) THEN
	PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
	DROP TRIGGER IF EXISTS subagentctx_absorb ON ` + t + `;
	CREATE TRIGGER subagentctx_absorb AFTER INSERT ON ` + t + ` FOR EACH ROW
		WHEN (NEW.agent_execution_id <> '` + core.UnknownExecution + `') EXECUTE FUNCTION ` + fn + `();
END IF;
END $do$`
	present := `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('` + t + `')
	AND tgname = 'subagentctx_absorb' AND tgfoid = to_regprocedure('` + fn + `()'))`
	return []sqlstore.SchemaObject{{Create: create, Present: present}}, u.Insert
}

// passLock names the migration pass's advisory lock: one per schema's
// table.
const passLock = `1937010529, hashtext(current_schema() || '.` + sqlstore.Table + `')`

// LockPass implements sqlstore.PassLocker with a session-level advisory
// lock on a connection of its own, held until the release: it needs no
// privilege, and the server drops it with the connection if the process
// dies.
func (Dialect) LockPass(ctx context.Context, db *gorm.DB, shared bool) (func(), error) {
	pool, ok := db.Statement.ConnPool.(*sql.DB)
	if !ok {
		return func() {}, nil // a host's transaction: its own statements are serialised by it
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	fn := "pg_advisory_lock"
	if shared {
		fn += "_shared"
	}
	if _, err := conn.ExecContext(ctx, `SELECT `+fn+`(`+passLock+`)`); err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	return func() {
		// Unlocked on the server first; a connection that cannot say so
		// is dropped, which unlocks too.
		if _, err := conn.ExecContext(context.Background(), `SELECT `+
			strings.Replace(fn, "lock", "unlock", 1)+`(`+passLock+`)`); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = conn.Close()
	}, nil
}

// NearestRanks implements sqlstore.Fragments with percentile_disc, one
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

// InFew implements sqlstore.Fragments: an array built once (an InitPlan)
// and looked up by the index, where IN (subquery) would be planned from
// the subquery's estimated size — a guess that, for a window's few
// sessions, chooses a scan of every message.
func (Dialect) InFew(expr, subquery string) string { return expr + " = ANY(ARRAY(" + subquery + "))" }

// Classify implements sqlstore.Fragments with docs/CONTRACT.md §6.1's
// table. A constraint anywhere in err comes first (the frame's own fault,
// whatever a rollback added); then a failure to reach the server: a
// refusal at connect carries a SQLSTATE too (53300, too many
// connections), and is the database's passing state whatever the code.
func (Dialect) Classify(err error) error {
	// A constraint is the frame's own, whatever came with it.
	if sqlstore.Any(err, func(e error) bool {
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

// CheckHandle implements sqlstore.Fragments: the database must be UTF-8,
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

// Writers implements sqlstore.Fragments: PostgreSQL writes rows of
// different keys in parallel.
func (Dialect) Writers() int { return 4 }

// Pipeline implements sqlstore.Pipeliner through pgx's batch protocol: the
// statements of one transaction travel in one round trip instead of one
// each (measured: about 5 times the frames a second on a local server,
// where the round trip dominates). A pool whose driver is not pgx's stdlib
// is declined.
func (Dialect) Pipeline(ctx context.Context, pool *sql.DB, query string, args [][]any) (at int, ok bool, err error) {
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
		tx, err := c.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		var b pgx.Batch
		for _, a := range args {
			b.Queue(query, a...)
		}
		results := tx.SendBatch(ctx, &b)
		for i := range args {
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
