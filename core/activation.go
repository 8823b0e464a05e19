package core

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
