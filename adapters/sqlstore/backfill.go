package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// stageTable holds, on a dialect that stages (SQLite), the newest
// recoverable message of each (session, tool call id) pair, for one
// backfill.
const stageTable = "subagentctx_backfill_stage"

// backfillStatements are the backfill's statements (docs/CONTRACT.md
// §4.1). Stage, when set, runs before the transaction and Drop after it.
// In the transaction either Single runs (one statement returning through,
// inserted and merged), or Through, Merge and Insert, in this order. Merge
// and Insert (and Single, twice) take the rows' updated_at.
type backfillStatements struct {
	Stage, Drop            string
	Single                 string
	Through, Merge, Insert string
}

// newest selects the newest recoverable message of each (session, tool
// call id) pair: created_at at the host's precision, then the greatest
// message id byte by byte (AC-21b). The tool call id leads the partition
// so that no index on the messages' session id can presort it: reading a
// whole history through an index costs more than sorting the few subagent
// messages.
func (s *Store) newest() string {
	return s.d.NewestSubagentMessages(s.tables, `ROW_NUMBER() OVER (PARTITION BY tool_call_id, task_session_id
		ORDER BY created DESC, `+s.d.Bytewise("message_id")+` DESC)`)
}

// historyValue is the value the backfill gives a column of a pair's row
// from its newest message r (docs/CONTRACT.md §4.1): the message's id, the
// 'unknown' execution, source 'backfill', the pass's time (the one
// argument), NULL for a live-only column (a message never carries it,
// docs/CONTRACT.md §3.4, §3.5), and the message's reading for every other
// column.
func historyValue(column string) string {
	if storekit.ColumnNamed(column).LiveOnly {
		return "NULL"
	}
	switch column {
	case "id":
		return "r.message_id"
	case "agent_execution_id":
		return "'" + core.UnknownExecution + "'"
	case "source":
		return "'" + string(core.SourceBackfill) + "'"
	case "updated_at":
		return "?"
	}
	return "r." + column
}

// backfillInsert inserts the newest message of each pair, source (newest),
// whose session exists (AC-21a), unless
// the pair already has a row under any execution id (docs/CONTRACT.md
// §8.5: backfillMerge merges into it), and never over a stored row
// (AC-22). The session is checked here, on the newest message of each
// pair only, rather than while ranking every message.
func (s *Store) backfillInsert(source string) string {
	values := make([]string, len(columns))
	for i, c := range columns {
		values[i] = historyValue(c.Name)
	}
	return `INSERT INTO ` + Table + ` (` + columnList("") + `, ` + seamColumn.Name + `)
	SELECT ` + strings.Join(values, ", ") + `, 1
	FROM ` + source + ` r
	WHERE EXISTS (SELECT 1 FROM ` + quote(s.tables.Sessions) + ` x WHERE x.id = r.task_session_id)
		AND NOT EXISTS (SELECT 1 FROM ` + Table + ` t WHERE ` + samePair("t", "r") + `)
	ON CONFLICT DO NOTHING`
}

// backfillMerge merges the newest message of each pair, source (newest), into
// the pair's first row, where live frames wrote one before the pass
// (history under live, storekit.MergeHistory, docs/CONTRACT.md §8.5).
func (s *Store) backfillMerge(source string) string {
	set := historySet(historyValue, func(c string) string { return "t." + c }, "?", nil)
	return `UPDATE ` + Table + ` AS t SET ` + set + `
	FROM ` + source + ` r
	WHERE ` + samePair("t", "r") + `
		AND ` + s.firstOfPair("t", "")
}

// backfillStatements renders the backfill for the store's dialect and the
// table's placement: one scan of the messages (AC-23a) on one server;
// backfill_through from every recoverable message — the newest of each
// pair: their greatest created_at is every one's — not from what this
// attempt writes, and never after the insert (AC-24).
func (s *Store) backfillStatements(distributed bool) backfillStatements {
	form := s.d.BackfillForm(distributed)
	switch {
	case form.Staged:
		return backfillStatements{
			Stage:   `CREATE TEMP TABLE ` + stageTable + ` AS ` + s.newest(),
			Drop:    `DROP TABLE IF EXISTS ` + stageTable,
			Through: `SELECT MAX(created) FROM ` + stageTable,
			Merge:   s.backfillMerge(stageTable),
			Insert:  s.backfillInsert(stageTable),
		}
	case distributed:
		// Sharded by session: plain statements that each run on every
		// shard in parallel, in one distributed transaction. A CTE would be
		// gathered on the coordinator. Each scans the messages once.
		return backfillStatements{
			Through: `SELECT MAX(v.created) FROM (` + s.d.SubagentKeys(s.tables, "") + `) v WHERE v.recoverable = 1`,
			Merge:   s.backfillMerge("(" + s.newest() + ")"),
			Insert:  s.backfillInsert("(" + s.newest() + ")"),
		}
	}
	return backfillStatements{Single: `WITH staged AS MATERIALIZED (` + s.newest() + `),
	merged AS (` + s.backfillMerge("staged") + `
	RETURNING 1),
	inserted AS (` + s.backfillInsert("staged") + `
	RETURNING 1)
SELECT (SELECT MAX(created) FROM staged) AS through, (SELECT count(*) FROM inserted) AS inserted,
	(SELECT count(*) FROM merged) AS merged`}
}

// BackfillResult is what one backfill did.
type BackfillResult struct {
	// Through is backfill_through as computed (nil: no recoverable
	// message, the '' sentinel).
	Through *time.Time
	// Inserted rows for pairs without one; Merged history into the rows
	// live frames wrote first.
	Inserted, Merged int64
	// KeysWritten are the activation keys this backfill wrote.
	KeysWritten []string
	// Activated: both keys were already present when the transaction
	// began (another pass completed first); nothing was written.
	Activated bool
}

// Backfill recovers the history (docs/CONTRACT.md §4.1, §4.3): one
// transaction serialised with the live writes (the dialect's Begin and
// Lock), in which the newest message of each pair is merged into the
// pair's row where live frames wrote one and inserted where none exists,
// backfill_through is computed from every recoverable message before the
// insert, and capture_since is sampled by now after it; both keys are
// written (if absent) with the rows, or nothing is. hook is called after
// the insert ("inserted"), after each key ("wrote <key>") and before the
// commit ("before commit"); its error aborts the transaction there
// (fault-injection tests).
func (s *Store) backfill(
	ctx context.Context, now func() time.Time, hook func(stage string) error,
) (BackfillResult, error) {
	var res BackfillResult
	if hook == nil {
		hook = func(string) error { return nil }
	}
	// Under the pass's lock (taken here unless the caller's pass holds it),
	// so that the rows' updated_at is stamped after it: an export waiting
	// for the lock sees them committed (docs/CONTRACT.md §8.16).
	ctx, release, err := s.holdPass(ctx)
	if err != nil {
		return res, err
	}
	defer release()
	if ok, err := s.d.TableExists(ctx, s.db, s.tables.Messages); err != nil || !ok {
		return res, errors.Join(liberr.Errorf("messages table %q does not exist", s.tables.Messages), err)
	}
	distributed, err := s.distributed(ctx)
	if err != nil {
		return res, s.opError("read the table's placement", err)
	}
	form, st := s.d.BackfillForm(distributed), s.backfillStatements(distributed)
	updated := storekit.CanonicalTime(now())
	err = s.d.WithConn(ctx, s.db, func(conn *gorm.DB) error {
		if st.Stage != "" {
			defer conn.Exec(st.Drop) // a temporary table: gone with the connection if this fails
			for _, q := range []string{st.Drop, st.Stage} {
				if err := conn.Exec(q).Error; err != nil {
					return fmt.Errorf("scan %s: %w", s.tables.Messages, err)
				}
			}
		}
		return s.write(conn, form.Begin, func(tx *gorm.DB) error {
			for _, q := range append([]string{form.Lock}, form.Plan...) {
				if q == "" {
					continue
				}
				if err := tx.Exec(q).Error; err != nil {
					return fmt.Errorf("prepare the backfill: %w", err)
				}
			}
			// Under the lock: a pass that completed meanwhile (another
			// process's) leaves nothing to do.
			a, err := s.activation(tx)
			if err != nil {
				return err
			}
			if a.CaptureSince.Present && a.BackfillThrough.Present {
				res.Activated = true
				return nil
			}
			if err := s.recover(tx, st, updated, &res); err != nil {
				return err
			}
			if err := hook("inserted"); err != nil {
				return err
			}
			// capture_since: after the insert, inside the transaction,
			// before the key writes (never at transaction start).
			capture := formatKey(storekit.CanonicalTime(now()))
			through := storekit.BackfillNothing
			if res.Through != nil {
				through = formatKey(*res.Through)
			}
			for _, kv := range [][2]string{{storekit.BackfillThroughKey, through}, {storekit.CaptureSinceKey, capture}} {
				wrote, err := s.writeKey(tx, kv[0], kv[1])
				if err != nil {
					return err
				}
				if wrote {
					res.KeysWritten = append(res.KeysWritten, kv[0])
				}
				if err := hook("wrote " + kv[0]); err != nil {
					return err
				}
			}
			return hook("before commit")
		})
	})
	if err != nil {
		return BackfillResult{}, s.opError("backfill", err)
	}
	return res, nil
}

// recover runs the backfill's statements in tx: backfill_through, then
// the merge into live rows and the insert, each scanning the messages (or
// the stage) once.
func (s *Store) recover(tx *gorm.DB, st backfillStatements, updated time.Time, res *BackfillResult) error {
	if st.Single != "" {
		var out struct {
			Through          any
			Inserted, Merged int64
		}
		row := tx.Raw(st.Single, updated, updated).Row()
		if err := row.Scan(&out.Through, &out.Inserted, &out.Merged); err != nil {
			return fmt.Errorf("backfill from %s: %w", s.tables.Messages, err)
		}
		through, err := s.d.ParseHostInstant(out.Through)
		res.Through, res.Inserted, res.Merged = through, out.Inserted, out.Merged
		return err
	}
	var max any
	if err := tx.Raw(st.Through).Row().Scan(&max); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("compute backfill_through: %w", err)
	}
	through, err := s.d.ParseHostInstant(max)
	if err != nil {
		return err
	}
	res.Through = through
	merged := tx.Exec(st.Merge, updated)
	if merged.Error != nil {
		return fmt.Errorf("merge %s into live rows: %w", s.tables.Messages, merged.Error)
	}
	inserted := tx.Exec(st.Insert, updated)
	if inserted.Error != nil {
		return fmt.Errorf("insert from %s: %w", s.tables.Messages, inserted.Error)
	}
	res.Merged, res.Inserted = merged.RowsAffected, inserted.RowsAffected
	return nil
}

// writeExecutionKey writes subagent_context_execution_since (AC-33b) if it
// is absent; it reports whether it wrote.
func (s *Store) writeExecutionKey(ctx context.Context, at time.Time) (bool, error) {
	return s.writeKey(s.db.WithContext(ctx), storekit.ExecutionSinceKey, formatKey(storekit.CanonicalTime(at)))
}
