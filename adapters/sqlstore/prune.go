package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// PruneOption tunes a prune.
type PruneOption func(*pruneOptions)

type pruneOptions struct{ batch int }

// PruneBatch sets how many rows one batch deletes (default
// DefaultPruneBatch): smaller batches hold each lock for less time.
func PruneBatch(rows int) PruneOption { return func(o *pruneOptions) { o.batch = rows } }

// Prune deletes the rows last written before before, in batches, after
// advancing the retention boundary to it (docs/CONTRACT.md §8.14): the
// boundary is written first, so a health check or a coverage verdict
// during or after the prune already starts at it, and a prune stopped
// half-way is continued by the next one. The boundary only moves forward:
// an earlier before deletes up to the recorded boundary. The host's tables
// are not touched. It needs an activated record (the pass's backfill,
// which runs once before activation, would otherwise recover the pruned
// history again) and a before that is not in the future.
func (s *Store) Prune(ctx context.Context, before time.Time, opts ...PruneOption) (core.PruneResult, error) {
	var res core.PruneResult
	o := pruneOptions{batch: DefaultPruneBatch}
	for _, opt := range opts {
		opt(&o)
	}
	switch {
	case o.batch < 1:
		return res, liberr.Errorf("prune: batches of %d rows, want at least 1", o.batch)
	case s.readOnly:
		return res, liberr.Errorf("prune: the store is read-only")
	case before.IsZero():
		return res, liberr.Errorf("prune: no time given")
	case before.After(s.now()):
		return res, liberr.Errorf("prune: %s is in the future: rows are still being written before it",
			before.UTC().Format(time.RFC3339Nano))
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return res, err
	}
	// Both backfill keys: the pass's backfill runs until both are present
	// (docs/CONTRACT.md §4 step 4), and would recover what a prune deletes.
	for _, k := range []struct {
		name    string
		present bool
	}{{storekit.BackfillThroughKey, a.BackfillThrough.Present}, {storekit.CaptureSinceKey, a.CaptureSince.Present}} {
		if !k.present {
			return res, liberr.Errorf("prune: the record is not activated (no %s): run the migration pass first; "+
				"its backfill would recover what a prune deletes", k.name)
		}
	}
	if err := s.CheckPrivileges(ctx, PartPrune); err != nil {
		return res, err
	}
	boundary, advanced, err := s.advanceBoundary(ctx, storekit.CanonicalTime(before))
	if err != nil {
		return res, s.opError("prune: write the retention boundary", err)
	}
	res.Boundary, res.Advanced = boundary, advanced
	for {
		n, more, err := s.pruneBatch(ctx, boundary, o.batch)
		res.Deleted += n
		if err != nil {
			return res, s.opError("prune", err)
		}
		if !more {
			return res, nil
		}
	}
}

// advanceBoundary writes the retention boundary t unless the recorded one
// is at or after it, by compare-and-swap on the recorded text, so that two
// prunes at once leave the later boundary; it returns the boundary in
// force and whether this call moved it.
func (s *Store) advanceBoundary(ctx context.Context, t time.Time) (time.Time, bool, error) {
	db := s.db.WithContext(ctx)
	name, err := s.metaName(ctx, db)
	if err != nil {
		return t, false, err
	}
	meta := quote(name)
	for {
		var current []string
		if err := db.Raw(`SELECT value FROM `+meta+` WHERE "key" = ?`, storekit.PrunedBeforeKey).
			Scan(&current).Error; err != nil {
			return t, false, err
		}
		if len(current) == 0 {
			ok, err := s.writeKey(db, storekit.PrunedBeforeKey, formatKey(t))
			if err != nil || ok {
				return t, ok, err
			}
			continue // another prune wrote it first: compare with that
		}
		k := storekit.ParseKey(true, current[0])
		if k.Usable() && !k.Time.Before(t) {
			return *k.Time, false, nil
		}
		res := db.Exec(`UPDATE `+meta+` SET value = ? WHERE "key" = ? AND value = ?`,
			formatKey(t), storekit.PrunedBeforeKey, current[0])
		if res.Error != nil {
			return t, false, res.Error
		}
		if res.RowsAffected == 1 {
			return t, true, nil
		}
	}
}

// pruneBatch deletes at most batch rows last written before the
// boundary, found through idx_subagents_observed_at (a row is observed no
// later than it is written), each deleted only if it is still unwritten
// since: a live frame that updates a row between the two statements keeps
// it.
// more: the batch was full, so there may be more.
func (s *Store) pruneBatch(ctx context.Context, boundary time.Time, batch int) (deleted int64, more bool, err error) {
	// The columns compared raw: a function of a column in a DELETE is
	// refused by Citus (its EXTRACT is STABLE), and this table's times
	// are canonical UTC microseconds, which compare as instants in either
	// dialect (SQLite's text included: the fraction is written without
	// trailing zeros before a fixed +00:00).
	db := s.db.WithContext(ctx)
	var keys []struct{ TaskSessionID, ID string }
	err = db.Raw(`SELECT task_session_id, id FROM `+Table+`
		WHERE observed_at < ? AND updated_at < ?
		ORDER BY observed_at LIMIT ?`, boundary, boundary, batch).Scan(&keys).Error
	if err != nil || len(keys) == 0 {
		return 0, false, err
	}
	pairs := make([]string, len(keys))
	args := make([]any, 0, 2*len(keys)+1)
	for i, k := range keys {
		pairs[i] = "(?, ?)"
		args = append(args, k.TaskSessionID, k.ID)
	}
	res := db.Exec(`DELETE FROM `+Table+` WHERE (task_session_id, id) IN (`+strings.Join(pairs, ", ")+`)
		AND updated_at < ?`, append(args, boundary)...)
	return res.RowsAffected, len(keys) == batch, res.Error
}
