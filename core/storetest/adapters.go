package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
)

// testUnknownSession: where the adapter declares a session foreign key, a
// row for a session the host does not have is refused with ErrConstraint
// and nothing is stored; the memory store declares none and accepts it.
func testUnknownSession(t *testing.T, s *suite) {
	f := s.bare(s.id("sess", "no-such-session"), "1", 0)
	row, _ := core.Normalize(f)
	err := s.Store.Upsert(context.Background(), row)
	rows := s.rows(t, f.TaskSessionID)
	if s.Features.SessionForeignKey {
		WantError(t, "unknown session", err, core.ErrConstraint)
		if !errors.Is(err, core.ErrConstraint) || errors.Is(err, core.ErrUnavailable) || len(rows) != 0 {
			t.Errorf("unknown session: err %v, %d rows; want ErrConstraint and no row", err, len(rows))
		}
		var op *core.OpError
		if !errors.As(err, &op) || op.Op != "upsert" || op.Key != row.Key() {
			t.Errorf("error does not name the operation and key: %#v", err)
		}
		return
	}
	t.Log("declared: no session foreign key; any session is accepted")
	if err != nil || len(rows) != 1 {
		t.Errorf("unknown session on a store without the foreign key: err %v, %d rows; want it stored", err, len(rows))
	}
}

// testIDUniqueWithinSession: an explicit id is unique within its session on
// every adapter (the primary key (task_session_id, id)); another session may
// hold the same id.
func testIDUniqueWithinSession(t *testing.T, s *suite) {
	sess, other := s.session(t, "a"), s.session(t, "b")
	first, _ := core.Normalize(s.bare(sess, "1", 0))
	first.ID = s.id("row")
	if err := s.Store.Upsert(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	second, _ := core.Normalize(s.bare(sess, "2", 0))
	second.ID = first.ID
	if err := s.Store.Upsert(context.Background(), second); !errors.Is(err, core.ErrConstraint) {
		WantError(t, "a second key with the same id in one session", err, core.ErrConstraint)
	}
	elsewhere, _ := core.Normalize(s.bare(other, "1", 0))
	elsewhere.ID = first.ID
	if err := s.Store.Upsert(context.Background(), elsewhere); err != nil {
		t.Errorf("the same id in another session: %v", err)
	}
	if got := s.one(t, sess); got.ToolCallID != first.ToolCallID || got.ID != first.ID {
		t.Errorf("session rows after the refused write: %+v", got)
	}
	// The same key again with another id is a merge: the stored id stays.
	again := first
	again.ID = s.id("other-id")
	if err := s.Store.Upsert(context.Background(), again); err != nil || s.one(t, sess).ID != first.ID {
		t.Errorf("merge with another id: %v, id %s", err, s.one(t, sess).ID)
	}
}

// testByteOrder: AC-13 ties on observed_at are broken by the tool call id
// and the execution id compared byte by byte, whatever the database's
// collation, and keyset pages follow the same order (docs/CONTRACT.md §8.4).
func testByteOrder(t *testing.T, s *suite) {
	sess := s.session(t, "bytes")
	ids := []string{"b", "B", "a", "é", "e", "Z", "_", "aa", "a-b", "ab"}
	for _, id := range ids {
		f := s.bare(sess, id, 0)
		f.ToolCallID = id
		f.ExecutionID = "e-" + id
		s.write(t, f)
	}
	// Byte order: "B" (0x42) < "Z" < "_" < "a" < "a-b" < "aa" < "ab" < "b" < "e" < "é" (0xC3).
	want := []string{"B", "Z", "_", "a", "a-b", "aa", "ab", "b", "e", "é"}
	var got []string
	for _, r := range s.rows(t, sess) {
		got = append(got, r.ToolCallID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("order %q, want byte order %q", got, want)
	}
	var paged []string
	page := core.Page{Limit: 3}
	for range 10 {
		rows, err := s.Store.ListBySession(context.Background(), sess, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			paged = append(paged, r.ToolCallID)
		}
		if len(rows) < page.Limit {
			break
		}
		c := rows[len(rows)-1].Cursor()
		page.After = &c
	}
	if fmt.Sprint(paged) != fmt.Sprint(want) {
		t.Errorf("keyset pages %q, want %q", paged, want)
	}
}

// testCursorNanoseconds: a caller-built cursor with digits below the
// microsecond stands just before the next whole microsecond, on every
// adapter.
func testCursorNanoseconds(t *testing.T, s *suite) {
	sess := s.session(t, "cursor")
	for i, tool := range []string{"x", "y"} {
		f := s.bare(sess, tool, 0)
		f.ObservedAt = at(0).Add(time.Duration(i) * time.Microsecond)
		s.write(t, f)
	}
	for _, c := range []struct {
		after time.Duration
		want  int
	}{{-500, 2}, {0, 1}, {1, 1}, {999, 1}, {1000, 1}, {1001, 0}} {
		cur := core.Cursor{
			ObservedAt:       at(0).Add(c.after),
			ToolCallID:       s.id("tool", "x"),
			AgentExecutionID: s.id("exec", "1"),
		}
		if c.after%1000 != 0 {
			cur.ToolCallID, cur.AgentExecutionID = "zzz", "zzz" // ignored: no row lies between microseconds
		}
		rows, err := s.Store.ListBySession(context.Background(), sess, core.Page{After: &cur})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != c.want {
			t.Errorf("cursor at +%dns: %d rows after it, want %d", c.after, len(rows), c.want)
		}
	}
}
