package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// A full Redis: maxmemory-policy noeviction, used memory above maxmemory.
// Redis refuses a function not flagged no-writes (decide, settle) before
// it runs, with -OOM; the filter must apply failure_mode to such a call,
// count it, and say at error level that Redis is full and what to do.

// fullRedis starts a redis-server as docs/redis.md sets one up for a
// limiter (noeviction), with the library; the test fills it.
func fullRedis(t *testing.T) *redistest.Server {
	t.Helper()
	return redistest.Start(t, "--maxmemory-policy", "noeviction")
}

func fill(t *testing.T, srv *redistest.Server) {
	t.Helper()
	if err := srv.Fill(); err != nil {
		t.Fatal(err)
	}
}

// oomWant is what the health line says of an -OOM reply, Redis's text
// in parentheses; oomHint what it says to do.
const (
	oomWant = "is full (OOM command not allowed when used memory > 'maxmemory'.): used memory is above maxmemory"
	oomHint = "raise maxmemory or free memory, and keep maxmemory-policy noeviction (docs/redis.md)"
)

// Each failure mode applies while Redis is full, with one error line per
// 10 s naming OOM and maxmemory, every refused call counted, and no
// request decided as if Redis had admitted it; once maxmemory is raised,
// Redis decides again.
func TestHealthOOM(t *testing.T) {
	for _, tc := range []struct {
		mode, text string
		status     int
		counter    string
	}{
		{"deny", "failure_mode deny: requests get 503", 503, "ratelimit.failure_mode.denied"},
		{"allow", "failure_mode allow: requests pass unlimited", 200, "ratelimit.failure_mode.allowed"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv := fullRedis(t)
			h := newFakeHost(t, healthConfig(tc.mode, ""))
			h.Clock, h.Redis = time.Now(), srv.Addr
			healthy(t, h)
			fill(t, srv)
			errs, modeCount := h.Counters["ratelimit.redis.errors"], h.Counters[tc.counter]
			c := healthCheck{h: h, from: h.Clock, want: oomWant, mode: tc.text, status: tc.status}
			c.run(t, func() {
				// What the requests while full got: failure_mode, each counted.
				if got := h.Counters["ratelimit.redis.errors"] - errs; got != 11 {
					t.Errorf("ratelimit.redis.errors rose by %d over 11 refused calls", got)
				}
				if got := h.Counters[tc.counter] - modeCount; got != 11 {
					t.Errorf("%s rose by %d over 11 requests", tc.counter, got)
				}
				if o := h.send("x-user=a"); o.headers["ratelimit"] != "" {
					t.Errorf("a request while full carries Redis's headers: %+v", o)
				}
				if err := srv.Unfill(); err != nil {
					t.Fatal(err)
				}
			})
			if l := linesAt(h, LogError, "")[0]; !strings.Contains(l, oomHint) {
				t.Errorf("the line %q does not say what to do", l)
			}
		})
	}
}

// With redis.command: evalsha the script has no flags (no shebang), so
// Redis runs it and refuses only its first write that may add data, and
// only when no write came before. A funnel's denial writes nothing, so it
// is still Redis's 429; a funnel's admission starts with SET, refused, so
// it gets failure_mode; a sliding log's admission trims the log first
// (ZREMRANGEBYSCORE, a write that adds nothing), after which Redis lets
// the script finish: it is decided, and its key grows past maxmemory.
func TestOOMEvalSHA(t *testing.T) {
	srv := fullRedis(t)
	h := newFakeHost(t, `{"failure_mode":"allow","circuit_breaker":{"failures":0},"redis":{"cluster":"redis","command":"evalsha"},
		"deny_cache":{"max_keys":0},"rules":[
		{"name":"f","match":{"path":"/f"},"key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1h"}]},
		{"name":"l","match":{"path":"/l"},"key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1h"}]}]}`)
	h.Redis = srv.Addr
	p := h.plugin.cfg.Redis.Prefix
	if o := h.send(":path=/f", "x-user=a"); o.status != 200 || o.headers["ratelimit"] == "" {
		t.Fatalf("first request: %+v", o)
	}
	fill(t, srv)
	if o := h.send(":path=/f", "x-user=a"); o.status != 429 {
		t.Fatalf("a funnel's denial while full: %+v; want 429, Redis's verdict", o)
	}
	errs := h.Counters["ratelimit.redis.errors"]
	if o := h.send(":path=/f", "x-user=b"); o.status != 200 || o.headers["ratelimit"] != "" || h.Counters["ratelimit.redis.errors"] != errs+1 {
		t.Fatalf("a funnel's admission while full: %+v, errors %d → %d; want failure_mode allow, one error", o, errs, h.Counters["ratelimit.redis.errors"])
	}
	if v, err := srv.Do("GET", p+"{f|b}:0"); err != nil || v != nil {
		t.Fatalf("the refused admission left %v (%v)", v, err)
	}
	if l := linesAt(h, LogError, `is full (OOM command not allowed when used memory > 'maxmemory'. script: `); len(l) != 1 || !strings.Contains(l[0], oomHint) {
		t.Fatalf("no error line names OOM: %q", h.logs)
	}
	if o := h.send(":path=/l", "x-user=c"); o.status != 200 || o.headers["ratelimit"] == "" || logCountOn(t, srv.Client, p+"{l|c}:0") != 1 {
		t.Fatalf("a sliding log's admission while full: %+v; want Redis's verdict and one entry", o)
	}
}

// A settle is refused too: the reservation stays charged, the settle is
// counted in ratelimit.settle.errors, and its warning names OOM.
func TestOOMSettleKeepsTheReservation(t *testing.T) {
	srv := fullRedis(t)
	h := newFakeHost(t, costConfig(costLimits["sliding_log"], ""))
	h.Redis = srv.Addr
	c := h.admit(40)
	fill(t, srv)
	h.finish(c, 10)
	if n := h.Counters["ratelimit.settle.errors"]; n != 1 {
		t.Fatalf("ratelimit.settle.errors %d, want 1", n)
	}
	if !loggedAt(h, LogWarn, "ratelimit: redis: settle: OOM command not allowed when used memory > 'maxmemory'") {
		t.Fatalf("no settle warning names OOM: %q", h.logs)
	}
	if n := logCountOn(t, srv.Client, h.plugin.cfg.Redis.Prefix+"{llm|k}:0"); n != 40 {
		t.Fatalf("Redis holds %d units after the refused settle, want the 40 reserved", n)
	}
}

// The epoch read is flagged no-writes, so it runs while Redis is full: an
// operator's change still clears the deny caches.
func TestOOMEpochReadStillRuns(t *testing.T) {
	srv := fullRedis(t)
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"header","name":"x-key"}],
		"limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1h"}]}]}`)
	h.Redis = srv.Addr
	tick := func() {
		h.plugin.OnTick()
		h.Pump()
	}
	h.send("x-key=a")
	if o := h.send("x-key=a"); o.status != 429 {
		t.Fatalf("second: %+v", o)
	}
	tick() // the first read learns the epoch (and clears, not knowing it)
	if o := h.send("x-key=a"); o.status != 429 || h.plugin.top().denyCache.size() != 1 {
		t.Fatalf("third: %+v", o)
	}
	fill(t, srv)
	// The operator bumps the epoch: a write, so maxmemory is raised for it.
	if err := srv.Unfill(); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("INCR", keyspace.EpochKey(h.plugin.cfg.Redis.Prefix)); err != nil {
		t.Fatal(err)
	}
	fill(t, srv)
	polls, changes := h.Counters["ratelimit.epoch.polls"], h.Counters["ratelimit.epoch.changes"]
	tick()
	if h.Counters["ratelimit.epoch.polls"] != polls+1 || h.Counters["ratelimit.epoch.changes"] != changes+1 || logged(h, "epoch:") {
		t.Fatalf("the read while full: polls %d → %d, changes %d → %d; logs %q", polls, h.Counters["ratelimit.epoch.polls"],
			changes, h.Counters["ratelimit.epoch.changes"], h.logs)
	}
	if h.plugin.top().denyCache.size() != 0 {
		t.Fatalf("the deny cache holds %d entries after the epoch moved", h.plugin.top().denyCache.size())
	}
}
