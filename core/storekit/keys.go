package storekit

import (
	"fmt"
	"time"

	"github.com/subagentctx/subagentctx/core/report"
)

// The activation keys in the host's meta table (docs/CONTRACT.md §4.3). Each is written
// once and never rewritten; values this project writes are RFC3339Nano UTC.
const (
	// ExecutionSinceKey: the table has its declared shape (the
	// agent_execution_id column and the three-column key) since this
	// instant; before it, no agent_execution_id is an execution identity.
	ExecutionSinceKey = "subagent_context_execution_since"
	// BackfillThroughKey: the greatest created_at among the messages the
	// backfill covered, or "" (BackfillNothing) when none matched. Activity
	// before it has unknown fan-out, not zero.
	BackfillThroughKey = "subagent_context_backfill_through"
	// CaptureSinceKey: the live writer's coverage boundary, sampled inside
	// the backfill's transaction after its insert.
	CaptureSinceKey = "subagent_context_capture_since"
	// PrunedBeforeKey: the retention boundary (docs/CONTRACT.md §8.14).
	// Rows last written before it may have been pruned, and the pass
	// recovers no message created before it. Unlike the activation keys it
	// is rewritten, but only forward: each prune that advances it writes
	// it before deleting anything.
	PrunedBeforeKey = "subagent_context_pruned_before"
)

// BackfillNothing is backfill_through's value when no message matched: a
// sentinel, never parsed as a time (AC-24f).
const BackfillNothing = ""

// ParseKey reads a stored key: absent, or an instant in RFC 3339 at any
// precision (second-precision keys of older builds, RFC3339Nano), or a
// value that does not parse, reported as such.
func ParseKey(present bool, raw string) report.KeyReading {
	k := report.KeyReading{Present: present, Raw: raw}
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
func NewActivation(keys map[string]string) report.Activation {
	get := func(k string) report.KeyReading { v, ok := keys[k]; return ParseKey(ok, v) }
	a := report.Activation{CaptureSince: get(CaptureSinceKey), ExecutionSince: get(ExecutionSinceKey),
		PrunedBefore: get(PrunedBeforeKey)}
	if v, ok := keys[BackfillThroughKey]; ok && v == BackfillNothing {
		a.BackfillThrough = report.KeyReading{Present: true}
		a.NothingToRecover = true
	} else {
		a.BackfillThrough = get(BackfillThroughKey)
	}
	switch capture, exec := a.CaptureSince.Present, a.ExecutionSince.Present; {
	case capture && exec:
		a.State = report.Activated
	case capture:
		a.State = report.CaptureOnly
	case exec:
		a.State = report.NoBoundary
	default:
		a.State = report.NotActivated
	}
	return a
}
