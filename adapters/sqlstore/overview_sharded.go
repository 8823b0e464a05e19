package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/rowmaps"
)

// The overview on a sharded database (docs/CONTRACT.md §8.10). The
// one-statement form materialises the window's rows once, and on Citus
// every one of them crosses to the coordinator. Here the window's rows are
// counted on the shards per combination of the four breakdowns' values
// (overviewGroupsStatement: one scan for all four), each breakdown's
// groups are summed from those, and each listed group's durations are
// counted per bucket (overviewHistogramStatement), then per distinct
// value in the buckets that hold a nearest rank (overviewBucketStatement),
// from which the ranks are found exactly: only groups, buckets and the
// durations of a few buckets leave the shards. The statements run in one
// read-only REPEATABLE READ transaction, so that on each shard they read
// one snapshot, and their answers are put in the rows the one-statement
// form returns, which assembleOverview reads.

// overviewGroupsStatement counts the window's rows per combination of the
// breakdowns' values and source, with the figures part 1 of
// overviewStatement gives a group (each a sum, so that a breakdown's
// groups are sums of these).
func (s *Store) overviewGroupsStatement(q report.OverviewQuery) (string, []any) {
	where, args := s.overviewWindow(q)
	by := strings.Join(overviewDimensions, ", ") + ", source"
	cols := append([]string{by, "count(*) AS n",
		"SUM(CASE WHEN " + failed() + " THEN 1 ELSE 0 END) AS failed",
		"SUM(CASE WHEN " + unended + " THEN 1 ELSE 0 END) AS unended",
		"count(duration_ms) AS duration_n"}, overviewSums()...)
	return "SELECT " + strings.Join(cols, ", ") + "\nFROM " + s.windowed(q.Since) + " WHERE " + where +
		" GROUP BY " + by, args
}

// groupFigures are the summed columns of overviewGroupsStatement's rows.
var groupFigures = func() []string {
	cols := []string{"n", "failed", "unended", "duration_n"}
	for _, m := range overviewMetrics() {
		cols = append(cols, m+"_n", m+"_hi", m+"_lo")
	}
	return cols
}()

// breakdownGroups sums the combinations' rows into one breakdown's groups:
// a row per value (as k) and source.
func breakdownGroups(dim string, combos []map[string]any) ([]map[string]any, error) {
	type key struct{ value, source groupKey }
	sums := map[key]map[string]*big.Int{}
	var order []key
	for _, c := range combos {
		k := key{keyOf(c[dim]), keyOf(c["source"])}
		if sums[k] == nil {
			sums[k] = map[string]*big.Int{}
			order = append(order, k)
		}
		for _, col := range groupFigures {
			v, err := integer(c[col])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", col, err)
			}
			if sums[k][col] == nil {
				sums[k][col] = new(big.Int)
			}
			sums[k][col].Add(sums[k][col], v)
		}
	}
	rows := make([]map[string]any, 0, len(order))
	for _, k := range order {
		r := map[string]any{"k": k.value.arg(), "source": k.source.arg()}
		for col, v := range sums[k] {
			r[col] = v.String()
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// durationBucket numbers a duration's bucket (PostgreSQL's SQL: the
// sharded forms run on Citus only): its hexadecimal length e and its
// leading eight bits, e·256 + (d >> max(0, 4e − 8)). The numbering is
// exact and follows the durations' order, so that a nearest rank falls in
// one bucket found from the buckets' counts; a bucket spans at most a
// sixteenth of its durations' value, and there are at most 4096.
const durationBucket = "length(to_hex(duration_ms)) * 256 + " +
	"(duration_ms >> greatest(0, 4 * length(to_hex(duration_ms)) - 8))"

// bucketBounds is the durations bucket b holds, [lo, hi); hi 0: no bound.
func bucketBounds(b int64) (lo, hi int64) {
	e, m := b/256, b%256
	shift := max(0, 4*e-8)
	lo = m << shift
	if int(shift)+bits.Len64(uint64(m+1)) < 64 {
		hi = (m + 1) << shift
	}
	return lo, hi
}

// overviewHistogramStatement counts, per value of one breakdown among
// values (nil: not reported) and per source, the window's rows in each
// durations bucket.
func (s *Store) overviewHistogramStatement(q report.OverviewQuery, dim string, values []*string) (string, []any) {
	where, args := s.overviewWindow(q)
	var which []string
	for _, v := range values {
		if v == nil {
			which = append(which, dim+" IS NULL")
			continue
		}
		which, args = append(which, dim+" = "+textArg), append(args, *v)
	}
	return "SELECT " + dim + " AS k, source, " + durationBucket + " AS b, count(*) AS n\nFROM " +
		s.windowed(q.Since) + " WHERE " + where + " AND duration_ms IS NOT NULL AND (" + strings.Join(which, " OR ") +
		") GROUP BY " + dim + ", source, b", args
}

// rankedBucket is a durations bucket of one value of a breakdown that
// holds a nearest rank.
type rankedBucket struct {
	value groupKey
	b     int64
}

// overviewBucketStatement counts, per value of one breakdown and source,
// the window's rows of each distinct duration in the buckets given.
func (s *Store) overviewBucketStatement(q report.OverviewQuery, dim string, buckets []rankedBucket) (string, []any) {
	where, args := s.overviewWindow(q)
	var which []string
	for _, rb := range buckets {
		cond := dim + " IS NULL"
		if !rb.value.null {
			cond, args = dim+" = "+textArg, append(args, rb.value.value)
		}
		lo, hi := bucketBounds(rb.b)
		cond, args = cond+" AND duration_ms >= ?", append(args, lo)
		if hi > 0 {
			cond, args = cond+" AND duration_ms < ?", append(args, hi)
		}
		which = append(which, "("+cond+")")
	}
	return "SELECT " + dim + " AS k, source, duration_ms, count(*) AS n\nFROM " + s.windowed(q.Since) + " WHERE " +
		where + " AND duration_ms IS NOT NULL AND (" + strings.Join(which, " OR ") + ")" +
		" GROUP BY " + dim + ", source, duration_ms", args
}

// overviewWindow is the overview's condition on a row, with its arguments.
func (s *Store) overviewWindow(q report.OverviewQuery) (string, []any) {
	where, args := s.d.Within("observed_at", q.Since, q.Until)
	if q.Failed {
		where += " AND " + failed()
	}
	return where, args
}

// shardedOverview reads the overview with the sharded statements.
func (s *Store) shardedOverview(ctx context.Context, q report.OverviewQuery) ([]map[string]any, error) {
	var out []map[string]any
	read := func(tx *gorm.DB) error {
		stmt, args := s.overviewGroupsStatement(q)
		combos, err := rowmaps.Query(tx, stmt, args...)
		if err != nil {
			return err
		}
		for i, dim := range overviewDimensions {
			groups, err := breakdownGroups(dim, combos)
			if err != nil {
				return err
			}
			listed, rows := placeGroups(dim, groups, q.GroupsOrDefault())
			out = append(out, rows...)
			if i == 0 { // every row is in one group of the first breakdown
				out = append(out, rowsPerSource(groups)...)
			}
			if !durationsRanked(dim) || len(listed) == 0 {
				continue
			}
			ranks, err := s.durationRanks(tx, q, dim, listed)
			if err != nil {
				return err
			}
			out = append(out, ranks...)
		}
		return nil
	}
	err := s.d.WithConn(ctx, s.db, func(db *gorm.DB) error {
		return db.Transaction(read, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	})
	return out, err
}

// groupKey is a breakdown's value as a map key: a NULL is its own value.
type groupKey struct {
	value string
	null  bool
}

func keyOf(v any) groupKey {
	switch x := v.(type) {
	case string:
		return groupKey{value: x}
	case []byte:
		return groupKey{value: string(x)}
	}
	return groupKey{null: true}
}

func (k groupKey) arg() any {
	if k.null {
		return nil
	}
	return k.value
}

// placeGroups ranks a breakdown's values by their rows (the most first,
// then by value byte by byte, not reported last), and gives the listed
// groups' rows (part 1) and the unlisted ones' count (part 2) in
// overviewStatement's shape, with the listed values in order.
func placeGroups(dim string, groups []map[string]any, limit int) ([]*string, []map[string]any) {
	totals := map[groupKey]int64{}
	for _, g := range groups {
		n, _ := integer(g["n"])
		totals[keyOf(g["k"])] += n.Int64()
	}
	keys := make([]groupKey, 0, len(totals))
	for k := range totals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b groupKey) int {
		if c := cmp.Compare(totals[b], totals[a]); c != 0 {
			return c
		}
		if a.null != b.null {
			return cmp.Compare(boolInt(a.null), boolInt(b.null))
		}
		return strings.Compare(a.value, b.value)
	})
	place := map[groupKey]int64{}
	var listed []*string
	var others, otherRows int64
	for i, k := range keys {
		if i < limit {
			place[k] = int64(i + 1)
			v := k.value
			if k.null {
				listed = append(listed, nil)
			} else {
				listed = append(listed, &v)
			}
			continue
		}
		others, otherRows = others+1, otherRows+totals[k]
	}
	var rows []map[string]any
	for _, g := range groups {
		if p, ok := place[keyOf(g["k"])]; ok {
			r := map[string]any{"part": int64(overviewGroup), "dim": dim, "place": p, "k": keyOf(g["k"]).arg(),
				"source": g["source"]}
			for _, c := range groupFigures {
				r[c] = g[c]
			}
			rows = append(rows, r)
		}
	}
	if others > 0 {
		rows = append(rows, map[string]any{"part": int64(overviewOthers), "dim": dim, "n": otherRows, "failed": others})
	}
	return listed, rows
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rowsPerSource is the window's rows per source (part 4), from one
// breakdown's groups.
func rowsPerSource(groups []map[string]any) []map[string]any {
	per := map[string]int64{}
	for _, g := range groups {
		n, _ := integer(g["n"])
		per[fmt.Sprint(keyOf(g["source"]).value)] += n.Int64()
	}
	var rows []map[string]any
	for source, n := range per {
		rows = append(rows, map[string]any{"part": int64(overviewSources), "source": source, "n": n})
	}
	return rows
}

// durationRanks finds, for each listed value (listed in place order) and
// each source, and for both together ('all'), the durations at the
// median's and the 95th percentile's nearest rank (part 3): the buckets'
// counts say which bucket holds each rank and how many rows come before
// it, and the counts of the distinct durations in those buckets alone
// place it. Only buckets and the durations of a few cross to the
// coordinator, never one row per distinct duration of the window.
func (s *Store) durationRanks(tx *gorm.DB, q report.OverviewQuery, dim string, listed []*string) (
	[]map[string]any, error) {
	// counts reads (k, source, col, n) rows into sorted counts per value
	// and source, 'all' for both.
	counts := func(rows []map[string]any, col string) (map[groupKey]map[string][]tally, error) {
		per := map[groupKey]map[string][]tally{}
		for _, r := range rows {
			at, err1 := integer(r[col])
			n, err2 := integer(r["n"])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("a duration count %v: %v %v", r, err1, err2)
			}
			k := keyOf(r["k"])
			if per[k] == nil {
				per[k] = map[string][]tally{}
			}
			c := tally{at.Int64(), n.Int64()}
			source := keyOf(r["source"]).value
			per[k][source], per[k]["all"] = append(per[k][source], c), append(per[k]["all"], c)
		}
		// Sorted, each bucket or duration once: 'all' has it from both
		// sources, and a rank's bucket must have every row below it
		// before it.
		for _, bySource := range per {
			for source, cs := range bySource {
				slices.SortFunc(cs, func(a, b tally) int { return cmp.Compare(a.at, b.at) })
				merged := cs[:0]
				for _, c := range cs {
					if n := len(merged); n > 0 && merged[n-1].at == c.at {
						merged[n-1].n += c.n
						continue
					}
					merged = append(merged, c)
				}
				bySource[source] = merged
			}
		}
		return per, nil
	}
	stmt, args := s.overviewHistogramStatement(q, dim, listed)
	rows, err := rowmaps.Query(tx, stmt, args...)
	if err != nil {
		return nil, err
	}
	hist, err := counts(rows, "b")
	if err != nil {
		return nil, err
	}
	// Each rank: its value and source, the bucket holding it, the rows
	// before that bucket.
	type wanted struct {
		place          int
		k              groupKey
		source         string
		m, rank        int64
		bucket, before int64
	}
	var want []wanted
	var buckets []rankedBucket
	for i, v := range listed {
		k := groupKey{null: true}
		if v != nil {
			k = groupKey{value: *v}
		}
		for _, source := range []string{"all", string(core.SourceLive), string(core.SourceBackfill)} {
			cs := hist[k][source]
			var m int64
			for _, c := range cs {
				m += c.n
			}
			if m == 0 {
				continue
			}
			for _, rank := range slices.Compact([]int64{storekit.Rank(50, m), storekit.Rank(95, m)}) {
				c, before, ok := holding(cs, 0, rank)
				if !ok {
					return nil, fmt.Errorf("the %s %v's buckets hold %d rows, not rank %d", dim, k.arg(), m, rank)
				}
				want = append(want, wanted{i + 1, k, source, m, rank, c.at, before})
				if rb := (rankedBucket{k, c.at}); !slices.Contains(buckets, rb) {
					buckets = append(buckets, rb)
				}
			}
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	stmt, args = s.overviewBucketStatement(q, dim, buckets)
	if rows, err = rowmaps.Query(tx, stmt, args...); err != nil {
		return nil, err
	}
	values, err := counts(rows, "duration_ms")
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, w := range want {
		lo, hi := bucketBounds(w.bucket)
		in := slices.DeleteFunc(slices.Clone(values[w.k][w.source]), func(c tally) bool {
			return c.at < lo || hi > 0 && c.at >= hi
		})
		c, _, ok := holding(in, w.before, w.rank)
		if !ok {
			return nil, fmt.Errorf("the %s %v's bucket from %d holds no row of rank %d", dim, w.k.arg(), lo, w.rank)
		}
		out = append(out, map[string]any{"part": int64(overviewRank), "dim": dim, "k": w.k.arg(),
			"place": int64(w.place), "source": w.source, "n": w.m, "rn": w.rank, "value": c.at})
	}
	return out, nil
}

// tally is a bucket or a duration, and its rows.
type tally struct{ at, n int64 }

// holding is the tally of ts (in order) that holds the rank-th row,
// counting from seen rows before the first, and the rows before it; not
// ok when the rank is past them (which one snapshot rules out).
func holding(ts []tally, seen, rank int64) (tally, int64, bool) {
	for _, t := range ts {
		if seen+t.n >= rank {
			return t, seen, true
		}
		seen += t.n
	}
	return tally{}, seen, false
}
