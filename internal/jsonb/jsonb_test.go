package jsonb

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		text string
		ok   bool
	}{
		{`{}`, true}, {` {"a":1} `, true}, {"\t{\"a\":[1,2,{}]}\r\n", true}, {`"x"`, true}, {`null`, true}, {`-0.5e-3`, true},
		{``, false}, {`{`, false}, {`{"a":1,}`, false}, {`[1,]`, false}, {`01`, false}, {`1.`, false}, {`.5`, false},
		{`+1`, false},
		{`NaN`, false}, {`truex`, false}, {`1x`, false}, {`[1]x`, false}, {`{'a':1}`, false}, {"\f{}", false},
		{"\u00a0{}", false},
		{"\ufeff{}", false}, {`"a` + "\t" + `b"`, false}, {`"\x"`, false}, {`"\u12"`, false}, {`"\u+123"`, false},
		{`"\u0000"`, false}, {`"\\u0000"`, true}, {`"\ud800"`, false}, {`"\udc00"`, false}, {`"\ud800x"`, false},
		{`"\ud800\n"`, false},
		{`"\ud83d\ude00"`, true}, {`"\uD83D\uDE00"`, true}, {`{"\u0000":1}`, false}, {"\"\xff\"", false},
		{`1e131071`, true}, {`1e131072`, false}, {`1e-16383`, true}, {`1e-16384`, false}, {`0e-16384`, false},
		{`0e99999999`, true},
		{`0e1073741823`, false}, {`0.00012e131075`, true}, {`0.00012e131076`, false}, {`1e0000000000000000000005`, true},
		// The root is level 0: 1000 nested arrays reach level 999, one more
		// puts a value at level 1000 (PostgreSQL's $.**{1000} finds it).
		{strings.Repeat("[", 1000) + strings.Repeat("]", 1000), true},
		{strings.Repeat("[", 1001) + strings.Repeat("]", 1001), false},
		{`{"a":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`, true},
		{`{"a":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, false},
	} {
		_, err := Parse(c.text)
		if (err == nil) != c.ok {
			t.Errorf("Parse(%.60q): err %v, want ok=%v", c.text, err, c.ok)
		}
	}
}

// TestLastKeyWins: at every level, as jsonb keeps it.
func TestLastKeyWins(t *testing.T) {
	v, err := Parse(`{"a":{"b":1},"a":{"c":2},"k":"x","k":"y"}`)
	if err != nil {
		t.Fatal(err)
	}
	if Lookup(v, "a", "b") != nil || Lookup(v, "a", "c") != Number("2") || Lookup(v, "k") != "y" {
		t.Errorf("got %#v", v)
	}
	if Lookup(v, "k", "x") != nil || Lookup(v, "missing") != nil {
		t.Error("a path through a non-object is nil")
	}
}

func TestNumberInt(t *testing.T) {
	for lit, want := range map[string]any{
		"0": int64(0), "-0": int64(0), "-0.0e5": int64(0), "1e3": int64(1000), "2.0": int64(2), "10e-1": int64(1), "1.5": nil,
		"9223372036854775807": int64(9223372036854775807), "9223372036854775807.0": int64(9223372036854775807),
		"9223372036854775808": nil, "-9223372036854775808": int64(-9223372036854775808), "-9223372036854775809": nil,
		"92233720368547758.07e2": int64(9223372036854775807), "4503599627370496.5": nil, "1.0000000000000000001": nil,
		"1e18": int64(1e18), "1e19": nil, "123e-1000": nil, "0.0e-16382": int64(0), "0.0e-16383": nil,
	} {
		got, ok := Number(lit).Int()
		if (want == nil) == ok || (ok && got != want.(int64)) {
			t.Errorf("%s: got %d ok=%v, want %v", lit, got, ok, want)
		}
	}
}

// FuzzParse: Parse never panics; what it accepts is valid JSON (jsonb is
// stricter than RFC 8259, never looser); a number it accepts reads as an
// integer exactly when its exact value is an integer within 64 bits.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1,2.5e3,{"b":"\u00e9"}],"a":null}`, `"\ud83d\ude00"`, `-0.0e-0`, `[]`, `{"k":1e400}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := Parse(text)
		if err != nil {
			return
		}
		if !json.Valid([]byte(text)) {
			t.Fatalf("Parse accepted what encoding/json refuses: %q", text)
		}
		if n, ok := v.(Number); ok && len(n) < 64 && !hugeExponent(string(n)) {
			r, ok := new(big.Rat).SetString(string(n))
			if !ok {
				t.Fatalf("%s is not a number", n)
			}
			exact := r.IsInt() && r.Num().IsInt64()
			got, isInt := n.Int()
			if isInt != exact || (isInt && got != r.Num().Int64()) {
				t.Fatalf("%s: Int() = %d, %v; exact integer: %v", n, got, isInt, exact)
			}
		}
	})
}

// hugeExponent: an exponent past 400, whose exact value big.Rat would take
// long to compute.
func hugeExponent(lit string) bool {
	i := strings.IndexAny(lit, "eE")
	if i < 0 {
		return false
	}
	return len(strings.TrimLeft(strings.TrimLeft(lit[i+1:], "+-"), "0")) > 3
}
