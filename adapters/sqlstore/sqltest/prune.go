package sqltest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/core/report"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/await"
)

var pruneTests = []test{
	{"Retention_PruneKeepsEverySignalTrue", testPrune},
	{"Retention_BoundaryOnlyAdvances", testPruneBoundary},
	{"Retention_RefusedBeforeActivationOrInTheFuture", testPruneRefused},
	{"Retention_WithLiveFramesAndAPruneAtOnce", testPruneConcurrent},
}

// testPrune: a prune deletes the rows last written before the boundary
// and only those; the boundary is recorded; health then counts no pruned
// pair short (its window starts at the boundary), the session whose rows
// went is unknown, not zero, and a later frame of a pruned pair is a new
// row.
func testPrune(t *testing.T, d *Driver) {
	e := d.Env(t)
	e.Session(t, "old")
	e.Session(t, "new")
	start := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
	activate(t, e, start)
	for i := range 3 { // written two hours ago, with their host messages
		at := start.Add(time.Hour + time.Duration(i)*time.Second)
		message(t, e, fmt.Sprint("m-old-", i), "old", fmt.Sprint("tc-", i), at)
		writtenAt(t, e, "old", fmt.Sprint("tc-", i), at)
	}
	recent := time.Now().UTC().Add(-time.Minute)
	message(t, e, "m-new", "new", "tc-new", recent)
	writtenAt(t, e, "new", "tc-new", recent)
	boundary := time.Now().UTC().Add(-time.Hour)
	res, err := e.Store.Prune(context.Background(), boundary)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 3 || !res.Advanced || !res.Boundary.Equal(storekit.CanonicalTime(boundary)) {
		t.Errorf("prune: %+v; want the 3 old rows, the boundary moved", res)
	}
	if got := rows(t, e, "old"); len(got) != 0 {
		t.Errorf("old rows kept: %v", got)
	}
	if got := rows(t, e, "new"); len(got) != 1 {
		t.Errorf("new rows: %v, want the one", got)
	}
	a, err := e.Store.Activation(context.Background())
	if err != nil || !a.PrunedBefore.Usable() || !a.PrunedBefore.Time.Equal(storekit.CanonicalTime(boundary)) {
		t.Errorf("the retention boundary: %+v %v", a.PrunedBefore, err)
	}
	h := health(t, e)
	if h.Shortfall != 0 || !h.Since.Equal(storekit.CanonicalTime(boundary)) {
		t.Errorf("health after the prune: shortfall %d from %v; want 0 from the boundary", h.Shortfall, h.Since)
	}
	st, err := e.Store.Stats(context.Background(), report.StatsQuery{TaskSessionID: "old"})
	if err != nil || len(st.Sessions) != 1 || st.Sessions[0].Coverage != report.Unknown {
		t.Errorf("the pruned session's coverage: %+v %v; want unknown, never zero", st.Sessions, err)
	}
	record(t, e, "old", "tc-0", "e1", time.Now().UTC())
	if got := rows(t, e, "old"); len(got) != 1 {
		t.Errorf("a frame after the prune: %v, want one new row", got)
	}
}

// writtenAt records a live row and sets its last write, as if written at.
func writtenAt(t *testing.T, e *Env, s, tool string, at time.Time) {
	t.Helper()
	record(t, e, s, tool, "e1", at)
	e.Exec(t, `UPDATE task_session_subagents SET updated_at = ? WHERE task_session_id = ? AND tool_call_id = ?`,
		at, s, tool)
}

// testPruneBoundary: an earlier boundary never moves the recorded one
// back; the prune still deletes up to the recorded one.
func testPruneBoundary(t *testing.T, d *Driver) {
	e := d.Env(t)
	e.Session(t, "s")
	activate(t, e, time.Now().UTC().Add(-5*time.Hour))
	later := time.Now().UTC().Add(-time.Hour)
	if _, err := e.Store.Prune(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	writtenAt(t, e, "s", "tc", later.Add(-time.Minute))
	res, err := e.Store.Prune(context.Background(), later.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if res.Advanced || !res.Boundary.Equal(storekit.CanonicalTime(later)) || res.Deleted != 1 {
		t.Errorf("an earlier prune: %+v; want the recorded boundary kept and used", res)
	}
}

// testPruneRefused: before activation (the pass's backfill would recover
// the pruned history) and with a boundary in the future, nothing changes.
func testPruneRefused(t *testing.T, d *Driver) {
	e := d.Env(t)
	e.Session(t, "s")
	record(t, e, "s", "tc", "e1", time.Now().UTC().Add(-time.Hour))
	_, err := e.Store.Prune(context.Background(), time.Now().UTC())
	if err == nil || e.Count(t) != 1 {
		t.Errorf("prune before activation: %v, %d rows", err, e.Count(t))
	}
	activate(t, e, time.Now().UTC().Add(-2*time.Hour))
	if _, err := e.Store.Prune(context.Background(), time.Now().Add(time.Hour)); err == nil || e.Count(t) != 1 {
		t.Errorf("a boundary in the future: %v, %d rows", err, e.Count(t))
	}
	// capture_since without backfill_through: the next pass's backfill
	// would run, recovering what a prune deletes — refused, naming the key.
	e.Exec(t, `DELETE FROM `+e.meta(t)+` WHERE "key" = ?`, storekit.BackfillThroughKey)
	_, err = e.Store.Prune(context.Background(), time.Now().UTC())
	if err == nil || !strings.Contains(err.Error(), storekit.BackfillThroughKey) || e.Count(t) != 1 {
		t.Errorf("prune with backfill_through missing: %v, %d rows", err, e.Count(t))
	}
}

// testPruneConcurrent: a prune in small batches while live frames write
// new rows and rewrite old ones: every frame written during it survives
// (a row rewritten after the boundary is kept), only rows last written
// before it go, and health finds no shortfall.
func testPruneConcurrent(t *testing.T, d *Driver) {
	e := d.Env(t)
	e.Session(t, "s")
	activate(t, e, time.Now().UTC().Add(-5*time.Hour))
	old := time.Now().UTC().Add(-3 * time.Hour)
	for i := range 60 {
		writtenAt(t, e, "s", fmt.Sprint("old-", i), old.Add(time.Duration(i)*time.Second))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := e.Store.Prune(context.Background(), time.Now().UTC().Add(-time.Hour), sqlstore.PruneBatch(7))
		errs <- err
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 30 { // new rows, and every other old row written again now
			record(t, e, "s", fmt.Sprint("new-", i), "e1", time.Now().UTC())
			record(t, e, "s", fmt.Sprint("old-", 2*i), "e1", old.Add(time.Duration(2*i)*time.Second))
		}
	}()
	wg.Wait()
	if err := await.Recv(t, errs, "the prune"); err != nil {
		t.Fatal(err)
	}
	got := rows(t, e, "s")
	for i := range 30 {
		if _, ok := got[fmt.Sprintf("new-%d/e1", i)]; !ok {
			t.Errorf("new-%d lost", i)
		}
	}
	for i := range 60 {
		r, ok := got[fmt.Sprintf("old-%d/e1", i)]
		if ok && r.UpdatedAt.Before(time.Now().Add(-time.Hour)) {
			t.Errorf("old-%d last written before the boundary survived the prune", i)
		}
	}
	if h := health(t, e); h.Shortfall != 0 {
		t.Errorf("health after: %+v", h)
	}
}
