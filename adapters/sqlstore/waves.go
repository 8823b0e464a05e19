package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// On a sharded table (Citus) every statement pays a trip through the
// coordinator, planned and routed there, whatever it writes: one upsert
// per frame costs the coordinator's fixed cost per frame. A batch is
// written there in waves instead, each one multi-row upsert that Citus
// splits into one statement per shard it names. Wave k holds the k-th row
// of each (session, tool call id) pair in the batch, in the batch's order:
// a pair's rows — and so each key's — are written in the order they were
// recorded, each wave's statement ends (its triggers, the absorption of
// history, run) before the next begins, and no statement holds two rows of
// one pair, which is all the rows of a statement could ever share (the
// trigger reads and writes its own pair only), nor one key twice, which
// ON CONFLICT DO UPDATE refuses. So every row ends as one statement per
// row would leave it.

// maxWave bounds a wave's rows, so that its bound parameters stay within
// PostgreSQL's 65,535.
const maxWave = 1000

// shardedWrites reports, once per store, whether its batches are written
// in waves: the table is sharded.
func (s *Store) shardedWrites(ctx context.Context) (bool, error) {
	switch s.sharded.Load() {
	case 1:
		return false, nil
	case 2:
		return true, nil
	}
	d, err := s.distributed(ctx)
	if err != nil {
		return false, err
	}
	state := int32(1)
	if d {
		state = 2
	}
	s.sharded.Store(state)
	return d, nil
}

// waves splits rows[todo…] into waves (indexes into rows), each at most
// maxWave rows: a wave too long for one statement is written as several,
// one after the other, before the next wave.
func waves(rows []core.Subagent, todo []int) [][]int {
	type pair struct{ session, tool string }
	seen := make(map[pair]int, len(todo))
	var byRank [][]int
	for _, i := range todo {
		p := pair{rows[i].TaskSessionID, rows[i].ToolCallID}
		k := seen[p]
		seen[p] = k + 1
		if k == len(byRank) {
			byRank = append(byRank, nil)
		}
		byRank[k] = append(byRank[k], i)
	}
	var out [][]int
	for _, w := range byRank {
		for len(w) > maxWave {
			out, w = append(out, w[:maxWave]), w[maxWave:]
		}
		out = append(out, w)
	}
	return out
}

// writeWaves writes rows[todo…] in one transaction, a statement per wave.
// It reports false, having written nothing, when a statement failed: the
// caller writes the rows one statement each, to find the row at fault. err
// is for the transaction itself (beginning, committing, ctx's end).
func (s *Store) writeWaves(ctx context.Context, pool *sql.DB, rows []core.Subagent, todo []int, replacing time.Time,
) (bool, error) {
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	for _, st := range s.dropHistory(rows, todo, replacing) {
		if _, err := tx.ExecContext(ctx, st.SQL, st.Args...); err != nil {
			return false, errors.Join(err, tx.Rollback())
		}
	}
	for _, w := range waves(rows, todo) {
		values := make([]any, 0, len(w)*len(columns))
		for _, i := range w {
			values = append(values, args(&rows[i], columns)...)
		}
		q, err := s.waveSQL(len(w))
		if err != nil {
			return false, errors.Join(err, tx.Rollback())
		}
		if _, err := tx.ExecContext(ctx, q, values...); err != nil {
			if ctx.Err() != nil {
				return false, errors.Join(ctx.Err(), err, tx.Rollback())
			}
			return false, tx.Rollback()
		}
	}
	if err := ctx.Err(); err != nil { // past the write's deadline: not committed late
		return false, errors.Join(err, tx.Rollback())
	}
	return true, tx.Commit()
}

// waveSQL is the upsert of n rows, rendered once per n.
func (s *Store) waveSQL(n int) (string, error) {
	if q, ok := s.waveStatements.Load(n); ok {
		return q.(string), nil
	}
	parts, err := s.upsertParts(n, columns)
	if err != nil {
		return "", fmt.Errorf("render the upsert of %d rows: %w", n, err)
	}
	q := s.d.Upsert(parts).Statement
	s.waveStatements.Store(n, q)
	return q, nil
}
