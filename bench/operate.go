package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/kandevtest"
)

// benchOperate measures what an operator runs against a store of n
// messages and n rows, a session an hour, the newest ending now: health
// over the last hour beside health over the whole history (the floor of a
// window: the same check on the whole record), an export of every row
// with the Go heap's rise while it streams, and the bytes the table and
// each of its indexes take per row.
func benchOperate(ctx context.Context, c config, dialect string) ([]result, error) {
	n := c.operate
	s, cleanup, err := newStore(ctx, c, dialect)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := seedOperate(ctx, s, n); err != nil {
		return nil, err
	}
	size := fmt.Sprintf("%d messages and rows", n)
	timeHealth := func(since time.Time) (time.Duration, report.Health, error) {
		var took []time.Duration
		var h report.Health
		for range c.runs {
			start := time.Now()
			var err error
			if h, err = s.Health(ctx, report.HealthQuery{Since: since}); err != nil {
				return 0, h, err
			}
			took = append(took, time.Since(start))
		}
		return median(took), h, nil
	}
	hour, hh, err := timeHealth(time.Now().UTC().Add(-time.Hour))
	if err != nil {
		return nil, err
	}
	whole, wh, err := timeHealth(time.Time{})
	if err != nil {
		return nil, err
	}
	if hh.Shortfall != 0 || wh.Shortfall != 0 {
		return nil, fmt.Errorf("health on the seeded store: shortfall %d and %d, want 0", hh.Shortfall, wh.Shortfall)
	}
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	out := []result{{
		What: "health, last hour", Dialect: dialect, Size: size,
		Library: ms(hour), Baseline: ms(whole) + " (the whole history)", Ratio: hour.Seconds() / whole.Seconds(),
		Target: "≤ 100 ms", Pass: hour <= 100*time.Millisecond,
		Note: "host index on task_session_messages(created_at), as docs/operations.md says",
	}}
	var exported int
	var took time.Duration
	rise := peakHeap(func() {
		start := time.Now()
		for _, err2 := range s.Export(ctx, report.ExportQuery{}) {
			if err2 != nil {
				err = err2
				return
			}
			exported++
		}
		took = time.Since(start)
	})
	if err != nil || exported != n {
		return nil, fmt.Errorf("export: %d of %d rows: %v", exported, n, err)
	}
	out = append(out, result{
		What: "export, every row", Dialect: dialect, Size: size,
		Library:  fmt.Sprintf("%v (%.0f rows/s)", took.Round(time.Millisecond), float64(n)/took.Seconds()),
		Baseline: "-", Target: "Go heap flat (≤ 16 MiB rise)", Pass: rise <= 16<<20,
		Note: fmt.Sprintf("Go heap +%.1f MiB at peak", float64(rise)/(1<<20)),
	})
	pages, err := benchPages(ctx, c, s, dialect, n)
	if err != nil {
		return nil, err
	}
	out = append(out, pages...)
	sizes, err := tableSizes(ctx, s, dialect)
	if err != nil {
		return nil, err
	}
	var parts []string
	total := int64(0)
	for _, p := range sizes {
		parts = append(parts, fmt.Sprintf("%s %.0f", p.Name, float64(p.Bytes)/float64(n)))
		total += p.Bytes
	}
	return append(out, result{
		What: "bytes per row", Dialect: dialect, Size: size,
		Library: fmt.Sprintf("%.0f B/row (%.0f MB)", float64(total)/float64(n), float64(total)/1e6), Baseline: "-",
		Target: "measured", Pass: true, Note: strings.Join(parts, "; "),
	}), nil
}

// seedOperate writes n subagent messages and their n rows: sessions of a
// thousand, one an hour, the newest ending now, each message a Claude
// Code subagent call and each row its live record, observed and written
// when the message was created.
func seedOperate(ctx context.Context, s *sqlstore.Store, n int) error {
	db := s.DB()
	const perSession = 1000
	now := time.Now().UTC()
	sessions := (n + perSession - 1) / perSession
	msgs := make([]kandevtest.Message, 0, perSession)
	rows := make([]core.Subagent, 0, perSession)
	for i := range n {
		k := i / perSession
		sess := fmt.Sprintf("op%06d", k)
		at := now.Add(-time.Duration(sessions-k) * time.Hour).Add(time.Duration(i%perSession) * 3500 * time.Millisecond)
		if i%perSession == 0 {
			if err := kandevtest.InsertSession(ctx, db, sqlstore.Tables{}, sess, sess+"-task"); err != nil {
				return err
			}
		}
		tool := fmt.Sprintf("toolu_%d", i)
		meta := kandevtest.Subagent(tool, "completed", &kandevtest.ClaudeCompleted).JSON()
		msgs = append(msgs, kandevtest.Message{ID: fmt.Sprint("m", i), TaskSessionID: sess, TaskID: sess + "-task",
			TurnID: fmt.Sprintf("%s-t%d", sess, i%perSession/10), Metadata: &meta, CreatedAt: at, UpdatedAt: at})
		row, _ := core.Normalize(core.Frame{TaskSessionID: sess, TaskID: sess + "-task", ExecutionID: "exec-" + sess,
			TurnID: fmt.Sprintf("%s-t%d", sess, i%perSession/10), ToolCallID: tool, ToolStatus: "completed",
			ObservedAt: at, Payload: &kandevtest.ClaudeCompleted})
		rows = append(rows, row)
		if len(msgs) == perSession || i == n-1 {
			if err := kandevtest.InsertMessages(ctx, db, sqlstore.Tables{}, msgs); err != nil {
				return err
			}
			errs, err := s.UpsertBatch(ctx, rows)
			if err != nil {
				return err
			}
			for _, e := range errs {
				if e != nil {
					return e
				}
			}
			msgs, rows = msgs[:0], rows[:0]
		}
	}
	// Activated at the first message, as if the pass had run then.
	first := now.Add(-time.Duration(sessions) * time.Hour).Add(-time.Minute).Format(time.RFC3339Nano)
	for _, k := range []string{storekit.CaptureSinceKey, storekit.ExecutionSinceKey} {
		if err := db.Exec(`INSERT INTO kandev_meta ("key", value) VALUES (?, ?)`, k, first).Error; err != nil {
			return err
		}
	}
	for _, q := range []string{
		`CREATE INDEX idx_messages_created_at ON task_session_messages (created_at)`,
		`ANALYZE`,
	} {
		if err := db.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// part is a relation and its size.
type part struct {
	Name  string
	Bytes int64
}

// tableSizes is the record's table and each of its indexes, in bytes. On
// PostgreSQL from the catalog; on SQLite by dropping each index in turn
// and measuring the file after a VACUUM (the store is thrown away after).
func tableSizes(ctx context.Context, s *sqlstore.Store, dialect string) ([]part, error) {
	db := s.DB().WithContext(ctx)
	var out []part
	if dialect == "postgres" {
		err := db.Raw(`SELECT 'table' AS name, pg_relation_size('task_session_subagents') AS bytes
			UNION ALL
			SELECT c.relname, pg_relation_size(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE i.indrelid = 'task_session_subagents'::regclass`).Scan(&out).Error
		return out, err
	}
	fileSize := func() (int64, error) {
		var pages, pageSize int64
		if err := db.Exec(`VACUUM`).Error; err != nil {
			return 0, err
		}
		if err := db.Raw(`PRAGMA page_count`).Scan(&pages).Error; err != nil {
			return 0, err
		}
		err := db.Raw(`PRAGMA page_size`).Scan(&pageSize).Error
		return pages * pageSize, err
	}
	var names []string
	if err := db.Raw(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'task_session_subagents'
		AND sql IS NOT NULL`).Scan(&names).Error; err != nil {
		return nil, err
	}
	before, err := fileSize()
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if err := db.Exec(`DROP INDEX ` + name).Error; err != nil {
			return nil, err
		}
		after, err := fileSize()
		if err != nil {
			return nil, err
		}
		out, before = append(out, part{name, before - after}), after
	}
	// What is left of the record: the table with its key and primary key
	// (SQLite keeps them as implicit indexes), without the host's tables.
	if err := db.Exec(`DROP TABLE task_session_subagents`).Error; err != nil {
		return nil, err
	}
	after, err := fileSize()
	if err != nil {
		return nil, err
	}
	return append([]part{{"table with its key and primary key", before - after}}, out...), nil
}
