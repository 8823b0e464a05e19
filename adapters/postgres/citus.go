package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
)

// Citus (docs/CONTRACT.md §8.10): a host that outgrows one server shards
// its sessions and messages by session id across Citus workers. The
// record then lives with its session: task_session_subagents is
// distributed by task_session_id and colocated with the sessions table, so
// the upsert, the foreign key and its cascade, the backfill and the read
// side each run within one shard, and only counts reach the coordinator.

// tablePlacement is a table's row in Citus's pg_dist_partition.
type tablePlacement struct {
	Method     string  // "h" hash-distributed; "n" reference or Citus-local; "" not in Citus's catalog
	Column     *string // the distribution column of a hash-distributed table
	Colocation int64
}

func (p tablePlacement) distributedBy(column string) bool {
	return p.Method == "h" && p.Column != nil && *p.Column == column
}

// citusInstalled reports whether the database has the Citus extension.
func citusInstalled(ctx context.Context, db *gorm.DB) (bool, error) {
	var ok bool
	err := db.WithContext(ctx).Raw(`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&ok).Error
	return ok, err
}

// placement reads a table's (a quoted name) placement; the zero value
// without Citus or for a table on the coordinator alone.
func placement(ctx context.Context, db *gorm.DB, table string) (tablePlacement, error) {
	if ok, err := citusInstalled(ctx, db); err != nil || !ok {
		return tablePlacement{}, err
	}
	return citusPlacement(ctx, db, table)
}

// citusPlacement reads a table's row in pg_dist_partition, on a database
// known to have Citus.
func citusPlacement(ctx context.Context, db *gorm.DB, table string) (tablePlacement, error) {
	var p tablePlacement
	err := db.WithContext(ctx).Raw(`SELECT partmethod AS method,
			column_to_column_name(logicalrelid, partkey) AS column, colocationid AS colocation
		FROM pg_dist_partition WHERE logicalrelid = to_regclass(?)`, table).Scan(&p).Error
	return p, err
}

// Distributed implements sqldialect.Placement.
func (Dialect) Distributed(ctx context.Context, db *gorm.DB) (bool, error) {
	p, err := placement(ctx, db, `"`+sqlstore.Table+`"`)
	return p.distributedBy("task_session_id"), err
}

// Distribute implements sqldialect.Placement. Only a hash-distributed
// sessions table calls for it; sessions on the coordinator (or a reference
// table) keep the record beside them there. The table is distributed once
// it has its declared shape (the shape step upgrades an older one first).
func (d Dialect) Distribute(ctx context.Context, db *gorm.DB, t sqlstore.Tables, createdMeta bool) (bool, error) {
	if ok, err := citusInstalled(ctx, db); err != nil || !ok {
		return false, err
	}
	sessions := `"` + t.Sessions + `"`
	sp, err := citusPlacement(ctx, db, sessions)
	if err != nil || sp.Method != "h" {
		return false, err
	}
	if !sp.distributedBy("id") {
		return false, fmt.Errorf("the sessions table %s is distributed by %s, not by id: task_session_subagents "+
			"references sessions(id) and can only be colocated with sessions distributed by id", sessions, deref(sp.Column))
	}
	ours, err := citusPlacement(ctx, db, `"`+sqlstore.Table+`"`)
	if err != nil {
		return false, err
	}
	switch {
	case ours.distributedBy("task_session_id") && ours.Colocation == sp.Colocation:
	case ours.Method != "":
		return false, fmt.Errorf("%s is already in Citus's catalog (method %q, by %s) but not distributed by "+
			"task_session_id colocated with %s, as the foreign key and every pushed-down statement need: "+
			"undistribute it (SELECT undistribute_table('%s')) and run the migration pass again",
			sqlstore.Table, ours.Method, deref(ours.Column), sessions, sqlstore.Table)
	default:
		info, err := d.Describe(ctx, db, sqlstore.Table)
		if err != nil || !info.Exists || inferVersion(info) < 3 {
			return false, err // the shape step upgrades the table first, then distributes it
		}
		// A trigger on the table (an earlier build's; absorbTrigger, once
		// it is sharded) needs Citus's leave: it touches only the shard it
		// fires on.
		if err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`SET LOCAL citus.enable_unsafe_triggers = on`).Error; err != nil {
				return err
			}
			return tx.Exec(`SELECT create_distributed_table(?, 'task_session_id', colocate_with => ?)`,
				sqlstore.Table, sessions).Error
		}); err != nil {
			return false, fmt.Errorf("distribute %s by task_session_id, colocated with %s: %w", sqlstore.Table, sessions, err)
		}
	}
	if !createdMeta {
		return true, nil
	}
	meta := `"` + t.Meta + `"`
	if mp, err := citusPlacement(ctx, db, meta); err != nil || mp.Method != "" {
		return true, err
	}
	if err := db.WithContext(ctx).Exec(`SELECT create_reference_table(?)`, meta).Error; err != nil {
		return true, fmt.Errorf("make the meta table %s a reference table: %w", meta, err)
	}
	return true, nil
}

// inferVersion is how far the table is along the numbered steps that
// Citus cares about: a distributed table's keys must contain the session,
// so it is distributed only from the primary key (task_session_id, id) on
// (step 3).
func inferVersion(info sqldialect.TableInfo) int {
	for _, x := range info.Indexes {
		if x.Primary && slices.Equal(x.Columns, primaryKey) && info.Column("agent_execution_id") != nil {
			return 3
		}
	}
	return 0
}

func deref(s *string) string {
	if s == nil {
		return "no column"
	}
	return fmt.Sprintf("%q", *s)
}

// absorbTrigger is what a sharded table absorbs history with
// (docs/CONTRACT.md §8.5): a row trigger after the upsert that absorbs
// the pair's backfilled row into an inserted one. It runs only for a row
// actually inserted under an execution id (a frame whose key has a row
// updates it, and the trigger does not fire). Creating a trigger on a
// distributed table needs citus.enable_unsafe_triggers, set for the
// statement only. The function's name is fixed (citusAbsorber); its body
// is this build's (legacyAbsorber replaces an earlier one).
func absorbTrigger(a absorber) sqldialect.SchemaObject {
	t, fn := sqlstore.Table, a.name
	create := `DO $do$ BEGIN
IF to_regprocedure('` + fn + `()') IS NULL THEN
CREATE FUNCTION ` + fn + `() ` + a.function + `;
` + pinSearchPath(fn) + `
END IF;
IF NOT EXISTS (SELECT 1 FROM pg_trigger
		WHERE tgrelid = '` + t + `'::regclass AND tgname = 'subagentctx_absorb'
		AND tgfoid = '` + fn + `()'::regprocedure) THEN
	PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
	DROP TRIGGER IF EXISTS subagentctx_absorb ON ` + t + `;
	CREATE TRIGGER subagentctx_absorb AFTER INSERT ON ` + t + ` FOR EACH ROW
		WHEN (NEW.agent_execution_id <> '` + core.UnknownExecution + `') EXECUTE FUNCTION ` + fn + `();
END IF;
END $do$`
	// On this function, or on an earlier release's of the same body
	// (legacyAbsorber), which such a release's replica moves it to when it
	// restarts: it absorbs the same.
	present := `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('` + t + `')
	AND tgname = 'subagentctx_absorb' AND (tgfoid = to_regprocedure('` + fn + `()')
		OR tgfoid IN (SELECT oid FROM pg_proc WHERE proname IN (` + legacyNames() + `)
			AND ` + a.holdsBody() + `)))`
	return sqldialect.SchemaObject{Create: create, Present: present}
}

// citusAbsorber is the name of the trigger function a sharded table
// absorbs history with: the name release cc89967 gave it (a digest of that
// release's body). A replica of that release restarting beside this build
// (a rolling deploy) finds its function and the trigger on it, and leaves
// both alone; under a new name it would drop and re-create the trigger,
// which its application role may not, and fail at boot. The body is this
// build's: the pass gives it to a function an earlier release made
// (legacyAbsorber), and an earlier body absorbs every column history can
// carry but the agent's lifecycle, which only an execution-less live frame
// can have put on history's row.
const citusAbsorber = "subagentctx_absorb_dbde5c46"

// absorbFunction is the trigger function a sharded table absorbs history
// with (citusAbsorber). The trigger
// fires on a shard, where it must name the shard (a statement on the
// distributed table from inside a shard is refused), so its statements
// are built for the shard, planned on each call; fired on the table
// itself or on a partition of it, they name the table and keep their
// plans.
func absorbFunction(u sqldialect.UpsertParts) absorber {
	t := sqlstore.Table
	self := func(c string) string { return "t." + c }
	params := map[string]string{"task_session_id": "$1", "tool_call_id": "$2"}
	shard := u.History(func(c string) string { return params[c] })
	body := `DECLARE b record; tbl text; here boolean := TG_TABLE_NAME = '` + t + `';
BEGIN
	IF NOT here THEN -- a partition of the table, or a Citus shard
		here := (SELECT c.relname FROM pg_class c WHERE c.oid = pg_partition_root(TG_RELID)) = '` + t + `';
	END IF;
	IF here THEN
		DELETE FROM ` + t + ` WHERE ` + u.History(func(c string) string { return "NEW." + c }) + ` RETURNING * INTO b;
		IF FOUND THEN
			UPDATE ` + t + ` AS t SET ` + u.Absorb(func(c string) string { return "b." + c }, self) + `
			WHERE t.task_session_id = NEW.task_session_id AND t.id = NEW.id;
		END IF;
	ELSE -- a Citus shard: its own name, planned on each call
		tbl := quote_ident(TG_TABLE_SCHEMA) || '.' || quote_ident(TG_TABLE_NAME);
		-- Deleted first, as above, in the statement that merges it: the
		-- row lock makes a second absorber wait, then find nothing (one
		-- absorber per pair).
		EXECUTE 'WITH h AS (DELETE FROM ' || tbl || $q$ WHERE ` + shard + ` RETURNING *)
			UPDATE $q$ || tbl || $q$ AS t SET ` + u.Absorb(func(c string) string { return "h." + c }, self) + `
			FROM h WHERE t.task_session_id = $1 AND t.id = $3$q$
			USING NEW.task_session_id, NEW.tool_call_id, NEW.id;
	END IF;
	RETURN NULL;
END`
	// SECURITY DEFINER: the trigger runs as its owner (the role that
	// migrated), so the live path needs no DELETE (docs/CONTRACT.md §4.4);
	// its search_path is pinned to the table's schema, pg_temp last, so
	// that no caller's objects stand in for the table's. enable_seqscan
	// off: the probe is an index probe whatever the statistics say — a
	// table analysed while empty otherwise gets a cached sequential scan
	// that costs each frame the whole table until the planner replans.
	source := "\n" + body + "\n"
	function := `RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET enable_seqscan = off AS $f$` + source + `$f$`
	return absorber{name: citusAbsorber, function: function, source: source}
}

// absorber is a trigger function: its name, its text after the name
// (CREATE FUNCTION name() function) and its source as the catalog keeps
// it (pg_proc.prosrc).
type absorber struct{ name, function, source string }

// holdsBody is the condition on a pg_proc row that the function is this
// one's body, run as its owner.
func (a absorber) holdsBody() string { return `prosecdef AND prosrc = $src$` + a.source + `$src$` }

// pinSearchPath is the statement that pins function fn's search_path to
// the table's schema, pg_temp last (see absorbFunction).
func pinSearchPath(fn string) string {
	return `EXECUTE format('ALTER FUNCTION ` + fn + `() SET search_path = %I, pg_temp',
	(SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = '` + sqlstore.Table + `'::regclass));`
}

// legacyAbsorbers are the trigger functions earlier releases absorbed
// history with on one server: release e87ca7e's. Such a release's pass
// creates its function only when absent, then (re)creates the trigger
// on it — a replica of it restarting during a rolling deploy re-creates
// the trigger this build's pass dropped. Where its function is there (a
// database that release wrote), it is therefore kept, with this build's
// body (SECURITY DEFINER, as absorbFunction's): the re-created trigger
// then absorbs as this build does, and this build's application role,
// which may not DELETE, writes through it unharmed until the owner's next
// pass drops the trigger again. It is never created where it is absent:
// release cc89967's pass drops every such function it finds, which its
// application role may not.
var legacyAbsorbers = []string{"subagentctx_absorb_c59dc2b5"}

// legacyNames is legacyAbsorbers as an SQL list of literals.
func legacyNames() string {
	q := make([]string, len(legacyAbsorbers))
	for i, n := range legacyAbsorbers {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

// legacyAbsorber gives each of legacyAbsorbers that exists, and a's own
// function where an earlier release made it, this build's body, in the
// table's schema; present when each is absent or has it.
func legacyAbsorber(a absorber) sqldialect.SchemaObject {
	var create, present []string
	for _, fn := range append(slices.Clone(legacyAbsorbers), a.name) {
		create = append(create, `IF to_regprocedure('`+fn+`()') IS NOT NULL THEN
CREATE OR REPLACE FUNCTION `+fn+`() `+a.function+`;
`+pinSearchPath(fn)+`
END IF;`)
		present = append(present, `(to_regprocedure('`+fn+`()') IS NULL OR EXISTS (SELECT 1 FROM pg_proc
	WHERE oid = to_regprocedure('`+fn+`()') AND `+a.holdsBody()+`))`)
	}
	return sqldialect.SchemaObject{
		Create:  "DO $do$ BEGIN\n" + strings.Join(create, "\n") + "\nEND $do$",
		Present: "SELECT " + strings.Join(present, " AND "),
		Cleanup: true,
	}
}
