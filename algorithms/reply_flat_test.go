package algorithms

import (
	"reflect"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// parseBoth parses b with ParseRESP and with the full decoder and Parse.
func parseBoth(b []byte, nb, n int) (flat, full Decision, ok bool, errFlat, errFull error) {
	ok, errFlat = flat.ParseRESP(b, nb, n)
	dec := redisproto.Decoder{Limits: fuzzDecodeLimits} // no huge arrays from random input
	v, used, err := dec.Decode(b)
	if err == nil && used == len(b) {
		errFull = full.Parse(v, nb, n)
	} else if err == nil {
		errFull = ErrUnexpectedReply
	} else {
		errFull = err
	}
	return
}

func TestParseRESPAgreesWithParse(t *testing.T) {
	for _, tc := range []struct {
		reply  string
		nb, n  int
		wantOK bool
	}{
		{"*7\r\n:1700000000000000\r\n:-2\r\n:1\r\n:10\r\n:9\r\n:-1\r\n:100000\r\n", 1, 1, true},
		{"*7\r\n:1700000000000000\r\n:-2\r\n:0\r\n:10\r\n:0\r\n:5000\r\n:100000\r\n", 0, 1, true},
		{"*3\r\n:1700000000000000\r\n:5000\r\n:1\r\n", 1, 1, true},                         // blocked
		{"*3\r\n:1700000000000000\r\n:5000\r\n:2\r\n", 1, 1, true},                         // blocked by a key it was not sent
		{"*7\r\n:1700000000000000\r\n:-2\r\n:2\r\n:10\r\n:9\r\n:-1\r\n:1\r\n", 0, 1, true}, // allowed = 2
		{"-NOSCRIPT No matching script.\r\n", 0, 1, false},
		{"*7\r\n:1700000000000000\r\n:-2\r\n$1\r\n1\r\n:10\r\n:9\r\n:-1\r\n:1\r\n", 0, 1, false}, // a bulk string
		{"*2\r\n:1\r\n:-2\r\n:3\r\n", 0, 0, false},                                               // trailing bytes
		{"*2\r\n:01\r\n:-2\r\n", 0, 0, false},                                                    // not canonical
		{"*2\r\n:-0\r\n:-2\r\n", 0, 0, false},
	} {
		flat, full, ok, errFlat, errFull := parseBoth([]byte(tc.reply), tc.nb, tc.n)
		if ok != tc.wantOK {
			t.Errorf("%q: ParseRESP ok %v, want %v", tc.reply, ok, tc.wantOK)
			continue
		}
		if ok && ((errFlat == nil) != (errFull == nil) || errFlat == nil && !reflect.DeepEqual(flat, full)) {
			t.Errorf("%q: ParseRESP %+v, %v; Parse %+v, %v", tc.reply, flat, errFlat, full, errFull)
		}
	}
}

func TestParseRESPAllocatesNothing(t *testing.T) {
	b := []byte("*12\r\n:1700000000000000\r\n:-2\r\n:1\r\n:10\r\n:9\r\n:-1\r\n:100000\r\n:1\r\n:5\r\n:4\r\n:-1\r\n:7\r\n")
	var d Decision
	d.Results = make([]Result, 0, 2)
	if n := testing.AllocsPerRun(100, func() {
		if ok, err := d.ParseRESP(b, 0, 2); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// Whatever the bytes, a reply ParseRESP takes is one Parse takes alike.
func FuzzParseRESP(f *testing.F) {
	f.Add([]byte("*7\r\n:1700000000000000\r\n:-2\r\n:1\r\n:10\r\n:9\r\n:-1\r\n:100000\r\n"), 0, 1)
	f.Add([]byte("*3\r\n:1700000000000000\r\n:5000\r\n:1\r\n"), 1, 0)
	f.Fuzz(func(t *testing.T, b []byte, nb, n int) {
		if nb < 0 || n < 0 || nb > 4 || n > 4 {
			return
		}
		flat, full, ok, errFlat, errFull := parseBoth(b, nb, n)
		if !ok {
			return
		}
		if (errFlat == nil) != (errFull == nil) || errFlat == nil && !reflect.DeepEqual(flat, full) {
			t.Fatalf("%q: ParseRESP %+v, %v; Parse %+v, %v", b, flat, errFlat, full, errFull)
		}
	})
}
