package migration

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status is a step's outcome.
type Status string

// Step outcomes.
const (
	Ran     Status = "ran"
	Skipped Status = "skipped"
	Failed  Status = "failed"
	// Cancelled: the step's context was cancelled (a host shutting down);
	// nothing was written that claims success, and it is not a failure.
	// A step that ran out of its deadline is Failed.
	Cancelled Status = "cancelled"
)

// Step names, in the order a pass runs them (AC-33c).
const (
	StepTable        = "table"
	StepShape        = "shape"
	StepExecutionKey = "execution_key"
	StepBackfill     = "backfill"
)

// StepResult is one step's outcome.
type StepResult struct {
	Step   string `json:"step"`
	Status Status `json:"status"`
	// Detail says what was done, why the step was skipped, or why it failed.
	Detail string `json:"detail,omitempty"`
	// Err is the failure, when Status is Failed or Cancelled; on a step
	// that ran, what it left to the table's owner (wrapping
	// sqlstore.ErrLeftToOwner), or nil.
	Err          error `json:"-"`
	RowsInserted int64 `json:"rows_inserted,omitempty"`
	// RowsMerged: in the backfill, live rows merged with their history; in
	// the shape step, pairs an earlier build doubled, merged into one row
	// (docs/CONTRACT.md §8.5).
	RowsMerged  int64         `json:"rows_merged,omitempty"`
	KeysWritten []string      `json:"keys_written,omitempty"`
	Duration    time.Duration `json:"duration_ns"`
}

// Report is the outcome of one pass, step by step.
type Report struct {
	Steps []StepResult `json:"steps"`
}

// Failed reports whether any step failed.
func (r Report) Failed() bool {
	for _, s := range r.Steps {
		if s.Status == Failed {
			return true
		}
	}
	return false
}

// Err is the pass's failure as one error: every failed or cancelled
// step's, joined (nil when each step ran or was skipped). A step that ran
// out of its deadline is failed, and its error wraps
// context.DeadlineExceeded.
func (r Report) Err() error {
	var errs []error
	for _, s := range r.Steps {
		if s.Status == Failed || s.Status == Cancelled {
			errs = append(errs, s.Err)
		}
	}
	return errors.Join(errs...)
}

// Cancelled reports whether any step was cancelled.
func (r Report) Cancelled() bool {
	for _, s := range r.Steps {
		if s.Status == Cancelled {
			return true
		}
	}
	return false
}

// failedSteps names the steps that failed or were cancelled.
func (r Report) failedSteps() string {
	var names []string
	for _, s := range r.Steps {
		if s.Status == Failed || s.Status == Cancelled {
			names = append(names, s.Step+": "+s.Detail)
		}
	}
	return strings.Join(names, "; ")
}

// Step returns the result of the named step (zero when it did not run).
func (r Report) Step(name string) StepResult {
	for _, s := range r.Steps {
		if s.Step == name {
			return s
		}
	}
	return StepResult{}
}

func (r Report) String() string {
	var b strings.Builder
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "%-14s %-7s %s", s.Step, s.Status, s.Detail)
		if len(s.KeysWritten) > 0 {
			fmt.Fprintf(&b, " [wrote %s]", strings.Join(s.KeysWritten, ", "))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
