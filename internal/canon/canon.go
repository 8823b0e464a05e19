// Package canon holds the forms in which every store keeps a value, and
// the checks that refuse what no store could keep exactly: core applies
// them when it turns a frame into a row, core/report when it compares
// instants, core/storekit when a store validates and merges rows. They are
// written once, here, so that the three cannot disagree.
package canon

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Time is the form in which every adapter stores a timestamp: UTC,
// truncated to the microsecond (docs/CONTRACT.md §2, AC-24e).
func Time(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// IsTime reports whether t is already in its stored form.
func IsTime(t time.Time) bool { return t.Location() == time.UTC && t.Nanosecond()%1000 == 0 }

// CeilMicro is t rounded up to the next whole microsecond (t itself when
// it has no finer digits). A stored time, which has none, is at or after t
// exactly when it is at or after CeilMicro(t) (docs/CONTRACT.md §8.7).
func CeilMicro(t time.Time) time.Time {
	c := Time(t)
	if c.Equal(t) {
		return c
	}
	return c.Add(time.Microsecond)
}

// InWindow reports whether an instant, at the stores' microsecond, is in
// [since, until), a zero bound open.
func InWindow(t, since, until time.Time) bool {
	t = Time(t)
	return (since.IsZero() || !t.Before(CeilMicro(since))) && (until.IsZero() || t.Before(CeilMicro(until)))
}

// Sanitize makes descriptive text storable identically on every adapter:
// PostgreSQL rejects NUL bytes and invalid UTF-8 in text, so each NUL byte
// and each invalid UTF-8 sequence becomes U+FFFD on every adapter. Control
// characters, quotes and other bytes are kept as they are. Identifiers are
// not sanitized (two different ids must never become one); CheckIdentifier
// refuses them instead.
func Sanitize(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// MaxTextBytes bounds each descriptive text of a frame — its
// description, subagent type, model and statuses (docs/CONTRACT.md §3.1):
// a longer one is stored cut at a character boundary and marked with
// TruncatedMark, within the bound, never refused for its length.
const MaxTextBytes = 64 << 10

// TruncatedMark ends a text Cap cut.
const TruncatedMark = "…[truncated]"

// Cap is s within MaxTextBytes, and whether it was cut.
func Cap(s string) (string, bool) {
	if len(s) <= MaxTextBytes {
		return s, false
	}
	cut := MaxTextBytes - len(TruncatedMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + TruncatedMark, true
}

// MaxIDBytes bounds every identifier (docs/CONTRACT.md §8.3): three of them,
// the unique key, always fit one PostgreSQL B-tree entry, so a longer one is
// refused on every adapter alike.
const MaxIDBytes = 512

// CheckIdentifier reports why an identifier could not be stored exactly as
// given on every adapter, or nil.
func CheckIdentifier(id string) error {
	switch {
	case len(id) > MaxIDBytes:
		return fmt.Errorf("is %d bytes, longer than %d", len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return errors.New("is not valid UTF-8")
	case strings.ContainsRune(id, 0):
		return errors.New("contains a NUL byte")
	}
	return nil
}

// terminalToolStatuses is exactly the set of ACP tool statuses that settle a
// row (AC-11). It mirrors Kandev's isTerminalToolStatus; a test pins it.
var terminalToolStatuses = [...]string{"complete", "completed", "success", "error", "failed", "cancelled"}

// TerminalToolStatuses returns the statuses that settle a row (AC-11).
func TerminalToolStatuses() []string { return slices.Clone(terminalToolStatuses[:]) }

// IsTerminalToolStatus reports whether an ACP tool status settles a row
// (AC-11). agent_status never does, whatever its value (AC-10a).
func IsTerminalToolStatus(status string) bool {
	return slices.Contains(terminalToolStatuses[:], status)
}

// failedToolStatuses are the terminal statuses that mean the invocation
// did not succeed: the overview counts them as failed (docs/CONTRACT.md
// §5.4).
var failedToolStatuses = [...]string{"error", "failed", "cancelled"}

// FailedToolStatuses returns the tool statuses counted as failed.
func FailedToolStatuses() []string { return slices.Clone(failedToolStatuses[:]) }

// IsFailedToolStatus reports whether a tool status counts as failed.
func IsFailedToolStatus(status string) bool { return slices.Contains(failedToolStatuses[:], status) }

// failedAgentStatuses are the agent statuses that mean the subagent's own
// run failed, whatever its tool call said: a background run that fails
// after its launch settled (docs/CONTRACT.md §5.4).
var failedAgentStatuses = [...]string{"failed", "error"}

// FailedAgentStatuses returns the agent statuses counted as failed.
func FailedAgentStatuses() []string { return slices.Clone(failedAgentStatuses[:]) }

// Failed reports whether a row counts as failed: its tool status is a
// failed one, or its agent status is (docs/CONTRACT.md §5.4).
func Failed(toolStatus, agentStatus *string) bool {
	return toolStatus != nil && IsFailedToolStatus(*toolStatus) ||
		agentStatus != nil && slices.Contains(failedAgentStatuses[:], *agentStatus)
}

// The least value each metric keeps, on the live path and in history
// alike: a reported value below it is NULL (AC-7a), a negative one
// anomalous on the live path (AC-9). The column declaration carries them
// (storekit.Columns' Min); core.Normalize applies them.
const (
	MinTotalTokens  = 1
	MinToolUseCount = 0
	MinDurationMs   = 1
)

// Arena backs the pointers of one row, so that a row's nullable columns
// cost one allocation rather than one each (the record path is hot). Values
// are placed in order; the capacities leave room for columns yet to come
// (a test checks they hold what the column declaration declares).
type Arena struct {
	texts      [12]string
	ints       [8]int64
	times      [3]time.Time
	nt, ni, nm int
}

// Capacity is how many text, integer and time values an Arena holds.
func Capacity() (texts, ints, times int) {
	var a Arena
	return len(a.texts), len(a.ints), len(a.times)
}

// Text places a text value.
func (a *Arena) Text(v string) *string {
	a.texts[a.nt] = v
	a.nt++
	return &a.texts[a.nt-1]
}

// NonEmpty places a nullable text value: "" ⇒ NULL.
func (a *Arena) NonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return a.Text(s)
}

// Int places an integer.
func (a *Arena) Int(v int64) *int64 {
	a.ints[a.ni] = v
	a.ni++
	return &a.ints[a.ni-1]
}

// Time places an instant.
func (a *Arena) Time(v time.Time) *time.Time {
	a.times[a.nm] = v
	a.nm++
	return &a.times[a.nm-1]
}
