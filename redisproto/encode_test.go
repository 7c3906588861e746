package redisproto

import (
	"math"
	"testing"
)

func TestEncoders(t *testing.T) {
	tests := []struct {
		got  []byte
		want string
	}{
		{AppendArrayLen(nil, 3), "*3\r\n"},
		{AppendArrayLen(nil, -1), "*-1\r\n"},
		{AppendMapLen(nil, 2), "%2\r\n"},
		{AppendSetLen(nil, 0), "~0\r\n"},
		{AppendPushLen(nil, 12), ">12\r\n"},
		{AppendAttributeLen(nil, 1), "|1\r\n"},
		{AppendBulk(nil, []byte("hi")), "$2\r\nhi\r\n"},
		{AppendBulk(nil, nil), "$0\r\n\r\n"},
		{AppendBulkString(nil, "a\r\nb"), "$4\r\na\r\nb\r\n"},
		{AppendBulkInt(nil, 42), "$2\r\n42\r\n"},
		{AppendBulkInt(nil, 0), "$1\r\n0\r\n"},
		{AppendBulkInt(nil, math.MinInt64), "$20\r\n-9223372036854775808\r\n"},
		{AppendCommand(nil, "GET", "k"), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"},
		{AppendCommand(nil), "*0\r\n"},
		{AppendCommand([]byte("x"), ""), "x*1\r\n$0\r\n\r\n"},
		{AppendSimpleString(nil, "OK"), "+OK\r\n"},
		{AppendSimpleString(nil, "a\r\nb\nc"), "+a  b c\r\n"},
		{AppendError(nil, "ERR bad"), "-ERR bad\r\n"},
		{AppendError(nil, "ERR\n"), "-ERR \r\n"},
		{AppendInt(nil, -7), ":-7\r\n"},
		{AppendInt(nil, math.MaxInt64), ":9223372036854775807\r\n"},
		{AppendNullBulk(nil), "$-1\r\n"},
		{AppendNull(nil), "_\r\n"},
		{AppendBool(nil, true), "#t\r\n"},
		{AppendBool(nil, false), "#f\r\n"},
		{AppendDouble(nil, 3.141), ",3.141\r\n"},
		{AppendDouble(nil, -0.0015), ",-0.0015\r\n"},
		{AppendDouble(nil, 1e21), ",1e+21\r\n"},
		{AppendDouble(nil, math.Inf(1)), ",inf\r\n"},
		{AppendDouble(nil, math.Inf(-1)), ",-inf\r\n"},
		{AppendDouble(nil, math.NaN()), ",nan\r\n"},
		{AppendBigNumber(nil, "-123456789012345678901234567890"), "(-123456789012345678901234567890\r\n"},
		{AppendBlobError(nil, "SYNTAX invalid syntax"), "!21\r\nSYNTAX invalid syntax\r\n"},
		{AppendVerbatim(nil, "mkd", "# hi"), "=8\r\nmkd:# hi\r\n"},
		{AppendVerbatim(nil, "markdown", "x"), "=5\r\ntxt:x\r\n"},
		{AppendValue(nil, Value{}), "$-1\r\n"},
		{AppendValue(nil, null), "$-1\r\n"},
		{AppendValue(nil, agg(KindMap, num(1), num(2), num(3))), "%1\r\n:1\r\n:2\r\n"},
		{AppendValue(nil, withAttrs(simple("OK"), simple("a"))), "+OK\r\n"},
		{AppendValue(nil, withAttrs(simple("OK"), simple("a"), num(1))), "|1\r\n+a\r\n:1\r\n+OK\r\n"},
		{AppendValue(nil, agg(KindSet, boolean(true), dbl(1.5))), "~2\r\n#t\r\n,1.5\r\n"},
		{AppendValue(nil, agg(KindPush, big("1"), blobErr("E"))), ">2\r\n(1\r\n!1\r\nE\r\n"},
		{AppendValue(nil, simple("a\nb")), "+a b\r\n"},
	}
	for i, tc := range tests {
		if string(tc.got) != tc.want {
			t.Errorf("%d: got %q, want %q", i, tc.got, tc.want)
		}
	}
}

// TestAppendValueRoundTrip re-encodes every valid decode case and decodes
// it again.
func TestAppendValueRoundTrip(t *testing.T) {
	for _, tc := range decodeGood {
		enc := AppendValue(nil, tc.want)
		v, n, err := Decode(enc)
		if err != nil || n != len(enc) || !equalValue(v, tc.want) {
			t.Errorf("%s: Decode(%q) = %v, %d, %v; want %v", tc.name, enc, v, n, err, tc.want)
		}
	}
}

func TestAppendCommandGrowsOnce(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() { AppendCommand(nil, evalshaArgs...) })
	if allocs != 1 {
		t.Errorf("AppendCommand(nil, ...) allocates %v times, want 1", allocs)
	}
}

func TestEncodeZeroAllocs(t *testing.T) {
	dst := make([]byte, 0, 4096)
	nested := Value{Kind: KindArray, Elems: []Value{
		num(1), bulk("abc"), verbatim("txt", "x"), dbl(2.5), withAttrs(null, simple("k"), num(2)),
	}}
	encoders := map[string]func(){
		"AppendArrayLen":     func() { dst = AppendArrayLen(dst[:0], 18) },
		"AppendMapLen":       func() { dst = AppendMapLen(dst[:0], 2) },
		"AppendSetLen":       func() { dst = AppendSetLen(dst[:0], 2) },
		"AppendPushLen":      func() { dst = AppendPushLen(dst[:0], 2) },
		"AppendAttributeLen": func() { dst = AppendAttributeLen(dst[:0], 2) },
		"AppendBulk":         func() { dst = AppendBulk(dst[:0], dst[:0]) },
		"AppendBulkString":   func() { dst = AppendBulkString(dst[:0], "rl:{tenant-42}:minute") },
		"AppendBulkInt":      func() { dst = AppendBulkInt(dst[:0], -1700000000123) },
		"AppendCommand":      func() { dst = AppendCommand(dst[:0], evalshaArgs...) },
		"AppendSimpleString": func() { dst = AppendSimpleString(dst[:0], "OK\r\n") },
		"AppendError":        func() { dst = AppendError(dst[:0], "NOSCRIPT No matching script.") },
		"AppendInt":          func() { dst = AppendInt(dst[:0], math.MinInt64) },
		"AppendNullBulk":     func() { dst = AppendNullBulk(dst[:0]) },
		"AppendNull":         func() { dst = AppendNull(dst[:0]) },
		"AppendBool":         func() { dst = AppendBool(dst[:0], true) },
		"AppendDouble":       func() { dst = AppendDouble(dst[:0], -1.5e-300) },
		"AppendBigNumber":    func() { dst = AppendBigNumber(dst[:0], "123456789012345678901234567890") },
		"AppendBlobError":    func() { dst = AppendBlobError(dst[:0], "SYNTAX invalid syntax") },
		"AppendVerbatim":     func() { dst = AppendVerbatim(dst[:0], "txt", "hello") },
		"AppendValue":        func() { dst = AppendValue(dst[:0], nested) },
	}
	for name, f := range encoders {
		if allocs := testing.AllocsPerRun(100, f); allocs != 0 {
			t.Errorf("%s allocates %v times per run, want 0", name, allocs)
		}
	}
}
