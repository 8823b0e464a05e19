package sqltest

import (
	"testing"

	"gorm.io/gorm"
)

// TestEarlierShapesAreOptional: a dialect that starts at this build's
// shape leaves the earlier shapes out, and a test of an upgrade from one
// skips, naming the dialect and the shape; one that has it runs it.
func TestEarlierShapesAreOptional(t *testing.T) {
	ran := false
	d := &Driver{Name: "third", EarlierTable: func(testing.TB, *gorm.DB) { ran = true }}
	var skipped bool
	t.Run("without", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		d.legacyTable(t, nil)
		t.Error("an upgrade from a shape the dialect lacks ran")
	})
	if !skipped {
		t.Error("the upgrade from the first draft's table did not skip")
	}
	t.Run("with", func(t *testing.T) { d.earlierTable(t, nil) })
	if !ran {
		t.Error("the dialect's earlier table was not made")
	}
}
