package algorithms

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// redis-cell's README: CL.THROTTLE user123 15 30 60 on a fresh key gives
// 0 16 15 -1 2 (max_burst 15 means a capacity of 16).
func TestGoldenRedisCellFirstLine(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewFunnel(16, 30, 60*time.Second))
	d := c.decide(p+"block", []Check{{Key: p + "user123", Limit: l, Cost: 1}})
	want := Result{Allowed: true, Limit: 16, Remaining: 15, RetryAfter: -1, ResetAfter: 2 * time.Second}
	if len(d.Results) != 1 || d.Results[0] != want {
		t.Fatalf("got %+v, want %+v", d.Results, want)
	}
}

// go-redis/redis_rate's PerSecond(10) sequence: Allow, AllowN(2), AllowN(7),
// AllowN(1000). The expected values hold whatever time passes between calls
// (under 100 ms); the durations are checked against the elapsed server time.
func TestGoldenRedisRatePerSecond(t *testing.T) {
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewFunnel(10, 10, time.Second))
	key := p + "per_second"
	call := func(n int64) (Result, int64) {
		t.Helper()
		d := c.decide(p+"block", []Check{{Key: key, Limit: l, Cost: n}})
		return d.Results[0], d.Now
	}
	r, start := call(1)
	if !r.Allowed || r.Remaining != 9 || r.RetryAfter != -1 || r.ResetAfter != 100*time.Millisecond {
		t.Fatalf("Allow: %+v", r)
	}
	r, _ = call(2)
	if !r.Allowed || r.Remaining != 7 {
		t.Fatalf("AllowN(2): %+v", r)
	}
	r, now := call(7)
	elapsed := time.Duration(now-start) * time.Microsecond
	if elapsed >= 100*time.Millisecond {
		t.Fatalf("calls took %v; the sequence assumes < 100ms", elapsed)
	}
	if !r.Allowed || r.Remaining != 0 || r.ResetAfter != time.Second-elapsed {
		t.Fatalf("AllowN(7) after %v: %+v, want reset %v", elapsed, r, time.Second-elapsed)
	}
	r, now = call(1000)
	elapsed = time.Duration(now-start) * time.Microsecond
	// tat = start+1s; new_tat = tat+100s; retry = new_tat - 1s - now.
	if r.Allowed || r.Remaining != 0 || r.RetryAfter != 100*time.Second-elapsed {
		t.Fatalf("AllowN(1000) after %v: %+v, want retry %v", elapsed, r, 100*time.Second-elapsed)
	}
}
