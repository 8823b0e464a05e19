// Package storekit is the store-author SPI: what a store needs to keep
// task_session_subagents the way the contract says, and nothing a host
// calls. Most code should use package core (recording) and core/report
// (reading); this package is for whoever writes a core.Store.
//
// It holds:
//
//   - the column declaration (Columns): each column's name, type,
//     nullability, default and merge rule, from which a store derives its
//     DDL, its upsert's SET list and its argument and scan lists;
//   - the merge rules as functions (Merge, MergeInto, the seam's Absorbs
//     MergeHistory and Absorbed, and Write, the reference upsert over a map), and
//     Validate, which a store calls before any SQL runs;
//   - the forms every store keeps and compares: CanonicalTime, CeilMicro,
//     Sanitize, CheckIdentifier;
//   - the Go references every read must equal (OverviewOf, TimelineOf,
//     TurnsOf, FailuresOf, SessionsOf, CoverageOf, HealthPrecondition) and
//     the activation keys they read (NewActivation);
//   - the capabilities a store may declare to the Recorder (BatchStore,
//     WriterHint, Synchronous).
//
// The conformance suite beside it, core/storetest, runs the contract
// against a store given a constructor; a store passes when its answers
// equal these references (docs/CONTRACT.md).
//
// Stability: the store author's kit is not covered by the module's semver
// promise and may change in any version (README, Stability).
package storekit
