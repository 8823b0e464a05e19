package core

import (
	"context"
	"fmt"
	"time"
)

// ActivationState is one row of SPEC §4's consumer-contract table, read from
// the keys, never from row presence.
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

// Key is one activation key as read from the meta table.
type KeyValue struct {
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
func (k KeyValue) Usable() bool { return k.Present && k.Time != nil }

// Activation is the state of the three keys.
type Activation struct {
	State          ActivationState `json:"state"`
	CaptureSince   KeyValue        `json:"capture_since"`
	ExecutionSince KeyValue        `json:"execution_since"`
	// BackfillThrough is an instant, or NothingToRecover when the backfill
	// matched no message (the "" sentinel, never parsed, AC-24f).
	BackfillThrough  KeyValue `json:"backfill_through"`
	NothingToRecover bool     `json:"nothing_to_recover"`
}

// ParseKey reads a stored key: absent, or an instant in RFC 3339 at any
// precision (second-precision keys of older builds, RFC3339Nano), or a
// value that does not parse, reported as such.
func ParseKey(present bool, raw string) KeyValue {
	k := KeyValue{Present: present, Raw: raw}
	if !present {
		return k
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		k.ParseError = fmt.Sprintf("%q is not an RFC 3339 instant", raw)
		return k
	}
	t = t.UTC()
	k.Time = &t
	return k
}

// NewActivation derives the state from the keys present in the meta table.
func NewActivation(keys map[string]string) Activation {
	get := func(k string) KeyValue { v, ok := keys[k]; return ParseKey(ok, v) }
	a := Activation{CaptureSince: get(KeyCaptureSince), ExecutionSince: get(KeyExecutionSince)}
	if v, ok := keys[KeyBackfillThrough]; ok && v == BackfillNothing {
		a.BackfillThrough = KeyValue{Present: true}
		a.NothingToRecover = true
	} else {
		a.BackfillThrough = get(KeyBackfillThrough)
	}
	switch capture, exec := a.CaptureSince.Present, a.ExecutionSince.Present; {
	case capture && exec:
		a.State = Activated
	case capture:
		a.State = CaptureOnly
	case exec:
		a.State = NoBoundary
	default:
		a.State = NotActivated
	}
	return a
}

// Health is the result of the health check (SPEC §5).
type Health struct {
	// Ran is false when the check could not run; Reason says why (for
	// example capture_since absent, which is itself the signal).
	Ran    bool   `json:"ran"`
	Reason string `json:"reason,omitempty"`
	// CaptureSince is the boundary the check counted from.
	CaptureSince *time.Time `json:"capture_since,omitempty"`
	// Shortfall, the only alarm: distinct (session, tool_call_id) pairs of
	// subagent messages with all three identities at or after
	// capture_since that have no row.
	Shortfall int64 `json:"shortfall"`
	// Excess, reported and never an alarm, never netted against the
	// shortfall: pairs with a row and no subagent message.
	Excess int64 `json:"excess"`
	// Collisions: pairs at or after capture_since held by more than one
	// execution (AC-32), which are kept apart, never de-duplicated.
	Collisions int64 `json:"collisions"`
	// LastObservedAt is MAX(observed_at) at or after capture_since; nil
	// means the writer has produced nothing since activation.
	LastObservedAt *time.Time `json:"last_observed_at"`
}

// Healthy is true when the check ran and found no shortfall.
func (h Health) Healthy() bool { return h.Ran && h.Shortfall == 0 }

// StatsQuery scopes statistics to one session, one task, or (both empty)
// everything.
type StatsQuery struct {
	TaskSessionID string
	TaskID        string
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
	Reported   int64    `json:"reported"`
	Unreported int64    `json:"unreported"`
	Sum        int64    `json:"sum"`
	Average    *float64 `json:"average"` // nil when nothing was reported
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
// unknown into zero.
type Stats struct {
	Query      StatsQuery `json:"query"`
	Activation Activation `json:"activation"`
	Subagents  int64      `json:"subagents"`
	Live       int64      `json:"live"`
	Backfill   int64      `json:"backfill"`
	// FanOutPerTurn counts turns by number of subagents, over rows with a
	// turn; RowsWithoutTurn are the rest.
	FanOutPerTurn   []FanOut `json:"fan_out_per_turn"`
	RowsWithoutTurn int64    `json:"rows_without_turn"`
	TotalTokens     Metric   `json:"total_tokens"`
	ToolUseCount    Metric   `json:"tool_use_count"`
	DurationMs      Metric   `json:"duration_ms"`
	// DistinctExecutions excludes 'unknown', which means unrecorded, never
	// shared; ExecutionIdentities is false unless execution_since is
	// present, in which case the count is not an execution count at all.
	DistinctExecutions   int64 `json:"distinct_executions"`
	UnknownExecutionRows int64 `json:"unknown_execution_rows"`
	ExecutionIdentities  bool  `json:"execution_identities"`
	// Sessions gives each session's coverage verdict (session and task
	// scopes); for the whole store, KnownSessions and UnknownSessions count
	// them.
	Sessions        []SessionCoverage `json:"sessions,omitempty"`
	KnownSessions   int64             `json:"known_sessions"`
	UnknownSessions int64             `json:"unknown_sessions"`
}

// Reader is the read side a store may offer beyond core.Store: activation
// state, health and statistics. The SQL adapters implement it; the memory
// adapter reports an unactivated store (it has no meta table or messages).
type Reader interface {
	Activation(ctx context.Context) (Activation, error)
	Health(ctx context.Context) (Health, error)
	Stats(ctx context.Context, q StatsQuery) (Stats, error)
}

// CoverageOf decides a session's verdict from the activation and the
// instant of its first activity (nil when it has none on record).
func CoverageOf(a Activation, session string, firstActivity *time.Time) SessionCoverage {
	c := SessionCoverage{TaskSessionID: session, Coverage: Unknown}
	switch {
	case !a.CaptureSince.Present:
		c.Reason = "capture_since absent: no coverage boundary, no absence means anything"
	case !a.CaptureSince.Usable():
		c.Reason = "capture_since does not parse: " + a.CaptureSince.ParseError
	case firstActivity == nil:
		c.Reason = "no activity on record for this session"
	case firstActivity.Before(*a.CaptureSince.Time):
		c.Reason = "activity starts before capture_since " + a.CaptureSince.Raw
	default:
		c.Coverage, c.Reason = Known, "all activity at or after capture_since "+a.CaptureSince.Raw
	}
	return c
}
