package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
)

// Dialect is SQLite's sqldialect.Dialect: its fragments here, its message
// view in messages.go, its catalog and upgrade steps in catalog.go. SQLite
// never shards (no sqldialect.Placement).
type Dialect struct{}

var (
	_ sqldialect.Dialect    = Dialect{}
	_ sqldialect.PassLocker = Dialect{}
	_ sqldialect.Ceiling    = Dialect{}
)

// Name implements sqldialect.Fragments.
func (Dialect) Name() string { return "sqlite" }

// ColumnType implements sqldialect.Fragments. SQLite's INTEGER is 64-bit;
// TIMESTAMP columns hold go-sqlite3's UTC text form, compared through
// Instant.
func (Dialect) ColumnType(t storekit.Type) string {
	switch t {
	case storekit.Int64, storekit.Bool:
		return "INTEGER"
	case storekit.Time:
		return "TIMESTAMP"
	}
	return "TEXT"
}

// Instant implements sqldialect.Fragments: the Unix time in microseconds of
// any text form SQLite's date functions accept ("YYYY-MM-DD
// HH:MM:SS[.f…][±HH:MM|Z]", with a space or T). The whole seconds go
// through unixepoch() with the fraction removed (SQLite's date functions
// round fractions to milliseconds, which could carry into the next
// second); the fraction's first six digits are added exactly. No string
// comparison and no julianday (AC-24e). This table's times are always
// written canonical, so six digits are all there are.
func (Dialect) Instant(x string) string {
	frac := "substr(" + x + ", 21)"
	digits := "substr(" + frac + ", 1, length(" + frac + ") - length(ltrim(" + frac + ", '0123456789')))"
	dot := "substr(" + x + ", 20, 1) = '.'"
	whole := "substr(" + x + ", 1, 19) || CASE WHEN " + dot +
		" THEN ltrim(" + frac + ", '0123456789') ELSE substr(" + x + ", 20) END"
	return "(unixepoch(" + whole + ") * 1000000 + CASE WHEN " + dot +
		" THEN CAST(substr(" + digits + " || '000000', 1, 6) AS INTEGER) ELSE 0 END)"
}

// Within implements sqldialect.Fragments. The raw text bounds the range an
// index serves: at or above hostTimeFloor(since) and below
// hostTimeCeiling(until), written into the statement (indexBound says
// why), a superset for every text form Instant reads (a T sorts above the
// space; no offset moves a local time by more than fourteen hours). Within it, a
// canonical value ("YYYY-MM-DD HH:MM:SS[.ffffff]+00:00", as this library
// and the driver write UTC) compares as text with the bound in the same
// form, exactly — its text order is its instants' — and any other form
// through Instant, at a microsecond's cost per row that the canonical
// ones are spared.
func (d Dialect) Within(x string, since, until time.Time) (string, []any) {
	canonical := canonical(x)
	text := func(t time.Time) string {
		return storekit.CeilMicro(t).UTC().Format("2006-01-02 15:04:05.999999-07:00")
	}
	var conds []string
	var args []any
	if !since.IsZero() {
		conds = append(conds, x+" >= "+indexBound(hostTimeFloor(since)),
			"CASE WHEN "+canonical+" THEN "+x+" >= ? ELSE "+d.Instant(x)+" >= ? END")
		args = append(args, text(since), storekit.CeilMicro(since).UnixMicro())
	}
	if !until.IsZero() {
		conds = append(conds, x+" < "+indexBound(hostTimeCeiling(until)),
			"CASE WHEN "+canonical+" THEN "+x+" < ? ELSE "+d.Instant(x)+" < ? END")
		args = append(args, text(until), storekit.CeilMicro(until).UnixMicro())
	}
	if len(conds) == 0 {
		return "1 = 1", nil
	}
	return strings.Join(conds, " AND "), args
}

// indexBound is the bound of an index's range on a text column as a
// literal, which is safe: it is a time this package formatted (digits,
// dashes, a space). Where SQLite keeps a histogram (sqlite_stat4, which
// ANALYZE writes on modernc.org/sqlite's build), a parameter there would
// make it compile the statement twice on every run: once when prepared,
// and again once the value is bound, to read the histogram at it (half
// of a small window's cost, for the web view's large statements).
func indexBound(text string) string { return "'" + strings.ReplaceAll(text, "'", "''") + "'" }

// Ceiling implements sqldialect.Ceiling: every instant of years 1-9999 in
// any text form Within accepts sorts below "9999-12-32", which is no date,
// so SQLite keeps it text (a bound that looked like a number would be
// compared as one).
func (Dialect) Ceiling(x string) string { return x + " < '9999-12-32'" }

// canonical is the condition that the text x is in the form this library
// writes UTC in: "YYYY-MM-DD HH:MM:SS[.ffffff]+00:00", whose text order is
// its instants' (the driver trims the fraction's trailing zeros, and a
// '+' sorts below the '.' and the digits).
func canonical(x string) string {
	return "substr(" + x + ", 11, 1) = ' ' AND substr(" + x + ", -6) = '+00:00'"
}

// ThroughIndex implements sqldialect.Fragments with INDEXED BY: without a
// histogram SQLite's planner takes a range on observed_at for a quarter
// of the table, and groups a window's rows by reading the whole table
// through the session index instead (264 ms for a day of a million rows,
// 56 ms through the time index).
func (Dialect) ThroughIndex(table, index string) string { return table + " INDEXED BY " + index }

// Extreme implements sqldialect.Fragments: the canonical values' extreme by
// their text, read as an instant once per group, and the others' through
// Instant row by row (Within says why).
func (d Dialect) Extreme(fn, x string) string {
	text := d.Instant(fn + "(CASE WHEN " + canonical(x) + " THEN " + x + " END)")
	other := fn + "(CASE WHEN " + canonical(x) + " THEN NULL ELSE " + d.Instant(x) + " END)"
	return "COALESCE(" + strings.ToLower(fn) + "(" + text + ", " + other + "), " + text + ", " + other + ")"
}

// Ordered implements sqldialect.Fragments: Instant itself, built of
// deterministic functions only, so an index can be declared on it (a text
// column's own order is the instant's only for the canonical form).
func (d Dialect) Ordered(x string) string { return d.Instant(x) }

// OrderedArg implements sqldialect.Fragments: Instant's microseconds.
func (Dialect) OrderedArg(t time.Time) any { return storekit.CanonicalTime(t).UnixMicro() }

// Bytewise implements sqldialect.Fragments: SQLite's default collation,
// BINARY, compares bytes.
func (Dialect) Bytewise(x string) string { return x }

// absorbTrigger is the trigger earlier builds absorbed history with. Any
// trigger makes SQLite run the upsert as a statement that may write
// several rows, with a statement journal of its own (about 1.7× the
// upsert's cost, even when it does nothing), so this build absorbs in the
// upsert itself and drops it. A process of an earlier build creates it
// again on its next pass: harmless to this build's upsert, whose inserts
// then find no history left to absorb; the pairs such a process doubles
// while the trigger is gone are merged by the next pass (its repair step).
const absorbTrigger = "subagentctx_absorb_v1"

// Upsert implements sqldialect.Fragments: the INSERT … ON CONFLICT keyed so
// that it absorbs history by itself (docs/CONTRACT.md §8.5). A frame under
// an execution id whose own key has no row, while its pair has a row the
// backfill wrote, takes that row's key ('unknown'). It then conflicts on
// the index of the rows keyed 'unknown' (the history index, here unique
// and over every such row), whose ON CONFLICT clause comes first — SQLite
// tries the clauses' targets in their order — and whose DO UPDATE merges
// the frame into history's row by the ordinary rules (history as the
// stored row is storekit.Absorbed) and moves it to the frame's execution.
// Every other conflict is the key's, and its clause leaves
// agent_execution_id alone: setting it, even to its own value, would
// rewrite the row's entries in three indexes on every merging frame (only
// frames that name no execution pay that, through the first clause). Its
// own key having a row (a pair an earlier build doubled), the frame merges
// into that row and history stays for the repair. Its id held by another
// row of the session (a caller's id: a generated one never is), the frame
// keeps its key, and the primary key refuses it as it refuses any new key
// with a taken id; history's own id is the same invocation's (a row
// imported from a store where it had absorbed that history), and absorbs.
// SQLite runs one writer at a time, and a statement reads what it writes
// under the write lock, so the choice of key cannot race. The placeholders
// are numbered (?N is the value of the N-th of u.Columns) so that the key's
// choice and the SET list can read the frame's session, execution and tool
// call id again.
func (Dialect) Upsert(u sqldialect.UpsertParts) sqldialect.UpsertForm {
	t := sqlstore.Table
	param := func(c string) string {
		return fmt.Sprint("?", slices.IndexFunc(u.Columns, func(d storekit.Column) bool { return d.Name == c })+1)
	}
	exec := param("agent_execution_id")
	// One probe of history's row h, the others nested in it reading h's
	// values, so that the frame's values are bound once each where they
	// can be: binding is about an eighth of the pure-Go driver's time per
	// frame. A frame naming no execution finds its own key in h and keeps
	// it.
	key := `CASE WHEN EXISTS (SELECT 1 FROM ` + t + ` h WHERE ` + u.History(param) + `
	AND NOT EXISTS (SELECT 1 FROM ` + t + ` k WHERE k.task_session_id = h.task_session_id
		AND k.agent_execution_id = ` + exec + ` AND k.tool_call_id = h.tool_call_id)
	AND NOT EXISTS (SELECT 1 FROM ` + t + ` i WHERE i.task_session_id = h.task_session_id
		AND i.id = ` + param("id") + ` AND i.id <> h.id))
	THEN '` + core.UnknownExecution + `' ELSE ` + exec + ` END`
	// The execution id among the index's columns, constant as it is there,
	// keeps earlier builds from taking a unique (task_session_id,
	// tool_call_id) for the first draft's key, which they would refuse.
	unknown := "(task_session_id, tool_call_id, agent_execution_id) WHERE agent_execution_id = '" +
		core.UnknownExecution + "'"
	values := u.Values(func(n int, c storekit.Column) string {
		if c.Name == "agent_execution_id" {
			return key
		}
		return "?" + strconv.Itoa(n)
	})
	upsert := u.Into + " VALUES " + values +
		"\nON CONFLICT " + unknown + " DO UPDATE SET " + u.Set + ",`agent_execution_id`=" + exec +
		"\nON CONFLICT " + u.Key + " DO UPDATE SET " + u.Set
	// The pure-Go driver binds numbered placeholders in time quadratic in
	// their number; go-sqlite3 binds each argument by a C call and a copy,
	// so there the numbered form, one argument per column, is the cheaper.
	var order []int
	if DriverName == "sqlite" {
		upsert, order = positional(upsert)
	}
	index := "CREATE UNIQUE INDEX " + u.HistoryIndex + " ON " + t + unknown
	present := `SELECT count(*) = 1 FROM sqlite_master WHERE type = 'index' AND name = '` + u.HistoryIndex +
		`' AND sql = '` + strings.ReplaceAll(index, "'", "''") + `'`
	return sqldialect.UpsertForm{Statement: upsert, Args: order, Schema: []sqldialect.SchemaObject{
		{
			Create:  `DROP TRIGGER IF EXISTS ` + absorbTrigger,
			Present: `SELECT count(*) = 0 FROM sqlite_master WHERE type = 'trigger' AND name = '` + absorbTrigger + `'`,
		},
		// The history index in any other form (earlier builds', or the
		// one every dialect declares) is dropped, then created in this one.
		{Create: `DROP INDEX IF EXISTS ` + u.HistoryIndex, Present: present},
		{Create: index, Present: present},
	}}
}

// positional turns the numbered placeholders of q (?N: the value of the
// N-th of the statement's columns) into positional ones, and returns the
// column each takes, in order (sqldialect.UpsertForm.Args): the statement
// reads the key's values more than once, and modernc.org/sqlite binds ?N
// by matching every argument against every number (formatting each), a
// cost that grows with the square of the row's width, where it binds a
// positional placeholder by its place.
func positional(q string) (string, []int) {
	var b strings.Builder
	var order []int
	for i := 0; i < len(q); i++ {
		b.WriteByte(q[i])
		if q[i] != '?' {
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		n, _ := strconv.Atoi(q[i+1 : j])
		order = append(order, n-1)
		i = j - 1
	}
	return b.String(), order
}

// NearestRanks implements sqldialect.Fragments with window functions: per
// dim one sort by k and duration (a sort of them all by dim, k and
// duration costs more), numbering each k's durations over both sources
// (rn) and counting the live ones up to each (rl), from which a duration's
// rank among its own source's follows (rs) without a sort per source.
// Only the rows at a nearest rank are kept (y), a few per group.
func (Dialect) NearestRanks(durations []string) string {
	ranked := func(rn, m string) string {
		return rn + " IN ((50 * " + m + " + 99) / 100, (95 * " + m + " + 99) / 100)"
	}
	var windows []string
	for _, q := range durations {
		windows = append(windows, `SELECT dim, k, source, duration_ms,
				ROW_NUMBER() OVER win AS rn, SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) OVER win AS rl,
				count(*) OVER part AS m, SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) OVER part AS ml
			FROM (`+q+`) AS q
			WINDOW part AS (PARTITION BY k), win AS (part ORDER BY duration_ms ROWS UNBOUNDED PRECEDING)`)
	}
	return `WITH y AS MATERIALIZED (SELECT * FROM (SELECT x.*,
			CASE WHEN x.source = 'live' THEN x.rl ELSE x.rn - x.rl END AS rs,
			CASE WHEN x.source = 'live' THEN x.ml ELSE x.m - x.ml END AS ms
		FROM (` + strings.Join(windows, "\n\t\tUNION ALL ") + `) x) z
	WHERE ` + ranked("z.rn", "z.m") + ` OR ` + ranked("z.rs", "z.ms") + `)
SELECT dim, k, 'all' AS source, m, rn, duration_ms AS value FROM y WHERE ` + ranked("rn", "m") + `
UNION ALL
SELECT dim, k, source, ms, rs, duration_ms FROM y WHERE ` + ranked("rs", "ms")
}

// InFew implements sqldialect.Fragments: SQLite searches the index for each
// value of an IN list's subquery.
func (Dialect) InFew(expr, subquery string) string { return expr + " IN (" + subquery + ")" }

// BoundedStatements implements sqldialect.BoundedStatements: the busy timeout
// (Pragmas) bounds a statement's wait for the write lock.
func (Dialect) BoundedStatements() {}

// Classify implements sqldialect.Fragments with docs/CONTRACT.md §6.1's
// table (each driver's file finds the error's SQLite code: classify).
func (Dialect) Classify(err error) error { return classify(err) }

// SQLite's primary result codes (https://www.sqlite.org/rescode.html), the
// same whichever driver reports them.
const (
	codeNomem      = 7
	codeBusy       = 5
	codeLocked     = 6
	codeReadonly   = 8
	codeInterrupt  = 9
	codeIOErr      = 10
	codeFull       = 13
	codeCantOpen   = 14
	codeConstraint = 19
)

// classifyCode is docs/CONTRACT.md §6.1's table for a primary result code.
func classifyCode(code int) error {
	switch code {
	case codeConstraint:
		return core.ErrConstraint
	case codeBusy, codeLocked, // another writer: the busy timeout ran out
		codeCantOpen, codeIOErr, codeFull, codeNomem, // the file, the disk, memory
		codeReadonly,  // a read-only file or mount
		codeInterrupt: // the write's deadline interrupted it
		return core.ErrUnavailable
	}
	return nil
}

// CheckHandle implements sqldialect.Fragments on one connection of the
// handle (a pool's connections share its DSN's settings): foreign keys
// must be on (without them AC-16's cascade silently does nothing) and a
// busy timeout set (without it a write meeting another writer fails at
// once), and times written in SQLite's text form. Neither is safe to set from here: foreign_keys is per
// connection, so setting it on one would leave the pool's others off. WAL
// is recommended, not required: the store works in any journal mode, with
// more lock waits.
func (Dialect) CheckHandle(ctx context.Context, db *gorm.DB) error {
	var fk, busy int64
	var missing []string
	return db.WithContext(ctx).Connection(func(tx *gorm.DB) error {
		if err := tx.Raw(`PRAGMA foreign_keys`).Scan(&fk).Error; err != nil {
			return err
		}
		if err := tx.Raw(`PRAGMA busy_timeout`).Scan(&busy).Error; err != nil {
			return err
		}
		// A time the store binds must be written in the text form Instant
		// reads; modernc.org/sqlite writes Go's String() form unless told.
		probe := time.Date(2000, 1, 2, 3, 4, 5, 0, time.UTC)
		var written string
		if err := tx.Raw(`SELECT CAST(? AS TEXT)`, probe).Scan(&written).Error; err != nil {
			return err
		}
		if written != probe.Format(storedLayout) {
			missing = append(missing, fmt.Sprintf("times are written as %q, not SQLite's text form "+
				"(add _time_format=sqlite to modernc.org/sqlite's DSN, as sqlite.DSN does): "+
				"windows and orders would compare them wrongly", written))
		}
		if fk != 1 {
			missing = append(
				missing,
				"foreign keys are off (add "+PragmaParam("foreign_keys", "1")+" to the DSN, as sqlite.DSN does): "+
					"without them deleting a session would leave its rows behind",
			)
		}
		if busy <= 0 {
			missing = append(missing, "no busy timeout (add "+PragmaParam("busy_timeout", "10000")+
				" to the DSN, as sqlite.DSN does): "+
				"without it a write that meets another fails at once")
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: %s", sqlstore.ErrHandleSettings, strings.Join(missing, "; "))
		}
		return nil
	})
}

// Writers implements sqldialect.Fragments: SQLite serialises writers: more
// would only wait on its lock.
func (Dialect) Writers() int { return 1 }
