package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/report"
)

// testExport: every store streams the same rows in the same order —
// session, then id, byte by byte — bounded by updated_at, and resumes
// after a key (docs/CONTRACT.md §3.3).
func testExport(t *testing.T, s *suite) {
	x, ok := s.Store.(report.Exporter)
	if !ok {
		t.Fatal("the store does not implement report.Exporter")
	}
	a, b := s.session(t, "B"), s.session(t, "a") // "B" < "a" in bytes
	var ids []string
	for _, sess := range []string{a, b} {
		for _, tool := range []string{"2", "10", "é"} {
			f := s.frame(sess, tool)
			row, _ := core.Normalize(f)
			row.ID = s.id("row", tool)
			if err := s.Store.Upsert(context.Background(), row); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, sess+"/"+row.ID)
		}
	}
	mine := func(q report.ExportQuery) []string {
		var out []string
		for r, err := range x.Export(context.Background(), q) {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(r.TaskSessionID, s.ns) { // other tests' rows share a database
				out = append(out, r.TaskSessionID+"/"+r.ID)
			}
		}
		return out
	}
	want := func(keys ...int) string {
		var out []string
		for _, k := range keys {
			out = append(out, ids[k])
		}
		return strings.Join(out, " ")
	}
	// In bytes: session "…-sess-B" before "…-sess-a"; ids "…-row-10" < "…-row-2" < "…-row-é".
	if got := strings.Join(mine(report.ExportQuery{}), " "); got != want(1, 0, 2, 4, 3, 5) {
		t.Errorf("export order\n got  %s\n want %s", got, want(1, 0, 2, 4, 3, 5))
	}
	after := report.ExportKey{TaskSessionID: a, ID: s.id("row", "2")}
	if got := strings.Join(mine(report.ExportQuery{After: &after}), " "); got != want(2, 4, 3, 5) {
		t.Errorf("resumed after %v\n got  %s\n want %s", after, got, want(2, 4, 3, 5))
	}
	future := time.Now().Add(time.Hour)
	if got := mine(report.ExportQuery{Since: future}); len(got) != 0 {
		t.Errorf("rows written after an hour from now: %v", got)
	}
	if got := mine(report.ExportQuery{Until: future}); len(got) != 6 {
		t.Errorf("rows written before an hour from now: %v, want all 6", got)
	}
	bad := report.ExportQuery{Since: future, Until: future.Add(-time.Minute)}
	var badErr error
	for _, err := range x.Export(context.Background(), bad) {
		badErr = err
		break
	}
	WantError(t, "since after until", badErr, nil)
}
