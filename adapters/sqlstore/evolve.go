package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subagentctx/subagentctx/adapters/sqlstore/sqldialect"
	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/core/storekit"
	"github.com/subagentctx/subagentctx/internal/liberr"
	"gorm.io/gorm"
)

// The table evolves along one path (docs/CONTRACT.md §4 step 2): the
// numbered steps — the non-additive changes of its history, each run once
// and recorded in the meta table under versionKey, as goose, River and
// Temporal record theirs — then every column the declaration has and the
// table lacks, added from storekit.Columns. A table an earlier build left
// without a recorded version is placed by its catalog (inferVersion).

// versionKey is the meta table's key recording that numbered step v has
// been applied to the table (or that the table was created past it); its
// value is the instant it was recorded, RFC 3339 UTC. Written once.
func versionKey(v int) string { return "subagent_context_schema_v" + strconv.Itoa(v) }

// repairVersion is the shared step that merges the pairs earlier builds
// doubled at the seam (docs/CONTRACT.md §8.5); seamVersion adds
// seamColumn and merges them again, for the pairs an earlier release's
// writer doubled after the first repair (a rolling deploy): from then on
// every pass repairs the rows that column marks (repairSeam).
const (
	repairVersion = 4
	seamVersion   = 5
)

// steps are the numbered steps on this dialect, in order: the dialect's
// own, then the shared ones.
// The repairs add the pairs they merged to *merged.
func (s *Store) steps(merged *int64) []sqldialect.Step {
	repair := func(ctx context.Context, tx *gorm.DB, hook func(string) error) error {
		info, err := s.d.Describe(ctx, tx, Table)
		if err != nil {
			return err
		}
		for _, c := range []string{"source", "observed_at", storekit.SettledAtColumn} {
			if info.Column(c) == nil {
				return nil // no build wrote a table without them, nor a doubled pair into one
			}
		}
		merge, remove := s.repairStatements(func(c string) bool { return info.Column(c) != nil }, nil)
		n, err := s.repairPairs(tx, merge, remove, hook)
		*merged += n
		return err
	}
	out := append(slices.Clone(s.d.Steps()), sqldialect.Step{
		Version: repairVersion,
		Name:    "one row per invocation at the seam",
		Stages:  []string{"merge doubled pairs", "remove merged rows"},
		Apply: func(ctx context.Context, tx *gorm.DB, _ Tables, hook func(string) error) error {
			return repair(ctx, tx, hook)
		},
	}, sqldialect.Step{
		Version: seamVersion,
		Name:    "rows marked for the seam's check",
		Stages:  []string{"add column", "merge doubled pairs", "remove merged rows", "mark rows checked"},
		Apply: func(ctx context.Context, tx *gorm.DB, _ Tables, hook func(string) error) error {
			info, err := s.d.Describe(ctx, tx, Table)
			if err != nil {
				return err
			}
			if info.Column(seamColumn.Name) == nil { // a rebuild by an earlier step made it
				for _, q := range s.addSeamColumn() {
					if err := tx.Exec(q).Error; err != nil {
						return fmt.Errorf("add column %s: %w", seamColumn.Name, err)
					}
				}
				if err := hook("add column"); err != nil {
					return err
				}
			}
			if err := repair(ctx, tx, hook); err != nil {
				return err
			}
			// Every pair is checked now, and no other writer runs while
			// the step holds the table: the rows left at 0 (every row,
			// where the dialect could not add the column with 1) are
			// marked, through the index.
			mark := `UPDATE ` + Table + ` SET ` + seamColumn.Name + ` = 1 WHERE ` + unchecked("")
			if err := tx.Exec(mark).Error; err != nil {
				return fmt.Errorf("mark rows checked: %w", err)
			}
			return hook("mark rows checked")
		},
	})
	slices.SortFunc(out, func(a, b sqldialect.Step) int { return a.Version - b.Version })
	return out
}

// addSeamColumn adds seamColumn to a table with rows: where the dialect
// can change a default in place, the rows present take 1 (the step
// repairs them whole) and later inserts 0, without rewriting the table;
// elsewhere every row takes 0, and the step marks them all once.
func (s *Store) addSeamColumn() []string {
	set, ok := s.d.(sqldialect.DefaultSetter)
	if !ok {
		return []string{addColumnDDL(s.d, seamColumn)}
	}
	present := seamColumn
	present.Default = true
	return []string{addColumnDDL(s.d, present), set.SetDefault(Table, seamColumn.Name, defaultLiteral(seamColumn))}
}

// repairPairs runs repairStatements' merge and remove on tx and reports
// the pairs merged.
func (s *Store) repairPairs(tx *gorm.DB, merge, remove string, hook func(string) error) (int64, error) {
	res := tx.Exec(merge, s.now().UTC())
	if res.Error != nil {
		return 0, fmt.Errorf("merge doubled pairs: %w", res.Error)
	}
	if err := hook("merge doubled pairs"); err != nil {
		return res.RowsAffected, err
	}
	if err := tx.Exec(remove).Error; err != nil {
		return res.RowsAffected, fmt.Errorf("remove merged rows: %w", err)
	}
	return res.RowsAffected, hook("remove merged rows")
}

// repairSeam is the seam check every pass runs once the table has its
// declared shape (docs/CONTRACT.md §4 step 2): the pairs of the rows
// seamColumn marks unchecked — written by an earlier release's writer, as
// in a rolling deploy — are merged where doubled, in one transaction,
// and those rows marked checked. A row whose pair is doubled by a row
// committed meanwhile stays unchecked, for the next pass. When no row is
// unchecked it is one probe of an empty index (on a sharded table, of
// each shard's). A role that may not delete rows leaves the repair to the
// table's owner, saying so (ErrLeftToOwner).
func (s *Store) repairSeam(ctx context.Context) (int64, error) {
	q := s.seamStatements()
	db := s.db.WithContext(ctx)
	var todo int64
	if err := db.Raw(q.probe).Scan(&todo).Error; err != nil {
		return 0, s.opError("look for unchecked rows", err)
	}
	if todo == 0 {
		return 0, nil
	}
	present, err := presence(db, s.seamObjects())
	if err != nil {
		return 0, s.opError("look for the seam check's function", err)
	}
	var merged int64
	if slices.Contains(present, true) { // as the table's owner, whatever this role may do
		err = db.Raw(s.seamFunction.call, s.now().UTC()).Scan(&merged).Error
	} else {
		merged, err = s.repairIn(ctx, q.merge, q.remove, q.mark)
	}
	if c, ok := s.d.(sqldialect.PrivilegeChecker); ok && err != nil && c.Refused(err) {
		return 0, liberr.Errorf("%w: %w: merging the pairs an earlier release doubled deletes rows (run the "+
			"migration pass as the owner: subagentctl migrate): %w", ErrLeftToOwner, ErrPrivilege,
			s.opError("merge doubled pairs", err))
	} else if err != nil {
		return 0, s.opError("merge the pairs an earlier release doubled", err)
	}
	return merged, nil
}

// repairIn runs a repair's merge and remove, then after, if any, in one
// transaction: the pool's, or the host's that the store's handle is. It
// reports the pairs merged.
func (s *Store) repairIn(ctx context.Context, merge, remove, after string) (int64, error) {
	var merged int64
	repair := func(tx *gorm.DB) (err error) {
		if merged, err = s.repairPairs(tx, merge, remove, func(string) error { return nil }); err != nil || after == "" {
			return err
		}
		if err := tx.Exec(after).Error; err != nil {
			return fmt.Errorf("mark rows checked: %w", err)
		}
		return nil
	}
	if _, pool := sqldialect.PoolOf(s.db); !pool {
		return merged, repair(s.db.WithContext(ctx))
	}
	return merged, s.d.WithConn(ctx, s.db, func(conn *gorm.DB) error {
		return s.write(conn, s.d.BackfillForm(false).Begin, repair)
	})
}

// seamFunction is the function the seam check's merge runs through where
// the dialect can run one as its owner (sqldialect.Definer): so a pass as
// a role that may not delete rows merges too. Its name carries a digest
// of its statements, so that a build whose statements differ makes a
// function of its own rather than call an earlier one.
type seamFunction struct {
	object sqldialect.SchemaObject
	call   string
}

// defineSeamCheck is the store's seamFunction, nil where the dialect is
// not a Definer.
func (s *Store) defineSeamCheck() *seamFunction {
	d, ok := s.d.(sqldialect.Definer)
	if !ok {
		return nil
	}
	q := s.seamStatements()
	stmts := []string{q.merge, q.remove, q.mark}
	sum := sha256.Sum256([]byte(strings.Join(stmts, ";\n")))
	name := "subagentctx_seam_check_" + hex.EncodeToString(sum[:4])
	return &seamFunction{object: d.Define(name, stmts), call: d.Call(name)}
}

// seamObjects are what the seam check needs in the schema: its function,
// where there is one.
func (s *Store) seamObjects() []sqldialect.SchemaObject {
	if s.seamFunction == nil {
		return nil
	}
	return []sqldialect.SchemaObject{s.seamFunction.object}
}

// seamCheck is the seam check's statements, in the order they run.
type seamCheck struct{ probe, merge, remove, mark string }

// seamStatements are the seam check's statements: a probe of seamIndex;
// the repair of the unchecked rows' pairs; their marking as checked, but
// for the rows of a pair doubled now (a row committed after the repair's
// statements).
func (s *Store) seamStatements() seamCheck {
	t := Table
	merge, remove := s.repairStatements(nil, func(alias string) string {
		return `EXISTS (SELECT 1 FROM ` + t + ` u WHERE ` + unchecked("u.") + ` AND ` + samePair("u", alias) + `)`
	})
	return seamCheck{
		probe:  `SELECT count(*) FROM (SELECT 1 FROM ` + t + ` WHERE ` + unchecked("") + ` LIMIT 1) u`,
		merge:  merge,
		remove: remove,
		mark: `UPDATE ` + t + ` SET ` + seamColumn.Name + ` = 1 WHERE ` + unchecked(t+".") + `
	AND NOT (EXISTS (SELECT 1 FROM ` + t + ` b WHERE ` + backfilled("b") + ` AND ` + samePair("b", t) + `)
		AND EXISTS (SELECT 1 FROM ` + t + ` o WHERE ` + samePair("o", t) + `
			AND o.agent_execution_id <> '` + core.UnknownExecution + `'))`,
	}
}

// Evolution is what the shape step did.
type Evolution struct {
	// Applied names the numbered steps run, in order.
	Applied []string
	// Placed is the version an earlier build's table was placed at by its
	// catalog (nil: its versions were recorded).
	Placed *int
	// Added are the declared columns added to the table.
	Added []string
	// Rows is how many rows the table holds afterwards: every row kept,
	// but for the doubled pairs merged into one.
	Rows int64
	// Merged is how many (session, tool call id) pairs the seam repair
	// and the seam check merged from two rows into one.
	Merged int64
	// Built are the indexes the table lacked, built after the step's
	// transaction, without blocking writes where the dialect can.
	Built []string
	// Left is the seam check left to the table's owner, wrapping
	// ErrLeftToOwner and ErrPrivilege: the role may not delete the rows
	// the repair merges (nil: none left).
	Left error
}

// Changed reports whether the step changed the table.
func (e Evolution) Changed() bool {
	return len(e.Applied) > 0 || len(e.Added) > 0 || len(e.Built) > 0 || e.Merged > 0
}

func (e Evolution) String() string {
	var parts []string
	if e.Placed != nil {
		parts = append(parts, fmt.Sprintf("no version recorded: placed at version %d by the catalog", *e.Placed))
	}
	if len(e.Applied) > 0 {
		parts = append(parts, "applied "+strings.Join(e.Applied, ", "))
	}
	if e.Merged > 0 {
		parts = append(parts, fmt.Sprintf("%d doubled pairs merged", e.Merged))
	}
	if len(e.Added) > 0 {
		parts = append(parts, "added "+strings.Join(e.Added, ", "))
	}
	if len(e.Built) > 0 {
		parts = append(parts, "built "+strings.Join(e.Built, ", ")+" after the transaction")
	}
	if len(parts) == 0 {
		return "declared shape holds"
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; %d rows remain", e.Rows)
}

// evolve brings the table to its declared shape (docs/CONTRACT.md §4 step
// 2), in one transaction, every row kept: the numbered steps not yet
// recorded, each recorded as it runs; then the columns the table lacks,
// from the declaration; then what the upsert needs. On any failure the
// table keeps its old shape (and hook's error, from a fault-injection
// test, is such a failure). A table in its declared shape with every step
// recorded is left untouched. Afterwards the table is placed beside the
// sessions where the database shards them.
func (s *Store) evolve(ctx context.Context, hook func(stage string) error) (Evolution, error) {
	var ev Evolution
	if hook == nil {
		hook = func(string) error { return nil }
	}
	ctx, release, err := s.holdPass(ctx)
	if err != nil {
		return ev, err
	}
	defer release()
	db := s.db.WithContext(ctx)
	info, versions, err := s.catalog(db)
	if err != nil {
		return ev, s.opError("read the table's shape", err)
	}
	if !info.Exists {
		return ev, liberr.Errorf("table %s does not exist", Table)
	}
	if pending, placed := s.pending(info, versions); len(pending) == 0 && !placed &&
		compare(s.d, s.tables, info).holds() {
		if _, err := s.distribute(ctx); err != nil {
			return ev, err
		}
		return s.checkSeam(ctx, ev)
	}
	sharded, err := s.distributed(ctx)
	if err != nil {
		return ev, s.opError("read the table's placement", err)
	}
	// What the pass read before is about to change, and what it reads in
	// the transaction may roll back.
	pass := catalogOf(ctx)
	pass.forget()
	defer pass.forget()
	// An index the table lacks (one the declaration added) is built after
	// the transaction where the dialect can build it without blocking the
	// table's writes: in the transaction, its build would hold the lock
	// the column changes took for as long as it reads the table.
	_, indexer := s.d.(sqldialect.OnlineIndexer)
	_, pool := sqldialect.PoolOf(s.db)
	online := indexer && pool
	form := s.d.BackfillForm(false)
	err = s.d.WithConn(ctx, s.db, func(conn *gorm.DB) error {
		return s.write(conn, form.Begin, func(tx *gorm.DB) error {
			if form.Lock != "" {
				if err := tx.Exec(form.Lock).Error; err != nil {
					return fmt.Errorf("lock %s: %w", Table, err)
				}
			}
			// Read again under the lock: another process may have
			// evolved the table meanwhile.
			info, versions, err := s.catalog(tx)
			if err != nil {
				return err
			}
			pending, placed := s.pending(info, versions)
			if placed {
				v := inferVersion(s.d, info)
				ev.Placed = &v
			}
			at := formatKey(s.now())
			for _, st := range s.steps(&ev.Merged) {
				if !slices.ContainsFunc(pending, func(p sqldialect.Step) bool { return p.Version == st.Version }) {
					if _, ok := versions[st.Version]; !ok { // placed past it: record it
						if _, err := s.writeKey(tx, versionKey(st.Version), at); err != nil {
							return err
						}
					}
					continue
				}
				if err := st.Apply(ctx, tx, s.tables, hook); err != nil {
					return fmt.Errorf("step %d (%s): %w", st.Version, st.Name, err)
				}
				if _, err := s.writeKey(tx, versionKey(st.Version), at); err != nil {
					return err
				}
				ev.Applied = append(ev.Applied, fmt.Sprintf("%d (%s)", st.Version, st.Name))
			}
			if info, err = s.d.Describe(ctx, tx, Table); err != nil {
				return fmt.Errorf("read the table's shape: %w", err)
			}
			r := compare(s.d, s.tables, info)
			for _, c := range r.missing {
				if err := tx.Exec(addColumnDDL(s.d, c)).Error; err != nil {
					return fmt.Errorf("add column %s: %w", c.Name, err)
				}
				ev.Added = append(ev.Added, c.Name)
				if err := hook("add column " + c.Name); err != nil {
					return err
				}
			}
			if len(r.diffs) > 0 {
				return fmt.Errorf("%w: %s", ErrShape, strings.Join(r.diffs, "; "))
			}
			meta, err := s.metaName(ctx, tx)
			if err != nil {
				return fmt.Errorf("check the meta table: %w", err)
			}
			stmts := s.schemaStatements(sharded, meta)
			if sharded { // Citus refuses a function's DDL after this transaction's work on the table: see below
				stmts = stmts[:len(stmts)-len(s.form.Sharded)]
			}
			if online { // built after the commit, without blocking writes
				stmts = slices.DeleteFunc(stmts, func(q string) bool { return slices.Contains(IndexDDL(s.d), q) })
			}
			for _, q := range stmts { // indexes, and what a rebuild dropped
				if err := tx.Exec(q).Error; err != nil {
					return fmt.Errorf("complete the schema: %w\n  in: %s", err, q)
				}
			}
			// Counted at the end: a repair merges pairs into one row each.
			if err := tx.Raw(`SELECT count(*) FROM ` + Table).Scan(&ev.Rows).Error; err != nil {
				return fmt.Errorf("count rows: %w", err)
			}
			return hook("before commit")
		})
	})
	if err != nil {
		return Evolution{}, s.opError("bring the table to its declared shape", err)
	}
	if online {
		if ev.Built, err = s.buildMissingIndexes(ctx); err != nil {
			return ev, err
		}
	}
	// Sharded — placed now (an upgraded table follows its sessions), or
	// before — it needs what the upsert needs there, made after the
	// commit: Citus refuses a function's DDL in a transaction that has
	// worked on a distributed table in parallel.
	now, err := s.distribute(ctx)
	if err != nil {
		return ev, err
	}
	objects := s.seamObjects() // after the column it reads (and on Citus, after the commit: see above)
	if now {
		objects = append(slices.Clone(s.form.Sharded), objects...)
	}
	if err := s.makeObjects(s.db.WithContext(ctx), objects); err != nil {
		return ev, err
	}
	return s.checkSeam(ctx, ev)
}

// buildMissingIndexes builds, outside any transaction and without
// blocking writes (OnlineIndexer), the declared indexes the table lacks,
// and returns their names.
func (s *Store) buildMissingIndexes(ctx context.Context) ([]string, error) {
	db := s.db.WithContext(ctx)
	info, err := s.d.Describe(ctx, db, Table)
	if err != nil {
		return nil, s.opError("read the table's shape", err)
	}
	missing := compare(s.d, s.tables, info).indexes
	if err := s.create(db, s.buildIndexes(info, missing, true)); err != nil {
		return nil, err
	}
	catalogOf(ctx).forget()
	return missing, nil
}

// checkSeam runs the seam check (repairSeam) after the shape step and
// adds what it did to ev.
func (s *Store) checkSeam(ctx context.Context, ev Evolution) (Evolution, error) {
	n, err := s.repairSeam(ctx)
	if errors.Is(err, ErrLeftToOwner) {
		ev.Left = err
		return ev, nil
	} else if err != nil || n == 0 {
		return ev, err
	}
	ev.Merged += n
	if err := s.db.WithContext(ctx).Raw(`SELECT count(*) FROM ` + Table).Scan(&ev.Rows).Error; err != nil {
		return ev, s.opError("count rows", err)
	}
	return ev, nil
}

// pending are the numbered steps the table still needs, in order; placed
// says the table had no version recorded, so its catalog placed it.
func (s *Store) pending(info sqldialect.TableInfo, versions map[int]string) ([]sqldialect.Step, bool) {
	current, placed := 0, len(versions) == 0
	if placed {
		current = inferVersion(s.d, info)
	}
	var out []sqldialect.Step
	for _, st := range s.steps(new(int64)) {
		if _, ok := versions[st.Version]; !ok && st.Version > current {
			out = append(out, st)
		}
	}
	return out, placed
}

// catalog reads the table's shape and the versions recorded for it.
func (s *Store) catalog(db *gorm.DB) (sqldialect.TableInfo, map[int]string, error) {
	ctx := db.Statement.Context
	info, err := s.describe(ctx, db)
	if err != nil {
		return info, nil, fmt.Errorf("read the table's shape: %w", err)
	}
	versions := map[int]string{}
	meta, ok, err := s.metaTable(ctx, db)
	if err != nil || !ok {
		return info, versions, err
	}
	var kv []struct{ Key, Value string }
	q := `SELECT "key", value FROM ` + quote(meta) + ` WHERE "key" LIKE ?`
	if err := db.Raw(q, "subagent_context_schema_v%").Scan(&kv).Error; err != nil {
		return info, nil, fmt.Errorf("read the recorded versions: %w", err)
	}
	for _, p := range kv {
		if v, err := strconv.Atoi(strings.TrimPrefix(p.Key, "subagent_context_schema_v")); err == nil &&
			versionKey(v) == p.Key {
			versions[v] = p.Value
		}
	}
	return info, versions, nil
}

// shapeDiff says how the table differs from its declaration, or "" when
// its declared shape holds (the backfill and the execution key wait for
// it, docs/CONTRACT.md §4 step 3).
func (s *Store) shapeDiff(ctx context.Context) (string, error) {
	info, err := s.describe(ctx, s.db.WithContext(ctx))
	if err != nil {
		return "", s.opError("read the table's shape", err)
	}
	if r := compare(s.d, s.tables, info); !r.holds() {
		return r.String(), nil
	}
	return "", nil
}

// distribute places the table where the database shards (Placement),
// once per pass unless the pass changes the catalog. It fails, saying
// why, where the sessions are sharded so that the table cannot follow.
func (s *Store) distribute(ctx context.Context) (sharded bool, err error) {
	p, ok := s.d.(sqldialect.Placement)
	if !ok {
		return false, nil
	}
	sharded, err = catalogOf(ctx).placeOnce(func() (bool, error) { return p.Distribute(ctx, s.db, s.tables, false) })
	if err != nil {
		return false, s.opError("place the table beside the sessions", err)
	}
	return sharded, nil
}

// distributed reports whether the table is sharded.
func (s *Store) distributed(ctx context.Context) (bool, error) {
	p, ok := s.d.(sqldialect.Placement)
	if !ok {
		return false, nil
	}
	return p.Distributed(ctx, s.db)
}

// write runs fn in a transaction on conn (one connection), opened by begin
// ("" for BEGIN), committed when fn returns nil and rolled back otherwise.
func (s *Store) write(conn *gorm.DB, begin string, fn func(tx *gorm.DB) error) error {
	if _, inTx := conn.Statement.ConnPool.(*sql.Tx); inTx {
		return liberr.Errorf("the migration pass runs its own transactions: give the store a pool, not a transaction")
	}
	if begin == "" {
		begin = "BEGIN"
	}
	if err := conn.Exec(begin).Error; err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(conn); err != nil {
		return errors.Join(err, conn.Exec("ROLLBACK").Error)
	}
	if err := conn.Exec("COMMIT").Error; err != nil {
		return errors.Join(fmt.Errorf("commit: %w", err), conn.Exec("ROLLBACK").Error)
	}
	return nil
}

// writeKey inserts a meta key unless present (write-once, whatever the
// present value's precision or form); it reports whether it wrote.
func (s *Store) writeKey(db *gorm.DB, key, value string) (bool, error) {
	// Read first: a key in place costs no write, so a role that may only
	// read the meta table passes a pass with nothing to do.
	meta, err := s.metaName(db.Statement.Context, db)
	if err != nil {
		return false, fmt.Errorf("find the meta table: %w", err)
	}
	var n int64
	if err := db.Raw(`SELECT count(*) FROM `+quote(meta)+` WHERE "key" = ?`, key).Scan(&n).Error; err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	if n > 0 {
		return false, nil
	}
	res := db.Exec(
		`INSERT INTO `+quote(meta)+` ("key", value) VALUES (?, ?) ON CONFLICT ("key") DO NOTHING`, key, value,
	)
	if res.Error != nil {
		return false, fmt.Errorf("write %s: %w", key, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// formatKey is the form of every key this project writes: RFC 3339 with
// nanoseconds, UTC.
func formatKey(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
