package postgres

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/subagentctx/subagentctx/adapters/sqlstore"
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

// Distributed implements sqlstore.Placement.
func (Dialect) Distributed(ctx context.Context, db *gorm.DB) (bool, error) {
	p, err := placement(ctx, db, `"`+sqlstore.Table+`"`)
	return p.distributedBy("task_session_id"), err
}

// Distribute implements sqlstore.Placement. Only a hash-distributed
// sessions table calls for it; sessions on the coordinator (or a reference
// table) keep the record beside them there. The table is distributed once
// it has its declared shape (the shape step upgrades an older one first).
func (d Dialect) Distribute(ctx context.Context, db *gorm.DB, t sqlstore.Tables, createdMeta bool) error {
	if ok, err := citusInstalled(ctx, db); err != nil || !ok {
		return err
	}
	sessions := `"` + t.Sessions + `"`
	sp, err := citusPlacement(ctx, db, sessions)
	if err != nil || sp.Method != "h" {
		return err
	}
	if !sp.distributedBy("id") {
		return fmt.Errorf("the sessions table %s is distributed by %s, not by id: task_session_subagents "+
			"references sessions(id) and can only be colocated with sessions distributed by id", sessions, deref(sp.Column))
	}
	ours, err := citusPlacement(ctx, db, `"`+sqlstore.Table+`"`)
	if err != nil {
		return err
	}
	switch {
	case ours.distributedBy("task_session_id") && ours.Colocation == sp.Colocation:
	case ours.Method != "":
		return fmt.Errorf("%s is already in Citus's catalog (method %q, by %s) but not distributed by "+
			"task_session_id colocated with %s, as the foreign key and every pushed-down statement need: "+
			"undistribute it (SELECT undistribute_table('%s')) and run the migration pass again",
			sqlstore.Table, ours.Method, deref(ours.Column), sessions, sqlstore.Table)
	default:
		info, err := d.Describe(ctx, db, sqlstore.Table)
		if err != nil || !info.Exists || inferVersion(info) < 3 {
			return err // the shape step upgrades the table first, then distributes it
		}
		// The table's trigger (Dialect.Upsert) needs Citus's leave to be
		// distributed: it touches only the shard it fires on.
		if err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`SET LOCAL citus.enable_unsafe_triggers = on`).Error; err != nil {
				return err
			}
			return tx.Exec(`SELECT create_distributed_table(?, 'task_session_id', colocate_with => ?)`,
				sqlstore.Table, sessions).Error
		}); err != nil {
			return fmt.Errorf("distribute %s by task_session_id, colocated with %s: %w", sqlstore.Table, sessions, err)
		}
	}
	if !createdMeta {
		return nil
	}
	meta := `"` + t.Meta + `"`
	if mp, err := citusPlacement(ctx, db, meta); err != nil || mp.Method != "" {
		return err
	}
	if err := db.WithContext(ctx).Exec(`SELECT create_reference_table(?)`, meta).Error; err != nil {
		return fmt.Errorf("make the meta table %s a reference table: %w", meta, err)
	}
	return nil
}

// inferVersion is how far the table is along the numbered steps that
// Citus cares about: a distributed table's keys must contain the session,
// so it is distributed only from the primary key (task_session_id, id) on
// (step 3).
func inferVersion(info sqlstore.TableInfo) int {
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
