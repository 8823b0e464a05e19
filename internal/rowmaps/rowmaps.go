// Package rowmaps reads a query's rows as column → value maps, each value
// as the driver returns it: for aggregates and views whose columns differ
// by dialect in type (an integer, numeric text, bytes), read before they
// are converted.
package rowmaps

import "gorm.io/gorm"

// Query runs q with args and returns its rows.
func Query(db *gorm.DB, q string, args ...any) ([]map[string]any, error) {
	rows, err := db.Raw(q, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		m := make(map[string]any, len(cols))
		for i, c := range cols {
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
