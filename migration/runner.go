package migration

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/subagentctx/subagentctx/internal/liberr"
)

// Runner runs the migration pass in the background until it completes, for
// a host that must not wait for it at start-up: the quick steps (table,
// shape, execution key), then the backfill, each retried in-process with
// backoff while it fails. Its progress is observable: Ready when the table
// is in its declared shape and the live path may write, Done when the whole pass
// has completed. Stop cancels it; a cancelled pass is reported as
// cancelled, not failed.
type Runner struct {
	m                  *Migrator
	retryMin, retryMax time.Duration

	ready, done chan struct{}
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	start       sync.Once

	mu   sync.Mutex
	last Report
	err  error
}

// RunnerOption configures a Runner.
type RunnerOption func(*Runner)

// WithRetry sets the backoff after a failed attempt: from first, doubling
// up to longest (default 1s to 1 minute).
func WithRetry(first, longest time.Duration) RunnerOption {
	return func(r *Runner) { r.retryMin, r.retryMax = first, longest }
}

// NewRunner returns a Runner for m's passes; Start starts it.
func NewRunner(m *Migrator, opts ...RunnerOption) *Runner {
	r := &Runner{m: m, retryMin: time.Second, retryMax: time.Minute, ready: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(r)
	}
	r.retryMin = max(r.retryMin, time.Millisecond)
	r.retryMax = max(r.retryMax, r.retryMin)
	return r
}

// ErrStopped is Wait's error when the runner was stopped before the pass
// completed.
var ErrStopped = errors.New("subagentctx: the migration pass was stopped before it completed")

// Start starts the pass in the background and returns at once; a second
// call does nothing. The pass runs until it completes or Stop is called
// (ctx only carries values such as a logger's; its cancellation does not
// stop the pass, which outlives a host's start-up context).
func (r *Runner) Start(ctx context.Context) {
	r.start.Do(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		r.mu.Lock()
		r.cancel = cancel
		r.mu.Unlock()
		r.wg.Add(1)
		go r.run(ctx)
	})
}

func (r *Runner) run(ctx context.Context) {
	defer r.wg.Done()
	defer close(r.done)
	var report Report
	for attempt := r.backoff(); ; {
		report = r.m.Prepare(ctx)
		r.publish(report, nil)
		if !report.Failed() && !report.Cancelled() {
			break
		}
		if !attempt(ctx, report) {
			r.publish(report, ErrStopped)
			return
		}
	}
	close(r.ready)
	for attempt := r.backoff(); ; {
		step := r.m.Backfill(ctx)
		full := Report{Steps: append(append([]StepResult(nil), report.Steps...), step)}
		r.publish(full, nil)
		if step.Status != Failed && step.Status != Cancelled {
			return
		}
		if !attempt(ctx, full) {
			r.publish(full, ErrStopped)
			return
		}
	}
}

// backoff returns a function that waits before the next attempt (logging
// the retry at WARN), false when the runner was stopped meanwhile.
func (r *Runner) backoff() func(context.Context, Report) bool {
	delay := r.retryMin
	return func(ctx context.Context, failed Report) bool {
		if ctx.Err() != nil {
			return false
		}
		r.m.log.LogAttrs(ctx, slog.LevelWarn, "subagentctx: migration pass incomplete; retrying in the background",
			slog.Duration("retry_in", delay), slog.String("failed_steps", failed.failedSteps()))
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return false
		}
		delay = min(2*delay, r.retryMax)
		return true
	}
}

func (r *Runner) publish(report Report, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, r.err = report, err
}

// Ready is closed once the table is in its declared shape (the quick steps
// succeeded): the live path may write. Give it to core.WithReady.
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// Done is closed once the whole pass has completed, or the runner stopped.
func (r *Runner) Done() <-chan struct{} { return r.done }

// Report is the latest attempt's report (every step so far).
func (r *Runner) Report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Wait returns the final report once the pass has completed (err nil), or
// ErrStopped when the runner was stopped first, or ctx's error.
func (r *Runner) Wait(ctx context.Context) (Report, error) {
	select {
	case <-r.done:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.last, r.err
	case <-ctx.Done():
		return r.Report(), context.Cause(ctx)
	}
}

// Stop cancels a running pass and waits for it to end (or for ctx). A
// pass cancelled mid-step writes nothing that claims success; the next
// boot completes it. Stopping a runner never started does nothing.
func (r *Runner) Stop(ctx context.Context) error {
	r.mu.Lock()
	cancel := r.cancel
	r.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.Join(liberr.Errorf("the migration pass did not stop in time"), context.Cause(ctx))
	}
}
