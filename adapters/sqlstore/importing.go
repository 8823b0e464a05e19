package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/canon"
	"github.com/subagentctx/subagentctx/internal/liberr"
	"gorm.io/gorm"
)

// The record moves between stores as an export (docs/CONTRACT.md §3.3,
// Moving the record): its keys — the activation keys and the retention
// boundary, as Keys reads them — then its rows, which Import writes into
// any store by the merge rules.

// Keys are the record's meta keys that travel with it: the three
// activation keys and the retention boundary, by name, as stored (byte
// for byte: a key is never rewritten, whatever its form). An absent key
// is not in the map.
func (s *Store) Keys(ctx context.Context) (map[string]string, error) {
	a, err := s.Activation(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, k := range map[string]report.KeyReading{
		storekit.CaptureSinceKey: a.CaptureSince, storekit.ExecutionSinceKey: a.ExecutionSince,
		storekit.BackfillThroughKey: a.BackfillThrough, storekit.PrunedBeforeKey: a.PrunedBefore,
	} {
		if k.Present {
			out[name] = k.Raw
		}
	}
	return out, nil
}

// ImportResult is what an import did.
type ImportResult struct {
	// Rows is how many rows were written (merged into a row already there
	// by the merge rules, or inserted) and committed — a refused row's
	// batch's others included.
	Rows int64 `json:"rows"`
	// KeysWritten are the keys the target did not have; KeysReplaced,
	// those it had with another value, which the record's replaced.
	KeysWritten  []string `json:"keys_written"`
	KeysReplaced []string `json:"keys_replaced"`
	// Merged is how many pairs the import left with two rows of one
	// invocation — the record's history beside a row the target's own live
	// frames wrote for it — merged into one (the seam's repair).
	Merged int64 `json:"merged,omitempty"`
}

// importBatch is how many rows one transaction of an import writes;
// importRetryFor bounds the backoff of a batch the database refused for a
// passing condition (about 40 s of retries in all).
const (
	importBatch    = 256
	importRetryFor = 20 * time.Second
)

// Import loads a record — keys (Keys' form) and rows (an export's) — into
// the store, streaming, in batches of its own transactions, and
// reproduces it (docs/CONTRACT.md §3.3, Moving the record): for each
// (session, tool call id) pair it holds, the target's row of that pair's
// history that no live row absorbed, written before the import began
// (the target's own pass read the same host messages), is dropped in the
// row's transaction; each row is then written by the merge rules (AC-14:
// one upsert each; a row already there — the target's own live frames' —
// merges, the write-once columns keeping the target's), updated_at the
// time of the import. Then the pairs left with two rows of one invocation
// (the record's history beside the target's live row that absorbed its
// own) are merged, as the migration pass's repair merges them; then each
// activation key is set to the record's, byte for byte (one the target
// had with another value is replaced, and reported), and the retention
// boundary moved forward to the source's. So a record moved into a target
// whose host booted first reads as it did. A second import of the same
// record changes no column but updated_at; an import stopped half-way is
// resumed by running it again. Rows are written before the keys, so that a
// reader never sees the keys of a record not yet there. A row the store
// refuses (a session the host does not have: ErrConstraint) stops the
// import with its error; the rows before it, and the others of its batch,
// are written (and counted).
func (s *Store) Import(ctx context.Context, keys map[string]string, rows iter.Seq2[core.Subagent, error],
) (ImportResult, error) {
	var res ImportResult
	if s.readOnly {
		return res, liberr.Errorf("import: the store is read-only")
	}
	if err := CheckKeys(keys); err != nil {
		return res, err
	}
	began := canon.Time(s.now())
	batch := make([]core.Subagent, 0, importBatch)
	write := func(rows []core.Subagent) ([]error, error) {
		// A live target's own writes may deadlock with a batch, or the
		// database pass a moment: the batch (rolled back whole) is written
		// again, with backoff, as the recorder does (docs/CONTRACT.md §6.1).
		rowErrs, err := s.upsertBatch(ctx, rows, began)
		for delay := 10 * time.Millisecond; errors.Is(err, core.ErrUnavailable) && delay < importRetryFor; delay *= 2 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil, errors.Join(err, ctx.Err())
			}
			rowErrs, err = s.upsertBatch(ctx, rows, began)
		}
		return rowErrs, err
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		rowErrs, err := write(batch)
		if err != nil {
			return err
		}
		// History refused under its id, which a live row of its pair here
		// holds (the target's own frames absorbed it): written under an id
		// of its own, the repair below merges it into that row.
		var again []core.Subagent
		var at []int
		for i, e := range rowErrs {
			if e == nil {
				continue
			}
			held, err := s.heldByItsPair(ctx, &batch[i])
			if err != nil {
				return err
			}
			if held {
				r := batch[i]
				r.ID = uuid.NewString()
				again, at = append(again, r), append(at, i)
			}
		}
		if len(again) > 0 {
			errs, err := write(again)
			if err != nil {
				return err
			}
			for k, i := range at {
				rowErrs[i] = errs[k]
			}
		}
		// The batch's other rows are committed whatever one refused row
		// says: counted, so that Rows is what the target holds of it.
		var refused error
		for _, e := range rowErrs {
			if e == nil {
				res.Rows++
			} else if refused == nil {
				refused = e
			}
		}
		batch = batch[:0]
		return refused
	}
	for r, err := range rows {
		if err != nil {
			return res, liberr.Errorf("import: read row %d: %w", res.Rows+int64(len(batch))+1, err)
		}
		if batch = append(batch, r); len(batch) == importBatch {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	merge, remove := s.repairStatements(nil, nil)
	n, err := s.repairIn(ctx, merge, remove, "")
	if err != nil {
		return res, s.opError("import: merge the pairs with two rows of one invocation", err)
	}
	res.Merged = n
	return res, s.importKeys(ctx, keys, &res)
}

// importKeys sets the activation keys to the record's and moves the
// retention boundary forward.
func (s *Store) importKeys(ctx context.Context, keys map[string]string, res *ImportResult) error {
	if err := CheckKeys(keys); err != nil {
		return err
	}
	have, err := s.Keys(ctx)
	if err != nil {
		return err
	}
	db := s.db.WithContext(ctx)
	for _, name := range []string{storekit.BackfillThroughKey, storekit.CaptureSinceKey, storekit.ExecutionSinceKey} {
		v, ok := keys[name]
		switch {
		case !ok:
		case hasKey(have, name) && have[name] == v: // '' (nothing to recover) too
		case hasKey(have, name):
			if err := s.replaceKey(db, name, v); err != nil {
				return s.opError("import the keys", err)
			}
			res.KeysReplaced = append(res.KeysReplaced, name)
		default:
			wrote, err := s.writeKey(db, name, v)
			if err != nil {
				return s.opError("import the keys", err)
			}
			if wrote {
				res.KeysWritten = append(res.KeysWritten, name)
			}
		}
	}
	if v, ok := keys[storekit.PrunedBeforeKey]; ok {
		k := storekit.ParseKey(true, v) // an instant: CheckKeys said so
		if _, moved, err := s.advanceBoundary(ctx, *k.Time); err != nil {
			return s.opError("import the retention boundary", err)
		} else if moved {
			res.KeysWritten = append(res.KeysWritten, storekit.PrunedBeforeKey)
		}
	}
	return nil
}

// heldByItsPair reports whether row is history that no live row absorbed
// in the record (the backfill's, under 'unknown') whose id a live row of
// its pair holds in the store: one that absorbed that history here.
func (s *Store) heldByItsPair(ctx context.Context, row *core.Subagent) (bool, error) {
	if row.AgentExecutionID != core.UnknownExecution || row.Source != core.SourceBackfill {
		return false, nil
	}
	var n int64
	err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM `+Table+` WHERE task_session_id = ? AND id = ?
	AND tool_call_id = ? AND agent_execution_id <> '`+core.UnknownExecution+`'`,
		row.TaskSessionID, row.ID, row.ToolCallID).Scan(&n).Error
	if err != nil {
		return false, s.opError("import: find the holder of history's id", err)
	}
	return n > 0, nil
}

// replaceKey sets a meta key present with another value to value.
func (s *Store) replaceKey(db *gorm.DB, key, value string) error {
	meta, err := s.metaName(db.Statement.Context, db)
	if err != nil {
		return fmt.Errorf("find the meta table: %w", err)
	}
	return db.Exec(`UPDATE `+quote(meta)+` SET value = ? WHERE "key" = ?`, value, key).Error
}

// CheckKeys refuses an activation key the record could not read back:
// each is an RFC 3339 instant, but backfill_through, which may also be ”
// (nothing to recover, AC-24f). Import checks the keys it is given before
// it writes anything, and again before it writes them (a caller's rows
// iterator may fill the map as it goes); a caller reading an export checks
// its keys line as it reads it, so that a bad one stops the import before
// any row.
func CheckKeys(keys map[string]string) error {
	for _, name := range []string{storekit.BackfillThroughKey, storekit.CaptureSinceKey, storekit.ExecutionSinceKey,
		storekit.PrunedBeforeKey} {
		v, ok := keys[name]
		if !ok || name == storekit.BackfillThroughKey && v == storekit.BackfillNothing {
			continue
		}
		if k := storekit.ParseKey(true, v); !k.Usable() {
			return liberr.Errorf("import: the key %s is %q: want an RFC 3339 instant", name, v)
		}
	}
	return nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// String says what an import did.
func (r ImportResult) String() string {
	s := fmt.Sprintf("imported %d rows", r.Rows)
	if len(r.KeysWritten) > 0 {
		s += fmt.Sprintf("; keys written: %v", r.KeysWritten)
	}
	if r.Merged > 0 {
		s += fmt.Sprintf("; %d pairs of the record's history and the target's live rows merged", r.Merged)
	}
	if len(r.KeysReplaced) > 0 {
		s += fmt.Sprintf("; keys replaced by the record's: %v", r.KeysReplaced)
	}
	return s
}
