// Package core is what a host calls to record subagents: the Frame it
// observes, the Recorder it hands frames to on its hot path, the row a
// frame becomes (Subagent), the Store it passes around, the counters and
// the errors it must tell apart.
//
// Data flows one way:
//
//	host stream handler ──Frame──▶ Recorder.Record ──Normalize──▶ Store.Upsert
//
// The other packages a host uses:
//
//   - core/report reads the record: activation state, health, statistics,
//     the overview, the timeline, a session's turns, the failures, export.
//   - adapters/memory, adapters/sqlite and adapters/postgres are the stores;
//     fxmodule wires a store, the migration pass and a Recorder into fx.
//
// A store author implements Store (and report.Reader) with package
// core/storekit, the merge rules and the Go references, and proves the
// store with the conformance suite in core/storetest; a host never needs
// either.
//
// AC numbers and § references in comments refer to docs/CONTRACT.md.
package core
