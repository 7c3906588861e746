package algorithms

import (
	"fmt"
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
	d := c.decide(p+"{u}:block", []Check{{Key: p + "{user123}:0", Limit: l, Cost: 1}})
	want := Result{Allowed: true, Limit: 16, Remaining: 15, RetryAfter: -1, ResetAfter: 2 * time.Second}
	if len(d.Results) != 1 || d.Results[0] != want {
		t.Fatalf("got %+v, want %+v", d.Results, want)
	}
}

// go-redis/redis_rate's PerSecond(10) sequence: Allow, AllowN(2), AllowN(7),
// AllowN(1000). The expected values hold whatever time passes between calls
// (under 100 ms); the durations are checked against the elapsed server time.
func TestGoldenRedisRatePerSecond(t *testing.T) {
	// The vector holds while the first three calls fall within 100ms of
	// Redis's clock (one unit drains per 100ms). A slower run, on a busy
	// machine, says nothing about the script: it is tried again on a
	// fresh key.
	for attempt := 1; !goldenRedisRatePerSecond(t, fmt.Sprintf("per_second_%d", attempt)); attempt++ {
		if attempt == 10 {
			t.Fatal("ten runs each took 100ms or more of Redis's clock")
		}
	}
}

// goldenRedisRatePerSecond runs the vector on one key; it reports false,
// having checked nothing, when the calls took 100ms or more.
func goldenRedisRatePerSecond(t *testing.T, name string) bool {
	t.Helper()
	c := dial(t)
	p := redistest.Prefix(t)
	l := mustLimit(t)(NewFunnel(10, 10, time.Second))
	key := p + "{" + name + "}:0"
	call := func(n int64) (Result, int64) {
		t.Helper()
		d := c.decide(p+"{u}:block", []Check{{Key: key, Limit: l, Cost: n}})
		return d.Results[0], d.Now
	}
	r1, start := call(1)
	r2, _ := call(2)
	r3, now := call(7)
	elapsed := time.Duration(now-start) * time.Microsecond
	if elapsed >= 100*time.Millisecond {
		t.Logf("calls took %v of Redis's clock; the vector assumes < 100ms: again", elapsed)
		return false
	}
	if !r1.Allowed || r1.Remaining != 9 || r1.RetryAfter != -1 || r1.ResetAfter != 100*time.Millisecond {
		t.Fatalf("Allow: %+v", r1)
	}
	if !r2.Allowed || r2.Remaining != 7 {
		t.Fatalf("AllowN(2): %+v", r2)
	}
	if !r3.Allowed || r3.Remaining != 0 || r3.ResetAfter != time.Second-elapsed {
		t.Fatalf("AllowN(7) after %v: %+v, want reset %v", elapsed, r3, time.Second-elapsed)
	}
	r, now := call(1000)
	elapsed = time.Duration(now-start) * time.Microsecond
	// tat = start+1s; new_tat = tat+100s; retry = new_tat - 1s - now.
	if r.Allowed || r.Remaining != 0 || r.RetryAfter != 100*time.Second-elapsed {
		t.Fatalf("AllowN(1000) after %v: %+v, want retry %v", elapsed, r, 100*time.Second-elapsed)
	}
	return true
}
