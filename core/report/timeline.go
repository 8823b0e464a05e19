package report

import (
	"context"
	"fmt"
	"time"
)

// Timeliner reads a window's activity over time (docs/CONTRACT.md §5.6):
// the SQL stores and the memory store implement it.
type Timeliner interface {
	Timeline(ctx context.Context, q TimelineQuery) (Timeline, error)
}

// TimelineQuery is a window — the rows observed in [Since, Until), a zero
// bound open — cut into buckets of Bucket, counted from the Unix epoch
// (so a bucket of an hour is a UTC hour, a day a UTC day).
type TimelineQuery struct {
	Since, Until time.Time
	Bucket       time.Duration
}

// Validate checks the query, naming what is wrong.
func (q TimelineQuery) Validate() error {
	switch {
	case q.Bucket < time.Second || q.Bucket%time.Microsecond != 0:
		return fmt.Errorf("timeline: a bucket of %v: want a second or more, in whole microseconds", q.Bucket)
	case !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Sub(q.Since)/q.Bucket > MaxTimelineBuckets:
		return fmt.Errorf("timeline: %v in buckets of %v is more than %d buckets", q.Until.Sub(q.Since), q.Bucket,
			MaxTimelineBuckets)
	}
	return validWindow("timeline", q.Since, q.Until)
}

// Timeline is a window's activity per bucket, the buckets with a row in
// them only, the earliest first.
type Timeline struct {
	Query   TimelineQuery `json:"query"`
	Buckets []Bucket      `json:"buckets"`
}

// Bucket is the rows observed in [Start, Start+Bucket): how many, how many
// failed (a tool status in FailedToolStatuses), and their tokens over the
// rows that reported them.
type Bucket struct {
	Start       time.Time `json:"start"`
	Invocations int64     `json:"invocations"`
	Failed      int64     `json:"failed"`
	TotalTokens Metric    `json:"total_tokens"`
}
