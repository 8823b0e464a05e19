package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/history"
	"github.com/subagentctx/subagentctx/internal/liberr"
)

// instantLayout is a host instant as text that orders as the instant, at
// nanosecond precision: fixed width, UTC, years 0001-9999.
const instantLayout = "2006-01-02T15:04:05.000000000Z"

// HostTimeText implements sqldialect.MessageView: SQLite has no timestamp
// type, so a host's timestamps are text, in whatever form its driver
// wrote.
func (Dialect) HostTimeText() bool { return true }

// HostInstant implements sqldialect.MessageView through the registered
// function subagentctx_instant, which reads the host's text with
// history.ParseHostTime.
func (Dialect) HostInstant(x string) string { return "subagentctx_instant(CAST(" + x + " AS TEXT))" }

// hostTimeFloor is the hour fourteen hours before t, as "YYYY-MM-DD HH"
// text. Every form history.ParseHostTime reads begins with the date and
// the hour, after a space or a T (which sorts above the space), and no
// offset puts a local time more than 12 hours before its instant, so the
// text of every message created at or after t compares at or above it.
func hostTimeFloor(t time.Time) string { return t.UTC().Add(-14 * time.Hour).Format("2006-01-02 15") }

// hostTimeCeiling is the day after t plus fourteen hours, as "YYYY-MM-DD"
// text, which every form of a time before t (a local time at most 14
// hours after its instant, a T or a space after the date) compares below.
func hostTimeCeiling(t time.Time) string {
	return t.UTC().Add(14*time.Hour).AddDate(0, 0, 1).Format("2006-01-02")
}

// HostWithin implements sqldialect.MessageView. The raw text is bounded
// by hostTimeFloor and hostTimeCeiling, written into the statement
// (indexBound says why), and within those bounds subagentctx_instant
// decides. Text in the form both drivers write a UTC time in ("YYYY-MM-DD
// HH:MM…+00:00") that sorts below since's minute is before since: its
// text order is its instant's. It is left out without the call, which
// costs about a microsecond a row, and the fourteen hours above the floor
// hold far more rows than the window.
func (d Dialect) HostWithin(x string, since, until time.Time) (string, []any) {
	var conds []string
	var args []any
	if !since.IsZero() {
		conds = append(conds, x+" >= "+indexBound(hostTimeFloor(since)),
			"CASE WHEN "+x+" < ? AND substr("+x+", -6) = '+00:00' THEN 0 ELSE "+d.HostInstant(x)+" >= ? END")
		args = append(args, since.UTC().Format("2006-01-02 15:04"), d.HostInstantArg(since))
	}
	if !until.IsZero() {
		conds = append(conds, x+" < "+indexBound(hostTimeCeiling(until)), d.HostInstant(x)+" < ?")
		args = append(args, d.HostInstantArg(until))
	}
	if len(conds) == 0 {
		return "1 = 1", nil
	}
	return strings.Join(conds, " AND "), args
}

// HostInstantArg implements sqldialect.MessageView.
func (Dialect) HostInstantArg(t time.Time) any { return t.UTC().Format(instantLayout) }

// ParseHostInstant implements sqldialect.MessageView.
func (Dialect) ParseHostInstant(v any) (*time.Time, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		t, err := time.Parse(instantLayout, x)
		if err != nil {
			return nil, fmt.Errorf("host instant %q: %w", x, err)
		}
		return &t, nil
	}
	return nil, fmt.Errorf("host instant %v is a %T, want text", v, v)
}

// SubagentMessages implements sqldialect.MessageView: every candidate
// message is read by the registered function subagentctx_message, which
// runs history.Recover and returns its reading as a JSON object keyed by
// column (SQLite's own JSON functions read duplicate keys, surrogates and
// numbers differently from PostgreSQL, docs/CONTRACT.md §8.6); the view
// extracts each of sqldialect.MessageColumns from it. Only messages whose
// text can spell the kind (literally, or through a \u escape) reach the
// function.
func (Dialect) SubagentMessages(t sqlstore.Tables, where string) string {
	return messageView(t, where, "subagentctx_message", sqldialect.MessageColumns())
}

// NewestSubagentMessages implements sqldialect.MessageView: the whole view
// ranked (its reader returns every column at once).
func (d Dialect) NewestSubagentMessages(t sqlstore.Tables, window string) string {
	return sqldialect.Newest(d.SubagentMessages(t, ""), window)
}

// SubagentKeys implements sqldialect.MessageView: the same view through
// subagentctx_message_key, the same history.Recover returning only
// sqldialect.MessageKeyColumns — health reads every candidate message, and
// writing and re-reading the whole row was a third of the reader's cost.
func (Dialect) SubagentKeys(t sqlstore.Tables, where string) string {
	return messageView(t, where, "subagentctx_message_key", sqldialect.MessageKeyColumns())
}

// messageView reads the candidate messages through the registered reader
// fn, and the columns from the object it returns.
func messageView(t sqlstore.Tables, where, fn string, columns []string) string {
	if where != "" {
		where = " AND (" + where + ")"
	}
	cols := []string{
		"CAST(v.id AS TEXT) AS message_id",
		"CAST(v.task_session_id AS TEXT) AS task_session_id",
		"CAST(v.task_id AS TEXT) AS task_id",
	}
	for _, c := range columns[3:] {
		cols = append(cols, "json_extract(v.x, '$."+c+"') AS "+c)
	}
	return `SELECT ` + strings.Join(cols, ",\n\t\t") + `
	FROM (SELECT m.id, m.task_session_id, m.task_id,
			` + fn + `(CAST(m.id AS BLOB), CAST(m.task_session_id AS BLOB), CAST(m.task_id AS BLOB),
				CAST(m.turn_id AS BLOB), CAST(m.metadata AS BLOB), CAST(m.created_at AS BLOB), CAST(m.updated_at AS BLOB)) AS x
		FROM "` + t.Messages + `" m
		WHERE (instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\u') > 0)` + where + `
		LIMIT -1 OFFSET 0) v
	WHERE v.x IS NOT NULL`
}

// BackfillForm implements sqldialect.MessageView: SQLite has no writable
// CTE, so the ranked messages are staged by one scan before the write
// transaction, which begins IMMEDIATE: the write lock, held for the merge,
// the insert and the keys only, serialises it with the live writes.
func (Dialect) BackfillForm(bool) sqldialect.BackfillForm {
	return sqldialect.BackfillForm{Staged: true, Begin: "BEGIN IMMEDIATE"}
}

// WithConn implements sqldialect.MessageView: fn runs on one connection of
// db on which subagentctx_message and subagentctx_instant are registered.
func (Dialect) WithConn(ctx context.Context, db *gorm.DB, fn func(*gorm.DB) error) error {
	return db.WithContext(ctx).Connection(func(tx *gorm.DB) error {
		conn, ok := tx.Statement.ConnPool.(*sql.Conn)
		if !ok {
			return liberr.Errorf("sqlite: want a connection, got %T", tx.Statement.ConnPool)
		}
		if err := conn.Raw(register); err != nil {
			return err
		}
		// Each statement on its own, so one's error does not stop the next (a ROLLBACK).
		return fn(tx.Session(&gorm.Session{}))
	})
}

// storedLayout is how go-sqlite3 writes a time.Time: what this table's
// TIMESTAMP columns hold.
const storedLayout = "2006-01-02 15:04:05.999999999-07:00"

// message is subagentctx_message: history.Recover on one message, as a
// JSON object keyed by the view's columns (NULL when it is not a subagent
// message): the tool call id, whether it is recoverable (0/1), created_at
// as an instantLayout text, and every column of sqldialect.HistoryColumns as
// the table stores it. It runs once per candidate message of every
// backfill and health check, so the object is appended byte by byte, with
// no map and no reflection.
func message(id, session, task, turn, metadata, created, updated any) (any, error) {
	return reading(true, id, session, task, turn, metadata, created, updated)
}

// messageKey is subagentctx_message_key: message's object with only its
// first three keys (the tool call id, recoverable, created).
func messageKey(id, session, task, turn, metadata, created, updated any) (any, error) {
	return reading(false, id, session, task, turn, metadata, created, updated)
}

// reading is message's object, the history columns' keys only when whole.
func reading(whole bool, id, session, task, turn, metadata, created, updated any) (any, error) {
	// Each value comes as a BLOB, whole: both drivers hand a function's
	// TEXT argument over as a C string, cut at its first NUL, where the
	// host's text (metadata that is no JSON for it) goes on.
	str := func(v any) *string {
		switch b := v.(type) {
		case []byte:
			s := string(b)
			return &s
		case string:
			return &b
		}
		return nil
	}
	hostTime := func(v any) *time.Time {
		if s := str(v); s != nil {
			if t, ok := history.ParseHostTime(*s); ok {
				return &t
			}
		}
		return nil
	}
	r := history.Recover(history.Message{ID: str(id), TaskSessionID: str(session), TaskID: str(task), TurnID: str(turn),
		Metadata: str(metadata), CreatedAt: hostTime(created), UpdatedAt: hostTime(updated)})
	if !r.Subagent {
		return nil, nil
	}
	b := make([]byte, 0, 512)
	b = append(b, `{"tool_call_id":`...)
	if r.Row.ToolCallID != "" {
		b = appendJSONText(b, r.Row.ToolCallID)
	} else {
		b = append(b, "null"...)
	}
	recoverable := byte('0')
	if r.Recoverable {
		recoverable = '1'
	}
	b = append(append(b, `,"recoverable":`...), recoverable)
	b = append(b, `,"created":`...)
	if r.Created != nil {
		b = append(b, '"')
		b = append(r.Created.UTC().AppendFormat(b, instantLayout), '"')
	} else {
		b = append(b, "null"...)
	}
	if !whole {
		return string(append(b, '}')), nil
	}
	for _, c := range historyColumns {
		b = append(append(append(b, `,"`...), c.Name...), `":`...)
		switch v := c.Value(&r.Row).(type) {
		case string:
			b = appendJSONText(b, v)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case time.Time:
			if c.Name == "observed_at" && r.Created == nil {
				b = append(b, "null"...) // no instant to observe it at
				continue
			}
			b = append(b, '"')
			b = append(v.AppendFormat(b, storedLayout), '"')
		case nil:
			b = append(b, "null"...)
		default:
			return nil, fmt.Errorf("sqlite: column %s's value is a %T", c.Name, v)
		}
	}
	return string(append(b, '}')), nil
}

// historyColumns are sqldialect.HistoryColumns, built once.
var historyColumns = sqldialect.HistoryColumns()

// appendJSONText appends s as a JSON string, read back by json_extract as
// s itself: quotes, backslashes and control characters escaped, and an
// invalid UTF-8 byte (which a message's own columns can hold) as U+FFFD,
// as encoding/json writes it.
func appendJSONText(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return append(b, '"')
}

// instant is subagentctx_instant: a host timestamp as instantLayout text,
// or NULL when history.ParseHostTime cannot read it.
func instant(v any) any {
	if s, ok := v.(string); ok {
		if t, ok := history.ParseHostTime(s); ok {
			return t.UTC().Format(instantLayout)
		}
	}
	return nil
}
