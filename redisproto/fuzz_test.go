package redisproto

import (
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// smallLimits makes the fuzzer reach every limit with short inputs.
var smallLimits = Limits{MaxDepth: 3, MaxBulkLen: 8, MaxElements: 8}

// FuzzDecode checks that Decode never panics, classifies every error,
// moves monotonically from incomplete to a result as the input grows, and
// that a decoded reply survives re-encoding and decodes the same under
// tighter limits, if they admit it.
// Seeds: the table cases here and testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	requireCorpus(f)
	for _, tc := range decodeGood {
		f.Add([]byte(tc.in))
	}
	for _, tc := range decodeBad {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(evalReply))
	f.Add([]byte(nestedReply))
	f.Fuzz(func(t *testing.T, in []byte) {
		var d Decoder
		v, n, err := d.Decode(in)
		small := Decoder{Limits: smallLimits}
		sv, sn, serr := small.Decode(in)
		checkErr(t, err, n)
		checkErr(t, serr, sn)
		checkGrowth(t, in, Limits{})
		checkGrowth(t, in, smallLimits)
		if serr == nil && (err != nil || sn != n || !equalValue(sv, v)) {
			t.Fatalf("small limits gave %v, %d; default limits gave %v, %d, %v", sv, sn, v, n, err)
		}
		if err != nil {
			return
		}
		if n <= 0 || n > len(in) {
			t.Fatalf("n = %d for %d bytes of input", n, len(in))
		}
		_ = v.String()
		_ = accessors(v)

		enc := AppendValue(nil, v)
		v2, n2, err := Decode(enc)
		if err != nil || n2 != len(enc) || !equalValue(v, v2) {
			t.Fatalf("re-encoded %q as %q, which decodes to %v, %d, %v; want %v", in[:n], enc, v2, n2, err, v)
		}
	})
}

// requireCorpus fails f when testdata/fuzz/<f's name> holds no seed: go
// test runs the seeds it finds there, and says nothing when it finds none.
func requireCorpus(f *testing.F) {
	f.Helper()
	seeds, err := filepath.Glob(filepath.Join("testdata", "fuzz", f.Name(), "*"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/%s (%v)", f.Name(), err)
	}
}

// checkErr checks that err is ErrIncomplete itself, a wrapped ErrMalformed
// or nil, and that a failed decode consumed nothing.
func checkErr(t *testing.T, err error, n int) {
	t.Helper()
	if err != nil && err != ErrIncomplete && !errors.Is(err, ErrMalformed) {
		t.Fatalf("unclassified error %v", err)
	}
	if err != nil && n != 0 {
		t.Fatalf("n = %d with error %v", n, err)
	}
}

// checkGrowth checks that as the input grows byte by byte, Decode reports
// ErrIncomplete, then either the same reply for good or malformed for
// good: no byte can repair a malformed input or spoil a complete reply.
// Inputs over 512 bytes are checked at 512 evenly spread lengths.
func checkGrowth(t *testing.T, in []byte, lim Limits) {
	t.Helper()
	const incomplete, complete, bad = 0, 1, 2
	d := Decoder{Limits: lim}
	state, first := incomplete, 0
	step := max(1, len(in)/512)
	for i := 0; i <= len(in); i += step {
		_, n, err := d.Decode(in[:i])
		now := bad
		switch {
		case err == ErrIncomplete:
			now = incomplete
		case err == nil:
			now = complete
		}
		if state != incomplete && (now != state || now == complete && n != first) {
			t.Fatalf("%+v: Decode(%q) = %d, %v after state %d at n %d", lim, in[:i], n, err, state, first)
		}
		if state == incomplete && now == complete {
			first = n
		}
		state = now
	}
}

// checkPrefixes checks that the proper prefixes of the reply r are
// incomplete: all of them if there are at most count, else an even spread
// of count and the longest.
func checkPrefixes(t *testing.T, r []byte, count int) {
	t.Helper()
	step := max(1, len(r)/count)
	var d Decoder
	for i := 0; i < len(r); i += step {
		if _, _, err := d.Decode(r[:i]); err != ErrIncomplete {
			t.Fatalf("prefix %q of %q: error = %v, want ErrIncomplete", r[:i], r, err)
		}
	}
	if _, _, err := d.Decode(r[:len(r)-1]); err != ErrIncomplete {
		t.Fatalf("prefix %q: error = %v, want ErrIncomplete", r[:len(r)-1], err)
	}
}

// FuzzRoundTrip builds a command and a reply of every kind from the fuzz
// input (s split at NUL bytes, an integer, a double and a boolean), encodes
// them, and checks that they decode to what was built.
// Seeds: below and testdata/fuzz/FuzzRoundTrip.
func FuzzRoundTrip(f *testing.F) {
	requireCorpus(f)
	f.Add(strings.Join(evalshaArgs, "\x00"), int64(1700000000123), 0.5, true)
	f.Add("GET\x00k", int64(-1), math.NaN(), false)
	f.Add("", int64(math.MinInt64), math.Inf(1), true)
	f.Add("a\r\nb\x00\x00\n", int64(0), math.Copysign(0, -1), false)
	f.Add("\xff\xfe\x00txt:", int64(math.MaxInt64), 5e-324, true)
	f.Fuzz(func(t *testing.T, s string, i int64, fl float64, b bool) {
		args := strings.Split(s, "\x00")

		// A command: an array of bulk strings, the integer last.
		cmd := AppendCommand(nil, args...)
		manual := AppendArrayLen(nil, len(args))
		for _, a := range args {
			manual = AppendBulkString(manual, a)
		}
		if string(cmd) != string(manual) {
			t.Fatalf("AppendCommand = %q, want %q", cmd, manual)
		}
		cmd = AppendArrayLen(cmd[:0], len(args)+1)
		want := Value{Kind: KindArray}
		for _, a := range args {
			cmd = AppendBulk(cmd, []byte(a))
			want.Elems = append(want.Elems, bulk(a))
		}
		cmd = AppendBulkInt(cmd, i)
		want.Elems = append(want.Elems, bulk(strconv.FormatInt(i, 10)))
		roundTrip(t, cmd, want)
		checkPrefixes(t, cmd, 32)

		// A reply using every kind, each string of s in turn.
		var m []Value
		for j, a := range args {
			var val Value
			switch j % 6 {
			case 0:
				val = simple(sanitize(a))
				checkEncoding(t, AppendSimpleString(nil, a), val)
			case 1:
				val = errv(sanitize(a))
				checkEncoding(t, AppendError(nil, a), val)
			case 2:
				val = verbatim("mkd", a)
				checkEncoding(t, AppendVerbatim(nil, "mkd", a), val)
			case 3:
				val = blobErr(a)
				checkEncoding(t, AppendBlobError(nil, a), val)
			case 4:
				val = big(strconv.FormatInt(i-int64(j), 10))
				checkEncoding(t, AppendBigNumber(nil, string(val.Str)), val)
			case 5:
				val = withAttrs(num(i), simple("index"), num(int64(j)))
			}
			m = append(m, bulk(a), val)
		}
		reply := agg(KindPush,
			agg(KindMap, m...), dbl(fl), boolean(b), null, num(i), agg(KindSet, bulk(s)), arr())
		checkEncoding(t, AppendDouble(nil, fl), dbl(fl))
		checkEncoding(t, AppendBool(nil, b), boolean(b))
		checkEncoding(t, AppendInt(nil, i), num(i))
		checkEncoding(t, AppendNull(nil), null)
		checkEncoding(t, AppendNullBulk(nil), null)
		enc := AppendValue(nil, reply)
		roundTrip(t, enc, reply)
		checkPrefixes(t, enc, 32)
	})
}

// sanitize is what simple strings and errors make of CR and LF.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// checkEncoding checks that enc decodes to want and that AppendValue
// encodes want as enc.
func checkEncoding(t *testing.T, enc []byte, want Value) {
	t.Helper()
	roundTrip(t, enc, want)
	if want.Kind != KindNull {
		if again := AppendValue(nil, want); string(again) != string(enc) {
			t.Fatalf("AppendValue(%v) = %q, want %q", want, again, enc)
		}
	}
}

// roundTrip checks that enc decodes to want, consuming all of it.
func roundTrip(t *testing.T, enc []byte, want Value) {
	t.Helper()
	v, n, err := Decode(enc)
	if err != nil || n != len(enc) || !equalValue(v, want) {
		t.Fatalf("Decode(%q) = %v, %d, %v; want %v, %d", enc, v, n, err, want, len(enc))
	}
}
