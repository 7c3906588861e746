package jsonbound

import (
	"errors"
	"testing"
)

// Every refusal says where, by line and column, and what was wrong.
func TestSyntaxErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		kind     error
	}{
		{"[1,]", "line 1, column 4: unexpected ']' after ','", ErrSyntax},
		{"{\n  \"a\": 1,\n}", "line 3, column 1: unexpected '}' after ','", ErrSyntax},
		{`{"a":1`, "line 1, column 7: unexpected end of input: missing '}'", ErrTruncated},
		{"[[1]\n", "line 2, column 1: unexpected end of input: missing ']'", ErrTruncated},
		{`{"a":`, "line 1, column 6: unexpected end of input: expected a value", ErrTruncated},
		{`{"a":1,`, "line 1, column 8: unexpected end of input: expected an object key (a string)", ErrTruncated},
		{`{"a"`, "line 1, column 5: unexpected end of input: expected ':' after an object key", ErrTruncated},
		{``, "line 1, column 1: unexpected end of input: expected a value", ErrTruncated},
		{`{"a": tru}`, "line 1, column 10: unexpected '}' in the literal true", ErrSyntax},
		{`[nul`, "line 1, column 5: unexpected end of input in the literal null", ErrTruncated},
		{`[1, fals]`, "line 1, column 9: unexpected ']' in the literal false", ErrSyntax},
		{"{\"a\": [\n  \"x,\n  2]}", "line 2, column 3: unterminated string: a line break before its closing quote", ErrSyntax},
		{`{"a": "b`, "line 1, column 7: unterminated string", ErrTruncated},
		{`{"ab`, "line 1, column 2: unterminated string", ErrTruncated},
		{"[\"a\tb\"]", "line 1, column 4: unescaped control character 0x09 in a string", ErrSyntax},
		{`["\q"]`, "line 1, column 4: invalid escape '\\q' in a string", ErrSyntax},
		{"[\"\\\\\x01\"]", "line 1, column 5: unescaped control character 0x01 in a string", ErrSyntax},
		{`["\u00G0"]`, "line 1, column 7: unexpected 'G' in a \\u escape", ErrSyntax},
		{`{"a" 1}`, "line 1, column 6: expected ':' after an object key, found '1'", ErrSyntax},
		{`{a:1}`, "line 1, column 2: expected an object key (a string), found 'a'", ErrSyntax},
		{`[1 2]`, "line 1, column 4: expected ',' or ']', found '2'", ErrSyntax},
		{`{"a":1 "b":2}`, "line 1, column 8: expected ',' or '}', found '\"'", ErrSyntax},
		{`{"a":1]`, "line 1, column 7: expected ',' or '}', found ']'", ErrSyntax},
		{`{} {}`, "line 1, column 4: expected the end of input after the value, found '{'", ErrSyntax},
		{`[-x]`, "line 1, column 3: unexpected 'x' in a number", ErrSyntax},
		{`[1.]`, "line 1, column 4: unexpected ']' in a number", ErrSyntax},
		{`'a'`, "line 1, column 1: expected a value, found '''", ErrSyntax},
		{"\"é\" é", "line 1, column 5: expected the end of input after the value, found 'é'", ErrSyntax},
		{"[\"é\",\xff]", "line 1, column 6: unexpected byte 0xff after ','", ErrSyntax},
		{"{\r\n\"a\":\r\n x}", "line 3, column 2: expected a value, found 'x'", ErrSyntax},
		{"[\"a\nb\"]", "line 1, column 2: unterminated string: a line break before its closing quote", ErrSyntax},
		{"[\x01]", "line 1, column 2: expected a value, found control character 0x01", ErrSyntax},
	} {
		err := Check([]byte(tc.in))
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, tc.kind) {
			t.Errorf("Check(%q) = %v; want a *SyntaxError of %v", tc.in, err, tc.kind)
			continue
		}
		if got := se.Position() + ": " + se.What; got != tc.want {
			t.Errorf("Check(%q):\n got %s\nwant %s", tc.in, got, tc.want)
		}
		if string(ErrSyntax.Error()+" at "+tc.want) != err.Error() {
			t.Errorf("Check(%q).Error() = %q", tc.in, err.Error())
		}
	}
}

// The position of a refusal is the first byte no JSON text can go on
// with: everything before it is the start of some JSON text, and it is
// not (the unterminated string aside, placed at its opening quote).
func TestSyntaxErrorOffset(t *testing.T) {
	for _, in := range []string{"[1,]", `{"a":1 "b":2}`, `{"a": tru}`, `["\u00G0"]`, "{\r\n\"a\":\r\n x}", `[1.]`, `01`} {
		var se *SyntaxError
		if !errors.As(Check([]byte(in)), &se) || !errors.Is(se, ErrSyntax) {
			t.Fatalf("Check(%q): %v", in, se)
		}
		if err := Check([]byte(in[:se.Offset])); err != nil && !errors.Is(err, ErrTruncated) {
			t.Errorf("%q: the input before offset %d is refused: %v", in, se.Offset, err)
		}
		if err := Check([]byte(in[:se.Offset+1])); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: the input through offset %d is not refused: %v", in, se.Offset, err)
		}
	}
}
