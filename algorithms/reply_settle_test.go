package algorithms

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

func TestSettlementParse(t *testing.T) {
	var s Settlement
	if err := s.Parse(decodeString(t, "*5\r\n:1700000000000000\r\n:-3\r\n:9\r\n:21\r\n:-21\r\n"), 2); err != nil {
		t.Fatal(err)
	}
	want := Settlement{Now: 1700000000000000, Results: []Settled{{Applied: -3, Remaining: 9}, {Applied: 21, Remaining: -21}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("%+v", s)
	}
	// A gateway may send the integers as bulk strings.
	if err := s.Parse(decodeString(t, "*3\r\n$16\r\n1700000000000000\r\n$1\r\n0\r\n$2\r\n-4\r\n"), 1); err != nil || s.Results[0] != (Settled{Remaining: -4}) || len(s.Results) != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	var rerr *redisproto.Error
	if err := s.Parse(decodeString(t, "-NOSCRIPT No matching script.\r\n"), 1); !errors.As(err, &rerr) || rerr.Prefix() != "NOSCRIPT" {
		t.Fatalf("error reply: %v", err)
	}
	for name, reply := range map[string]string{
		"not an array": ":1\r\n",
		"empty":        "*0\r\n",
		"zero time":    "*3\r\n:0\r\n:1\r\n:2\r\n",
		"wrong count":  "*4\r\n:1\r\n:1\r\n:2\r\n:3\r\n",
		"text":         "*3\r\n:1\r\n$1\r\nx\r\n:2\r\n",
		"decision":     "*7\r\n:1700000000000000\r\n:-2\r\n:1\r\n:16\r\n:15\r\n:-1\r\n:2000000\r\n",
	} {
		if err := s.Parse(decodeString(t, reply), 1); !errors.Is(err, ErrUnexpectedReply) {
			t.Errorf("%s: %v, want ErrUnexpectedReply", name, err)
		}
	}
}

func TestSettlementParseRESPAllocatesNothing(t *testing.T) {
	b := []byte("*5\r\n:1700000000000000\r\n:-3\r\n:9\r\n:21\r\n:-21\r\n")
	s := Settlement{Results: make([]Settled, 0, 2)}
	if n := testing.AllocsPerRun(100, func() {
		if ok, err := s.ParseRESP(b, 2); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// Whatever the bytes, a reply Settlement.ParseRESP takes is one Parse
// takes alike.
// fuzzDecodeLimits bound what the decoder builds from random bytes, as the
// filter's decoder is bounded.
var fuzzDecodeLimits = redisproto.Limits{MaxDepth: 4, MaxBulkLen: 1 << 16, MaxElements: 4096}

func FuzzSettlementParseRESP(f *testing.F) {
	f.Add([]byte("*5\r\n:1700000000000000\r\n:-3\r\n:9\r\n:21\r\n:-21\r\n"), 2)
	f.Add([]byte("*1\r\n:1700000000000000\r\n"), 0)
	f.Add([]byte("-NOSCRIPT No matching script.\r\n"), 1)
	f.Add([]byte("*3\r\n:1\r\n:01\r\n:2\r\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 50 {
			return
		}
		var flat, full Settlement
		ok, errFlat := flat.ParseRESP(b, n)
		dec := redisproto.Decoder{Limits: fuzzDecodeLimits} // no huge arrays from random input
		v, used, err := dec.Decode(b)
		var errFull error
		switch {
		case err != nil:
			errFull = err
		case used != len(b):
			errFull = ErrUnexpectedReply
		default:
			errFull = full.Parse(v, n)
		}
		if !ok {
			return
		}
		if (errFlat == nil) != (errFull == nil) || errFlat == nil && !reflect.DeepEqual(flat, full) {
			t.Fatalf("%q: ParseRESP %+v, %v; Parse %+v, %v", b, flat, errFlat, full, errFull)
		}
		if errFlat == nil && (len(flat.Results) != n || flat.Now <= 0) {
			t.Fatalf("%q: %+v for %d settles", b, flat, n)
		}
	})
}

func commandArgs(t *testing.T, cmd []byte) string {
	t.Helper()
	args, _ := decodeString(t, string(cmd)).Array()
	var got []string
	for _, a := range args {
		s, _ := a.Text()
		got = append(got, s)
	}
	return strings.Join(got, " ")
}

func TestAppendSettle(t *testing.T) {
	l, _ := NewSlidingLog(10, time.Second)
	f, _ := NewFunnel(10, 1, time.Second)
	settles := []Settle{{Key: "rl:{a b}:0", Limit: l, At: 1700000000000000, Reserved: 1, Cost: 5},
		{Key: "rl:{a b}:1", Limit: f, At: 1700000000000001, Cost: 2}}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendSettle(buf[:0], RESP, FCall, settles) }); n != 0 {
		t.Fatalf("AppendSettle allocates %v times", n)
	}
	want := "FCALL " + Library.Settle + " 2 rl:{a b}:0 rl:{a b}:1 s l 10 1000000 1700000000000000 1 5 f 10 1000000 1700000000000001 0 2"
	if got := commandArgs(t, buf); got != want {
		t.Fatalf("command = %q\nwant      %q", got, want)
	}
	if got := commandArgs(t, AppendSettle(nil, RESP, Eval, settles[:1])); !strings.HasPrefix(got, "EVAL "+Script.Source()+" 1 rl:{a b}:0 s l ") {
		t.Fatalf("EVAL command = %.80q...", got)
	}
	if got := commandArgs(t, AppendSettle(nil, RESP, EvalSHA, settles[:1])); !strings.HasPrefix(got, "EVALSHA "+Script.SHA+" 1 rl:{a b}:0 s l ") {
		t.Fatalf("EVALSHA command = %q", got)
	}
	webdis := string(AppendSettle(nil, WebdisPath, FCall, settles[1:]))
	if want := "FCALL/" + Library.Settle + "/1/rl%3A%7Ba%20b%7D%3A1/s/f/10/1000000/1700000000000001/0/2"; webdis != want {
		t.Fatalf("Webdis = %q\nwant     %q", webdis, want)
	}
}

func TestAppendCommandCheckOnly(t *testing.T) {
	l, _ := NewSlidingLog(10, time.Second)
	checks := []Check{{Key: "k0", Limit: l, Cost: 3, CheckOnly: true}, {Key: "k1", Limit: l, Cost: 3}}
	if got, want := commandArgs(t, AppendFCall(nil, nil, checks)), "FCALL "+Library.Decide+" 2 k0 k1 0 l 10 1000000 -1 l 10 1000000 3"; got != want {
		t.Fatalf("command = %q\nwant      %q", got, want)
	}
}

func TestCheckSettleCost(t *testing.T) {
	log := mustLimit(t)(NewSlidingLog(5, time.Second))
	counter := mustLimit(t)(NewSlidingCounter(5, time.Minute))
	funnel := mustLimit(t)(NewFunnel(5, 1, time.Second)) // T = 10^6us
	for _, tc := range []struct {
		l    Limit
		n    int64
		want string
	}{
		{log, 0, ""}, {log, 1 << 48, ""}, {log, 1<<48 + 1, "cost: must be <= 281474976710656 to settle"}, {log, -1, "cost: must be >= 0"},
		{counter, (1 << 48) / 60000, ""}, {counter, (1<<48)/60000 + 1, "cost: must be <= 4691249611 to settle"},
		{funnel, 281474976, ""}, {funnel, 281474977, "cost: must be <= 281474976 to settle"}, {funnel, -5, "cost: must be >= 0"},
	} {
		if got := errString(tc.l.CheckSettleCost(tc.n)); got != tc.want {
			t.Errorf("%v cost %d: got %q, want %q", tc.l.Algorithm, tc.n, got, tc.want)
		}
	}
	var pe *ParamError
	if err := funnel.CheckSettleCost(-1); !errors.As(err, &pe) || pe.Param != ParamCost {
		t.Fatalf("%#v", err)
	}
}
