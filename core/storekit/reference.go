package storekit

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// This file holds the Go reference of every read: what each store's answer
// must equal for the same rows. The memory adapter answers from them; the
// conformance suite compares every other store with them.

// counts reports whether the overview counts a row: in its window, and
// failed when it asks for the failed ones.
func counts(q report.OverviewQuery, r core.Subagent) bool {
	return q.Contains(r.ObservedAt) && (!q.Failed || canon.Failed(r.ToolStatus, r.AgentStatus))
}

// Rank is the nearest rank (1-based) of the percentile pct of n values:
// ⌈pct·n/100⌉.
func Rank(pct, n int64) int64 { return (pct*n + 99) / 100 }

// OverviewOf is the reference overview: rows (a store's, in any order)
// counted in the window q asks for.
func OverviewOf(rows []core.Subagent, q report.OverviewQuery) report.Overview {
	o := report.Overview{Query: q}
	dims := []struct {
		into      *report.Breakdown
		value     func(core.Subagent) *string
		durations bool
	}{
		{&o.ToolStatus, func(r core.Subagent) *string { return r.ToolStatus }, false},
		{&o.AgentStatus, func(r core.Subagent) *string { return r.AgentStatus }, false},
		{&o.SubagentType, func(r core.Subagent) *string { return r.SubagentType }, true},
		{&o.Model, func(r core.Subagent) *string { return r.Model }, true},
	}
	var in []core.Subagent
	for _, r := range rows {
		if counts(q, r) {
			in = append(in, r)
			if r.Source == core.SourceBackfill {
				o.Backfill++
			} else {
				o.Live++
			}
		}
	}
	o.Rows = o.Live + o.Backfill
	for _, d := range dims {
		byValue := map[string][]core.Subagent{}
		var unreported []core.Subagent
		for _, r := range in {
			if v := d.value(r); v != nil {
				byValue[*v] = append(byValue[*v], r)
			} else {
				unreported = append(unreported, r)
			}
		}
		var groups []report.Group
		for v, rs := range byValue {
			groups = append(groups, groupOf(&v, rs, d.durations))
		}
		if len(unreported) > 0 {
			groups = append(groups, groupOf(nil, unreported, d.durations))
		}
		slices.SortFunc(groups, compareGroups)
		*d.into = limitGroups(groups, q.GroupsOrDefault())
	}
	return o
}

// compareGroups is a breakdown's order: the most invoked first, then by
// value byte by byte, not reported last.
func compareGroups(a, b report.Group) int {
	if c := cmp.Compare(b.All.Invocations, a.All.Invocations); c != 0 {
		return c
	}
	switch {
	case a.Value == nil || b.Value == nil:
		return cmp.Compare(boolInt(a.Value == nil), boolInt(b.Value == nil))
	}
	return strings.Compare(*a.Value, *b.Value)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// limitGroups keeps the first n groups of an ordered breakdown and counts
// the rest.
func limitGroups(groups []report.Group, n int) report.Breakdown {
	b := report.Breakdown{Groups: groups}
	if len(groups) > n {
		for _, g := range groups[n:] {
			b.Others++
			b.OtherRows += g.All.Invocations
		}
		b.Groups = groups[:n]
	}
	if b.Groups == nil {
		b.Groups = []report.Group{}
	}
	return b
}

func groupOf(value *string, rows []core.Subagent, durations bool) report.Group {
	g := report.Group{Value: value}
	var live, backfill []core.Subagent
	for _, r := range rows {
		if r.Source == core.SourceBackfill {
			backfill = append(backfill, r)
		} else {
			live = append(live, r)
		}
	}
	g.All, g.Live, g.Backfill = figuresOf(rows, durations), figuresOf(live, durations), figuresOf(backfill, durations)
	return g
}

func figuresOf(rows []core.Subagent, durations bool) report.Figures {
	f := report.Figures{Invocations: int64(len(rows))}
	var tokens, run, uses report.Metric
	var ms []int64
	for _, r := range rows {
		if canon.Failed(r.ToolStatus, r.AgentStatus) {
			f.Failed++
		}
		if Unended(&r) {
			f.NoEnd++
		}
		tokens.Add(r.TotalTokens)
		run.AddSum(report.RunTokens(r))
		uses.Add(r.ToolUseCount)
		if r.DurationMs != nil {
			ms = append(ms, *r.DurationMs)
		}
	}
	tokens.Finish()
	run.Finish()
	uses.Finish()
	f.TotalTokens, f.RunTokens, f.ToolUseCount = tokens, run, uses
	if durations {
		slices.Sort(ms)
		d := DistributionOf(int64(len(rows)), ms)
		f.Duration = &d
	}
	return f
}

// DistributionOf is the distribution of the sorted reported values among
// rows rows.
func DistributionOf(rows int64, sorted []int64) report.Distribution {
	n := int64(len(sorted))
	d := report.Distribution{Reported: n, Unreported: rows - n}
	if n > 0 {
		median, p95 := sorted[Rank(50, n)-1], sorted[Rank(95, n)-1]
		d.Median, d.P95 = &median, &p95
	}
	return d
}

// SessionsOf is the reference listing of Reader.Sessions: rows (a
// store's, in any order, at the stores' microsecond) summarised per
// session in the query's window, with coverage from the activation a.
func SessionsOf(rows []core.Subagent, a report.Activation, q report.SessionQuery) []report.SessionSummary {
	byID := map[string]*report.SessionSummary{}
	perTurn := map[[2]string]int64{}
	for _, r := range rows {
		if !q.Contains(r.ObservedAt) || !strings.HasPrefix(r.TaskSessionID, q.Prefix) {
			continue
		}
		sum := byID[r.TaskSessionID]
		if sum == nil {
			sum = &report.SessionSummary{
				TaskSessionID:   r.TaskSessionID,
				TaskID:          r.TaskID,
				FirstObservedAt: r.ObservedAt,
				LastObservedAt:  r.ObservedAt,
			}
			byID[r.TaskSessionID] = sum
		}
		sum.Subagents++
		if r.SettledAt == nil {
			sum.Open++
		}
		if r.TaskID < sum.TaskID {
			sum.TaskID = r.TaskID
		}
		if r.ObservedAt.Before(sum.FirstObservedAt) {
			sum.FirstObservedAt = r.ObservedAt
		}
		if r.ObservedAt.After(sum.LastObservedAt) {
			sum.LastObservedAt = r.ObservedAt
		}
		if r.TurnID != nil {
			perTurn[[2]string{r.TaskSessionID, *r.TurnID}]++
		}
	}
	for k, n := range perTurn {
		sum := byID[k[0]]
		sum.Turns++
		sum.MaxFanOut = max(sum.MaxFanOut, n)
	}
	out := make([]report.SessionSummary, 0, len(byID))
	for _, sum := range byID {
		if q.After != nil && !q.After.Precedes(sum.Key()) {
			continue
		}
		first := sum.FirstObservedAt
		sum.Coverage = CoverageOf(a, sum.TaskSessionID, &first)
		out = append(out, *sum)
	}
	slices.SortFunc(out, func(a, b report.SessionSummary) int {
		if c := b.LastObservedAt.Compare(a.LastObservedAt); c != 0 {
			return c
		}
		return strings.Compare(a.TaskSessionID, b.TaskSessionID)
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

// AddCoverage gives each session of first — its first activity on
// record, nil when it has none — its verdict, and counts the verdicts; a
// scoped query lists them, in byte order of the session id, and includes
// its session even when it has no activity (unknown, never zero).
func AddCoverage(s *report.Stats, first map[string]*time.Time) {
	if id := s.Query.TaskSessionID; id != "" {
		if _, ok := first[id]; !ok {
			first[id] = nil
		}
	}
	ids := make([]string, 0, len(first))
	for id := range first {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := CoverageOf(s.Activation, id, first[id])
		if c.Coverage == report.Known {
			s.KnownSessions++
		} else {
			s.UnknownSessions++
		}
		if s.Query != (report.StatsQuery{}) {
			s.Sessions = append(s.Sessions, c)
		}
	}
}

// CoverageOf decides a session's verdict from the activation and the
// instant of its first activity (nil when it has none on record), at full
// precision.
func CoverageOf(a report.Activation, session string, firstActivity *time.Time) report.SessionCoverage {
	c := report.SessionCoverage{TaskSessionID: session, Coverage: report.Unknown}
	switch {
	case !a.CaptureSince.Present:
		c.Reason = "capture_since absent: no coverage boundary, no absence means anything"
	case !a.CaptureSince.Usable():
		c.Reason = "capture_since does not parse: " + a.CaptureSince.ParseError
	case firstActivity == nil:
		c.Reason = "no activity on record for this session"
	case firstActivity.Before(*a.CaptureSince.Time):
		c.Reason = "activity starts before capture_since " + a.CaptureSince.Raw
	case a.PrunedBefore.Usable() && firstActivity.Before(*a.PrunedBefore.Time):
		c.Reason = "activity starts before the retention boundary " + a.PrunedBefore.Raw + ": rows before it were pruned"
	default:
		c.Coverage, c.Reason = report.Known, "all activity at or after capture_since "+a.CaptureSince.Raw
	}
	return c
}

// NamedStats is one metric's statistics in a report.Stats, with its name.
type NamedStats struct {
	Column string
	Stats  *report.MetricStats
}

// StatsMetrics are s's metrics with their names: a column's, or
// run_tokens, the run's usage summed (report.RunTokens). A store fills
// them in this order, by name.
func StatsMetrics(s *report.Stats) []NamedStats {
	return []NamedStats{{"total_tokens", &s.TotalTokens}, {"run_tokens", &s.RunTokens},
		{"tool_use_count", &s.ToolUseCount}, {"duration_ms", &s.DurationMs}}
}

// NamedMetric is one metric of an overview's group, with its name.
type NamedMetric struct {
	Column string
	Metric *report.Metric
}

// FigureMetrics are f's metrics with their names, as StatsMetrics names
// them.
func FigureMetrics(f *report.Figures) []NamedMetric {
	return []NamedMetric{{"total_tokens", &f.TotalTokens}, {"run_tokens", &f.RunTokens},
		{"tool_use_count", &f.ToolUseCount}}
}

// HealthPrecondition decides from the activation whether the health check
// runs (docs/CONTRACT.md §5.1), returning the report so far: Ran false
// with the reason when it does not; else Since is the window's start
// (q.Since, never before Activation.Bound).
func HealthPrecondition(a report.Activation, q report.HealthQuery) report.Health {
	h := report.Health{State: a.State}
	switch {
	case !a.CaptureSince.Present:
		h.Reason = "not run: " + CaptureSinceKey + " is absent, so no absence means anything"
		return h
	case !a.CaptureSince.Usable():
		h.Reason = "not run: " + CaptureSinceKey + " does not parse: " + a.CaptureSince.ParseError
		return h
	}
	capture := *a.CaptureSince.Time
	since, _ := a.Bound()
	if q.Since.After(since) {
		since = q.Since.UTC()
	}
	h.Ran, h.CaptureSince, h.Since = true, &capture, &since
	h.Missing, h.Extra = []report.Pair{}, []report.Pair{}
	return h
}

// BucketOf is the bucket index of an instant: its Unix microseconds
// divided by the bucket's, rounded down (before 1970 too).
func BucketOf(t time.Time, bucket time.Duration) int64 {
	us, b := CanonicalTime(t).UnixMicro(), bucket.Microseconds()
	k := us / b
	if us%b < 0 {
		k--
	}
	return k
}

// TimelineOf is the Go reference of a timeline: what every store's
// Timeline must return for the same rows.
func TimelineOf(rows []core.Subagent, q report.TimelineQuery) report.Timeline {
	t := report.Timeline{Query: q}
	byIndex := map[int64]*report.Bucket{}
	var order []int64
	for _, r := range rows {
		if !canon.InWindow(r.ObservedAt, q.Since, q.Until) {
			continue
		}
		k := BucketOf(r.ObservedAt, q.Bucket)
		b := byIndex[k]
		if b == nil {
			b = &report.Bucket{Start: time.UnixMicro(k * q.Bucket.Microseconds()).UTC()}
			byIndex[k] = b
			order = append(order, k)
		}
		b.Invocations++
		if canon.Failed(r.ToolStatus, r.AgentStatus) {
			b.Failed++
		}
		b.TotalTokens.Add(r.TotalTokens)
	}
	slices.Sort(order)
	for _, k := range order {
		b := byIndex[k]
		b.TotalTokens.Finish()
		t.Buckets = append(t.Buckets, *b)
	}
	return t
}

// turnOf is a row's turn: its turn_id, or "" with ok false for the rows
// without one.
func turnOf(r core.Subagent) (string, bool) {
	if r.TurnID == nil {
		return "", false
	}
	return *r.TurnID, true
}

// TurnsOf is the Go reference of a page of turns: what every store's
// SessionTurns must return for the same rows.
func TurnsOf(rows []core.Subagent, q report.TurnQuery) report.TurnPage {
	type turn struct {
		id    string
		has   bool
		first core.Cursor
	}
	var session []core.Subagent
	for _, r := range rows {
		if r.TaskSessionID == q.TaskSessionID {
			session = append(session, Canonical(r))
		}
	}
	slices.SortFunc(session, func(a, b core.Subagent) int {
		if a.Cursor().Less(b.Cursor()) {
			return -1
		}
		if b.Cursor().Less(a.Cursor()) {
			return 1
		}
		return 0
	})
	var turns []turn
	seen := map[turn]bool{}
	for _, r := range session {
		id, has := turnOf(r)
		if k := (turn{id: id, has: has}); !seen[k] {
			seen[k] = true
			turns = append(turns, turn{id, has, r.Cursor()})
		}
	}
	var lo, hi int
	switch {
	case q.After != nil:
		after := q.After.Canonical()
		lo = len(turns)
		for i, t := range turns {
			if after.Less(t.first) {
				lo = i
				break
			}
		}
		hi = min(lo+q.LimitOrDefault(), len(turns))
	case q.Before != nil:
		before := q.Before.Canonical()
		hi = 0
		for i, t := range turns {
			if t.first.Less(before) {
				hi = i + 1
			}
		}
		lo = max(hi-q.LimitOrDefault(), 0)
	default:
		hi = min(q.LimitOrDefault(), len(turns))
	}
	if lo >= hi {
		return report.TurnPage{Rows: []core.Subagent{}} // an empty page has no neighbours
	}
	page := report.TurnPage{Rows: []core.Subagent{}, Earlier: lo > 0, Later: hi < len(turns)}
	in := map[turn]bool{}
	for _, t := range turns[lo:hi] {
		in[turn{id: t.id, has: t.has}] = true
	}
	for _, r := range session {
		if id, has := turnOf(r); in[turn{id: id, has: has}] {
			page.Rows = append(page.Rows, r)
		}
	}
	page.First, page.Last = turns[lo].first, turns[hi-1].first
	return page
}

// compareFailures orders the list: newest first, then session, tool call
// id and execution id, each descending byte by byte.
func compareFailures(a, b report.FailureKey) int {
	if c := b.ObservedAt.Compare(a.ObservedAt); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(b.TaskSessionID, a.TaskSessionID), cmp.Compare(b.ToolCallID, a.ToolCallID),
		cmp.Compare(b.AgentExecutionID, a.AgentExecutionID))
}

// FailuresOf is the Go reference of a page of failures: what every
// store's Failures must return for the same rows.
func FailuresOf(rows []core.Subagent, q report.FailureQuery) []core.Subagent {
	out := []core.Subagent{} // an empty page is empty, not nil: the stores' answer
	for _, r := range rows {
		r = Canonical(r)
		if !canon.Failed(r.ToolStatus, r.AgentStatus) || !canon.InWindow(r.ObservedAt, q.Since, q.Until) {
			continue
		}
		if q.After != nil {
			after := *q.After
			after.ObservedAt = CeilMicro(after.ObservedAt)
			if compareFailures(report.KeyOf(r), after) <= 0 {
				continue
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b core.Subagent) int { return compareFailures(report.KeyOf(a), report.KeyOf(b)) })
	return out[:min(len(out), q.LimitOrDefault())]
}

// StaleOf is the Go reference of the stale read: what every store's Stale
// must return for the same rows.
func StaleOf(rows []core.Subagent, q report.StaleQuery) []core.Subagent {
	out := []core.Subagent{}
	before := CeilMicro(q.Before)
	for _, r := range rows {
		r = Canonical(r)
		if Unended(&r) && report.Since(r).Before(before) && canon.InWindow(r.ObservedAt, q.Since, time.Time{}) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b core.Subagent) int {
		return cmp.Or(report.Since(a).Compare(report.Since(b)), cmp.Compare(a.TaskSessionID, b.TaskSessionID),
			cmp.Compare(a.ToolCallID, b.ToolCallID), cmp.Compare(a.AgentExecutionID, b.AgentExecutionID))
	})
	return out[:min(len(out), q.LimitOrDefault())]
}

// ListOf is the Go reference of a listing (Store.ListBySession,
// Store.ListByTurn): rows, those of one session or one turn in any order,
// in AC-13 order after page.After, at most page.Limit of them (0: all).
func ListOf(rows []core.Subagent, page core.Page) []core.Subagent {
	var after *core.Cursor
	if page.After != nil {
		c := page.After.Canonical()
		after = &c
	}
	out := make([]core.Subagent, 0)
	for _, r := range rows {
		if after == nil || after.Less(r.Cursor()) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b core.Subagent) int {
		ca, cb := a.Cursor(), b.Cursor()
		switch {
		case ca.Less(cb):
			return -1
		case cb.Less(ca):
			return 1
		}
		return 0
	})
	if page.Limit > 0 && len(out) > page.Limit {
		out = out[:page.Limit]
	}
	return out
}

// StatsOf is the Go reference of Reader.Stats for a store without host
// messages: the rows in the query's scope counted, every metric over the
// rows that reported it, and each session's coverage from its first row.
func StatsOf(rows []core.Subagent, a report.Activation, q report.StatsQuery) report.Stats {
	st := report.Stats{Query: q, Activation: a, FanOutPerTurn: []report.FanOut{}}
	perTurn := map[[2]string]int64{} // a turn within its session (docs/CONTRACT.md §5.3)
	executions := map[string]bool{}
	first := map[string]*time.Time{}
	for _, r := range rows {
		if (q.TaskSessionID != "" && r.TaskSessionID != q.TaskSessionID) || (q.TaskID != "" && r.TaskID != q.TaskID) {
			continue
		}
		st.Subagents++
		if r.Source == core.SourceBackfill {
			st.Backfill++
		} else {
			st.Live++
		}
		if r.IsAsync {
			st.Background++
		}
		if Unended(&r) {
			st.NoEnd++
		}
		if Failed(&r) {
			st.Failed++
		}
		if r.TurnID == nil {
			st.RowsWithoutTurn++
		} else {
			perTurn[[2]string{r.TaskSessionID, *r.TurnID}]++
		}
		if r.AgentExecutionID == core.UnknownExecution {
			st.UnknownExecutionRows++
		} else {
			executions[r.AgentExecutionID] = true
		}
		st.TotalTokens.Add(r.Source, r.TotalTokens)
		st.RunTokens.AddSum(r.Source, report.RunTokens(r))
		st.ToolUseCount.Add(r.Source, r.ToolUseCount)
		st.DurationMs.Add(r.Source, r.DurationMs)
		if f := first[r.TaskSessionID]; f == nil || r.ObservedAt.Before(*f) {
			t := r.ObservedAt
			first[r.TaskSessionID] = &t
		}
	}
	for _, m := range StatsMetrics(&st) {
		m.Stats.Finish()
	}
	if a.ExecutionSince.Present {
		n := int64(len(executions))
		st.DistinctExecutions = &n
	}
	hist := map[int64]int64{}
	for _, n := range perTurn {
		hist[n]++
	}
	for n, turns := range hist {
		st.FanOutPerTurn = append(st.FanOutPerTurn, report.FanOut{Subagents: n, Turns: turns})
	}
	slices.SortFunc(st.FanOutPerTurn, func(a, b report.FanOut) int { return cmp.Compare(a.Subagents, b.Subagents) })
	AddCoverage(&st, first)
	return st
}

// ExportOf is the Go reference of Exporter.Export: the rows (times at the
// stores' microsecond) last written in [q.Since, q.Until) (a zero bound
// open), after the key q.After, by session then id, byte by byte.
func ExportOf(rows []core.Subagent, q report.ExportQuery) []core.Subagent {
	since, until := canon.CeilMicro(q.Since), canon.CeilMicro(q.Until)
	var out []core.Subagent
	for _, r := range rows {
		switch {
		case !q.Since.IsZero() && r.UpdatedAt.Before(since),
			!q.Until.IsZero() && !r.UpdatedAt.Before(until),
			q.After != nil && compareExport(exportKey(r), *q.After) <= 0:
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b core.Subagent) int { return compareExport(exportKey(a), exportKey(b)) })
	return out
}

func exportKey(r core.Subagent) report.ExportKey {
	return report.ExportKey{TaskSessionID: r.TaskSessionID, ID: r.ID}
}

// compareExport orders export keys: session, then id, byte by byte.
func compareExport(a, b report.ExportKey) int {
	return cmp.Or(strings.Compare(a.TaskSessionID, b.TaskSessionID), strings.Compare(a.ID, b.ID))
}
