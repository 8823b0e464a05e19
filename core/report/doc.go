// Package report is what a host or an operator reads from the record:
// whether it is complete (Reader.Health, over the activation state the
// meta table's keys give), how many subagents and what they cost
// (Reader.Stats), the sessions on record, and, on stores that offer them,
// the overview of a window (Overviewer), its activity over time
// (Timeliner), a session's turns page by page (TurnLister), the failed
// subagents (FailureLister) and the rows written since an instant
// (Exporter).
//
// Every query validates itself and names what is wrong; every result says
// "not reported" and "unknown" apart from zero (docs/CONTRACT.md §5).
// Each store answers from its own statements; core/storekit holds the Go
// reference each answer must equal.
//
// Stability: a host's package — until v1.0.0 a minor version may change its
// API, and the CHANGELOG lists every change (README, Stability).
package report
