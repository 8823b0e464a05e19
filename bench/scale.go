package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/postgres"
	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/kandevtest"
	"github.com/subagentctx/subagentctx/webview"
)

// The scale measure's store: rows and as many host messages over
// perSession-row sessions, one every few seconds across span, the newest
// ending now.
const (
	perSession = 20
	span       = 30 * 24 * time.Hour
)

// scalePages are the overview pages the scale measure times, each beside
// the same answers by hand on the same layout (the limit under it).
var scalePages = []struct {
	name, path string
	window     time.Duration
}{
	{"web view: overview, last 24 h", "/", 24 * time.Hour},
	{"web view: overview, last 7 days", "/?range=7d", 7 * 24 * time.Hour},
	{"web view: overview, last 30 days", "/?range=30d", span},
}

// layout is one of the two databases the scale measure compares.
type layout struct {
	name, dsn string
	rows      int
	sharded   bool
}

// figures are one layout's measured reads, by name, and its sizes.
type figures struct {
	took  map[string]time.Duration
	rate  float64 // live frames per second
	sizes string
}

// benchScale (-size large) measures the reads at scale (docs/citus.md):
// c.scale rows on a Citus cluster of a coordinator and two workers (32
// shards, colocated as that page says) beside a single
// PostgreSQL server holding one worker's share, each loaded set-based,
// then each read the web view and the command line make timed on both —
// the overview pages, health and statistics over the whole record, an
// hour's export — and the live upsert's rate, with the bytes each takes.
func benchScale(ctx context.Context, c config) ([]result, error) {
	citus := os.Getenv("SUBAGENTCTX_TEST_CITUS_DSN")
	if citus == "" {
		return nil, errors.New("the scale measure needs a Citus cluster in SUBAGENTCTX_TEST_CITUS_DSN " +
			"(scripts/bench -size large starts one where Citus is installed)")
	}
	now := time.Now().UTC().Truncate(time.Second)
	var got []figures
	for _, l := range []layout{{"citus", citus, c.scale, true}, {"postgres", c.pgAdmin, c.scale / 2, false}} {
		log := func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "scale, %s: "+format+"\n", append([]any{l.name}, args...)...)
		}
		f, err := measureLayout(ctx, c, l, now, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		got = append(got, f)
	}
	sharded, single := got[0], got[1]
	size := fmt.Sprintf("%d rows on 2 workers | %d on one server", c.scale, c.scale/2)
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var out []result
	for _, p := range scalePages {
		// A page within 1.5× of one server's, or within 1.2× of the same
		// answers by hand on the cluster: the limit the sharding sets.
		a, b := sharded.took[p.name], single.took[p.name]
		ha, hb := sharded.took[p.name+", by hand"], single.took[p.name+", by hand"]
		out = append(out, result{What: "at scale: " + p.name, Dialect: "citus | postgres", Size: size, Library: ms(a),
			Baseline: ms(b) + " (one server, one worker's share)", Ratio: a.Seconds() / b.Seconds(),
			Target: "≤ 1.5×, or ≤ 1.2× by hand on Citus", Pass: a <= b*3/2 || a.Seconds() <= 1.2*ha.Seconds(),
			Note: fmt.Sprintf("the same answers by hand: %s on Citus (page %.2f×), %s on one server (page %.2f×)",
				ms(ha), a.Seconds()/ha.Seconds(), ms(hb), b.Seconds()/hb.Seconds())})
	}
	for _, m := range []struct {
		name, target string
		pass         func(sharded, single time.Duration) bool
	}{
		{"health, the whole record", "answers", func(time.Duration, time.Duration) bool { return true }},
		{"stats, the whole store", "≤ 1.5×", func(a, b time.Duration) bool { return a <= b*3/2 }},
		{"export --since 1h, no index on updated_at", "", nil},
		{"export --since 1h, the operator's index", "< 500 ms", func(a, _ time.Duration) bool {
			return a < 500*time.Millisecond
		}},
	} {
		a, b := sharded.took[m.name], single.took[m.name]
		r := result{What: "at scale: " + m.name, Dialect: "citus | postgres", Size: size, Library: ms(a),
			Baseline: ms(b) + " (one server, one worker's share)", Ratio: a.Seconds() / b.Seconds(), Target: m.target}
		if m.pass != nil {
			r.Pass = m.pass(a, b)
		}
		out = append(out, r)
	}
	return append(out,
		result{What: "at scale: live frames", Dialect: "citus | postgres", Size: size,
			Library:  fmt.Sprintf("%.0f frames/s", sharded.rate),
			Baseline: fmt.Sprintf("%.0f frames/s (one server)", single.rate), Ratio: sharded.rate / single.rate,
			Target: "≥ 0.33× (ratio here is the rate's)", Pass: 3*sharded.rate >= single.rate},
		result{What: "at scale: bytes", Dialect: "citus", Size: fmt.Sprintf("%d rows", c.scale), Library: sharded.sizes,
			Baseline: "-", Target: "measured", Pass: true},
		result{What: "at scale: bytes", Dialect: "postgres", Size: fmt.Sprintf("%d rows", c.scale/2),
			Library: single.sizes, Baseline: "-", Target: "measured", Pass: true},
	), nil
}

// measureLayout loads l's store in a schema of its own, times each read
// c.runs times (the median kept) and drops the schema.
func measureLayout(ctx context.Context, c config, l layout, now time.Time, log func(string, ...any)) (figures, error) {
	f := figures{took: map[string]time.Duration{}}
	db, drop, err := openSchema(l.dsn)
	if err != nil {
		return f, err
	}
	defer drop()
	if err := kandevtest.CreateTables(ctx, db, sqlstore.Tables{}); err != nil {
		return f, err
	}
	if l.sharded {
		if err := kandevtest.Distribute(ctx, db, sqlstore.Tables{}, 32); err != nil {
			return f, err
		}
	}
	s, err := postgres.New(db)
	if err == nil {
		err = s.EnsureSchema(ctx)
	}
	if err != nil {
		return f, err
	}
	start := time.Now()
	if err := loadScale(ctx, db, l.rows, now, log); err != nil {
		return f, err
	}
	log("%d rows and messages loaded in %v", l.rows, time.Since(start).Round(time.Second))
	timeIt := func(name string, fn func() error) error {
		var took []time.Duration
		for range c.runs {
			t0 := time.Now()
			if err := fn(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			took = append(took, time.Since(t0))
		}
		f.took[name] = median(took)
		log("%s: %v", name, f.took[name].Round(time.Millisecond))
		return nil
	}
	h := webview.New(s, webview.WithClock(func() time.Time { return now }),
		// The cost of a page is measured, whatever it is: the view's
		// default deadline (10 s) would answer the long ranges with 503.
		webview.WithReadTimeout(time.Hour))
	for _, p := range scalePages {
		if err := timeIt(p.name, func() error { _, err := page(ctx, h, p.path); return err }); err != nil {
			return f, err
		}
		args := []any{now.Add(-p.window), now.Add(time.Minute), "%"}
		if err := timeIt(p.name+", by hand", func() error {
			_, err := answersByHand(ctx, s, "overview", "postgres", args, now)
			return err
		}); err != nil {
			return f, err
		}
	}
	if err := timeIt("health, the whole record", func() error {
		hl, err := s.Health(ctx, report.HealthQuery{})
		if err == nil && (hl.Shortfall != 0 || hl.Excess != 0) {
			err = fmt.Errorf("shortfall %d, excess %d on the loaded store, want 0", hl.Shortfall, hl.Excess)
		}
		return err
	}); err != nil {
		return f, err
	}
	if err := timeIt("stats, the whole store", func() error {
		st, err := s.Stats(ctx, report.StatsQuery{})
		if err == nil && st.Subagents != int64(l.rows) {
			err = fmt.Errorf("%d subagents, want %d", st.Subagents, l.rows)
		}
		return err
	}); err != nil {
		return f, err
	}
	// The hour before now, which the rows recorded live below, written
	// after it, stay out of; its rows counted by hand.
	hour := report.ExportQuery{Since: now.Add(-time.Hour), Until: now}
	var want int
	if err := db.WithContext(ctx).Raw(`SELECT count(*) FROM task_session_subagents
		WHERE updated_at >= ? AND updated_at < ?`, hour.Since, hour.Until).Row().Scan(&want); err != nil {
		return f, err
	}
	export := func() error {
		n := 0
		for _, err := range s.Export(ctx, hour) {
			if err != nil {
				return err
			}
			n++
		}
		if n != want || n == 0 {
			return fmt.Errorf("%d rows in the last hour, want %d", n, want)
		}
		return nil
	}
	if err := timeIt("export --since 1h, no index on updated_at", export); err != nil {
		return f, err
	}
	if f.rate, err = liveRate(ctx, c, s, l.name); err != nil {
		return f, err
	}
	log("live: %.0f frames/s", f.rate)
	if f.sizes, err = scaleSizes(ctx, db, l); err != nil {
		return f, err
	}
	if err := db.Exec(`CREATE INDEX task_session_subagents_updated_at_idx ON task_session_subagents (updated_at)`).
		Error; err != nil {
		return f, err
	}
	if err := db.Exec(`ANALYZE task_session_subagents`).Error; err != nil {
		return f, err
	}
	return f, timeIt("export --since 1h, the operator's index", export)
}

// openSchema opens dsn in a new schema of its own; drop drops it.
func openSchema(dsn string) (*gorm.DB, func(), error) {
	admin, err := postgres.OpenDB(dsn)
	if err != nil {
		return nil, nil, err
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "scale_" + hex.EncodeToString(b)
	if err := admin.Exec("CREATE SCHEMA " + name).Error; err != nil {
		return nil, nil, err
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, nil, err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	db, err := postgres.OpenDB(u.String())
	if err != nil {
		return nil, nil, err
	}
	return db, func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
		admin.Exec("DROP SCHEMA IF EXISTS " + name + " CASCADE")
		if a, err := admin.DB(); err == nil {
			a.Close()
		}
	}, nil
}

// loadScale writes n host messages and their n rows set-based: sessions of
// perSession Claude Code subagent calls, four subagent types and three
// models in turn, one call in fifty failed, each row what the recorder
// writes for its call (observed when the message was created, settled and
// last written when it ended), then the host index docs/operations.md names and
// the activation keys as a pass that ran before the first message leaves
// them. The messages and rows are made from the sessions, a million at a
// time, so that on Citus each statement runs on the shards at once.
func loadScale(ctx context.Context, db *gorm.DB, n int, now time.Time, log func(string, ...any)) error {
	meta := kandevtest.Subagent("@TOOL@", "completed", &kandevtest.ClaudeCompleted).JSON()
	tpl, _ := core.Normalize(core.Frame{TaskSessionID: "s", TaskID: "t", ToolCallID: "t", ToolStatus: "completed",
		ObservedAt: now, Payload: &kandevtest.ClaudeCompleted})
	t0 := now.Add(-span)
	step := span / time.Duration(n) // between one message and the next
	// Call i is call j of session k: its instant is t0 + i steps.
	at := func(i string) string {
		return fmt.Sprintf("(timestamptz '%s' + (%s * %d) * interval '1 microsecond')", t0.Format(time.RFC3339Nano), i,
			step.Microseconds())
	}
	i := fmt.Sprintf("(substr(s.id, 3)::bigint * %d + j)", perSession)
	calls := fmt.Sprintf(` FROM task_sessions s CROSS JOIN generate_series(0, %d) AS j WHERE s.id >= ? AND s.id < ?`,
		perSession-1)
	turn := "s.id || '-t' || (j / 5)"
	d := "(500 + " + i + " * 104729 % 600000)" // duration_ms
	sessions := `INSERT INTO task_sessions (id, task_id, started_at, updated_at)
		SELECT 'sc' || lpad(k::text, 8, '0'), 'sc' || lpad(k::text, 8, '0') || '-task',
			` + at(fmt.Sprint("k * ", perSession)) + ` AT TIME ZONE 'UTC', ` + at(fmt.Sprint("k * ", perSession)) +
		` AT TIME ZONE 'UTC'
		FROM generate_series(?::bigint, ?::bigint - 1) AS k`
	messages := `INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, author_type, content, type,
			metadata, created_at, updated_at)
		SELECT 'm' || ` + i + `, s.id, s.task_id, ` + turn + `, 'agent', '', 'tool_call',
			replace(?, '@TOOL@', 'toolu_' || ` + i + `), ` + at(i) + ` AT TIME ZONE 'UTC', ` + at(i) + ` AT TIME ZONE 'UTC'` +
		calls
	rows := `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, agent_execution_id,
			tool_call_id, subagent_type, description, agent_id, model, agent_status, tool_status, is_async, total_tokens,
			tool_use_count, duration_ms, source, observed_at, settled_at, updated_at, seam_checked)
		SELECT md5('row' || ` + i + `)::uuid::text, s.id, s.task_id, ` + turn + `, 'exec-' || s.id, 'toolu_' || ` + i + `,
			(ARRAY['general-purpose', 'explore', 'planner', 'worker'])[1 + ` + i + ` % 4], ?, ?,
			(ARRAY['claude-sonnet-4-5-20250929', 'claude-opus-4-1', 'claude-haiku-4-5'])[1 + ` + i + ` % 3],
			CASE WHEN ` + i + ` % 50 = 7 THEN 'failed' ELSE ? END,
			CASE WHEN ` + i + ` % 50 = 7 THEN 'failed' ELSE 'completed' END,
			?, 1000 + ` + i + ` * 7919 % 300000, ?, ` + d + `, 'live', ` + at(i) + `,
			` + at(i) + ` + ` + d + ` * interval '1 millisecond', ` + at(i) + ` + ` + d + ` * interval '1 millisecond', 1` +
		calls
	async := 0 // is_async is an integer column
	if tpl.IsAsync {
		async = 1
	}
	total := (n + perSession - 1) / perSession
	const chunk = 1_000_000 / perSession // sessions a statement writes
	for lo := 0; lo < total; lo += chunk {
		hi := min(lo+chunk, total)
		first, last := fmt.Sprintf("sc%08d", lo), fmt.Sprintf("sc%08d", hi)
		for _, st := range []struct {
			q    string
			args []any
		}{
			{sessions, []any{lo, hi}},
			{messages, []any{meta, first, last}},
			{rows, []any{*tpl.Description, *tpl.AgentID, *tpl.AgentStatus, async, *tpl.ToolUseCount, first, last}},
		} {
			if err := db.WithContext(ctx).Exec(st.q, st.args...).Error; err != nil {
				return fmt.Errorf("load sessions %d–%d: %w", lo, hi, err)
			}
		}
		log("loaded %d of %d", hi*perSession, total*perSession)
	}
	first := t0.Add(-time.Minute).Format(time.RFC3339Nano)
	for _, k := range []string{storekit.CaptureSinceKey, storekit.ExecutionSinceKey} {
		if err := db.Exec(`INSERT INTO kandev_meta ("key", value) VALUES (?, ?)
			ON CONFLICT ("key") DO UPDATE SET value = excluded.value`, k, first).Error; err != nil {
			return err
		}
	}
	for _, x := range sqlstore.HostIndexes(sqlstore.Tables{}) {
		if x.Column != "task_session_id" { // kandevtest's tables have that one
			if err := db.Exec(x.Statement()).Error; err != nil {
				return err
			}
		}
	}
	return db.WithContext(ctx).Exec(`ANALYZE`).Error
}

// liveRate records fresh sessions through the recorder on the loaded
// store and returns its rate.
func liveRate(ctx context.Context, c config, s *sqlstore.Store, name string) (float64, error) {
	ids, perCaller, total := streams(c.sessions, 8)
	for _, id := range ids {
		if err := kandevtest.InsertSession(ctx, s.DB(), sqlstore.Tables{}, id, "task"); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	if err := viaRecorder(ctx, s, name, perCaller); err != nil {
		return 0, err
	}
	return float64(total) / time.Since(start).Seconds(), nil
}

// scaleSizes is the record's bytes per row, the table's and its indexes'
// (each index by name on one server; on Citus their sum over the shards).
func scaleSizes(ctx context.Context, db *gorm.DB, l layout) (string, error) {
	var table, indexes int64
	var parts []string
	if l.sharded {
		if err := db.WithContext(ctx).Raw(`SELECT citus_table_size('task_session_subagents'),
			citus_total_relation_size('task_session_subagents') - citus_table_size('task_session_subagents')`).
			Row().Scan(&table, &indexes); err != nil {
			return "", err
		}
	} else {
		var ps []part
		if err := db.WithContext(ctx).Raw(`SELECT c.relname AS name, pg_relation_size(i.indexrelid) AS bytes
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE i.indrelid = 'task_session_subagents'::regclass ORDER BY 1`).Scan(&ps).Error; err != nil {
			return "", err
		}
		if err := db.WithContext(ctx).Raw(`SELECT pg_table_size('task_session_subagents')`).Row().Scan(&table); err != nil {
			return "", err
		}
		for _, p := range ps {
			indexes += p.Bytes
			parts = append(parts, fmt.Sprintf("%s %.0f", p.Name, float64(p.Bytes)/float64(l.rows)))
		}
	}
	per := func(b int64) float64 { return float64(b) / float64(l.rows) }
	text := fmt.Sprintf("%.0f B/row: table %.0f, indexes %.0f (%.1f GB)", per(table+indexes), per(table), per(indexes),
		float64(table+indexes)/1e9)
	if len(parts) > 0 {
		text += "; " + strings.Join(parts, ", ")
	}
	return text, nil
}
