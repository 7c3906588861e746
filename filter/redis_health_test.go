package filter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// healthConfig is a configuration with failure_mode mode, no breaker (so
// that every request while failing makes its call), and redis extending
// the redis object.
func healthConfig(mode, redis string) string {
	return `{"failure_mode":"` + mode + `","circuit_breaker":{"failures":0},"redis":{"cluster":"redis"` + redis + `},
	"rules":[{"name":"u","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}]}]}`
}

// linesAt returns the lines logged exactly at level that contain substr.
func linesAt(h *fakeHost, level LogLevel, substr string) []string {
	var out []string
	for i, l := range h.logs {
		if h.levels[i] == level && strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func gauge(h *fakeHost, name string) int64 { return int64(h.Counters[name]) }

// healthCheck is what every failure kind must show, on the fake clock:
// from the first failure at from, one error line per 10 s while failing,
// naming the cluster, what failed (want) and the failure mode; the gauge
// at 0; once fix is applied, decisions again, one recovery line, and the
// gauge at 1. Requests are sent one per second of the fake clock.
type healthCheck struct {
	h          *fakeHost
	from       time.Time
	want, mode string
	status     int // what a request gets while failing
}

func (c *healthCheck) run(t *testing.T, fix func()) {
	t.Helper()
	h := c.h
	for i := range 10 { // from+0s .. from+9s: the first line only
		h.Clock = c.from.Add(time.Duration(i) * time.Second)
		if o := h.send("x-user=a"); o.status != c.status {
			t.Fatalf("request %d while failing: %+v; want %d", i, o, c.status)
		}
	}
	lines := linesAt(h, LogError, "")
	if len(lines) != 1 {
		t.Fatalf("%d error lines in 10 s; want 1: %q", len(lines), h.logs)
	}
	for _, part := range []string{`ratelimit: redis cluster "redis" `, c.want, c.mode} {
		if !strings.Contains(lines[0], part) {
			t.Fatalf("the error line %q does not say %q", lines[0], part)
		}
	}
	if g := gauge(h, "ratelimit.redis.healthy"); g != 0 {
		t.Fatalf("ratelimit.redis.healthy %d while failing", g)
	}
	h.Clock = c.from.Add(10 * time.Second)
	h.send("x-user=a")
	if lines = linesAt(h, LogError, c.want); len(linesAt(h, LogError, "")) != 2 || len(lines) != 2 ||
		!strings.Contains(lines[1], "similar messages suppressed") {
		t.Fatalf("after 10 s: error lines %q; want a second one, with the count suppressed", linesAt(h, LogError, ""))
	}

	fix()
	for i := 11; ; i++ {
		if i == 20 {
			t.Fatalf("no decision 9 s after the fix: %q", h.logs)
		}
		h.Clock = c.from.Add(time.Duration(i) * time.Second)
		if o := h.send("x-user=a"); o.headers["ratelimit"] != "" {
			break
		}
	}
	h.send("x-user=a")
	if n := len(linesAt(h, LogInfo, `ratelimit: redis cluster "redis" decides again`)); n != 1 {
		t.Fatalf("%d recovery lines; want 1: %q", n, h.logs)
	}
	if g := gauge(h, "ratelimit.redis.healthy"); g != 1 {
		t.Fatalf("ratelimit.redis.healthy %d after the recovery", g)
	}
	if n := len(linesAt(h, LogError, "")); n != 2 {
		t.Fatalf("%d error lines after the recovery; want 2: %q", n, h.logs)
	}
}

// healthy ticks the plugin, so that the VM adds its 1 to the gauge, and
// checks that a request is decided.
func healthy(t *testing.T, h *fakeHost) {
	t.Helper()
	h.plugin.OnTick()
	if o := h.send("x-user=a"); o.headers["ratelimit"] == "" {
		t.Fatalf("not decided before the fault: %+v, %q", o, h.logs)
	}
	if g := gauge(h, "ratelimit.redis.healthy"); g != 1 {
		t.Fatalf("ratelimit.redis.healthy %d before the fault", g)
	}
}

// Redis unreachable (a port nothing listens on): every call fails.
func TestHealthUnreachable(t *testing.T) {
	h := newFakeHost(t, healthConfig("allow", ""))
	h.Clock = time.Now()
	healthy(t, h)
	h.Close()
	h.Redis = redistest.HoldPort(t).Addr()
	c := healthCheck{h: h, from: h.Clock, want: "unreachable (redis call failed or timed out)",
		mode: "failure_mode allow: requests pass unlimited", status: 200}
	c.run(t, func() { h.Close(); h.Redis = server.Addr })
	if l := linesAt(h, LogError, "")[1]; !strings.Contains(l, "(9 similar messages suppressed)") {
		t.Fatalf("the second line %q; want the 9 failures between the two counted", l)
	}
}

// The proxy refuses the callout, as Envoy refuses an HTTP callout to a
// cluster it does not know.
func TestHealthCalloutRefused(t *testing.T) {
	h := newFakeHost(t, healthConfig("deny", ""))
	h.Clock = time.Now()
	healthy(t, h)
	h.DispatchErr = errors.New("error status returned by host: bad argument")
	c := healthCheck{h: h, from: h.Clock, want: "refused by the proxy (dispatch: error status returned by host: bad argument)",
		mode: "failure_mode deny: requests get 503", status: 503}
	c.run(t, func() { h.DispatchErr = nil })
}

// Higress's proxy_redis_init fails: the proxy does not know the cluster.
func TestHealthInitFails(t *testing.T) {
	ih := newInitHost(t, healthConfig("deny", ""))
	ih.initErr = errors.New("status 2")
	ih.plugin.Start()
	ih.plugin.OnTick() // the canary's gauge stays 0: failing from the start
	c := healthCheck{h: ih.fakeHost, from: ih.Clock, want: "unknown to the proxy (proxy_redis_init failed: status 2)",
		mode: "failure_mode deny: requests get 503", status: 503}
	c.run(t, func() { ih.initErr = nil })
}

// Redis refuses the password: the proxy's connection gets -NOAUTH.
func TestHealthAuthRefused(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "secret")
	ih := newInitHost(t, healthConfig("deny", `,"password":"wrong"`))
	ih.Redis = srv.Addr
	ih.plugin.Start()
	c := healthCheck{h: ih.fakeHost, from: ih.Clock, want: "refused AUTH (NOAUTH Authentication required.)",
		mode: "failure_mode deny: requests get 503", status: 503}
	c.run(t, func() {
		if _, err := srv.Do("CONFIG", "SET", "requirepass", ""); err != nil {
			t.Fatal(err)
		}
	})
	if !logged(ih.fakeHost, "Redis refused redis.username/redis.password: WRONGPASS") {
		t.Fatalf("the refused AUTH is not explained: %q", ih.logs)
	}
}

// The filter's user may not call the library: -NOPERM.
func TestHealthNoPerm(t *testing.T) {
	srv := redistest.Start(t)
	h := newFakeHost(t, healthConfig("deny", ""))
	h.Clock, h.Redis = time.Now(), srv.Addr
	healthy(t, h)
	if _, err := srv.Do("ACL", "SETUSER", "default", "-fcall"); err != nil {
		t.Fatal(err)
	}
	c := healthCheck{h: h, from: h.Clock, want: "refused a command of the filter's user (NOPERM",
		mode: "failure_mode deny: requests get 503", status: 503}
	c.run(t, func() {
		if _, err := srv.Do("ACL", "SETUSER", "default", "+fcall"); err != nil {
			t.Fatal(err)
		}
	})
}

// The connection runs as another user than redis.username (Higress kept
// it as the default user): no call is sent until the user exists.
func TestHealthWrongUser(t *testing.T) {
	srv := redistest.Start(t)
	ih := newInitHost(t, healthConfig("deny", `,"username":"filter","password":"pw"`))
	ih.Redis = srv.Addr
	ih.startLinked(t, "$7\r\ndefault\r\n")
	c := healthCheck{h: ih.fakeHost, from: ih.Clock, want: `refused redis.username/redis.password (the connection runs as user "default", not "filter")`,
		mode: "failure_mode deny: requests get 503", status: 503}
	c.run(t, func() {
		if _, err := srv.Do("ACL", "SETUSER", "filter", "on", ">pw", "~*", "+@all"); err != nil {
			t.Fatal(err)
		}
	})
	if n := len(linesAt(ih.fakeHost, LogCritical, `runs as user "default"`)); n < 1 {
		t.Fatalf("the wrong user's critical line is gone: %q", ih.logs)
	}
}

// Plugin.Done takes back what the VM added to the gauge.
func TestHealthGaugeTakenBackAtDone(t *testing.T) {
	h := newFakeHost(t, healthConfig("allow", ""))
	h.Clock = time.Now()
	healthy(t, h)
	h.plugin.Done()
	if g := gauge(h, "ratelimit.redis.healthy"); g != 0 {
		t.Fatalf("ratelimit.redis.healthy %d after Done", g)
	}
}

// A VM adds its 1 at its first decision, before any tick.
func TestHealthGaugeAtFirstDecision(t *testing.T) {
	h := newFakeHost(t, healthConfig("allow", ""))
	if g := gauge(h, "ratelimit.redis.healthy"); g != 0 {
		t.Fatalf("ratelimit.redis.healthy %d before any decision or tick", g)
	}
	h.send("x-user=a")
	h.send("x-user=a")
	if g := gauge(h, "ratelimit.redis.healthy"); g != 1 {
		t.Fatalf("ratelimit.redis.healthy %d after two decisions", g)
	}
}

// What a Webdis reply's status says failed.
func TestDescribeWebdisFailures(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{redisfail.WebdisStatus(403), "refused the filter's credentials or command at Webdis (webdis answered HTTP 403)"},
		{redisfail.WebdisStatus(401), "refused the filter's credentials or command at Webdis (webdis answered HTTP 401)"},
		{redisfail.WebdisStatus(404), "refused the call at Webdis (webdis answered HTTP 404): check redis.path and redis.authority"},
		{redisfail.WebdisStatus(503), "unreachable (webdis answered HTTP 503)"},
		{redisfail.WebdisFailure(503, nil), "unreachable (webdis answered HTTP 503: webdis cannot reach Redis behind it): check that Redis runs"},
		{redisfail.WebdisFailure(503, []byte("no healthy upstream")), `unreachable (webdis answered HTTP 503: "no healthy upstream")`},
		{errWebdisFailed, "unreachable (webdis call failed or timed out)"},
	} {
		if got := redisfail.Describe(tc.err); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v: %q, want it to start %q", tc.err, got, tc.want)
		}
	}
}

// redis.cluster points at a replica: the library's decide may write, so
// the replica refuses it with -READONLY.
func TestHealthReplica(t *testing.T) {
	primary, replica := redistest.Start(t), redistest.Start(t)
	if _, err := replica.Do("REPLICAOF", "127.0.0.1", strings.TrimPrefix(primary.Addr, "127.0.0.1:")); err != nil {
		t.Fatal(err)
	}
	h := newFakeHost(t, healthConfig("deny", ""))
	h.Clock, h.Redis = time.Now(), primary.Addr
	healthy(t, h)
	h.Close()
	h.Redis = replica.Addr
	c := healthCheck{h: h, from: h.Clock, want: "is a replica (READONLY You can't write against a read only replica.): point redis.cluster at the primary",
		mode: "failure_mode deny: requests get 503", status: 503}
	c.run(t, func() { h.Close(); h.Redis = primary.Addr })
}
