package algorithms

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// The reply parser never panics, and what it accepts is consistent.
func FuzzParseReply(f *testing.F) {
	f.Add([]byte("*7\r\n:1700000000000000\r\n:-2\r\n:1\r\n:16\r\n:15\r\n:-1\r\n:2000000\r\n"), 1, 1)
	f.Add([]byte("*3\r\n:1700000000000000\r\n:1500\r\n:1\r\n"), 1, 3)
	f.Add([]byte("-NOSCRIPT No matching script.\r\n"), 1, 1)
	f.Add([]byte("*12\r\n:1\r\n:-2\r\n:0\r\n:5\r\n:0\r\n:100\r\n:200\r\n:1\r\n:5\r\n:5\r\n:-1\r\n:0\r\n"), 2, 2)
	f.Fuzz(func(t *testing.T, reply []byte, nb, n int) {
		v, _, err := redisproto.Decode(reply)
		if err != nil || nb < 0 || n < 0 || n > 64 {
			return
		}
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
