package algorithms

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// The reply parser never panics, and what it accepts is consistent.
func FuzzParseReply(f *testing.F) {
	f.Add([]byte("*7\r\n:1700000000000000\r\n:-2\r\n:1\r\n:16\r\n:15\r\n:-1\r\n:2000000\r\n"), 1, 1)
	f.Add([]byte("*3\r\n:1700000000000000\r\n:1500\r\n:1\r\n"), 1, 3)
	f.Add([]byte("-NOSCRIPT No matching script.\r\n"), 1, 1)
	f.Add([]byte("*12\r\n:1\r\n:-2\r\n:0\r\n:5\r\n:0\r\n:100\r\n:200\r\n:1\r\n:5\r\n:5\r\n:-1\r\n:0\r\n"), 2, 2)
	f.Add([]byte("*17\r\n:1700000000000000\r\n:-2\r\n:2\r\n:1\r\n:9\r\n:8\r\n:-1\r\n:100000\r\n:1\r\n:1000000\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:333333\r\n:3\r\n:333333\r\n"), 1, 0) // a choice's reply: pro picked
	f.Fuzz(func(t *testing.T, reply []byte, nb, n int) {
		dec := redisproto.Decoder{Limits: fuzzDecodeLimits} // no huge arrays from random input
		v, _, err := dec.Decode(reply)
		if err != nil || nb < 0 || n < 0 || n > 64 {
			return
		}
		checkChoiceParse(t, v, nb, n)
		var d Decision
		if d.Parse(v, nb, n) != nil {
			return
		}
		if d.Blocked {
			if len(d.Results) != 0 || d.BlockedBy < 0 || d.BlockedBy >= nb {
				t.Fatalf("blocked decision %+v", d)
			}
			return
		}
		if len(d.Results) != n {
			t.Fatalf("%d results for %d checks", len(d.Results), n)
		}
		for _, r := range d.Results {
			if r.Remaining < 0 || r.Remaining > r.Limit || (r.Allowed != (r.RetryAfter == -1)) || r.ResetAfter < 0 {
				t.Fatalf("inconsistent result %+v", r)
			}
		}
	})
}

// fuzzChoices is a call's one choice: two tiers over two positions, and an
// override.
var fuzzChoices = []Choice{{TierKey: "t", OverrideKey: "o", Keys: []string{"k0", "k1"}, Tiers: []Tier{
	{Name: "free", Limits: []Limit{{Algorithm: SlidingLog, Rate: 5, Burst: 5, Period: time.Second}}},
	{Name: "pro", Limits: []Limit{{Algorithm: SlidingLog, Rate: 9, Burst: 9, Period: time.Second},
		{Algorithm: Funnel, Rate: 1, Burst: 3, Period: time.Second}}},
}}}

// checkChoiceParse parses v as the reply to a call with n checks and
// fuzzChoices: what it accepts must be consistent.
func checkChoiceParse(t *testing.T, v redisproto.Value, nb, n int) {
	var d Decision
	if d.ParseCall(v, nb, n, fuzzChoices) != nil || d.Blocked {
		return
	}
	if len(d.Results) != n+2 || len(d.Picks) != 1 || len(d.Picked) != 2 || d.Picks[0] < PickOverride || d.Picks[0] > 1 {
		t.Fatalf("choice decision %+v", d)
	}
	for i, r := range d.Results[n:] {
		if r.Unused() != (d.Picked[i].Algorithm == 0) || !r.Unused() && d.Picked[i].Validate() != nil {
			t.Fatalf("position %d: %+v decided by %+v", i, r, d.Picked[i])
		}
	}
}
