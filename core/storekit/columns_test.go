package storekit

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/subagentctx/subagentctx/core"
	"github.com/subagentctx/subagentctx/internal/canon"
)

// TestColumnsDeclareEveryField: every field of Subagent is declared by
// exactly one column, under its JSON name, with a type and nullability that
// match the field. A field added without its column (or the reverse) fails
// here.
func TestColumnsDeclareEveryField(t *testing.T) {
	var s core.Subagent
	typ := reflect.TypeOf(s)
	if len(columns) != typ.NumField() {
		t.Fatalf("%d columns declared for %d fields of Subagent", len(columns), typ.NumField())
	}
	v := reflect.ValueOf(&s).Elem()
	seen := map[string]bool{}
	for _, c := range columns {
		dest := reflect.ValueOf(c.Dest(&s))
		var field reflect.StructField
		for i := range typ.NumField() {
			if v.Field(i).Addr().Pointer() == dest.Pointer() {
				field = typ.Field(i)
			}
		}
		switch {
		case field.Name == "":
			t.Errorf("column %s reads no field of Subagent", c.Name)
		case seen[field.Name]:
			t.Errorf("field %s is declared twice", field.Name)
		case strings.Split(field.Tag.Get("json"), ",")[0] != c.Name:
			t.Errorf("field %s is %q in JSON but column %s", field.Name, field.Tag.Get("json"), c.Name)
		case (field.Type.Kind() == reflect.Pointer) != c.Nullable:
			t.Errorf("column %s: nullable %v but field %s is %s", c.Name, c.Nullable, field.Name, field.Type)
		}
		seen[field.Name] = true
	}
}

// TestArenaFitsTheDeclaration: a row's pointers fit one arena (a column
// that does not fit fails here: raise the arena's capacity).
func TestArenaFitsTheDeclaration(t *testing.T) {
	var texts, ints, times int
	for _, c := range columns {
		if !c.Nullable {
			continue
		}
		switch c.Type {
		case Text:
			texts++
		case Int64:
			ints++
		case Time:
			times++
		}
	}
	holdsTexts, holdsInts, holdsTimes := canon.Capacity()
	if texts > holdsTexts || ints > holdsInts || times > holdsTimes {
		t.Errorf("nullable columns: %d text, %d int, %d time; the arena holds %d, %d, %d", texts, ints, times,
			holdsTexts, holdsInts, holdsTimes)
	}
}

// full is a row with every declared column set, each pointer to a value
// of its own (built from Columns, so a new column is in it).
func full() core.Subagent {
	var s core.Subagent
	at := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	for i, c := range columns {
		switch c.Type {
		case Text:
			c.Set(&s, fmt.Sprintf("v%d", i))
		case Int64:
			c.Set(&s, int64(i+1))
		case Bool:
			c.Set(&s, true)
		case Time:
			c.Set(&s, at)
		}
	}
	s.Source = core.SourceLive
	return s
}

// TestMergeFollowsTheDeclaredRules: for every column and every case (stored
// NULL or not, incoming NULL or not, stored row settled or not), Merge takes
// the incoming value exactly when the column's rule says so.
func TestMergeFollowsTheDeclaredRules(t *testing.T) {
	for _, c := range columns {
		for _, settled := range []bool{false, true} {
			for _, storedNull := range []bool{false, true} {
				for _, incomingNull := range []bool{false, true} {
					stored, incoming := full(), full()
					changed(&incoming)
					if !settled {
						stored.SettledAt = nil
					}
					if c.Name == SettledAtColumn && settled == storedNull {
						continue // settled is settled_at's own NULL-ness
					}
					if storedNull && !setNull(c, &stored) || incomingNull && !setNull(c, &incoming) {
						continue // a column that cannot be NULL
					}
					merged := Merge(&stored, incoming)
					want := c.Format(&stored)
					// changed: an hour later, one more
					greater := (c.Type == Time || c.Type == Int64) && !c.IsNull(&stored) && !c.IsNull(&incoming)
					switch {
					case c.Rule.TakesIncoming(Sides{StoredNull: c.IsNull(&stored), IncomingNull: c.IsNull(&incoming),
						Greater: greater, Settled: settled}):
						want = c.Format(&incoming)
					case c.Rule == RuleEnd && reopens(&stored, &incoming):
						want = c.Format(&incoming) // woken again: the incoming run's end
					}
					if got := c.Format(&merged); got != want {
						t.Errorf("%s (%s) stored null %v incoming null %v settled %v: merged %s, want %s",
							c.Name, c.Rule, storedNull, incomingNull, settled, got, want)
					}
				}
			}
		}
	}
}

// changed gives every column of r another value.
func changed(r *core.Subagent) {
	at := r.ObservedAt.Add(time.Hour)
	for _, c := range columns {
		switch d := c.Dest(r).(type) {
		case *string:
			*d += "-2"
		case **string:
			v := **d + "-2"
			*d = &v
		case *bool:
			*d = !*d
		case **int64:
			v := **d + 10
			*d = &v
		case *time.Time:
			*d = at
		case **time.Time:
			*d = &at
		}
	}
}

// setNull makes the column NULL in r (false for a non-nullable column; a
// boolean's "NULL" is false).
func setNull(c Column, r *core.Subagent) bool {
	switch d := c.Dest(r).(type) {
	case **string:
		*d = nil
	case **int64:
		*d = nil
	case **time.Time:
		*d = nil
	case *bool:
		*d = false
	default:
		return false
	}
	return true
}

// TestCloneSharesNothing: a clone's pointers are its own, for every
// column.
func TestCloneSharesNothing(t *testing.T) {
	orig := full()
	clone := Clone(orig)
	changed(&orig) // replaces the original's pointers
	a := full()
	for _, c := range columns {
		if c.Format(&clone) != c.Format(&a) {
			t.Errorf("column %s: the clone changed with the original", c.Name)
		}
	}
	clone2 := Clone(a)
	model, tokens := *a.Model, *a.TotalTokens
	*a.Model, *a.TotalTokens, *a.SettledAt = "mutated", 99, a.SettledAt.Add(time.Hour)
	if *clone2.Model != model || *clone2.TotalTokens != tokens ||
		!clone2.SettledAt.Equal(time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)) {
		t.Error("a clone shares a pointee with the original")
	}
}

// TestValidateNamesEveryColumn: each column refuses a value it cannot hold,
// naming itself.
func TestValidateNamesEveryColumn(t *testing.T) {
	if r := full(); Validate(&r) != nil {
		t.Fatalf("a full row is valid: %v", Validate(&r))
	}
	for _, c := range columns {
		r := full()
		switch d := c.Dest(&r).(type) {
		case *string:
			*d = ""
			if c.Name == "id" {
				*d = strings.Repeat("x", MaxIDBytes+1)
			}
		case **string:
			empty := ""
			*d = &empty
		case **int64:
			neg := int64(-1)
			*d = &neg
		case *time.Time:
			*d = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		case **time.Time:
			late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
			*d = &late
		default:
			continue // a boolean holds anything
		}
		if err := Validate(&r); err == nil || !strings.Contains(err.Error(), c.Name+" ") {
			t.Errorf("column %s: Validate says %v", c.Name, err)
		}
	}
}
