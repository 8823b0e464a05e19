package mapstore_test

import (
	"testing"

	"github.com/subagentctx/subagentctx/core/storetest"
	"github.com/subagentctx/subagentctx/examples/mapstore"
)

// TestConformance runs the contract's whole suite, unchanged, against the
// store written from the SPI alone.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		s := mapstore.New()
		return storetest.Harness{Store: s, DeleteSession: s.DeleteSession}
	})
}
