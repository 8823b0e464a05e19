// Package await bounds the waits of tests: a channel that never delivers
// fails the test after Limit instead of hanging it until go test's own
// timeout (ten minutes, with no word of what it waited for).
package await

import (
	"fmt"
	"testing"
	"time"
)

// Limit is how long a test waits for a channel. Generous: the waits it
// bounds are for work that takes milliseconds, on a loaded CI machine.
const Limit = 2 * time.Minute

// Recv is the next value from ch, or a fatal test failure naming what
// was awaited if none comes within Limit.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	v, err := Within(ch, Limit)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return v
}

// Within is the next value from ch, or an error after d: for waits in
// goroutines a test starts, which cannot stop the test themselves.
func Within[T any](ch <-chan T, d time.Duration) (T, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v, nil
	case <-timer.C:
		var zero T
		return zero, fmt.Errorf("nothing after %v", d)
	}
}

// Poll asks cond every 20 ms until it holds, or returns an error after d:
// for a state another goroutine or process reaches, such as a statement
// waiting on the server.
func Poll(d time.Duration, cond func() bool) error {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", d)
		}
	}
	return nil
}
