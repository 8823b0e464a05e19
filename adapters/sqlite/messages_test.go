package sqlite

import (
	"encoding/json"
	"testing"
)

// FuzzAppendJSONText checks the reader's string encoder against
// encoding/json, which it replaced: each string reads back as the same
// text (invalid UTF-8 as U+FFFD byte by byte), so the backfill's rows are
// what they were.
func FuzzAppendJSONText(f *testing.F) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnl\nnul\x00 esc\x1b del\x7f",
		"é ☃ 𝄞", "bad \xff byte", "\xe2\x82 cut", "\xed\xa0\x80 surrogate", "\u2028\u2029 <&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONText(nil, s)
		var back, want string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q encodes as %s, not JSON: %v", s, got, err)
		}
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if back != want {
			t.Fatalf("%q reads back as %q, encoding/json's as %q", s, back, want)
		}
	})
}
