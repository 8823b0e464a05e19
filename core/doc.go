// Package core is the contract of subagentctx: the frame a host observes, the
// row it becomes, the normalisation and merge rules that turn one into the
// other (rules.go, the one place they are written), the Store interface every
// adapter implements, and the Recorder a host calls on its hot path.
//
// Data flows one way:
//
//	host stream handler ──Frame──▶ Recorder.Record ──Normalize──▶ Store.Upsert
//
// Store implementations apply Merge's semantics atomically: the memory
// adapter calls Merge directly, the SQL adapters express it inside one
// INSERT … ON CONFLICT DO UPDATE and are tested against Merge by the
// conformance suite in core/storetest.
//
// AC numbers and § references in comments refer to docs/CONTRACT.md.
package core
