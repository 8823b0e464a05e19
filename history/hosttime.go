package history

import (
	"time"

	"github.com/subagentctx/subagentctx/core/storekit"
)

// ParseHostTime reads a host timestamp stored as text (SQLite has no
// timestamp type): YYYY-MM-DD, optionally followed by ' ' or 'T' and
// HH:MM, optionally :SS and a fraction of any length, optionally 'Z' or
// ±HH:MM (UTC without one). These are the text forms SQLite's date
// functions accept and every form go-sqlite3 writes. The fraction is kept
// to the nanosecond. ok is false for anything else, for an impossible date
// or time, and for an instant outside what the pass reads
// (ReadableInstant).
func ParseHostTime(s string) (t time.Time, ok bool) {
	num := func(from, n int) (int, bool) {
		if from+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[from : from+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	at := func(i int, c byte) bool { return i < len(s) && s[i] == c }
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	if !ok1 || !ok2 || !ok3 || !at(4, '-') || !at(7, '-') {
		return time.Time{}, false
	}
	var h, mi, sec, nsec int
	i := 10
	if at(i, ' ') || at(i, 'T') {
		var okh, okm bool
		h, okh = num(i+1, 2)
		mi, okm = num(i+4, 2)
		if !okh || !okm || !at(i+3, ':') {
			return time.Time{}, false
		}
		i += 6
		if at(i, ':') {
			var oks bool
			if sec, oks = num(i+1, 2); !oks {
				return time.Time{}, false
			}
			i += 3
			if at(i, '.') {
				i++
				digits := 0
				for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
					if digits < 9 {
						nsec = nsec*10 + int(s[i]-'0')
					}
					digits++
				}
				if digits == 0 {
					return time.Time{}, false
				}
				for k := digits; k < 9; k++ {
					nsec *= 10
				}
			}
		}
	}
	offset := 0
	switch {
	case at(i, 'Z'):
		i++
	case at(i, '+'), at(i, '-'):
		oh, okh := num(i+1, 2)
		om, okm := num(i+4, 2)
		if !okh || !okm || !at(i+3, ':') || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		offset = oh*3600 + om*60
		if s[i] == '-' {
			offset = -offset
		}
		i += 6
	}
	if i != len(s) || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	t = time.Date(y, time.Month(mo), d, h, mi, sec, nsec, time.UTC)
	if t.Day() != d { // 2026-02-30 normalises to March: not a date
		return time.Time{}, false
	}
	t = t.Add(-time.Duration(offset) * time.Second)
	return t, ReadableInstant(t)
}

// ReadableInstant reports whether the pass reads t as an instant: its
// stored form (storekit.CanonicalTime) lies in years 1-9999 and is not Go's zero
// time, which means "not set" (docs/CONTRACT.md §4.2).
func ReadableInstant(t time.Time) bool {
	c := storekit.CanonicalTime(t)
	return !c.IsZero() && c.Year() >= 1 && c.Year() <= 9999
}
