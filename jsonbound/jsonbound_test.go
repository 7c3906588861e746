package jsonbound

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// nest wraps inner in depth containers: open and close are one level's.
func nest(open, close string, depth int, inner string) string {
	return strings.Repeat(open, depth) + inner + strings.Repeat(close, depth)
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`0`, nil}, {`-0`, nil}, {`-12.5e+3`, nil}, {`1E9`, nil}, {`0.0`, nil}, {` true `, nil}, {`false`, nil}, {`null`, nil},
		{`""`, nil}, {`"a\"b\\c\/d\b\f\n\r\t\u00e9\uD83D\uDE00"`, nil}, {"\"caf\xe9\"", nil},
		{`"[{]}"`, nil}, {`{"[":"{","]}":["}","]"]}`, nil}, {`["\\"]`, nil},
		{`[]`, nil}, {`{}`, nil}, {" [ 1 , [ ] , { } ] ", nil}, {"{\"a\"\t:\r\n1}", nil},
		{`{"a":[{"b":{"c":[1,true,null,"x",{}]}}],"d":-1}`, nil},
		{nest("[", "]", 64, ""), nil},
		{nest(`{"a":`, "}", 64, "1"), nil},
		{nest(`[{"a":`, "}]", 32, "1"), nil},

		{nest("[", "]", 65, ""), ErrTooDeep},
		{nest(`{"a":`, "}", 65, "1"), ErrTooDeep},
		{nest(`[{"a":`, "}]", 32, "[]"), ErrTooDeep},
		{nest(`{"a":[`, "]}", 32, "{}"), ErrTooDeep},
		{strings.Repeat("[", 100_000), ErrTooDeep},

		{``, ErrTruncated}, {` `, ErrTruncated}, {`[`, ErrTruncated}, {`[1,`, ErrTruncated}, {`{"a"`, ErrTruncated},
		{`{"a":`, ErrTruncated}, {`{"a`, ErrTruncated}, {`"abc`, ErrTruncated}, {`"\`, ErrTruncated}, {`"\u12`, ErrTruncated},
		{`tru`, ErrTruncated}, {`-`, ErrTruncated}, {`1.`, ErrTruncated}, {`1e`, ErrTruncated}, {`1e+`, ErrTruncated},
		{`[1]]`, ErrSyntax}, {`[1}`, ErrSyntax}, {`{"a":1]`, ErrSyntax}, {`{1:2}`, ErrSyntax}, {`{"a" 1}`, ErrSyntax},
		{`[1,]`, ErrSyntax}, {`{"a":1,}`, ErrSyntax}, {`[,1]`, ErrSyntax}, {`1 2`, ErrSyntax}, {`01`, ErrSyntax},
		{`+1`, ErrSyntax}, {`.5`, ErrSyntax}, {`1.e5`, ErrSyntax}, {`trux`, ErrSyntax}, {`nul1`, ErrSyntax},
		{"\"a\nb\"", ErrSyntax}, {`"\x"`, ErrSyntax}, {`"\u12G4"`, ErrSyntax}, {`'a'`, ErrSyntax}, {`[1 2]`, ErrSyntax},
	} {
		if got := Check([]byte(tc.in)); !errors.Is(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("Check(%.40q) = %v, want %v", tc.in, got, tc.want)
		}
		if got := ValidString(tc.in); got != (tc.want == nil) || got != json.Valid([]byte(tc.in)) && !errors.Is(tc.want, ErrTooDeep) {
			t.Errorf("ValidString(%.40q) = %v; Check says %v, encoding/json %v", tc.in, got, tc.want, json.Valid([]byte(tc.in)))
		}
	}
}

func TestTooLarge(t *testing.T) {
	big := make([]byte, MaxSize+1)
	big[0] = '"'
	if err := Check(big); err != ErrTooLarge {
		t.Fatalf("Check of %d bytes = %v, want ErrTooLarge", len(big), err)
	}
}

// Checking allocates nothing, whatever the input.
func TestCheckAllocs(t *testing.T) {
	in := []byte(`{"usage":{"prompt_tokens":1,"completion_tokens":2},"z":` + nest("[", "]", 60, `"\u00e9"`) + `}`)
	deep := []byte(nest("[", "]", 1000, ""))
	if n := testing.AllocsPerRun(100, func() {
		if !Valid(in) || Valid(deep) {
			t.Fatal("wrong verdict")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per check, want 0", n)
	}
}

// About 1 MB of small arrays, objects, strings and numbers.
func BenchmarkCheck(b *testing.B) {
	flat := []byte("[" + strings.Repeat(`[1,"ab",{"c":true}],`, 50_000) + "0]")
	b.ReportAllocs()
	b.SetBytes(int64(len(flat)))
	for b.Loop() {
		if !Valid(flat) {
			b.Fatal("invalid")
		}
	}
}

func ExampleCheck() {
	fmt.Println(Check([]byte(`{"usage":{"total_tokens":3}}`)))
	fmt.Println(Check([]byte(strings.Repeat("[", 65) + strings.Repeat("]", 65))))
	fmt.Println(Check([]byte(`{"usage":`)))
	fmt.Println(Check([]byte(`{"usage":}`)))
	fmt.Println(Check([]byte("{\n  \"a\": [1, 2,]\n}")))
	// Output:
	// <nil>
	// jsonbound: nested deeper than 64 at line 1, column 65
	// jsonbound: invalid JSON at line 1, column 10: unexpected end of input: expected a value
	// jsonbound: invalid JSON at line 1, column 10: expected a value, found '}'
	// jsonbound: invalid JSON at line 2, column 14: unexpected ']' after ','
}
