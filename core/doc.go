// Package core is what a host calls to record subagents: the Frame it
// observes, the Recorder it hands frames to on its hot path, the row a
// frame becomes (Subagent), the Store it passes around, the counters and
// the errors it must tell apart.
//
// # Recording
//
// The host's stream handler hands each subagent frame to Recorder.Record,
// which normalises it and queues it, and returns at once: it never waits
// on the database, never fails and never panics into the caller. Writers
// take the queue in batches, one transaction each where the store can
// (group commit), else a row at a time, and retry while the database is
// unavailable:
//
//	stream handler ──Frame──▶ Recorder.Record ──Normalize──▶ queue
//	queue ──batch──▶ writers ──▶ Store.UpsertBatch (or Store.Upsert) ──▶ one row per invocation
//
// The store merges every frame of an invocation into its row by the
// contract's rules, in one atomic statement, whatever their order.
//
// # At shutdown
//
// Recorder.Close writes what is queued, for at most its drain (5 s by
// default), then stops the writers; what it gives up is counted failed
// and logged, never returned as the host's failure. Counters say, in one
// consistent snapshot, what was attempted, persisted, failed and pending.
//
// # Reading
//
// Package core/report reads the record: activation state, health,
// statistics, the overview, the timeline, a session's turns, the
// failures, export. Every store implements it the same way.
//
// # Testing a host
//
// A host's unit test gives its code a Recorder over adapters/memory: the
// memory store is written on the caller's goroutine, so its rows are
// there when Record returns. A test double of the host's own does the
// same by declaring a method Synchronous().
//
// # Stores
//
// adapters/sqlite and adapters/postgres are the SQL stores (adapters/auto
// picks one from a host's handle), adapters/memory the in-memory one;
// package migration runs the migration pass at boot, and fxmodule wires a
// store, the pass and a Recorder into fx. A store author implements Store
// and report.Reader with package core/storekit and proves the store with
// the conformance suite in core/storetest.
//
// # Stability
//
// Until v1.0.0 a minor version may change this package's API; the
// CHANGELOG lists every change. AC numbers and § references in comments
// refer to docs/CONTRACT.md.
package core
