package core

import (
	"expvar"
	"sync"
	"sync/atomic"
)

// The counters as published (AC-26, docs/CONTRACT.md §6).
const (
	// ExpvarName is the name under which the process's counters are
	// published, so /debug/vars shows them; the others are the keys of the
	// published map.
	ExpvarName               = "subagent_context_total"
	CounterAttempted         = "attempted"
	CounterPersisted         = "persisted"
	CounterSkippedNoIdentity = "skipped_no_identity"
	CounterAnomalousValue    = "anomalous_value"
	CounterFailed            = "failed"
	CounterUnknownExecution  = "unknown_execution"
	CounterPending           = "pending"
	CounterDropped           = "dropped"
	CounterTruncated         = "truncated"
)

// Counters are the recorder's counters. At every instant, in any snapshot
// (Values, and the published map, which renders one snapshot):
//
//	attempted = skipped_no_identity + persisted + failed + pending
//
// and once the recorder is drained pending is 0. anomalous_value,
// unknown_execution, dropped and truncated qualify frames already counted
// there (dropped: given up because the queue was full, part of failed;
// truncated: a descriptive text stored cut, §3.1).
type Counters struct {
	attempted, persisted, skipped, anomalous, failed, unknown, dropped, truncated atomic.Int64
}

// NewCounters returns a fresh, unpublished set: as many as you like, in
// tests too, without a duplicate-name panic.
func NewCounters() *Counters { return new(Counters) }

var processCounters = sync.OnceValue(func() *Counters {
	c := NewCounters()
	if expvar.Get(ExpvarName) == nil { // a host's own variable of the name keeps it
		expvar.Publish(ExpvarName, c.Var())
	}
	return c
})

// ProcessCounters returns the process's counters, shared by every caller,
// and publishes them on expvar as subagent_context_total (ExpvarName) the
// first time it is called — unless the process has a variable of that
// name already (a host that keeps a subagent_context_total map of its own,
// as the reference host does, where expvar.Publish would panic): then it
// publishes nothing, and the host publishes Var under a name of its own.
// The published value is Var's, not an *expvar.Map: read it with Values
// (or the JSON object /debug/vars shows), not Get(key).(*expvar.Int).
func ProcessCounters() *Counters { return processCounters() }

// Var is the counters as one expvar value, for a host that publishes it
// under a name of its own: an expvar.Func whose value is one consistent
// snapshot each time it is read, a map of the counters' names (the
// Counter… constants) to int64, which /debug/vars renders as a JSON
// object. An *expvar.Map of *expvar.Int could not be read as one snapshot.
func (c *Counters) Var() expvar.Var { return expvar.Func(func() any { return c.Values().Map() }) }

// CounterValues is a snapshot of the counters.
type CounterValues struct {
	Attempted         int64 `json:"attempted"`
	Persisted         int64 `json:"persisted"`
	SkippedNoIdentity int64 `json:"skipped_no_identity"`
	AnomalousValue    int64 `json:"anomalous_value"`
	Failed            int64 `json:"failed"`
	UnknownExecution  int64 `json:"unknown_execution"`
	Pending           int64 `json:"pending"`
	Dropped           int64 `json:"dropped"`
	Truncated         int64 `json:"truncated"`
}

// Values reads a snapshot. Every frame is counted attempted before it is
// counted anywhere else, so reading the outcomes first and attempted last
// gives a snapshot in which the invariant holds exactly, pending being the
// frames attempted and not yet resolved.
func (c *Counters) Values() CounterValues {
	v := CounterValues{
		Persisted:         c.persisted.Load(),
		SkippedNoIdentity: c.skipped.Load(),
		Failed:            c.failed.Load(),
		AnomalousValue:    c.anomalous.Load(),
		UnknownExecution:  c.unknown.Load(),
		Dropped:           c.dropped.Load(),
		Truncated:         c.truncated.Load(),
	}
	v.Attempted = c.attempted.Load()
	v.Pending = v.Attempted - v.SkippedNoIdentity - v.Persisted - v.Failed
	return v
}

// Map is the snapshot under the counter names.
func (v CounterValues) Map() map[string]int64 {
	return map[string]int64{
		CounterAttempted: v.Attempted, CounterPersisted: v.Persisted, CounterSkippedNoIdentity: v.SkippedNoIdentity,
		CounterAnomalousValue: v.AnomalousValue, CounterFailed: v.Failed, CounterUnknownExecution: v.UnknownExecution,
		CounterPending: v.Pending, CounterDropped: v.Dropped, CounterTruncated: v.Truncated,
	}
}
