package redisproto

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

type decodeCase struct {
	name string
	in   string
	want Value
	n    int // bytes consumed; 0 means len(in)
}

// Cases marked "real" are byte-for-byte replies captured from Redis 7.0.
var decodeGood = []decodeCase{
	// RESP2.
	{name: "simple string real", in: "+OK\r\n", want: simple("OK")},
	{name: "simple string empty", in: "+\r\n", want: simple("")},
	{name: "error real", in: "-NOSCRIPT No matching script. Please use EVAL.\r\n",
		want: errv("NOSCRIPT No matching script. Please use EVAL.")},
	{name: "error empty", in: "-\r\n", want: errv("")},
	{name: "integer real", in: ":12345\r\n", want: num(12345)},
	{name: "integer zero", in: ":0\r\n", want: num(0)},
	{name: "integer negative", in: ":-7\r\n", want: num(-7)},
	{name: "integer max", in: ":9223372036854775807\r\n", want: num(math.MaxInt64)},
	{name: "integer min", in: ":-9223372036854775808\r\n", want: num(math.MinInt64)},
	{name: "bulk real", in: "$11\r\nHello World\r\n", want: bulk("Hello World")},
	{name: "bulk empty", in: "$0\r\n\r\n", want: bulk("")},
	{name: "bulk binary", in: "$5\r\n\r\n\x00\n\r\r\n", want: bulk("\r\n\x00\n\r")},
	{name: "null bulk real", in: "$-1\r\n", want: null},
	{name: "null array", in: "*-1\r\n", want: null},
	{name: "empty array", in: "*0\r\n", want: arr()},
	{name: "evalsha reply real", in: "*6\r\n:1\r\n:0\r\n:1700000000\r\n:5\r\n:99\r\n:1000\r\n",
		want: arr(num(1), num(0), num(1700000000), num(5), num(99), num(1000))},
	{name: "nested arrays real",
		in:   "*5\r\n:1\r\n*2\r\n:2\r\n:3\r\n*2\r\n$1\r\na\r\n*1\r\n:4\r\n$-1\r\n$1\r\nx\r\n",
		want: arr(num(1), arr(num(2), num(3)), arr(bulk("a"), arr(num(4))), null, bulk("x"))},
	{name: "array of nulls", in: "*2\r\n*-1\r\n$-1\r\n", want: arr(null, null)},
	{name: "arena replaced mid-reply", // 10 + 10 + 2 values overflow the first slab of 16
		in:   "*2\r\n*10\r\n" + strings.Repeat(":7\r\n", 10) + "*10\r\n" + strings.Repeat(":8\r\n", 10),
		want: arr(arr(repeat(num(7), 10)...), arr(repeat(num(8), 10)...))},
	{name: "trailing bytes", in: ":1\r\n:2\r\n", want: num(1), n: 4},
	{name: "trailing garbage", in: "+OK\r\nxyz", want: simple("OK"), n: 5},

	// RESP3.
	{name: "null real", in: "_\r\n", want: null},
	{name: "true real", in: "#t\r\n", want: boolean(true)},
	{name: "false real", in: "#f\r\n", want: boolean(false)},
	{name: "double real", in: ",3.141\r\n", want: dbl(3.141)},
	{name: "double integral", in: ",10\r\n", want: dbl(10)},
	{name: "double negative exponent", in: ",-1.5e-3\r\n", want: dbl(-0.0015)},
	{name: "double exponent sign", in: ",2E+10\r\n", want: dbl(2e10)},
	{name: "double inf", in: ",inf\r\n", want: dbl(math.Inf(1))},
	{name: "double -inf", in: ",-inf\r\n", want: dbl(math.Inf(-1))},
	{name: "double nan", in: ",nan\r\n", want: dbl(math.NaN())},
	{name: "double out of range", in: ",1e400\r\n", want: dbl(math.Inf(1))},
	{name: "big number real", in: "(1234567999999999999999999999999999999\r\n",
		want: big("1234567999999999999999999999999999999")},
	{name: "big number negative", in: "(-3\r\n", want: big("-3")},
	{name: "blob error", in: "!21\r\nSYNTAX invalid syntax\r\n", want: blobErr("SYNTAX invalid syntax")},
	{name: "blob error empty", in: "!0\r\n\r\n", want: blobErr("")},
	{name: "verbatim real", in: "=29\r\ntxt:This is a verbatim\nstring\r\n",
		want: verbatim("txt", "This is a verbatim\nstring")},
	{name: "verbatim mkd real", in: "=8\r\nmkd:# hi\r\n", want: verbatim("mkd", "# hi")},
	{name: "verbatim empty text", in: "=4\r\ntxt:\r\n", want: verbatim("txt", "")},
	{name: "map real", in: "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n",
		want: agg(KindMap, num(0), boolean(false), num(1), boolean(true), num(2), boolean(false))},
	{name: "hello map real",
		in: "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n" +
			"$2\r\nid\r\n:3\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
		want: agg(KindMap, bulk("server"), bulk("redis"), bulk("version"), bulk("7.0.15"),
			bulk("proto"), num(3), bulk("id"), num(3), bulk("mode"), bulk("standalone"),
			bulk("role"), bulk("master"), bulk("modules"), arr())},
	{name: "empty map", in: "%0\r\n", want: agg(KindMap)},
	{name: "set real", in: "~3\r\n:0\r\n:1\r\n:2\r\n", want: agg(KindSet, num(0), num(1), num(2))},
	{name: "push then reply real",
		in:   ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\nSome real reply following the push reply\r\n",
		want: agg(KindPush, bulk("server-cpu-usage"), num(42)), n: 32},
	{name: "invalidate push real", in: ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk2\r\n",
		want: agg(KindPush, bulk("invalidate"), arr(bulk("k2")))},
	{name: "attribute real",
		in: "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n" +
			"$39\r\nSome real reply following the attribute\r\n",
		want: withAttrs(bulk("Some real reply following the attribute"),
			bulk("key-popularity"), arr(bulk("key:123"), num(90)))},
	{name: "attribute on element", in: "*2\r\n|1\r\n+ttl\r\n:3600\r\n:1\r\n:2\r\n",
		want: arr(withAttrs(num(1), simple("ttl"), num(3600)), num(2))},
	{name: "attribute on aggregate", in: "|1\r\n+a\r\n:1\r\n*1\r\n:2\r\n",
		want: withAttrs(arr(num(2)), simple("a"), num(1))},
	{name: "attributes merge", in: "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n+OK\r\n",
		want: withAttrs(simple("OK"), simple("a"), num(1), simple("b"), num(2))},
	{name: "empty attribute", in: "|0\r\n:1\r\n", want: num(1)},
	{name: "attribute of attribute key", in: "|1\r\n|1\r\n+x\r\n+y\r\n+a\r\n:1\r\n:5\r\n",
		want: withAttrs(num(5), withAttrs(simple("a"), simple("x"), simple("y")), num(1))},
	{name: "mixed nesting", in: "%1\r\n~1\r\n,1.5\r\n>1\r\n*1\r\n_\r\n",
		want: agg(KindMap, agg(KindSet, dbl(1.5)), agg(KindPush, arr(null)))},
}

var decodeBad = []struct {
	name string
	in   string
	err  error // ErrIncomplete, or ErrMalformed (wrapped)
}{
	{"empty input", "", ErrIncomplete},
	{"bare CR", "+OK\r", ErrIncomplete},
	{"attribute without value", "|1\r\n+a\r\n:1\r\n", ErrIncomplete},
	{"huge array, few bytes", "*1000000\r\n:1\r\n", ErrIncomplete},

	{"bad type byte", "x\r\n", ErrMalformed},
	{"inline command", "PING\r\n", ErrMalformed},
	{"RESP3 streamed chunk", ";4\r\nabcd\r\n", ErrMalformed},
	{"RESP3 end marker", ".\r\n", ErrMalformed},
	{"streamed bulk", "$?\r\n", ErrMalformed},
	{"streamed array", "*?\r\n", ErrMalformed},
	{"streamed map", "%?\r\n", ErrMalformed},
	{"non-digit in length", "$1x\r\na\r\n", ErrMalformed},
	{"letter length", "*a\r\n", ErrMalformed},
	{"empty length", "$\r\n", ErrMalformed},
	{"length with space", "* 1\r\n", ErrMalformed},
	{"negative bulk length", "$-2\r\n", ErrMalformed},
	{"negative array length", "*-5\r\n", ErrMalformed},
	{"minus ten", "$-10\r\n", ErrMalformed},
	{"minus zero length", "$-0\r\n", ErrMalformed},
	{"null map", "%-1\r\n", ErrMalformed},
	{"null set", "~-1\r\n", ErrMalformed},
	{"null push", ">-1\r\n", ErrMalformed},
	{"null attribute", "|-1\r\n", ErrMalformed},
	{"null blob error", "!-1\r\n", ErrMalformed},
	{"null verbatim", "=-1\r\n", ErrMalformed},
	{"CR without LF", "+OK\rX", ErrMalformed},
	{"CR CR", ":1\r\r", ErrMalformed},
	{"LF alone", "+OK\n", ErrMalformed},
	{"LF inside simple string", "+O\nK\r\n", ErrMalformed},
	{"LF inside error", "-E\nRR\r\n", ErrMalformed},
	{"bulk too long for CRLF", "$1\r\nab\r\n", ErrMalformed},
	{"bulk too short", "$3\r\nab\r\n", ErrMalformed},
	{"bulk CR without LF", "$1\r\na\rx", ErrMalformed},
	{"plus in integer", ":+1\r\n", ErrMalformed},
	{"plus in length", "$+1\r\na\r\n", ErrMalformed},
	{"plus in double", ",+1.5\r\n", ErrMalformed},
	{"plus in big number", "(+1\r\n", ErrMalformed},
	{"integer overflow", ":9223372036854775808\r\n", ErrMalformed},
	{"integer underflow", ":-9223372036854775809\r\n", ErrMalformed},
	{"integer leading zero", ":01\r\n", ErrMalformed},
	{"integer negative zero", ":-0\r\n", ErrMalformed},
	{"integer empty", ":\r\n", ErrMalformed},
	{"integer minus only", ":-\r\n", ErrMalformed},
	{"integer space", ":1 \r\n", ErrMalformed},
	{"length leading zero", "$01\r\na\r\n", ErrMalformed},
	{"length overflows int", "$99999999999999999999\r\n", ErrMalformed},
	{"count overflows int", "*99999999999999999999\r\n", ErrMalformed},
	{"bool other", "#x\r\n", ErrMalformed},
	{"bool long", "#tt\r\n", ErrMalformed},
	{"bool empty", "#\r\n", ErrMalformed},
	{"null with payload", "_x\r\n", ErrMalformed},
	{"double empty", ",\r\n", ErrMalformed},
	{"double trailing dot", ",1.\r\n", ErrMalformed},
	{"double leading dot", ",.5\r\n", ErrMalformed},
	{"double bare exponent", ",1e\r\n", ErrMalformed},
	{"double word", ",abc\r\n", ErrMalformed},
	{"double infinity", ",infinity\r\n", ErrMalformed},
	{"double NaN", ",NaN\r\n", ErrMalformed},
	{"double hex", ",0x1p3\r\n", ErrMalformed},
	{"double underscore", ",1_000\r\n", ErrMalformed},
	{"big number empty", "(\r\n", ErrMalformed},
	{"big number minus only", "(-\r\n", ErrMalformed},
	{"big number letter", "(12a\r\n", ErrMalformed},
	{"big number fraction", "(1.5\r\n", ErrMalformed},
	{"verbatim too short", "=3\r\ntxt\r\n", ErrMalformed},
	{"verbatim no colon", "=5\r\ntxt-a\r\n", ErrMalformed},
	{"verbatim no colon yet", "=9\r\ntxt-", ErrMalformed},
	{"bad element", "*2\r\n:1\r\nx", ErrMalformed},
	{"bad map value", "%1\r\n+k\r\n:x\r\n", ErrMalformed},
	{"bulk over MaxBulkLen", "$536870913\r\n", ErrMalformed},
	{"bulk over MaxBulkLen, no CRLF", "$99999999999", ErrMalformed},
	{"array over MaxElements", "*1048576\r\n", ErrMalformed},
	{"map over MaxElements", "%524288\r\n", ErrMalformed},
	{"too deep", strings.Repeat("*1\r\n", 17) + ":1\r\n", ErrMalformed},

	// Exactly at the boundary: malformed as soon as no completion exists.
	{"double ended early", ",1e\r", ErrMalformed},
	{"double empty, ended", ",\r", ErrMalformed},
	{"double word prefix", ",in", ErrIncomplete},
	{"double minus", ",-", ErrIncomplete},
	{"big number ended early", "(-\r", ErrMalformed},
	{"bool ended early", "#\r", ErrMalformed},
	{"too deep map, no count yet", strings.Repeat("*1\r\n", 16) + "%", ErrMalformed},
	{"too deep array, count started", strings.Repeat("*1\r\n", 16) + "*1", ErrMalformed},
	{"too deep, null array possible", strings.Repeat("*1\r\n", 16) + "*-", ErrIncomplete},
	{"too deep null array", strings.Repeat("*1\r\n", 16) + "*-1", ErrIncomplete},
}

func TestDecodeGood(t *testing.T) {
	var d Decoder // reused across cases, as in production
	for _, tc := range decodeGood {
		wantN := tc.n
		if wantN == 0 {
			wantN = len(tc.in)
		}
		v, n, err := d.Decode([]byte(tc.in))
		if err != nil || n != wantN || !equalValue(v, tc.want) {
			t.Errorf("%s: Decode(%q) = %v, %d, %v; want %v, %d, nil", tc.name, tc.in, v, n, err, tc.want, wantN)
		}
		// Package-level Decode agrees, and extra bytes change nothing.
		v, n, err = Decode([]byte(tc.in + "+extra\r\n"))
		if err != nil || n != wantN || !equalValue(v, tc.want) {
			t.Errorf("%s: Decode with extra bytes = %v, %d, %v", tc.name, v, n, err)
		}
	}
}

// TestDecodePrefixes checks that every proper prefix of every valid reply,
// including one that ends between CR and LF, is incomplete, not malformed.
func TestDecodePrefixes(t *testing.T) {
	var d Decoder
	for _, tc := range decodeGood {
		n := tc.n
		if n == 0 {
			n = len(tc.in)
		}
		for i := range n {
			if _, _, err := d.Decode([]byte(tc.in[:i])); err != ErrIncomplete {
				t.Errorf("%s: Decode(%q) error = %v, want ErrIncomplete", tc.name, tc.in[:i], err)
			}
		}
	}
}

func TestDecodeBad(t *testing.T) {
	var d Decoder
	for _, tc := range decodeBad {
		v, n, err := d.Decode([]byte(tc.in))
		switch {
		case tc.err == ErrIncomplete && err != ErrIncomplete:
			t.Errorf("%s: Decode(%q) error = %v, want ErrIncomplete itself", tc.name, tc.in, err)
		case tc.err == ErrMalformed && !errors.Is(err, ErrMalformed):
			t.Errorf("%s: Decode(%q) error = %v, want ErrMalformed", tc.name, tc.in, err)
		case tc.err == ErrMalformed && (!strings.HasPrefix(err.Error(), "redisproto: malformed reply: ") ||
			!strings.Contains(err.Error(), " at offset ")):
			t.Errorf("%s: error %q lacks detail or offset", tc.name, err)
		case n != 0 || v.Kind != 0:
			t.Errorf("%s: failed Decode returned %v, %d", tc.name, v, n)
		}
	}
}

func TestDecodeErrorOffset(t *testing.T) {
	_, _, err := Decode([]byte("*2\r\n:1\r\nx"))
	want := `redisproto: malformed reply: bad type byte 'x' at offset 8`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestDecodeLimits(t *testing.T) {
	tests := []struct {
		lim  Limits
		in   string
		want error // nil, ErrIncomplete or ErrMalformed
	}{
		{Limits{MaxDepth: 2}, "*1\r\n*1\r\n:1\r\n", nil},
		{Limits{MaxDepth: 2}, "*1\r\n*1\r\n*0\r\n", ErrMalformed},
		{Limits{MaxDepth: 2}, "*1\r\n*1\r\n*-1\r\n", nil}, // a null opens nothing
		{Limits{MaxDepth: 2}, "*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", nil},
		{Limits{MaxDepth: 1}, "*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", ErrMalformed},
		{Limits{}, strings.Repeat("*1\r\n", 16) + ":1\r\n", nil},
		{Limits{MaxBulkLen: 5}, "$5\r\nhello\r\n", nil},
		{Limits{MaxBulkLen: 5}, "$6", ErrMalformed}, // rejected before its CRLF
		{Limits{MaxBulkLen: 5}, "!6\r\n", ErrMalformed},
		{Limits{MaxBulkLen: 5}, "=6\r\ntxt:ab\r\n", ErrMalformed},
		{Limits{MaxBulkLen: 5}, "+hello\r\n", nil},
		{Limits{MaxBulkLen: 5}, "+hello!", ErrMalformed},
		{Limits{MaxBulkLen: 5}, "+hello", ErrIncomplete},
		{Limits{MaxBulkLen: 5}, "(123456\r\n", ErrMalformed},
		{Limits{MaxBulkLen: 3}, ",1e5\r\n", nil},
		{Limits{MaxBulkLen: 3}, ",1e", ErrIncomplete}, // ",1e5"
		{Limits{MaxBulkLen: 2}, ",1e", ErrMalformed},  // needs a 3rd byte
		{Limits{MaxBulkLen: 3}, ",in", ErrIncomplete},
		{Limits{MaxBulkLen: 2}, ",in", ErrMalformed},
		{Limits{MaxBulkLen: 1}, "(-", ErrMalformed},
		{Limits{MaxBulkLen: 1}, "(7", ErrIncomplete},
		{Limits{MaxElements: 3}, "*2\r\n:1\r\n:2\r\n", nil},
		{Limits{MaxElements: 3}, "*3", ErrMalformed},
		{Limits{MaxElements: 3}, "*1\r\n*1\r\n:1\r\n", nil},
		{Limits{MaxElements: 3}, "*2\r\n*1\r\n", ErrMalformed},
		{Limits{MaxElements: 3}, "%1\r\n:1\r\n:2\r\n", nil},
		{Limits{MaxElements: 3}, "%2\r\n", ErrMalformed},
		{Limits{MaxElements: 3}, "|1\r\n+a\r\n+b\r\n:1\r\n", nil},
		{Limits{MaxElements: 3}, "|1\r\n+a\r\n+b\r\n*1\r\n", ErrMalformed},
		{Limits{MaxElements: 3}, "|0\r\n|0\r\n*2\r\n:1\r\n:2\r\n", nil},
		{Limits{}, "*1048575\r\n", ErrIncomplete},
		{Limits{MaxDepth: -1, MaxBulkLen: -1, MaxElements: -1}, "$5\r\nhello\r\n", nil},
		{Limits{MaxBulkLen: math.MaxInt}, "$9223372036854775807\r\nab", ErrIncomplete},
		{Limits{MaxElements: math.MaxInt}, "%4611686018427387903\r\n", ErrIncomplete},
	}
	for _, tc := range tests {
		d := Decoder{Limits: tc.lim}
		_, _, err := d.Decode([]byte(tc.in))
		if tc.want == nil && err != nil || tc.want == ErrIncomplete && err != ErrIncomplete ||
			tc.want == ErrMalformed && !errors.Is(err, ErrMalformed) {
			t.Errorf("%+v Decode(%q) error = %v, want %v", tc.lim, tc.in, err, tc.want)
		}
	}
}

// TestDecodeNoPrealloc checks that a declared count is never trusted: a
// header for half a million elements, nested twice, then one element
// costs a few frames only.
func TestDecodeNoPrealloc(t *testing.T) {
	in := []byte("*500000\r\n*500000\r\n:1\r\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, _, err := Decode(in); err != ErrIncomplete {
			t.Fatalf("error = %v, want ErrIncomplete", err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("10 decodes allocated %d bytes, want < 64 KiB", got)
	}
}

func TestDecodePipeline(t *testing.T) {
	var in []byte
	for _, tc := range decodeGood {
		if tc.n == 0 {
			in = append(in, tc.in...)
		}
	}
	var d Decoder
	for _, tc := range decodeGood {
		if tc.n != 0 {
			continue
		}
		v, n, err := d.Decode(in)
		if err != nil || !equalValue(v, tc.want) {
			t.Fatalf("%s: got %v, %v; want %v", tc.name, v, err, tc.want)
		}
		in = in[n:]
	}
	if len(in) != 0 {
		t.Errorf("%d bytes left over", len(in))
	}
}

func TestDecodeAliasing(t *testing.T) {
	in := []byte("*2\r\n$3\r\nabc\r\n+OK\r\n")
	v, _, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	s := v.Elems[0].Str
	if cap(s) != len(s) {
		t.Errorf("Str has spare capacity %d; appending would overwrite the input", cap(s)-len(s))
	}
	in[8] = 'X' // Str aliases the input, by design
	if string(s) != "Xbc" {
		t.Errorf("Str = %q, want it to alias the input", s)
	}
}

// TestDecoderReuse checks that a reused Decoder gives the same results as
// fresh ones when replies of different shapes alternate.
func TestDecoderReuse(t *testing.T) {
	var d Decoder
	for range 3 {
		for _, tc := range decodeGood {
			v, _, err := d.Decode([]byte(tc.in))
			if err != nil || !equalValue(v, tc.want) {
				t.Fatalf("%s: got %v, %v; want %v", tc.name, v, err, tc.want)
			}
		}
	}
}

func TestDecodeZeroAllocs(t *testing.T) {
	replies := map[string]string{
		"flat":       evalReply,
		"nested":     nestedReply,
		"resp3":      "|1\r\n+a\r\n:1\r\n%2\r\n+k\r\n~2\r\n#t\r\n_\r\n$1\r\nv\r\n>1\r\n=5\r\ntxt:x\r\n",
		"double":     ",3.141\r\n",
		"error":      "-NOSCRIPT No matching script. Please use EVAL.\r\n",
		"big":        "(1234567999999999999999999999999999999\r\n",
		"incomplete": "*18\r\n:1\r\n:2\r\n",
	}
	for name, in := range replies {
		b := []byte(in)
		var d Decoder
		d.Decode(b) // warm up
		if allocs := testing.AllocsPerRun(100, func() { d.Decode(b) }); allocs != 0 {
			t.Errorf("%s: Decode allocates %v times per run, want 0", name, allocs)
		}
	}
}
