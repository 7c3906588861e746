package jsonbound

import (
	"encoding/json"
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
		std := json.Valid([]byte(doc))
		switch {
		case err == ErrTooDeep:
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
