// Package jsonb reads JSON text exactly as PostgreSQL's jsonb type reads
// it, so that Go code and PostgreSQL give one answer for any document
// (docs/CONTRACT.md §4.2, §8.6):
//
//   - strict RFC 8259 JSON in UTF-8: whitespace is space, tab, LF and CR only;
//     no BOM, no trailing comma, no leading zero, no NaN;
//   - a string holding the escape \u0000, or an unpaired surrogate escape, is
//     refused (jsonb cannot hold either as text);
//   - a number must fit PostgreSQL's numeric: at most 131,072 digits before
//     the decimal point and 16,383 after, exponent below 2³⁰ in magnitude;
//   - when an object repeats a key, the last occurrence counts;
//
// and the project's own limits, which a PostgreSQL function checks the same
// way: at most MaxBytes of text, no value nested MaxDepth levels deep.
package jsonb

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The project's limits on a document.
const (
	// MaxBytes is the largest document read; longer text reads as invalid.
	MaxBytes = 16 << 20
	// MaxDepth: a value at this nesting level (the root is level 0) makes
	// the document invalid.
	MaxDepth = 1000
)

// Object is a JSON object with its last occurrence of each key; Array
// elements are not kept (nothing reads them), only validated.
type (
	Object map[string]any
	Array  struct{}
	// Number is a number's literal text, validated.
	Number string
)

// Parse reads text as one JSON value: an Object, Array, string, Number,
// bool, or nil for null. Any text jsonb would refuse is an error.
func Parse(text string) (any, error) {
	if len(text) > MaxBytes {
		return nil, fmt.Errorf("document of %d bytes exceeds %d", len(text), MaxBytes)
	}
	if !utf8.ValidString(text) {
		return nil, errors.New("not valid UTF-8")
	}
	p := parser{s: text}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.fail("text after the value")
	}
	return v, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) fail(what string) error { return fmt.Errorf("offset %d: %s", p.i, what) }

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(level int) (any, error) {
	if level >= MaxDepth {
		return nil, p.fail(fmt.Sprintf("nested %d levels deep", level))
	}
	if p.i >= len(p.s) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(level)
	case c == '[':
		return p.array(level)
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, kw := range []struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(p.s[p.i:], kw.text) {
			p.i += len(kw.text)
			if p.i < len(p.s) && alnum(p.s[p.i]) {
				return nil, p.fail("invalid token")
			}
			return kw.v, nil
		}
	}
	return nil, p.fail("invalid token")
}

func alnum(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func (p *parser) object(level int) (any, error) {
	p.i++ // {
	obj := Object{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return obj, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.fail("expected a key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		p.space()
		v, err := p.value(level + 1)
		if err != nil {
			return nil, err
		}
		obj[k] = v // the last occurrence of a key counts
		p.space()
		if p.i >= len(p.s) {
			return nil, p.fail("unexpected end of object")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(level int) (any, error) {
	p.i++ // [
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return Array{}, nil
	}
	for {
		p.space()
		if _, err := p.value(level + 1); err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) {
			return nil, p.fail("unexpected end of array")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return Array{}, nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

// str reads a string at p.i (which is '"'), decoding its escapes.
func (p *parser) str() (string, error) {
	p.i++
	var b strings.Builder
	start := p.i
	high := rune(-1) // a high surrogate waiting for its low half
	for {
		if p.i >= len(p.s) {
			return "", p.fail("unterminated string")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			if high >= 0 {
				return "", p.fail("unpaired high surrogate")
			}
			if b.Len() == 0 {
				s := p.s[start:p.i]
				p.i++
				return s, nil
			}
			b.WriteString(p.s[start:p.i])
			p.i++
			return b.String(), nil
		case c < 0x20:
			return "", p.fail("unescaped control character in a string")
		case c != '\\':
			if high >= 0 {
				return "", p.fail("unpaired high surrogate")
			}
			p.i++
			continue
		}
		b.WriteString(p.s[start:p.i])
		if p.i+1 >= len(p.s) {
			return "", p.fail("unterminated escape")
		}
		e := p.s[p.i+1]
		p.i += 2
		if e != 'u' {
			if high >= 0 {
				return "", p.fail("unpaired high surrogate")
			}
			r, ok := map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[e]
			if !ok {
				return "", p.fail("invalid escape")
			}
			b.WriteByte(r)
			start = p.i
			continue
		}
		if p.i+4 > len(p.s) {
			return "", p.fail("short \\u escape")
		}
		n, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
		if err != nil || strings.ContainsAny(p.s[p.i:p.i+4], "+-") {
			return "", p.fail("invalid \\u escape")
		}
		p.i += 4
		start = p.i
		r := rune(n)
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if high >= 0 {
				return "", p.fail("unpaired high surrogate")
			}
			high = r
		case r >= 0xDC00 && r <= 0xDFFF:
			if high < 0 {
				return "", p.fail("unpaired low surrogate")
			}
			b.WriteRune(utf16.DecodeRune(high, r))
			high = -1
		case high >= 0:
			return "", p.fail("unpaired high surrogate")
		case r == 0:
			return "", p.fail("\\u0000 cannot be held as text")
		default:
			b.WriteRune(r)
		}
	}
}

// number reads a number at p.i, RFC 8259's grammar, and checks that
// PostgreSQL's numeric can hold it.
func (p *parser) number() (any, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case digits() == 0:
		return nil, p.fail("invalid number")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	if p.i < len(p.s) && alnum(p.s[p.i]) {
		return nil, p.fail("invalid number")
	}
	lit := p.s[start:p.i]
	if _, err := decimal(lit); err != nil {
		return nil, p.fail(err.Error())
	}
	return Number(lit), nil
}

// dec is a number as significand × 10^exp: the significand's digits with
// no leading or trailing zeros ("" for zero), and the exponent.
type dec struct {
	neg    bool
	digits string
	exp    int64
}

// PostgreSQL numeric's limits (src/backend/utils/adt/numeric.c).
const (
	maxExponent  = math.MaxInt32 / 2 // |exponent| at or above: "value overflows numeric format"
	maxDscale    = 16383             // digits after the decimal point
	maxIntDigits = 131072            // digits before it
)

// decimal decodes a valid literal, refusing what numeric_in refuses.
func decimal(lit string) (dec, error) {
	var d dec
	s := lit
	if s[0] == '-' {
		d.neg, s = true, s[1:]
	}
	mant, expText, _ := strings.Cut(strings.ToLower(s), "e")
	var exp int64
	if expText != "" {
		e, err := strconv.ParseInt(expText, 10, 64)
		if err != nil || e >= maxExponent || e <= -maxExponent {
			return d, errors.New("number overflows numeric")
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if dscale := int64(len(frac)) - exp; dscale > maxDscale {
		return d, errors.New("number overflows numeric")
	}
	all := strings.TrimLeft(intPart+frac, "0")
	trimmed := strings.TrimRight(all, "0")
	if trimmed == "" {
		return dec{}, nil // zero: its sign and exponent do not matter
	}
	// value = trimmed × 10^(exp - len(frac) + trailing zeros removed)
	d.digits = trimmed
	d.exp = exp - int64(len(frac)) + int64(len(all)-len(trimmed))
	if intDigits := int64(len(trimmed)) + d.exp; intDigits > maxIntDigits {
		return d, errors.New("number overflows numeric")
	}
	return d, nil
}

// Int reports the number's value when it is an integer within 64 bits
// (1e3 and 2.0 are; 1.5 and 2^63 are not).
func (n Number) Int() (int64, bool) {
	d, err := decimal(string(n))
	switch {
	case err != nil, d.exp < 0:
		return 0, false
	case d.digits == "":
		return 0, true
	case int64(len(d.digits))+d.exp > 19:
		return 0, false
	}
	v, ok := new(big.Int).SetString(d.digits+strings.Repeat("0", int(d.exp)), 10)
	if !ok {
		return 0, false
	}
	if d.neg {
		v.Neg(v)
	}
	if !v.IsInt64() {
		return 0, false
	}
	return v.Int64(), true
}

// Lookup follows a path of object keys from v; nil when any step is not
// an object or lacks the key.
func Lookup(v any, path ...string) any {
	for _, k := range path {
		obj, ok := v.(Object)
		if !ok {
			return nil
		}
		v = obj[k]
	}
	return v
}
