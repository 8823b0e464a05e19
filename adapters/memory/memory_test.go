package memory_test

import (
	"context"
	"testing"

	"github.com/subagentctx/subagentctx/adapters/memory"
	"github.com/subagentctx/subagentctx/core/storetest"
)

// TestConformance runs the store suite with the memory store's declared
// differences: no session foreign key, never activated, written on the
// caller's goroutine.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		s := memory.New()
		return storetest.Harness{
			Store:         s,
			Features:      storetest.Features{Synchronous: true},
			DeleteSession: func(ctx context.Context, id string) error { return s.DeleteSession(ctx, id) },
		}
	})
}
