package report

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// ActivationState is one row of the activation-state table
// (docs/CONTRACT.md §5.1), read from the keys, never from row presence.
type ActivationState string

// The four states.
const (
	// Activated: capture_since and execution_since present.
	Activated ActivationState = "activated"
	// CaptureOnly: capture works, but no agent_execution_id may be read as
	// an execution identity.
	CaptureOnly ActivationState = "capture_only"
	// NoBoundary: execution ids are identities, but there is no coverage
	// boundary: all history is unknown fan-out and health does not run.
	NoBoundary ActivationState = "no_boundary"
	// NotActivated: rows may exist and are valid, but no absence means
	// anything.
	NotActivated ActivationState = "not_activated"
)

// KeyReading is one activation key as read from the meta table.
type KeyReading struct {
	Present bool   `json:"present"`
	Raw     string `json:"raw,omitempty"`
	// Time is the parsed instant, when Present and it parsed (not for
	// backfill_through's "" sentinel).
	Time *time.Time `json:"time,omitempty"`
	// ParseError says why a present value is not an instant; such a key is
	// reported, never treated as absent.
	ParseError string `json:"parse_error,omitempty"`
}

// Usable reports whether the key is present and parsed to an instant.
func (k KeyReading) Usable() bool { return k.Present && k.Time != nil }

// Activation is the state of the three keys.
type Activation struct {
	State          ActivationState `json:"state"`
	CaptureSince   KeyReading      `json:"capture_since"`
	ExecutionSince KeyReading      `json:"execution_since"`
	// BackfillThrough is an instant, or NothingToRecover when the backfill
	// matched no message (the "" sentinel, never parsed, AC-24f).
	BackfillThrough  KeyReading `json:"backfill_through"`
	NothingToRecover bool       `json:"nothing_to_recover"`
	// PrunedBefore is the retention boundary, when the record has been
	// pruned (docs/CONTRACT.md §8.14): nothing before it is on record.
	PrunedBefore KeyReading `json:"pruned_before"`
}

// Bound is where the record's coverage starts: capture_since, or the
// retention boundary when it is later; false without a usable
// capture_since. A pruning boundary that does not parse is ignored here
// and reported in PrunedBefore.
func (a Activation) Bound() (time.Time, bool) {
	if !a.CaptureSince.Usable() {
		return time.Time{}, false
	}
	b := *a.CaptureSince.Time
	if a.PrunedBefore.Usable() && a.PrunedBefore.Time.After(b) {
		b = *a.PrunedBefore.Time
	}
	return b, true
}

// Health is the result of the health check (docs/CONTRACT.md §5.2).
type Health struct {
	// Ran is false when the check could not run; Reason says why (for
	// example capture_since absent, which is itself the signal).
	Ran    bool   `json:"ran"`
	Reason string `json:"reason,omitempty"`
	// State is the activation state the check ran in.
	State ActivationState `json:"state"`
	// CaptureSince is the activation's boundary; Since, where the window
	// the check counted started (never before CaptureSince, nor before the
	// retention boundary).
	CaptureSince *time.Time `json:"capture_since"`
	Since        *time.Time `json:"since"`
	// Shortfall, the only alarm: distinct (session, tool_call_id) pairs of
	// recoverable subagent messages created at or after capture_since that
	// have no row at all.
	Shortfall int64 `json:"shortfall"`
	// Excess, reported and never an alarm, never netted against the
	// shortfall: pairs with a row observed at or after capture_since and no
	// subagent message.
	Excess int64 `json:"excess"`
	// Collisions: pairs with rows observed at or after capture_since held by
	// two or more known executions (AC-32), kept apart, never
	// de-duplicated. Nil when no execution id may be read as an identity
	// (capture_only).
	Collisions *int64 `json:"collisions"`
	// Doubled, reported and never an alarm: pairs of the sessions the
	// check reads that hold one invocation twice — the backfill's row, not
	// absorbed, beside a row under an execution id — which an earlier
	// release's writer leaves during a rolling deploy (docs/CONTRACT.md
	// §3.2) and later passes do not merge.
	Doubled int64 `json:"doubled"`
	// LastObservedAt is MAX(observed_at) at or after capture_since;
	// LastWriteAt is MAX(updated_at) after it. Both nil: the writer has
	// produced nothing since activation.
	LastObservedAt *time.Time `json:"last_observed_at"`
	LastWriteAt    *time.Time `json:"last_write_at"`
	// Missing lists the shortfall's pairs and Extra the excess's, the
	// earliest first (then by session and tool call id, byte by byte), at
	// most HealthQuery.Pairs each (as DoubledPairs, below); the counts above
	// are always exact.
	Missing []Pair `json:"missing"`
	Extra   []Pair `json:"excess_pairs"`
	// DoubledPairs lists the doubled pairs the same way, each first seen at
	// its earliest row's observed_at.
	DoubledPairs []Pair `json:"doubled_pairs"`
}

// Pair is one (session, tool call id) pair the health check names, with
// when it was first seen in the window: the earliest created_at of its
// subagent messages (missing), or observed_at of its rows (excess).
type Pair struct {
	TaskSessionID string    `json:"task_session_id"`
	ToolCallID    string    `json:"tool_call_id"`
	FirstSeen     time.Time `json:"first_seen"`
}

// HealthQuery is the health check's window and how many pairs it lists.
type HealthQuery struct {
	// Since starts the window. Zero, or an instant before the record's
	// coverage bound (Activation.Bound), starts it at the bound: the
	// contract's whole window.
	Since time.Time
	// Pairs bounds the pairs listed in each direction (0:
	// DefaultHealthPairs; at most MaxHealthPairs).
	Pairs int
}

// Validate checks the query, naming what is wrong.
func (q HealthQuery) Validate() error {
	if q.Pairs < 0 || q.Pairs > MaxHealthPairs {
		return fmt.Errorf("health: %d pairs, want 0 (the default, %d) to %d", q.Pairs, DefaultHealthPairs, MaxHealthPairs)
	}
	return nil
}

// Healthy is true when the check ran and found no shortfall.
func (h Health) Healthy() bool { return h.Ran && h.Shortfall == 0 }

// WriterSilent is true when the check ran and the writer has written
// nothing since activation.
func (h Health) WriterSilent() bool { return h.Ran && h.LastObservedAt == nil && h.LastWriteAt == nil }

// StatsQuery scopes statistics to one session, one task, or (both empty)
// everything.
type StatsQuery struct {
	TaskSessionID string `json:"task_session_id,omitempty"`
	TaskID        string `json:"task_id,omitempty"`
}

// Validate rejects a query with both scopes.
func (q StatsQuery) Validate() error {
	if q.TaskSessionID != "" && q.TaskID != "" {
		return fmt.Errorf("stats: give a session id or a task id, not both")
	}
	return nil
}

// Metric sums and averages one metric over reported values only, with the
// count of unreported ones beside them: "not reported" is never 0.
type Metric struct {
	Reported   int64 `json:"reported"`
	Unreported int64 `json:"unreported"`
	// Sum is exact, whatever its size (it may pass 64 bits); nil when
	// nothing was reported.
	Sum *big.Int `json:"sum"`
	// Average is nil when nothing was reported.
	Average *float64 `json:"average"`
}

// MetricStats gives a metric over live rows, backfilled rows and both, so
// that measured and recovered values are never mixed without saying so.
type MetricStats struct {
	All      Metric `json:"all"`
	Live     Metric `json:"live"`
	Backfill Metric `json:"backfill"`
}

// Add counts one row's value (nil: not reported) from a row of the given
// source; Finish computes the averages after the last one.
func (m *MetricStats) Add(source core.Source, v *int64) { m.AddSum(source, bigOf(v)) }

// AddSum is Add for a value that may pass 64 bits (RunTokens').
func (m *MetricStats) AddSum(source core.Source, v *big.Int) {
	part := &m.Live
	if source == core.SourceBackfill {
		part = &m.Backfill
	}
	for _, x := range []*Metric{&m.All, part} {
		x.AddSum(v)
	}
}

// Add counts one value (nil: not reported); Finish computes the average
// after the last one.
func (m *Metric) Add(v *int64) { m.AddSum(bigOf(v)) }

// AddSum is Add for a value that may pass 64 bits (RunTokens').
func (m *Metric) AddSum(v *big.Int) {
	if v == nil {
		m.Unreported++
		return
	}
	m.Reported++
	if m.Sum == nil {
		m.Sum = new(big.Int)
	}
	m.Sum.Add(m.Sum, v)
}

func bigOf(v *int64) *big.Int {
	if v == nil {
		return nil
	}
	return big.NewInt(*v)
}

// Finish computes the averages once every row has been added.
func (m *MetricStats) Finish() {
	for _, x := range []*Metric{&m.All, &m.Live, &m.Backfill} {
		x.Finish()
	}
}

// Set fills a metric from its reported count, its exact sum (nil when
// nothing was reported) and the number of rows it was counted over.
func (m *Metric) Set(rows, reported int64, sum *big.Int) {
	m.Reported, m.Unreported, m.Sum = reported, rows-reported, sum
	if reported == 0 {
		m.Sum = nil
	}
	m.Finish()
}

// Finish computes the average once every value has been added.
func (m *Metric) Finish() {
	if m.Reported == 0 || m.Sum == nil {
		m.Average = nil
		return
	}
	avg, _ := new(big.Rat).SetFrac(m.Sum, big.NewInt(m.Reported)).Float64()
	m.Average = &avg
}

// FanOut is how many turns spawned a given number of subagents.
type FanOut struct {
	Subagents int64 `json:"subagents"`
	Turns     int64 `json:"turns"`
}

// Coverage says whether a session's fan-out is known (AC-25).
type Coverage string

// Coverage verdicts.
const (
	// Known: the session's whole activity is at or after capture_since, so
	// a missing subagent is a real absence and a count of 0 means zero.
	Known Coverage = "known"
	// Unknown: some of its activity precedes the boundary (or there is
	// none): its fan-out is unknown, never zero.
	Unknown Coverage = "unknown"
)

// SessionCoverage is one session's verdict.
type SessionCoverage struct {
	TaskSessionID string   `json:"task_session_id"`
	Coverage      Coverage `json:"coverage"`
	Reason        string   `json:"reason"`
}

// Stats answers "how many subagents, how many tokens" without turning
// unknown into zero (docs/CONTRACT.md §5.3).
type Stats struct {
	Query      StatsQuery `json:"query"`
	Activation Activation `json:"activation"`
	Subagents  int64      `json:"subagents"`
	Live       int64      `json:"live"`
	Backfill   int64      `json:"backfill"`
	// Background counts the background launches; NoEnd the rows whose
	// agent may still end and has not (a background launch or an open
	// call with no end seen; the rest have ended); Failed the failed ones,
	// by tool or agent status (docs/CONTRACT.md §3.4, §5.4).
	Background int64 `json:"background"`
	NoEnd      int64 `json:"no_end"`
	Failed     int64 `json:"failed"`
	// FanOutPerTurn counts turns by number of subagents, over rows with a
	// turn; RowsWithoutTurn are the rest.
	FanOutPerTurn   []FanOut    `json:"fan_out_per_turn"`
	RowsWithoutTurn int64       `json:"rows_without_turn"`
	TotalTokens     MetricStats `json:"total_tokens"`
	RunTokens       MetricStats `json:"run_tokens"`
	ToolUseCount    MetricStats `json:"tool_use_count"`
	DurationMs      MetricStats `json:"duration_ms"`
	// DistinctExecutions excludes 'unknown', which means unrecorded, never
	// shared; nil unless execution_since is present (before it, an
	// agent_execution_id is not an execution identity).
	DistinctExecutions   *int64 `json:"distinct_executions"`
	UnknownExecutionRows int64  `json:"unknown_execution_rows"`
	// Sessions gives each session's coverage verdict (session and task
	// scopes); for the whole store, KnownSessions and UnknownSessions count
	// them.
	Sessions        []SessionCoverage `json:"sessions,omitempty"`
	KnownSessions   int64             `json:"known_sessions"`
	UnknownSessions int64             `json:"unknown_sessions"`
}

// RunTokens is what a subagent's run spent in tokens: its input, output,
// cache read and cache write tokens summed, over its model requests, each
// once (docs/CONTRACT.md §3.5); nil when none of them was reported. Exact
// whatever the values (the sum of four may pass 64 bits).
func RunTokens(r core.Subagent) *big.Int {
	var sum *big.Int
	for _, p := range []*int64{r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens} {
		if p != nil {
			if sum == nil {
				sum = new(big.Int)
			}
			sum.Add(sum, big.NewInt(*p))
		}
	}
	return sum
}

// Reader is the read side a store may offer beyond core.Store: activation
// state, health, statistics and the sessions on record. The SQL adapters
// implement it; the memory adapter reports an unactivated store (it has no
// meta table or messages).
type Reader interface {
	Activation(ctx context.Context) (Activation, error)
	// Health runs the health check over a window (docs/CONTRACT.md §5.2).
	Health(ctx context.Context, q HealthQuery) (Health, error)
	Stats(ctx context.Context, q StatsQuery) (Stats, error)
	// Sessions summarises the sessions that have rows in the query's
	// window, the most recently observed first (then by session id, byte
	// by byte), paged by SessionQuery.After.
	Sessions(ctx context.Context, q SessionQuery) ([]SessionSummary, error)
}

// SessionSummary is one session's record at a glance.
type SessionSummary struct {
	TaskSessionID string `json:"task_session_id"`
	// TaskID is the least task id among its rows (a session has one task).
	TaskID    string `json:"task_id"`
	Subagents int64  `json:"subagents"`
	// Turns with at least one subagent; MaxFanOut, the most subagents one
	// of them launched (rows without a turn count in neither).
	Turns     int64 `json:"turns"`
	MaxFanOut int64 `json:"max_fan_out"`
	// Open rows have no settled_at yet.
	Open            int64           `json:"open"`
	FirstObservedAt time.Time       `json:"first_observed_at"`
	LastObservedAt  time.Time       `json:"last_observed_at"`
	Coverage        SessionCoverage `json:"coverage"`
}

// PairsOrDefault is the query's bound on each list.
func (q HealthQuery) PairsOrDefault() int {
	if q.Pairs == 0 {
		return DefaultHealthPairs
	}
	return q.Pairs
}
