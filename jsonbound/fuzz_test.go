package jsonbound

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzCheck compares Valid with encoding/json's Valid on input nested at
// most MaxDepth deep, and checks that deeper input is refused. The
// fuzzer's second argument wraps the input in that many more levels
// (arrays, objects or both, by its low bits), up to 1,023.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`0`, `{"a":[1,"b",null]}`, `"\u00e9\n"`, `[`, `{"a":}`, `-1.5e3`, ` []`} {
		f.Add([]byte(s), uint16(0))
	}
	f.Add([]byte(`1`), uint16(64<<2))
	f.Add([]byte(`1`), uint16(65<<2|1))
	f.Fuzz(func(t *testing.T, in []byte, wrap uint16) {
		levels := int(wrap >> 2 & 1023)
		var b strings.Builder
		for k := range levels {
			if wrap&3 == 1 || wrap&3 == 2 && k%2 == 1 {
				b.WriteString(`{"k":`)
			} else {
				b.WriteByte('[')
			}
		}
		b.Write(in)
		for k := levels - 1; k >= 0; k-- {
			if wrap&3 == 1 || wrap&3 == 2 && k%2 == 1 {
				b.WriteByte('}')
			} else {
				b.WriteByte(']')
			}
		}
		doc := b.String()
		err := Check([]byte(doc))
		if ValidString(doc) != (err == nil) {
			t.Fatalf("ValidString and Check disagree on %q: %v", doc, err)
		}
		if err != nil {
			checkPosition(t, doc, err)
		}
		std := json.Valid([]byte(doc))
		switch {
		case errors.Is(err, ErrTooDeep):
			if depthOf(doc) <= MaxDepth {
				t.Fatalf("Check(%q) = ErrTooDeep at depth %d", doc, depthOf(doc))
			}
		case levels+depthOf(string(in)) > MaxDepth && err == nil:
			t.Fatalf("Check(%q) = nil, nested %d deep", doc, levels+depthOf(string(in)))
		case (err == nil) != std:
			t.Fatalf("Check(%q) = %v, encoding/json.Valid = %v", doc, err, std)
		}
	})
}

// checkPosition checks where Check placed its refusal of doc: line and
// column agree with the offset, and the offset is the first byte no JSON
// text can go on with (an unterminated string's opening quote aside).
func checkPosition(t *testing.T, doc string, err error) {
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Check(%q) = %v, not a *SyntaxError", doc, err)
	}
	if se.Offset < 0 || se.Offset > len(doc) {
		t.Fatalf("Check(%q): offset %d", doc, se.Offset)
	}
	before := doc[:se.Offset]
	if line := 1 + strings.Count(before, "\n"); se.Line != line || se.Column < 1 || se.Column > se.Offset+1 {
		t.Fatalf("Check(%q): line %d, column %d at offset %d; want line %d", doc, se.Line, se.Column, se.Offset, line)
	}
	if strings.HasPrefix(se.What, "unterminated string") {
		if doc[se.Offset] != '"' {
			t.Fatalf("Check(%q): an unterminated string at offset %d, not a quote", doc, se.Offset)
		}
		return
	}
	if errors.Is(err, ErrTruncated) {
		if se.Offset != len(doc) {
			t.Fatalf("Check(%q): the end of input placed at %d of %d", doc, se.Offset, len(doc))
		}
		return
	}
	if err := Check([]byte(before)); err != nil && !errors.Is(err, ErrTruncated) {
		t.Fatalf("Check(%q) placed its refusal at offset %d, but the input before it is refused: %v", doc, se.Offset, err)
	}
	if again := Check([]byte(doc[:se.Offset+1])); !errors.Is(again, se.Err) {
		t.Fatalf("Check(%q) placed its refusal (%v) at offset %d, but the input through it gets %v", doc, se.Err, se.Offset, again)
	}
}

// depthOf is the greatest nesting of valid JSON, counted naively: every
// bracket outside strings.
func depthOf(s string) int {
	depth, most, inString := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			most = max(most, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return most
}

// FuzzElements compares Elements with encoding/json's reading of a body
// ReadBody accepts as an array of raw values: the same count, each span
// the element's text, and more exactly when the array is longer than max.
func FuzzElements(f *testing.F) {
	for _, s := range []string{`[]`, `[1,"a",{"b":[2]}]`, ` [ [] , {} ] `, `{"a":1}`, `"x"`, `[null,true,-0.5e1]`, `[NaN,-Infinity]`} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, limit uint8) {
		text, why := ReadBody(in)
		if why != 0 {
			return
		}
		body := string(text)
		spans, more := Elements(body, nil, int(limit))
		var all []json.RawMessage
		if err := json.Unmarshal(text, &all); err != nil {
			if strings.Contains(body, "NaN") || strings.Contains(body, "Infinity") {
				return // ReadBody reads them as numbers, encoding/json does not
			}
			if len(spans) != 0 || more {
				t.Fatalf("Elements(%q) = %v, %v of a body encoding/json reads as no array (%v)", body, spans, more, err)
			}
			return
		}
		if more != (len(all) > int(limit)) || len(spans) != min(len(all), int(limit)) {
			t.Fatalf("Elements(%q, %d) = %d spans, more %v; encoding/json reads %d", body, limit, len(spans), more, len(all))
		}
		for k, s := range spans {
			if got := body[s[0]:s[1]]; got != string(all[k]) {
				t.Fatalf("Elements(%q): element %d is %q; encoding/json reads %q", body, k, got, all[k])
			}
		}
		k := 0 // NextStart finds each element's start, told where the one before ends
		for i := NextStart(body, 0); i >= 0; i = NextStart(body, skipValue(body, i)) {
			if k == len(all) || k < len(spans) && i != spans[k][0] {
				t.Fatalf("NextStart(%q): element %d at %d; Elements reads %v", body, k, i, spans)
			}
			k++
		}
		if k != len(all) {
			t.Fatalf("NextStart(%q): %d elements; encoding/json reads %d", body, k, len(all))
		}
	})
}
