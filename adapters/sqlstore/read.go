package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/rowmaps"
)

// Activation reads the three keys (docs/CONTRACT.md §5.1).
func (s *Store) Activation(ctx context.Context) (report.Activation, error) {
	return s.activation(s.db.WithContext(ctx))
}

func (s *Store) activation(db *gorm.DB) (report.Activation, error) {
	// No meta table: no pass ever ran here, so no key is present — not
	// activated, which is what every reader must say (health: exit 3).
	meta, ok, err := s.metaTable(db.Statement.Context, db)
	if err != nil {
		return report.Activation{}, s.opError("read activation keys", err)
	} else if !ok {
		return storekit.NewActivation(nil), nil
	}
	var kv []struct{ Key, Value string }
	err = db.Raw(`SELECT "key", value FROM `+quote(meta)+` WHERE "key" IN ?`,
		[]string{storekit.CaptureSinceKey, storekit.ExecutionSinceKey, storekit.BackfillThroughKey,
			storekit.PrunedBeforeKey}).
		Scan(&kv).Error
	if err != nil {
		return report.Activation{}, s.opError("read activation keys", err)
	}
	keys := make(map[string]string, len(kv))
	for _, p := range kv {
		keys[p.Key] = p.Value
	}
	return storekit.NewActivation(keys), nil
}

// Health runs the health check (docs/CONTRACT.md §5.2) over the window q
// asks for, in one statement, so both sides are read in one snapshot. It
// does not run without a usable capture_since; collisions are not
// reported in capture_only.
func (s *Store) Health(ctx context.Context, q report.HealthQuery) (report.Health, error) {
	if err := q.Validate(); err != nil {
		return report.Health{}, &core.OpError{Op: "health check", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return report.Health{}, err
	}
	h := storekit.HealthPrecondition(a, q)
	if !h.Ran {
		return h, nil
	}
	since := *h.Since
	distributed, err := s.distributed(ctx)
	if err != nil {
		return report.Health{}, s.opError("health check", err)
	}
	var out []map[string]any
	err = s.d.WithConn(ctx, s.db, func(db *gorm.DB) error {
		bound, _ := a.Bound()
		for _, st := range s.healthStatements(since, q.PairsOrDefault(), distributed, !since.After(bound)) {
			if st.Lists != "" && len(out) > 0 {
				// On a sharded table a statement costs a pass over the
				// window on every shard: a healthy record's lists are
				// not read at all.
				if n, err := integer(out[0][st.Lists]); err == nil && n.Sign() == 0 {
					continue
				}
			}
			rows, err := rowmaps.Query(db, st.SQL, st.Args...)
			if err != nil {
				return err
			}
			out = append(out, rows...)
		}
		return nil
	})
	if err != nil {
		return report.Health{}, s.opError("health check", err)
	}
	for _, r := range out {
		if err := s.healthRow(&h, a, r); err != nil {
			return report.Health{}, s.opError("health check", err)
		}
	}
	return h, nil
}

// healthRow reads one row of the health statement into h: the counts, a
// missing pair, an excess pair or a doubled pair, as its part says.
func (s *Store) healthRow(h *report.Health, a report.Activation, r map[string]any) error {
	num := func(col string) (*big.Int, error) { return integer(r[col]) }
	if r["part"] == nil {
		return fmt.Errorf("a health row without its part: %v", r)
	}
	part, err := num("part")
	if err != nil {
		return err
	}
	text := func(col string) string {
		switch v := r[col].(type) {
		case string:
			return v
		case []byte:
			return string(v)
		}
		return ""
	}
	instant := func(col string) (*time.Time, error) {
		if r[col] == nil {
			return nil, nil
		}
		us, err := num(col)
		if err != nil {
			return nil, err
		}
		t := time.UnixMicro(us.Int64()).UTC()
		return &t, nil
	}
	switch part.Int64() {
	case healthCounts:
		counts := map[string]*int64{"shortfall": &h.Shortfall, "excess": &h.Excess, "doubled": &h.Doubled}
		var collisions int64
		counts["collisions"] = &collisions
		for col, into := range counts {
			n, err := num(col)
			if err != nil {
				return err
			}
			*into = n.Int64()
		}
		if a.ExecutionSince.Present {
			h.Collisions = &collisions
		}
		if h.LastObservedAt, err = instant("last_observed_us"); err != nil {
			return err
		}
		h.LastWriteAt, err = instant("last_write_us")
		return err
	case healthMissing:
		first, err := s.d.ParseHostInstant(r["due_first"])
		if err != nil || first == nil {
			return fmt.Errorf("a missing pair's first message %v: %v", r["due_first"], err)
		}
		h.Missing = append(h.Missing, report.Pair{TaskSessionID: text("task_session_id"),
			ToolCallID: text("tool_call_id"), FirstSeen: *first})
	case healthExcess, healthDoubled:
		first, err := instant("recent_first")
		if err != nil || first == nil {
			return fmt.Errorf("a listed pair's first row %v: %v", r["recent_first"], err)
		}
		pair := report.Pair{TaskSessionID: text("task_session_id"), ToolCallID: text("tool_call_id"), FirstSeen: *first}
		if part.Int64() == healthExcess {
			h.Extra = append(h.Extra, pair)
		} else {
			h.DoubledPairs = append(h.DoubledPairs, pair)
		}
	}
	return nil
}

func micros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMicro(v.Int64).UTC()
	return &t
}

// scope is a StatsQuery as a WHERE clause with its argument.
func scope(q report.StatsQuery) (string, []any) {
	switch {
	case q.TaskSessionID != "":
		return " WHERE task_session_id = ?", []any{q.TaskSessionID}
	case q.TaskID != "":
		return " WHERE task_id = ?", []any{q.TaskID}
	}
	return "", nil
}

// Stats computes coverage-aware statistics with SQL aggregates; nothing is
// loaded row by row (docs/CONTRACT.md §5.3).
func (s *Store) Stats(ctx context.Context, q report.StatsQuery) (report.Stats, error) {
	if err := q.Validate(); err != nil {
		return report.Stats{}, &core.OpError{Op: "stats", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return report.Stats{}, err
	}
	st := report.Stats{Query: q, Activation: a}
	where, args := scope(q)
	db := s.db.WithContext(ctx)
	aggs, err := rowmaps.Query(db, s.statsStatement(where), args...)
	if err != nil {
		return report.Stats{}, s.opError("stats", err)
	}
	if len(aggs) != 1 {
		return report.Stats{}, &core.OpError{
			Op:  "stats",
			Err: fmt.Errorf("the aggregate returned %d rows, want 1", len(aggs)),
		}
	}
	agg := aggs[0]
	var bad error
	n := func(name string) int64 {
		v, err := integer(agg[name])
		if err != nil {
			bad = errors.Join(bad, fmt.Errorf("%s: %w", name, err))
			return 0
		}
		return v.Int64()
	}
	st.Subagents, st.Live, st.Backfill = n("n"), n("live"), n("backfill")
	st.RowsWithoutTurn, st.UnknownExecutionRows = n("no_turn"), n("unknown_exec")
	st.Background, st.NoEnd, st.Failed = n("background"), n("no_end"), n("failed")
	if a.ExecutionSince.Present {
		executions := n("executions")
		st.DistinctExecutions = &executions
	}
	for _, m := range storekit.StatsMetrics(&st) {
		for _, part := range []struct {
			src  core.Source
			dst  *report.Metric
			rows int64
		}{{core.SourceLive, &m.Stats.Live, st.Live}, {core.SourceBackfill, &m.Stats.Backfill, st.Backfill}} {
			prefix := m.Column + "_" + string(part.src)
			hi, err := integer(agg[prefix+"_hi"])
			if err != nil {
				return report.Stats{}, &core.OpError{Op: "stats", Err: err}
			}
			lo, err := integer(agg[prefix+"_lo"])
			if err != nil {
				return report.Stats{}, &core.OpError{Op: "stats", Err: err}
			}
			sum := hi.Lsh(hi, 32)
			sum.Add(sum, lo)
			part.dst.Set(part.rows, n(prefix+"_n"), sum)
		}
		all := new(big.Int)
		for _, p := range []*report.Metric{&m.Stats.Live, &m.Stats.Backfill} {
			if p.Sum != nil {
				all.Add(all, p.Sum)
			}
		}
		m.Stats.All.Set(st.Subagents, m.Stats.Live.Reported+m.Stats.Backfill.Reported, all)
	}
	if bad != nil {
		return report.Stats{}, &core.OpError{Op: "stats", Err: bad}
	}
	if err := db.Raw(s.fanOutStatement(where), args...).Scan(&st.FanOutPerTurn).Error; err != nil {
		return report.Stats{}, s.opError("stats: fan-out", err)
	}
	if st.FanOutPerTurn == nil {
		st.FanOutPerTurn = []report.FanOut{}
	}
	if err := s.coverage(ctx, q, &st); err != nil {
		return report.Stats{}, err
	}
	return st, nil
}

// integer reads an aggregate (an integer, numeric text, or NULL for 0).
func integer(v any) (*big.Int, error) {
	switch x := v.(type) {
	case nil:
		return new(big.Int), nil
	case int64:
		return big.NewInt(x), nil
	case []byte:
		return integer(string(x))
	case string:
		if i, ok := new(big.Int).SetString(x, 10); ok {
			return i, nil
		}
	case float64:
		if f := big.NewFloat(x); f.IsInt() {
			i, _ := f.Int(nil)
			return i, nil
		}
	}
	return nil, fmt.Errorf("aggregate %v (%T) is not an integer", v, v)
}

// Sessions implements report.Reader: the summaries from one grouping, each
// with its coverage verdict from its first activity.
func (s *Store) Sessions(ctx context.Context, q report.SessionQuery) ([]report.SessionSummary, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "sessions", Err: err}
	}
	a, err := s.Activation(ctx)
	if err != nil {
		return nil, err
	}
	var out []struct {
		TaskSessionID, TaskID             string
		Subagents, Turns, MaxFanOut, Open int64
		FirstUs, LastUs                   int64
	}
	sql, args := s.sessionsStatement(q)
	if err := s.db.WithContext(ctx).Raw(sql, args...).Scan(&out).Error; err != nil {
		return nil, s.opError("sessions", err)
	}
	sums := make([]report.SessionSummary, len(out))
	if len(out) == 0 {
		return sums, nil
	}
	// The listed sessions' first activity; for many, every session's (a
	// bound parameter each would pass the drivers' limits).
	where, ids := "", []any{}
	if len(out) <= 500 {
		marks := make([]string, len(out))
		for i, o := range out {
			ids, marks[i] = append(ids, o.TaskSessionID), "?"
		}
		where = " WHERE task_session_id IN (" + strings.Join(marks, ", ") + ")"
	}
	// A verdict turns on activity before the coverage bound only, so only
	// that is read (through the time indexes); a session with none is
	// known from the bound.
	bound, bounded := a.Bound()
	first := map[string]*time.Time{}
	if bounded {
		if first, err = s.firstActivity(ctx, where, ids, bound); err != nil {
			return nil, err
		}
	}
	for i, o := range out {
		f, ok := first[o.TaskSessionID]
		if !ok {
			f = &bound
		}
		sums[i] = report.SessionSummary{TaskSessionID: o.TaskSessionID, TaskID: o.TaskID, Subagents: o.Subagents,
			Turns: o.Turns, MaxFanOut: o.MaxFanOut, Open: o.Open,
			FirstObservedAt: time.UnixMicro(o.FirstUs).UTC(), LastObservedAt: time.UnixMicro(o.LastUs).UTC(),
			Coverage: storekit.CoverageOf(a, o.TaskSessionID, f)}
	}
	return sums, nil
}

// coverage gives each session in scope a verdict from its first activity;
// for the whole store, where only the verdicts' counts are reported, the
// database counts them (coverageCountsStatement).
func (s *Store) coverage(ctx context.Context, q report.StatsQuery, st *report.Stats) error {
	if q == (report.StatsQuery{}) {
		return s.coverageCounts(ctx, st)
	}
	where, args := scope(q)
	first, err := s.firstActivity(ctx, where, args, time.Time{})
	if err != nil {
		return err
	}
	storekit.AddCoverage(st, first)
	return nil
}

// coverageCounts counts the whole store's sessions by verdict.
func (s *Store) coverageCounts(ctx context.Context, st *report.Stats) error {
	messages, err := s.d.TableExists(ctx, s.db, s.tables.Messages)
	if err != nil {
		return s.opError("coverage", err)
	}
	bound, bounded := st.Activation.Bound()
	sql, args := s.coverageCountsStatement(bound, messages)
	var counts struct{ Sessions, Known int64 }
	err = s.d.WithConn(ctx, s.db, func(db *gorm.DB) error { return db.Raw(sql, args...).Scan(&counts).Error })
	if err != nil {
		return s.opError("coverage", err)
	}
	if !bounded { // no usable capture_since: no verdict is known
		counts.Known = 0
	}
	st.KnownSessions, st.UnknownSessions = counts.Known, counts.Sessions-counts.Known
	return nil
}

// firstActivity is, per session in scope (where, with its args), the
// earliest of its rows' observed_at and its messages' created_at before
// the instant before (zero: at any time), at the host's precision (nil
// when neither is an instant); a session without activity before it is
// absent.
func (s *Store) firstActivity(
	ctx context.Context, where string, args []any, before time.Time,
) (map[string]*time.Time, error) {
	rowsQ, msgsQ, rowArgs, msgArgs := s.firstActivityStatements(where, before)
	first := map[string]*time.Time{}
	earliest := func(session string, t *time.Time) {
		if cur, ok := first[session]; !ok || (t != nil && (cur == nil || t.Before(*cur))) {
			first[session] = t
		}
	}
	var rows []struct {
		TaskSessionID string
		First         sql.NullInt64
	}
	if err := s.db.WithContext(ctx).Raw(rowsQ, append(slices.Clone(args), rowArgs...)...).Scan(&rows).Error; err != nil {
		return nil, s.opError("first activity", err)
	}
	for _, r := range rows {
		earliest(r.TaskSessionID, micros(r.First))
	}
	if ok, err := s.d.TableExists(ctx, s.db, s.tables.Messages); err != nil {
		return nil, s.opError("first activity", err)
	} else if ok {
		var msgs []map[string]any
		err := s.d.WithConn(ctx, s.db, func(db *gorm.DB) (err error) {
			msgs, err = rowmaps.Query(db, msgsQ, append(slices.Clone(args), msgArgs...)...)
			return err
		})
		if err != nil {
			return nil, s.opError("first activity", err)
		}
		for _, m := range msgs {
			t, err := s.d.ParseHostInstant(m["first"])
			if err != nil {
				return nil, &core.OpError{Op: "first activity", Err: err}
			}
			session, _ := m["task_session_id"].(string)
			if b, ok := m["task_session_id"].([]byte); ok {
				session = string(b)
			}
			earliest(session, t)
		}
	}
	return first, nil
}

// Overview implements report.Overviewer with one statement
// (overviewStatement), its rows assembled into the breakdowns here.
func (s *Store) Overview(ctx context.Context, q report.OverviewQuery) (report.Overview, error) {
	if err := q.Validate(); err != nil {
		return report.Overview{}, &core.OpError{Op: "overview", Err: err}
	}
	distributed, err := s.distributed(ctx)
	if err != nil {
		return report.Overview{}, s.opError("overview", err)
	}
	var rows []map[string]any
	if distributed {
		rows, err = s.shardedOverview(ctx, q)
	} else {
		sql, args := s.overviewStatement(q)
		err = s.d.WithConn(ctx, s.db, func(db *gorm.DB) (err error) {
			rows, err = rowmaps.Query(db, sql, args...)
			return err
		})
	}
	if err != nil {
		return report.Overview{}, s.opError("overview", err)
	}
	o, err := assembleOverview(q, rows)
	if err != nil {
		return report.Overview{}, &core.OpError{Op: "overview", Err: err}
	}
	return o, nil
}

// assembleOverview reads overviewStatement's rows into an overview.
func assembleOverview(q report.OverviewQuery, rows []map[string]any) (report.Overview, error) {
	o := report.Overview{Query: q}
	into := map[string]*report.Breakdown{"tool_status": &o.ToolStatus, "agent_status": &o.AgentStatus,
		"subagent_type": &o.SubagentType, "model": &o.Model}
	type key struct {
		dim   string
		place int64
	}
	listed := map[key]*report.Group{}
	var bad error
	num := func(r map[string]any, col string) int64 {
		v, err := integer(r[col])
		if err != nil {
			bad = errors.Join(bad, fmt.Errorf("%s: %w", col, err))
			return 0
		}
		return v.Int64()
	}
	text := func(v any) *string {
		switch x := v.(type) {
		case string:
			return &x
		case []byte:
			t := string(x)
			return &t
		}
		return nil
	}
	group := func(r map[string]any) *report.Group {
		k := key{*text(r["dim"]), num(r, "place")}
		g := listed[k]
		if g == nil {
			g = &report.Group{Value: text(r["k"])}
			listed[k] = g
		}
		return g
	}
	part := func(g *report.Group, source string) *report.Figures {
		switch source {
		case string(core.SourceLive):
			return &g.Live
		case string(core.SourceBackfill):
			return &g.Backfill
		}
		return &g.All
	}
	type ranks struct {
		key
		source string
	}
	durations := map[ranks][]int64{} // rank, value, rank, value…
	for _, r := range rows {
		if p := num(r, "part"); p == overviewSources {
			if *text(r["source"]) == string(core.SourceBackfill) {
				o.Backfill = num(r, "n")
			} else {
				o.Live = num(r, "n")
			}
			continue
		}
		if text(r["dim"]) == nil || into[*text(r["dim"])] == nil {
			return o, fmt.Errorf("an overview row of no breakdown: %v", r)
		}
		switch num(r, "part") {
		case overviewGroup:
			f := part(group(r), *text(r["source"]))
			f.Invocations, f.Failed, f.NoEnd = num(r, "n"), num(r, "failed"), num(r, "unended")
			for _, m := range storekit.FigureMetrics(f) {
				hi, err1 := integer(r[m.Column+"_hi"])
				lo, err2 := integer(r[m.Column+"_lo"])
				if err := errors.Join(err1, err2); err != nil {
					return o, err
				}
				sum := hi.Lsh(hi, 32)
				m.Metric.Set(f.Invocations, num(r, m.Column+"_n"), sum.Add(sum, lo))
			}
			f.Duration = &report.Distribution{Reported: num(r, "duration_n")}
		case overviewOthers:
			b := into[*text(r["dim"])]
			b.OtherRows, b.Others = num(r, "n"), num(r, "failed")
		case overviewRank:
			k := ranks{key{*text(r["dim"]), num(r, "place")}, *text(r["source"])}
			durations[k] = append(durations[k], num(r, "rn"), num(r, "value"))
		}
	}
	if bad != nil {
		return o, bad
	}
	for k, g := range listed {
		b := into[k.dim]
		for len(b.Groups) < int(k.place) {
			b.Groups = append(b.Groups, report.Group{})
		}
		b.Groups[k.place-1] = *g
	}
	for dim, b := range into {
		for i := range b.Groups {
			g := &b.Groups[i]
			if g.Live.Invocations == 0 && g.Backfill.Invocations == 0 {
				return o, fmt.Errorf("%s: group %d of %d missing", dim, i+1, len(b.Groups))
			}
			sumFigures(g)
			withDurations := durationsRanked(dim)
			for source, f := range map[string]*report.Figures{"all": &g.All, string(core.SourceLive): &g.Live,
				string(core.SourceBackfill): &g.Backfill} {
				if !withDurations {
					f.Duration = nil
					continue
				}
				d := report.Distribution{}
				if f.Duration != nil {
					d.Reported = f.Duration.Reported
				}
				d.Unreported = f.Invocations - d.Reported
				ranked := durations[ranks{key{dim, int64(i + 1)}, source}]
				for j := 0; j+1 < len(ranked); j += 2 {
					v := ranked[j+1]
					if ranked[j] == storekit.Rank(50, d.Reported) {
						d.Median = &v
					}
					if ranked[j] == storekit.Rank(95, d.Reported) {
						d.P95 = &ranked[j+1]
					}
				}
				if d.Reported > 0 && (d.Median == nil || d.P95 == nil) {
					return o, fmt.Errorf("%s: the durations' ranks of %d values are missing", dim, d.Reported)
				}
				f.Duration = &d
			}
		}
		if b.Groups == nil {
			b.Groups = []report.Group{}
		}
	}
	o.Rows = o.Live + o.Backfill
	return o, nil
}

// sumFigures makes a group's All the sum of its live and backfilled
// figures (its duration ranks come from the statement, over both).
func sumFigures(g *report.Group) {
	l, b := g.Live, g.Backfill
	a := &g.All
	a.Invocations, a.Failed, a.NoEnd = l.Invocations+b.Invocations, l.Failed+b.Failed, l.NoEnd+b.NoEnd
	live, backfill := storekit.FigureMetrics(&l), storekit.FigureMetrics(&b)
	for i, m := range storekit.FigureMetrics(a) {
		sum := new(big.Int)
		for _, p := range []*report.Metric{live[i].Metric, backfill[i].Metric} {
			if p.Sum != nil {
				sum.Add(sum, p.Sum)
			}
		}
		m.Metric.Set(a.Invocations, live[i].Metric.Reported+backfill[i].Metric.Reported, sum)
	}
	var reported int64
	for _, p := range []*report.Figures{&l, &b} {
		if p.Duration != nil {
			reported += p.Duration.Reported
		}
	}
	a.Duration = &report.Distribution{Reported: reported}
}

// Timeline implements report.Timeliner (docs/CONTRACT.md §5.6): one grouped
// statement over the window's rows, read through the observed_at index,
// each row's bucket its instant's Unix microseconds divided by the
// bucket's, rounded down, in SQL integers — no time zone, no collation —
// and the tokens' sum exact (in two 32-bit halves, as the statistics').
func (s *Store) Timeline(ctx context.Context, q report.TimelineQuery) (report.Timeline, error) {
	if err := q.Validate(); err != nil {
		return report.Timeline{}, &core.OpError{Op: "timeline", Err: err}
	}
	sql, args := s.timelineStatement(q)
	var rows []map[string]any
	err := s.d.WithConn(ctx, s.db, func(db *gorm.DB) (err error) {
		rows, err = rowmaps.Query(db, sql, args...)
		return err
	})
	if err != nil {
		return report.Timeline{}, s.opError("timeline", err)
	}
	t := report.Timeline{Query: q}
	for _, r := range rows {
		var v [5]*big.Int
		for i, col := range []string{"k", "n", "failed", "reported", "hi"} {
			if v[i], err = integer(r[col]); err != nil {
				return report.Timeline{}, &core.OpError{Op: "timeline", Err: err}
			}
		}
		lo, err := integer(r["lo"])
		if err != nil {
			return report.Timeline{}, &core.OpError{Op: "timeline", Err: err}
		}
		sum := v[4].Lsh(v[4], 32)
		sum.Add(sum, lo)
		// the bucket's index, its counts, the tokens' reported count and exact sum
		n := v[1].Int64()
		b := report.Bucket{Start: time.UnixMicro(v[0].Int64() * q.Bucket.Microseconds()).UTC(), Invocations: n,
			Failed: v[2].Int64()}
		b.TotalTokens.Set(n, v[3].Int64(), sum)
		t.Buckets = append(t.Buckets, b)
	}
	return t, nil
}

// timelineStatement groups the window's rows by bucket, the earliest
// first.
func (s *Store) timelineStatement(q report.TimelineQuery) (string, []any) {
	within, args := s.d.Within("observed_at", q.Since, q.Until)
	b := q.Bucket.Microseconds()
	i := s.d.Instant("observed_at")
	// (i - ((i % b) + b) % b) / b is i / b rounded down, whatever i's sign.
	return fmt.Sprintf(`SELECT k, count(*) AS n, SUM(CASE WHEN %s THEN 1 ELSE 0 END) AS failed,
	count(total_tokens) AS reported, SUM(total_tokens / 4294967296) AS hi, SUM(total_tokens %% 4294967296) AS lo
FROM (SELECT (%s - ((%s %% %d) + %d) %% %d) / %d AS k, tool_status, agent_status, total_tokens
	FROM %s WHERE %s) w
GROUP BY k ORDER BY k`, failed(), i, i, b, b, b, b, s.d.ThroughIndex(Table, observedAtIndex), within), args
}

// Failures implements report.FailureLister: one statement, the window's
// failed rows newest first, after the key, through the observed_at index.
func (s *Store) Failures(ctx context.Context, q report.FailureQuery) ([]core.Subagent, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "failures", Err: err}
	}
	sql, args := s.failuresStatement(q)
	return s.rows(ctx, "failures", sql, args)
}

// failuresStatement selects a page of failures.
func (s *Store) failuresStatement(q report.FailureQuery) (string, []any) {
	d := s.d
	within, args := d.Within("observed_at", q.Since, q.Until)
	at, sess, tool, exec := d.Instant("observed_at"), d.Bytewise("task_session_id"), d.Bytewise("tool_call_id"),
		d.Bytewise("agent_execution_id")
	sql := "SELECT " + columnList("") + " FROM " + d.ThroughIndex(Table, observedAtIndex) + " WHERE " + within +
		" AND " + failed()
	if a := q.After; a != nil {
		us := storekit.CeilMicro(a.ObservedAt).UnixMicro()
		sql += " AND (" + at + " < ? OR (" + at + " = ? AND (" + sess + " < ? OR (" + sess + " = ? AND (" + tool +
			" < ? OR (" + tool + " = ? AND " + exec + " < ?))))))"
		args = append(args, us, us, a.TaskSessionID, a.TaskSessionID, a.ToolCallID, a.ToolCallID, a.AgentExecutionID)
	}
	sql += " ORDER BY " + at + " DESC, " + sess + " DESC, " + tool + " DESC, " + exec + " DESC LIMIT ?"
	return sql, append(args, q.LimitOrDefault())
}

// Stale implements report.StaleLister: one statement, the rows whose agent
// may still end and has not, started before the threshold, oldest first
// (storekit.StaleOf). Without Since it reads every row (no index serves
// "no end yet"): a read for an operator or a cron job; a page gives its
// window's Since, read through the observed_at index.
func (s *Store) Stale(ctx context.Context, q report.StaleQuery) ([]core.Subagent, error) {
	if err := q.Validate(); err != nil {
		return nil, &core.OpError{Op: "stale", Err: err}
	}
	sql, args := s.staleStatement(q)
	return s.rows(ctx, "stale", sql, args)
}

// staleStatement selects the stale rows.
func (s *Store) staleStatement(q report.StaleQuery) (string, []any) {
	d := s.d
	since := d.Instant("COALESCE(started_at, observed_at)")
	from, args := Table, []any{}
	where := unended + ` AND ` + since + ` < ?`
	if !q.Since.IsZero() {
		var window string
		window, args = d.Within("observed_at", q.Since, time.Time{})
		from, where = d.ThroughIndex(Table, observedAtIndex), window+" AND "+where
	}
	return `SELECT ` + columnList("") + ` FROM ` + from + `
	WHERE ` + where + `
	ORDER BY ` + since + `, ` + d.Bytewise("task_session_id") + `, ` + d.Bytewise("tool_call_id") + `, ` +
			d.Bytewise("agent_execution_id") + ` LIMIT ?`,
		append(args, storekit.CeilMicro(q.Before).UnixMicro(), q.LimitOrDefault())
}
