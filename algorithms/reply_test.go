package algorithms

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

func decodeString(t *testing.T, s string) redisproto.Value {
	t.Helper()
	v, n, err := redisproto.Decode([]byte(s))
	if err != nil || n != len(s) {
		t.Fatalf("decode %q: %v (n=%d)", s, err, n)
	}
	return v
}

func TestParseGoodReplies(t *testing.T) {
	var d Decision
	if err := d.Parse(decodeString(t, "*7\r\n:1700000000000000\r\n:-2\r\n:1\r\n:16\r\n:15\r\n:-1\r\n:2000000\r\n"), 1, 1); err != nil {
		t.Fatal(err)
	}
	want := Result{Allowed: true, Limit: 16, Remaining: 15, RetryAfter: -1, ResetAfter: 2 * time.Second}
	if d.Now != 1700000000000000 || d.Blocked || d.Results[0] != want || !d.Allowed() {
		t.Fatalf("%+v", d)
	}
	if err := d.Parse(decodeString(t, "*3\r\n:1700000000000000\r\n:1500\r\n:2\r\n"), 2, 3); err != nil {
		t.Fatal(err)
	}
	if !d.Blocked || d.BlockedBy != 1 || d.BlockedFor != 1500*time.Millisecond || len(d.Results) != 0 || d.Allowed() {
		t.Fatalf("blocked: %+v", d)
	}
}

func TestParseRejectsUnexpectedReplies(t *testing.T) {
	bad := map[string]string{
		"not an array":       ":1\r\n",
		"string":             "$2\r\nOK\r\n",
		"short":              "*1\r\n:1\r\n",
		"wrong count":        "*6\r\n:1\r\n:-2\r\n:1\r\n:16\r\n:15\r\n:-1\r\n",
		"zero time":          "*7\r\n:0\r\n:-2\r\n:1\r\n:16\r\n:15\r\n:-1\r\n:2\r\n",
		"bad block":          "*3\r\n:1\r\n:-3\r\n:1\r\n",
		"blocked, no index":  "*2\r\n:1\r\n:100\r\n",
		"blocked, index 0":   "*3\r\n:1\r\n:100\r\n:0\r\n",
		"blocked, index 2":   "*3\r\n:1\r\n:100\r\n:2\r\n",
		"allowed 2":          "*7\r\n:1\r\n:-2\r\n:2\r\n:16\r\n:15\r\n:-1\r\n:2\r\n",
		"remaining > limit":  "*7\r\n:1\r\n:-2\r\n:1\r\n:16\r\n:17\r\n:-1\r\n:2\r\n",
		"allowed with retry": "*7\r\n:1\r\n:-2\r\n:1\r\n:16\r\n:15\r\n:5\r\n:2\r\n",
		"denied no retry":    "*7\r\n:1\r\n:-2\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n",
		"non-canonical bulk": "*7\r\n:1\r\n:-2\r\n$2\r\n01\r\n:16\r\n:15\r\n:-1\r\n:2\r\n",
		"text bulk":          "*7\r\n:1\r\n:-2\r\n$1\r\nx\r\n:16\r\n:15\r\n:-1\r\n:2\r\n",
		"simple string":      "*7\r\n:1\r\n:-2\r\n+1\r\n:16\r\n:15\r\n:-1\r\n:2\r\n",
	}
	for name, reply := range bad {
		t.Run(name, func(t *testing.T) {
			var d Decision
			if err := d.Parse(decodeString(t, reply), 1, 1); !errors.Is(err, ErrUnexpectedReply) {
				t.Fatalf("got %v, want ErrUnexpectedReply", err)
			}
		})
	}
}

// A gateway may turn the script's integers into bulk strings.
func TestParseBulkIntegers(t *testing.T) {
	var d Decision
	reply := "*7\r\n$16\r\n1700000000000000\r\n$2\r\n-2\r\n$1\r\n0\r\n$2\r\n16\r\n$1\r\n0\r\n$7\r\n2000000\r\n$7\r\n3000000\r\n"
	if err := d.Parse(decodeString(t, reply), 1, 1); err != nil {
		t.Fatal(err)
	}
	want := Result{Allowed: false, Limit: 16, Remaining: 0, RetryAfter: 2 * time.Second, ResetAfter: 3 * time.Second}
	if d.Results[0] != want {
		t.Fatalf("%+v", d.Results[0])
	}
}

func TestParseReturnsRedisErrors(t *testing.T) {
	var d Decision
	err := d.Parse(decodeString(t, "-NOSCRIPT No matching script. Please use EVAL.\r\n"), 1, 1)
	var rerr *redisproto.Error
	if !errors.As(err, &rerr) || rerr.Prefix() != "NOSCRIPT" {
		t.Fatalf("got %v", err)
	}
}

func TestTightest(t *testing.T) {
	d := Decision{Results: []Result{
		{Allowed: true, Limit: 10, Remaining: 5, RetryAfter: -1},
		{Allowed: true, Limit: 100, Remaining: 20, RetryAfter: -1},
		{Allowed: true, Limit: 4, Remaining: 3, RetryAfter: -1},
	}}
	if got := d.Tightest(); got != 1 {
		t.Fatalf("all allowed: tightest = %d, want 1 (20%% left)", got)
	}
	d.Results[2] = Result{Allowed: false, Limit: 4, RetryAfter: time.Second}
	d.Results[0] = Result{Allowed: false, Limit: 10, RetryAfter: 2 * time.Second}
	if got := d.Tightest(); got != 0 {
		t.Fatalf("denied: tightest = %d, want 0 (longest retry)", got)
	}
	if got := (&Decision{}).Tightest(); got != -1 {
		t.Fatalf("empty: %d", got)
	}
}

func TestAppendFCallAllocatesNothing(t *testing.T) {
	l, _ := NewSlidingLog(10, time.Second)
	f, _ := NewFunnel(10, 1, time.Second)
	checks := []Check{{Key: "rl:{api:u1}:0", Limit: l, Cost: 1}, {Key: "rl:{api:u1}:1", Limit: f, Cost: 2}}
	buf := make([]byte, 0, 1024)
	blocks := []string{"rl:{api:u1}:block"}
	if n := testing.AllocsPerRun(100, func() { buf = AppendFCall(buf[:0], blocks, checks) }); n != 0 {
		t.Fatalf("AppendFCall allocates %v times", n)
	}
	v := decodeString(t, string(buf))
	args, _ := v.Array()
	var got []string
	for _, a := range args {
		s, _ := a.Text()
		got = append(got, s)
	}
	want := []string{"FCALL", Library.Decide, "3", "rl:{api:u1}:block", "rl:{api:u1}:0", "rl:{api:u1}:1", "1",
		"l", "10", "1000000", "1", "f", "10", "1000000", "2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("command = %q\nwant      %q", got, want)
	}
}
