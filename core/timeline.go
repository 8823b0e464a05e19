package core

import (
	"context"
	"fmt"
	"math/big"
	"slices"
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

// MaxTimelineBuckets bounds the buckets a bounded window may be cut into.
const MaxTimelineBuckets = 10000

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

// BucketOf is the bucket index of an instant: its Unix microseconds
// divided by the bucket's, rounded down (before 1970 too).
func BucketOf(t time.Time, bucket time.Duration) int64 {
	us, b := CanonicalTime(t).UnixMicro(), bucket.Microseconds()
	k := us / b
	if us%b < 0 {
		k--
	}
	return k
}

// TimelineOf is the Go reference of a timeline: what every store's
// Timeline must return for the same rows.
func TimelineOf(rows []Subagent, q TimelineQuery) Timeline {
	t := Timeline{Query: q}
	byIndex := map[int64]*Bucket{}
	var order []int64
	for _, r := range rows {
		if !inWindow(r.ObservedAt, q.Since, q.Until) {
			continue
		}
		k := BucketOf(r.ObservedAt, q.Bucket)
		b := byIndex[k]
		if b == nil {
			b = &Bucket{Start: time.UnixMicro(k * q.Bucket.Microseconds()).UTC()}
			byIndex[k] = b
			order = append(order, k)
		}
		b.Invocations++
		if r.ToolStatus != nil && IsFailedToolStatus(*r.ToolStatus) {
			b.Failed++
		}
		b.TotalTokens.add(r.TotalTokens)
	}
	slices.Sort(order)
	for _, k := range order {
		b := byIndex[k]
		b.TotalTokens.average()
		t.Buckets = append(t.Buckets, *b)
	}
	return t
}

// BucketFromSQL is a bucket read back from a store: its index, counts,
// and the tokens' reported count and exact sum.
func BucketFromSQL(q TimelineQuery, index, invocations, failed, reported int64, sum *big.Int) Bucket {
	b := Bucket{Start: time.UnixMicro(index * q.Bucket.Microseconds()).UTC(), Invocations: invocations, Failed: failed}
	b.TotalTokens.Set(invocations, reported, sum)
	return b
}
