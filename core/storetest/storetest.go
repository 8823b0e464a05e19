// Package storetest is the conformance suite every core.Store must pass,
// unchanged: the memory adapter and the SQL adapters each call Run from their
// own test file, supplying only a constructor (River's riverdrivertest
// pattern). Every test reads values back through the Store and asserts what
// docs/CONTRACT.md §3 says; test names carry the AC they prove.
//
// Stability: the conformance suite a third-party store runs is covered by
// the module's semver promise, as a host's package is (README, Stability).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Harness is what an adapter's test supplies: a store, the host-side
// operations the suite needs around it, and the adapter's declared
// differences.
type Harness struct {
	Store    core.Store
	Features Features
	// CreateSession makes a host session exist, so that rows referencing it
	// satisfy the foreign key. Nil when the store has no such constraint.
	CreateSession func(ctx context.Context, taskSessionID, taskID string) error
	// DeleteSession deletes a host session; the store's rows for it must go
	// with it (AC-16). Nil skips the cascade test, visibly.
	DeleteSession func(ctx context.Context, taskSessionID string) error
}

// Features declares where an adapter legitimately differs from the SQL
// stores; the suite tests each difference as declared, visibly (docs/design.md
// lists them).
type Features struct {
	// SessionForeignKey: a row whose session the host does not have is
	// refused with core.ErrConstraint (the SQL stores' foreign key). The
	// memory store has no sessions table and accepts any session.
	SessionForeignKey bool
	// Activation: the store can be activated (it has a meta table and host
	// messages). The memory store is never activated.
	Activation bool
	// Synchronous: the store implements storekit.Synchronous, so a Recorder
	// writes it on the caller's goroutine and its row is readable as soon
	// as Record returns (the memory store, for a host's unit tests).
	Synchronous bool
}

// Run runs the whole suite. newHarness is called once per test; it may hand
// out the same database each time, because every test uses fresh session,
// turn and tool call ids.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"AC1_FirstFrameCreatesRow", testFirstInsert},
		{"AC3_SameKeySameRow", testSameKeyMerge},
		{"AC4_AbsentNeverBlanks", testFillForward},
		{"AC5_NonEmptyReplaces", testNonEmptyReplaces},
		{"AC2a_FirstTurnWins_NullTurnFills", testTurn},
		{"AC11_SettledAtWriteOnce", testSettledWriteOnce},
		{"AC12_FrozenToolStatus_OtherColumnsFill", testFrozenToolStatus},
		{"AC10_NeverSettled", testNeverSettled},
		{"AC10a_UnknownAgentStatusVerbatim", testUnknownAgentStatus},
		{"IsAsyncSticky", testIsAsyncSticky},
		{"AC1a_WriteOnceOverBackfillRow", testWriteOnceOverBackfill},
		{"AC6_NestedRowKept", testNested},
		{"AC7_AsyncLaunchedMetricsNull", testAsyncLaunched},
		{"AC8_ReportedZeroToolUses_And64BitMetrics", testMetricValues},
		{"AC32_ExecutionsReusingToolCallID", testCrossExecution},
		{"AC13_OrderingAndPaging", testOrdering},
		{"AC14_ConcurrentSameKey", testConcurrentSameKey},
		{"AC15_ConcurrentFanOut", testConcurrentFanOut},
		{"AC16_SessionDeleteCascades", testCascade},
		{"TimeRoundTripMicroseconds", testTimePrecision},
		{"InvalidRowRejected", testInvalidRow},
		{"HostileFrames", testHostileFrames},
		{"ModelCheckAgainstMerge", testModelCheck},
		{"AC25_StatsReportedOnlyUnknownCoverage", testStats},
		{"SessionsSummarised", testSessions},
		{"StatsExactSumsLiveBackfillApart", testStatsSums},
		{"SessionMustExistWhereDeclared", testUnknownSession},
		{"IDUniqueWithinSession", testIDUniqueWithinSession},
		{"AC13_ByteOrder", testByteOrder},
		{"AC13_CursorBetweenMicroseconds", testCursorNanoseconds},
		{"Seam_LiveFrameAdoptsBackfilledRow", testSeamAdopts},
		{"Seam_AC32_AdoptedOnceThenApart", testSeamAdoptsOnce},
		{"Seam_AC31_UnknownExecutionMergesWithoutAdopting", testSeamUnknownExecution},
		{"Seam_AC31_LiveRowsNeverAdopted", testSeamLiveRowsApart},
		{"Seam_TakenIDRefused_HistorysOwnIDAbsorbs", testSeamTakenID},
		{"AC26_RecorderAnswersAlike", testRecorderAlike},
		{"ExportInByteOrderResumable", testExport},
		{"OverviewAgreesWithTheReference", testOverview},
		{"OverviewNearestRanks", testOverviewRanks},
		{"TimelineAgreesWithTheReference", testTimeline},
		{"FailuresAgreeWithTheReference", testFailures},
		{"SessionTurnsAgreeWithTheReference", testSessionTurns},
		{"SessionsWindowPrefixAndKeysetPaging", testSessionsWindow},
		{"Lifecycle_SynchronousEndsWithItsToolCall", testSynchronousEndsWithItsToolCall},
		{"Lifecycle_BackgroundRunEndsWhenReported", testBackgroundRunEndsWhenReported},
		{"Lifecycle_WokenAgainReopens", testWokenAgainReopens},
		{"Lifecycle_StaleAgreesWithTheReference", testStale},
		{"Lifecycle_UnknownNeverOverAnEnd", testUnknownNeverOverAnEnd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, &suite{Harness: newHarness(t), ns: uuid.NewString()[:8]})
		})
	}
}

type suite struct {
	Harness
	ns string // makes every id of one test unique across a shared database
}

func (s *suite) id(parts ...string) string { return s.ns + "-" + strings.Join(parts, "-") }

// session creates a host session for this test and returns its id.
func (s *suite) session(t *testing.T, name string) string {
	t.Helper()
	id := s.id("sess", name)
	if s.CreateSession != nil {
		if err := s.CreateSession(context.Background(), id, s.id("task", name)); err != nil {
			t.Fatalf("create session %s: %v", id, err)
		}
	}
	return id
}

// write normalises a frame and upserts it, failing the test on error.
func (s *suite) write(t *testing.T, f core.Frame) core.Subagent {
	t.Helper()
	row, v := core.Normalize(f)
	if v.NoIdentity {
		t.Fatalf("frame has no identity: %+v", f)
	}
	if err := s.Store.Upsert(context.Background(), row); err != nil {
		t.Fatalf("upsert %+v: %v", row.Key(), err)
	}
	return row
}

func (s *suite) rows(t *testing.T, sessionID string) []core.Subagent {
	t.Helper()
	rows, err := s.Store.ListBySession(context.Background(), sessionID, core.Page{})
	if err != nil {
		t.Fatalf("list by session %s: %v", sessionID, err)
	}
	return rows
}

// one returns the only row of a session, failing unless there is exactly one.
func (s *suite) one(t *testing.T, sessionID string) core.Subagent {
	t.Helper()
	rows := s.rows(t, sessionID)
	if len(rows) != 1 {
		t.Fatalf("session %s has %d rows, want exactly 1: %s", sessionID, len(rows), describeRows(rows))
	}
	return rows[0]
}

// base is a fixed instant with a microsecond part, so precision loss shows.
var base = time.Date(2026, 8, 12, 9, 30, 15, 123456000, time.UTC)

func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

func str(s string) *string           { return &s }
func ptrTime(t time.Time) *time.Time { return &t }
func i64(v int64) *int64             { return &v }

// WantError checks an error where the contract expects one: it matches
// target (errors.Is; nil: any error), and its message starts with the
// library's prefix, once (docs/CONTRACT.md: every error is prefixed
// "subagentctx:"; an error that wraps another of the library's does not
// repeat it).
func WantError(t testing.TB, what string, err, target error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error, want %v", what, target)
	case target != nil && !errors.Is(err, target):
		t.Errorf("%s: %v, want %v", what, err, target)
	case !strings.HasPrefix(err.Error(), storekit.Prefix) ||
		strings.Count(err.Error(), strings.TrimSpace(storekit.Prefix)) != 1:
		t.Errorf("%s: %q: want the prefix %q once, at the start", what, err, storekit.Prefix)
	}
}

// Diff lists the columns in which got differs from want, ignoring id and
// updated_at (assigned by the store). Times compare as instants.
func Diff(want, got core.Subagent) []string {
	var d []string
	for _, c := range storekit.Columns() {
		if c.Name == "id" || c.Name == "updated_at" {
			continue
		}
		if w, g := c.Format(&want), c.Format(&got); w != g {
			d = append(d, fmt.Sprintf("%s: want %s, got %s", c.Name, w, g))
		}
	}
	return d
}

func show[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", fmt.Sprint(*p))
}

func showTime(t *time.Time) string {
	if t == nil {
		return "NULL"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func describeRows(rows []core.Subagent) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(
			&b, "\n  %s/%s/%s observed=%s", r.TaskSessionID, r.AgentExecutionID, r.ToolCallID, showTime(&r.ObservedAt),
		)
	}
	return b.String()
}

func assertRow(t *testing.T, want, got core.Subagent) {
	t.Helper()
	if d := Diff(want, got); len(d) > 0 {
		t.Errorf(
			"row %s/%s/%s differs:\n  %s", got.TaskSessionID, got.AgentExecutionID, got.ToolCallID, strings.Join(d, "\n  "),
		)
	}
}
