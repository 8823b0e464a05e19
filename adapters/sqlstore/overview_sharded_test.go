package sqlstore_test

import (
	"math"
	"slices"
	"testing"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/internal/testenv"
)

// TestDurationBucketsHoldTheirDurations (docs/CONTRACT.md §5.4's nearest
// ranks, on Citus by §8.10): the bucket PostgreSQL numbers a duration into
// is the one whose bounds, as the store reads them, hold it, and the
// numbering follows the durations' order — the exact ranks are found
// through it.
func TestDurationBucketsHoldTheirDurations(t *testing.T) {
	e := testenv.Postgres().Env(t)
	durations := []int64{1, 2, 15, 16, 255, 256, 257, 4095, 4096, 4097, 65535, 65536, 48211, 600500, 1 << 32,
		1<<40 + 7, 1<<56 - 1, 1 << 56, math.MaxInt64 - 1, math.MaxInt64}
	slices.Sort(durations)
	previous := int64(-1)
	for _, d := range durations {
		var b int64
		if err := e.DB.Raw("SELECT "+sqlstore.DurationBucket+" FROM (SELECT CAST(? AS BIGINT) AS duration_ms) x", d).
			Row().Scan(&b); err != nil {
			t.Fatal(err)
		}
		lo, hi := sqlstore.BucketBounds(b)
		if d < lo || hi != 0 && d >= hi {
			t.Errorf("duration %d: bucket %d holds [%d, %d)", d, b, lo, hi)
		}
		if b < previous {
			t.Errorf("duration %d: bucket %d, below the bucket of a shorter duration (%d)", d, b, previous)
		}
		previous = b
	}
}
