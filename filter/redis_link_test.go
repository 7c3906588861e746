package filter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// initHost is a fakeHost whose Redis client needs proxy_redis_init, as
// Higress's does.
type initHost struct {
	*fakeHost
	initErr error
	inits   int
}

func (h *initHost) InitRedis() error { h.inits++; return h.initErr }

func newInitHost(t *testing.T, config string) *initHost {
	t.Helper()
	fh := newFakeHost(t, config)
	h := &initHost{fakeHost: fh}
	fh.plugin = NewPlugin(fh.plugin.Config(), h)
	fh.Clock = time.Now()
	return h
}

const oneUser = `{"redis":{"cluster":"redis","password":"pw"},"failure_mode":"deny","circuit_breaker":{"failures":3},
	"rules":[{"name":"u","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1m"}]}]}`

// A failed proxy_redis_init does not fail the start: requests get the
// failure mode without a call, the init is retried at most once per second
// (on requests and ticks), and once it succeeds calls go through.
func TestRedisInitRetried(t *testing.T) {
	h := newInitHost(t, oneUser)
	h.initErr = errors.New("status 2")
	h.plugin.Start()
	if h.inits != 1 || h.plugin.RedisReady() {
		t.Fatalf("start: %d inits, ready %v", h.inits, h.plugin.RedisReady())
	}
	for range 3 {
		if o := h.send("x-user=a"); o.status != 503 || !strings.Contains(o.body, "ratelimit_unavailable") {
			t.Fatalf("before the init: %+v", o)
		}
	}
	if h.inits != 1 || h.Calls != 0 || h.Counters["ratelimit.redis.uninitialized"] != 3 ||
		h.Counters["ratelimit.redis.init_failures"] != 1 || h.Counters["ratelimit.failure_mode.denied"] != 3 {
		t.Fatalf("%d inits, %d calls, counters %v", h.inits, h.Calls, h.Counters)
	}
	if h.Counters["ratelimit.redis.errors"] != 0 || h.Counters["ratelimit.circuit_breaker.opened"] != 0 {
		t.Fatalf("a missing init counted as Redis failures: %v", h.Counters)
	}
	h.Clock = h.Clock.Add(time.Second)
	h.plugin.OnTick()
	if h.inits != 2 || h.Counters["ratelimit.redis.init_failures"] != 2 {
		t.Fatalf("tick after a second: %d inits", h.inits)
	}
	h.Clock = h.Clock.Add(999 * time.Millisecond)
	h.send("x-user=a")
	if h.inits != 2 {
		t.Fatalf("retried within a second: %d inits", h.inits)
	}
	h.initErr = nil
	h.Clock = h.Clock.Add(time.Millisecond)
	if o := h.send("x-user=a"); o.status != 200 || o.headers["ratelimit"] != `"u";r=4;t=60` {
		t.Fatalf("after the init succeeded: %+v", o)
	}
	if h.inits != 3 || !h.plugin.RedisReady() || !logged(h.fakeHost, "succeeded after 2 failures") {
		t.Fatalf("%d inits, logs %q", h.inits, h.logs)
	}
	if n := strings.Count(strings.Join(h.logs, "\n"), "the proxy does not know the cluster"); n != 1 {
		t.Fatalf("the init failure was logged %d times; want once per 10 s: %q", n, h.logs)
	}
}

// -NOAUTH redoes the init and sends AUTH, at most once per second; the
// request gets the failure mode.
func TestNoAuthRelinks(t *testing.T) {
	h := newInitHost(t, oneUser)
	h.startLinked(t, "+default\r\n")
	h.Clock = h.Clock.Add(time.Second) // the init at start is a second old
	noauth := []byte("-NOAUTH Authentication required.\r\n")
	reply := func(r []byte) {
		t.Helper()
		q := h.Queue[0]
		h.Queue = h.Queue[1:]
		h.plugin.OnRedisReply(q.ID, true, r)
	}
	fs, st := h.stream("x-user=a")
	reply(noauth)
	if fs.Status != 503 || h.inits != 2 || h.Counters["ratelimit.redis.reinits"] != 1 {
		t.Fatalf("status %d, %d inits, counters %v", fs.Status, h.inits, h.Counters)
	}
	st.OnDone()
	if len(h.Queue) != 2 || string(h.Queue[0].Cmd) != "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n" || string(h.Queue[1].Cmd) != whoami {
		t.Fatalf("queued %q; want the filter's AUTH, then ACL WHOAMI", h.Queue)
	}
	reply([]byte("-WRONGPASS invalid username-password pair or user is disabled.\r\n"))
	reply([]byte("+default\r\n"))
	if !logged(h.fakeHost, "Redis refused redis.username/redis.password: WRONGPASS") {
		t.Fatalf("logs %q", h.logs)
	}
	_, st = h.stream("x-user=a")
	reply(noauth)
	st.OnDone()
	if h.inits != 2 || len(h.Queue) != 0 {
		t.Fatalf("re-init within a second: %d inits, queue %q", h.inits, h.Queue)
	}
	h.Clock = h.Clock.Add(time.Second)
	_, st = h.stream("x-user=a")
	reply(noauth)
	st.OnDone()
	reply([]byte("+OK\r\n"))
	reply([]byte("+default\r\n"))
	if h.inits != 3 || h.Counters["ratelimit.redis.reinits"] != 2 || !logged(h.fakeHost, "AUTH accepted") {
		t.Fatalf("%d inits, counters %v, logs %q", h.inits, h.Counters, h.logs)
	}
	if h.plugin.Pending() != 0 {
		t.Fatal("calls left pending")
	}
}

// -MOVED (a raw Redis Cluster behind Higress's client) fails the call with
// the failure mode, is counted, and the log says what to put in between.
func TestMovedFailsClearly(t *testing.T) {
	h := newInitHost(t, oneUser)
	h.startLinked(t, "+default\r\n")
	for _, r := range []string{"-MOVED 3999 127.0.0.1:7001\r\n", "-ASK 3999 127.0.0.1:7001\r\n"} {
		fs, st := h.stream("x-user=a")
		q := h.Queue[0]
		h.Queue = h.Queue[1:]
		h.plugin.OnRedisReply(q.ID, true, []byte(r))
		st.OnDone()
		if fs.Status != 503 {
			t.Fatalf("%q: status %d", r, fs.Status)
		}
	}
	if h.Counters["ratelimit.redis.redirected"] != 2 || h.Counters["ratelimit.redis.errors"] != 2 ||
		!logged(h.fakeHost, "neither routes by slot nor follows MOVED or ASK; put a cluster-aware proxy between them (Envoy's redis_proxy") {
		t.Fatalf("counters %v, logs %q", h.Counters, h.logs)
	}
}

// Calls in flight together that fail together (Higress's client fails
// every pending call of a connection when its timeout fires) count once
// toward circuit_breaker.failures; failures of calls sent one after
// another each count.
func TestBreakerCountsABurstOnce(t *testing.T) {
	h := newInitHost(t, oneUser)
	h.plugin.Start()
	var streams []*fakeStream
	for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
		fs, st := h.stream("x-user=" + u)
		defer st.OnDone()
		streams = append(streams, fs)
	}
	h.Down = true
	h.Pump() // one timeout fails all six
	for _, fs := range streams {
		if fs.Status != 503 {
			t.Fatalf("status %d", fs.Status)
		}
	}
	if o, e := h.Counters["ratelimit.circuit_breaker.opened"], h.Counters["ratelimit.redis.errors"]; o != 0 || e != 6 {
		t.Fatalf("after one burst of 6: opened %d, errors %d; want 0, 6", o, e)
	}
	h.send("x-user=g")
	h.send("x-user=h")
	if o := h.Counters["ratelimit.circuit_breaker.opened"]; o != 1 {
		t.Fatalf("after the burst and two more failures: opened %d; want 1", o)
	}
}

const whoami = "*2\r\n$3\r\nACL\r\n$6\r\nWHOAMI\r\n"

// startLinked starts the plugin and, at its first tick, answers the ACL
// WHOAMI the filter then sends with reply.
func (h *initHost) startLinked(t *testing.T, reply string) {
	t.Helper()
	h.plugin.Start()
	h.startLinkedAgain(t, reply)
}

// stream starts a request and leaves its call queued.
func (h *initHost) stream(headers ...string) (*fakeStream, *Stream) {
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	pairs := [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = setPair(pairs, k, v)
	}
	st.OnRequestHeaders(pairs)
	return fs, st
}

func logged(h *fakeHost, substr string) bool {
	return strings.Contains(strings.Join(h.logs, "\n"), substr)
}

func TestInitCluster(t *testing.T) {
	for _, tc := range []struct {
		r    config.RedisConfig
		want string
	}{
		{config.RedisConfig{Cluster: "outbound|6379||redis.static"}, "outbound|6379||redis.static?buffer_flush_timeout=0"},
		{config.RedisConfig{Cluster: "r", Database: 2, FlushTimeout: 3 * time.Millisecond}, "r?db=2&buffer_flush_timeout=3"},
		{config.RedisConfig{Cluster: "r?x=1"}, "r?x=1&buffer_flush_timeout=0"},
	} {
		if got := tc.r.InitCluster(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
