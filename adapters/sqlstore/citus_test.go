package sqlstore_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/internal/testenv"
)

// Plan lines that mean rows travel to the coordinator: a subquery or CTE
// planned apart and its result broadcast, an INSERT … SELECT whose rows
// pass through the coordinator, a join that reshuffles rows between
// workers.
var gathered = regexp.MustCompile(`Distributed Subplan|pull to coordinator|repartition|MapMergeJob|intermediate result`)

// TestCitusPlans: on a Citus cluster every statement of the store runs
// where its rows are — the upsert and a session's list on one shard, a
// wave of upserts on the shards of its rows, the
// backfill's two statements, health (windowed and whole) and statistics
// on every shard with only counts returned, the timeline, the failures,
// export, first activity and the overview's groups, duration buckets and
// durations — nothing gathered on the coordinator, and each statement on
// every shard returns bounded rows (a write, an aggregate, a limit, groups
// not keyed by an identifier) but those docs/CONTRACT.md §8.10 names;
// testdata/citus/*.plan shows each plan (shard numbers and ports elided),
// rewritten with -update.
func TestCitusPlans(t *testing.T) {
	d := testenv.Citus()
	e := d.Env(t)
	s := e.Store
	capture := time.Date(2026, 8, 12, 23, 10, 0, 500001001, time.UTC)
	row, _ := core.Normalize(
		core.Frame{
			TaskSessionID: "sess-1",
			TaskID:        "task-1",
			ExecutionID:   "exec-1",
			ToolCallID:    "toolu_01",
			ObservedAt:    capture,
		},
	)
	other := row
	other.TaskSessionID, other.ToolCallID = "sess-2", "toolu_02"
	wave, err := s.WaveSQL(2)
	if err != nil {
		t.Fatal(err)
	}
	health := s.HealthSQL(capture, true, false)
	whole := s.HealthSQL(capture, true, true)
	list, listArgs := s.ListSQL("task_session_id", "sess-1", core.Page{})
	byTurn, byTurnArgs := s.ListSQL("turn_id", "turn-1", core.Page{Limit: 100})
	where := " WHERE task_session_id = ?"
	bf, form := s.BackfillParts(), s.Form(true)
	merge, remove := s.RepairSQL()
	sessions, sessionsArgs := s.SessionsSQL(report.SessionQuery{Since: capture, Prefix: "sess-", Limit: 50})
	cursor := &core.Cursor{ObservedAt: capture, ToolCallID: "toolu_01", AgentExecutionID: "exec-1"}
	starts, startsArgs := s.TurnStartsSQL("sess-1", cursor, false, 26)
	turnRows, turnRowsArgs := s.TurnRowsSQL("sess-1", "turn-1", "turn-2")
	coverage, coverageArgs := s.CoverageCountsSQL(capture)
	day := report.TimelineQuery{Since: capture, Until: capture.Add(24 * time.Hour), Bucket: time.Hour}
	timeline, timelineArgs := s.TimelineSQL(day)
	failures, failuresArgs := s.FailuresSQL(report.FailureQuery{Since: capture, Limit: 20})
	stale, staleArgs := s.StaleSQL(report.StaleQuery{Before: capture})
	export, exportArgs := s.ExportSQL(report.ExportQuery{Since: capture})
	firstRows, firstMessages := s.FirstActivitySQL(" WHERE task_session_id IN (?, ?)", capture)
	overview := report.OverviewQuery{Since: capture, Until: capture.Add(24 * time.Hour)}
	explorer := "explorer"
	overviewGroups, overviewGroupsArgs := s.OverviewGroupsSQL(overview)
	overviewHistogram, overviewHistogramArgs := s.OverviewHistogramSQL(overview, "model", []*string{&explorer, nil})
	overviewBucket, overviewBucketArgs := s.OverviewBucketSQL(overview, "model", explorer, 5*256+73)

	plans := []struct {
		name   string
		plan   []string // planner settings, as the statement runs with them
		q      string
		args   []any
		shards int // tasks the plan must have (the shards of the sessions it names); 0: every shard
	}{
		{"upsert", nil, s.UpsertStatement(), s.UpsertArgs(&row), 1},
		{"upsert_wave", nil, wave, append(sqlstore.Args(&row), sqlstore.Args(&other)...), 2},
		{"list_by_session", nil, list, listArgs, 1},
		{"list_by_turn", nil, byTurn, byTurnArgs, 0},
		{"backfill_through", form.Plan, bf["through"], nil, 0},
		{"backfill_merge", form.Plan, bf["merge"], []any{capture}, 0},
		{"backfill_insert", form.Plan, bf["insert"], []any{capture}, 0},
		{"repair_merge", nil, merge, []any{capture}, 0},
		{"repair_remove", nil, remove, nil, 0},
		{"health_counts", nil, health[0].SQL, health[0].Args, 0},
		{"health_missing", nil, health[1].SQL, health[1].Args, 0},
		{"health_excess", nil, health[2].SQL, health[2].Args, 0},
		{"health_doubled", nil, health[3].SQL, health[3].Args, 0},
		{"health_whole_counts", nil, whole[0].SQL, whole[0].Args, 0},
		{"health_whole_missing", nil, whole[1].SQL, whole[1].Args, 0},
		{"health_whole_excess", nil, whole[2].SQL, whole[2].Args, 0},
		{"health_whole_doubled", nil, whole[3].SQL, whole[3].Args, 0},
		{"stats", nil, s.StatsSQL(""), nil, 0},
		{"stats_session", nil, s.StatsSQL(where), []any{"sess-1"}, 1},
		{"fan_out", nil, s.FanOutSQL(""), nil, 0},
		{"coverage_counts", nil, coverage, coverageArgs, 0},
		{"timeline", nil, timeline, timelineArgs, 0},
		{"failures", nil, failures, failuresArgs, 0},
		{"stale", nil, stale, staleArgs, 0},
		{"export", nil, export, exportArgs, 0},
		{"overview_groups", nil, overviewGroups, overviewGroupsArgs, 0},
		{"overview_histogram", nil, overviewHistogram, overviewHistogramArgs, 0},
		{"overview_bucket", nil, overviewBucket, overviewBucketArgs, 0},
		{"first_activity_rows", nil, firstRows, []any{"sess-1", "sess-2", capture}, 2},
		{"first_activity_messages", nil, firstMessages, []any{"sess-1", "sess-2", capture, capture.UnixMicro()}, 2},
		{"sessions", nil, sessions, sessionsArgs, 0},
		{"session_turn_starts", nil, starts, startsArgs, 1},
		{"session_turn_rows", nil, turnRows, turnRowsArgs, 1},
	}
	// What a statement on every shard returns that is not bounded, as
	// docs/CONTRACT.md §8.10 says; every other one returns bounded rows.
	crosses := map[string]string{
		"stats":           "each shard's distinct execution ids",
		"export":          "the rows of the window",
		"overview_bucket": "the distinct durations of the buckets that hold a rank",
	}
	shardName := regexp.MustCompile(`_\d{6,}\b`)
	port := regexp.MustCompile(`port=\d+`)
	for _, p := range plans {
		t.Run(p.name, func(t *testing.T) {
			var lines []string
			err := e.DB.Transaction(func(tx *gorm.DB) error {
				for _, q := range p.plan {
					if err := tx.Exec(q).Error; err != nil {
						return err
					}
				}
				return tx.Raw("EXPLAIN (COSTS OFF) "+p.q, p.args...).Scan(&lines).Error
			})
			if err != nil {
				t.Fatal(err)
			}
			text := port.ReplaceAllString(shardName.ReplaceAllString(strings.Join(lines, "\n"), "_N"), "port=N")
			if m := gathered.FindString(text); m != "" {
				t.Errorf("%s is not pushed down (%q):\n%s", p.name, m, text)
			}
			want := "Task Count: 4"
			if p.shards > 0 {
				want = fmt.Sprintf("Task Count: %d", p.shards)
			}
			if !strings.Contains(text, want) {
				t.Errorf("%s: want %q in the plan:\n%s", p.name, want, text)
			}
			if top, bounded := workerTop(text); p.shards == 0 && bounded != (crosses[p.name] == "") {
				t.Errorf("%s: each shard returns from %q; bounded %v, want %v (crosses: %q)", p.name, top, bounded,
					crosses[p.name] == "", crosses[p.name])
			}
			check(t, filepath.Join("testdata", "citus", p.name+".plan"), "-- "+p.name+"\n"+text+"\n")
		})
	}
	names := map[string]bool{}
	for _, p := range plans {
		names[p.name+".plan"] = true
	}
	noStale(t, filepath.Join("testdata", "citus", "*.plan"), func(name string) bool { return names[name] })
}

// idColumn is a group key, an item of its own (not inside an expression,
// such as a bucket's), that has as many values as the table has sessions,
// invocations or rows.
var idColumn = regexp.MustCompile(
	`(?:: |, )(?:"?[\w* ]+"?\.)?(?:task_session_id|tool_call_id|agent_execution_id|id|duration_ms)(?:,|$)`)

// workerTop is the top node of the statement each shard runs (in an
// EXPLAIN of a distributed plan) and whether what it returns is bounded
// whatever the table holds: a write, one aggregate row, a limit, or groups
// not keyed by an identifier.
func workerTop(plan string) (string, bool) {
	lines := strings.Split(plan, "\n")
	for i, l := range lines {
		if !strings.Contains(l, "Node: host=") || i+1 == len(lines) {
			continue
		}
		top := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i+1]), "->"))
		var own []string // the top node's own lines, before its first child
		for _, l := range lines[i+2:] {
			if strings.Contains(l, "->") {
				break
			}
			own = append(own, strings.TrimSpace(l))
		}
		switch {
		case strings.HasPrefix(top, "Insert"), strings.HasPrefix(top, "Update"), strings.HasPrefix(top, "Delete"),
			strings.HasPrefix(top, "Limit"):
			return top, true
		case strings.HasSuffix(top, "Aggregate"):
			for _, l := range own {
				if strings.HasPrefix(l, "Group Key:") && idColumn.MatchString(l) {
					return top + " (" + l + ")", false
				}
			}
			return top, true
		}
		return top, false
	}
	return "", false
}
