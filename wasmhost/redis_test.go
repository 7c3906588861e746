package wasmhost_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// startRedisProbe starts a host running the probe with Redis cluster "redis"
// pointing at addr.
func startRedisProbe(t *testing.T, up *upstream, addr string, cfg map[string]any) *wasmhost.Host {
	t.Helper()
	if _, ok := cfg["redis_cluster"]; !ok {
		cfg["redis_cluster"] = "redis"
	}
	if _, ok := cfg["redis_timeout_ms"]; !ok {
		cfg["redis_timeout_ms"] = 1000 // 0 would time every call out, as in Envoy
	}
	return start(t, wasmhost.Config{
		Module:        module(t, "probe"),
		Upstream:      up.URL,
		RedisClusters: map[string]string{"redis": addr},
		PluginConfig:  probeConfig(t, cfg),
	})
}

func TestRedisCallResumesStream(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	up := newUpstream(t)
	h := startRedisProbe(t, up, srv.Addr, map[string]any{"redis_timeout_ms": 1000})

	r := do(t, "GET", h.URL()+"/set", "", map[string]string{"x-redis": "SET greeting hello"})
	if got := r.header.Get("X-Redis-Reply"); got != strconv.Quote("+OK\r\n") {
		t.Errorf("SET reply %s", got)
	}
	r = do(t, "GET", h.URL()+"/get", "", map[string]string{"x-redis": "GET greeting", "x-probe-replace": "a"})
	if got := r.header.Get("X-Redis-Reply"); got != strconv.Quote("$5\r\nhello\r\n") {
		t.Errorf("GET reply %s", got)
	}
	if r.status != 200 || r.echo(t).URI != "/get" {
		t.Errorf("resumed stream did not reach the upstream: %d %q", r.status, r.body)
	}
	if got := r.echo(t).Headers["X-Probe-Replace"]; len(got) != 1 || got[0] != "a-replaced" {
		t.Errorf("header change made before the pause did not reach upstream: %q", got)
	}
	if got := h.RedisCalls()["redis"]; got != 2 {
		t.Errorf("RedisCalls()[redis] = %d, want 2", got)
	}
	if v, _ := srv.Client.Text("GET", "greeting"); v != "hello" {
		t.Errorf("redis holds %q", v)
	}
}

func TestRedisErrorReplyIsPassedRaw(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	up := newUpstream(t)
	h := startRedisProbe(t, up, srv.Addr, map[string]any{})

	r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "EVALSHA 0123456789012345678901234567890123456789 0"})
	want := strconv.Quote("-NOSCRIPT No matching script. Please use EVAL.\r\n")
	if got := r.header.Get("X-Redis-Reply"); got != want {
		t.Errorf("reply %s, want %s", got, want)
	}
	// A script with an array reply arrives whole, nested framing included.
	r = do(t, "GET", h.URL()+"/", "", map[string]string{
		"x-redis":     "EVAL|return {1, 'two', {3}, redis.error_reply('nested')}|0",
		"x-redis-sep": "|",
	})
	want = strconv.Quote("*4\r\n:1\r\n$3\r\ntwo\r\n*1\r\n:3\r\n-ERR nested\r\n")
	if got := r.header.Get("X-Redis-Reply"); got != want {
		t.Errorf("reply %s, want %s", got, want)
	}
	r = do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "GET", "x-redis-reply-mode": "local"})
	if r.status != 200 || !strings.HasPrefix(r.body, "-ERR wrong number of arguments") || up.calls.Load() != 2 {
		t.Errorf("local reply with the raw reply: %d %q (upstream calls %d)", r.status, r.body, up.calls.Load())
	}
}

func TestRedisDownFailsWithinTimeout(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)

	// Nothing listens: the connection is refused at once.
	addr := freeAddr(t)
	h := startRedisProbe(t, up, addr, map[string]any{"redis_timeout_ms": 300})
	r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "PING"})
	if r.status != 503 || r.header.Get("X-Redis-Status") != "1" || r.header.Get("X-Redis-Size") != "0" {
		t.Errorf("refused: got %d status %q size %q", r.status, r.header.Get("X-Redis-Status"), r.header.Get("X-Redis-Size"))
	}

	// A server that accepts but never answers: the call times out, and the
	// host closes the connection rather than reuse it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1024)
		for {
			if _, err := c.Read(buf); err != nil {
				close(closed)
				return
			}
		}
	}()
	h = startRedisProbe(t, up, ln.Addr().String(), map[string]any{"redis_timeout_ms": 200})
	r = do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "PING"})
	if r.status != 503 || r.header.Get("X-Redis-Status") != "1" {
		t.Errorf("silent server: got %d status %q", r.status, r.header.Get("X-Redis-Status"))
	}
	// Not before the timeout: a bound that holds at any speed.
	if r.elapsed < 200*time.Millisecond {
		t.Errorf("silent server answered after %v, before the 200ms timeout", r.elapsed)
	}
	select {
	case <-closed:
	case <-time.After(waitGuard):
		t.Errorf("the timed-out connection was not closed within %v", waitGuard)
	}
	if up.calls.Load() != 0 {
		t.Errorf("upstream called on a Redis failure")
	}
}

// AUTH goes first on each new connection and its reply is thrown away, as
// Higress does: a refused password shows as -NOAUTH replies, with status 0,
// to the calls that follow.
func TestRedisAuth(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", "s3cret")
	up := newUpstream(t)
	noauth := strconv.Quote("-NOAUTH Authentication required.\r\n")
	for _, tc := range []struct {
		name, user, pass string
		reply            string
		discardedErrors  int64
	}{
		{"password", "", "s3cret", strconv.Quote("+PONG\r\n"), 0},
		{"user and password", "default", "s3cret", strconv.Quote("+PONG\r\n"), 0},
		{"wrong password", "", "wrong", noauth, 1},
		{"no password", "", "", noauth, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startRedisProbe(t, up, srv.Addr, map[string]any{"redis_user": tc.user, "redis_password": tc.pass})
			for range 2 {
				r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "PING"})
				if r.status != 200 || r.header.Get("X-Redis-Reply") != tc.reply {
					t.Fatalf("got %d reply %q, want %s", r.status, r.header.Get("X-Redis-Reply"), tc.reply)
				}
			}
			if s := h.RedisClientStats("redis"); s.Connections == 0 || s.DiscardedErrors != tc.discardedErrors*s.Connections {
				t.Fatalf("stats %+v; want %d discarded error replies per connection", s, tc.discardedErrors)
			}
		})
	}
}

func TestRedisSelectDB(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	up := newUpstream(t)
	h := startRedisProbe(t, up, srv.Addr, map[string]any{"redis_cluster": "redis?db=3&buffer_flush_timeout=3"})

	r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "SET dbkey in-three"})
	if r.header.Get("X-Redis-Reply") != strconv.Quote("+OK\r\n") {
		t.Fatalf("SET: %d %q", r.status, r.header.Get("X-Redis-Reply"))
	}
	db3 := redistest.NewClient(srv.Addr, redistest.Options{DB: 3})
	defer db3.Close()
	if v, err := db3.Text("GET", "dbkey"); v != "in-three" {
		t.Errorf("db 3 holds %q (%v)", v, err)
	}
	if n, _ := srv.Client.Int("EXISTS", "dbkey"); n != 0 {
		t.Errorf("the key landed in db 0 too")
	}
}

func TestUnknownRedisClusterFailsPluginStart(t *testing.T) {
	t.Parallel()
	_, err := wasmhost.Start(t.Context(), wasmhost.Config{
		Module:        module(t, "probe"),
		Upstream:      "http://127.0.0.1:1",
		RedisClusters: map[string]string{"redis": "127.0.0.1:6379"},
		PluginConfig:  probeConfig(t, map[string]any{"redis_cluster": "other?db=1"}),
	})
	if err == nil || !strings.Contains(err.Error(), "plugin start failed: redis init other?db=1: status 2") {
		t.Fatalf("Start error = %v, want BadArgument (2) from proxy_redis_init", err)
	}
}

func TestWorkersRunConcurrently(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	up := newUpstream(t)
	h := start(t, wasmhost.Config{
		Module:        module(t, "probe"),
		Upstream:      up.URL,
		Workers:       4,
		RedisClusters: map[string]string{"redis": srv.Addr},
		PluginConfig:  probeConfig(t, map[string]any{"redis_cluster": "redis", "redis_timeout_ms": 2000}),
	})
	const n = 40
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "GET", h.URL()+"/c/"+strconv.Itoa(i), "", map[string]string{"x-redis": "INCR hits"})
			if r.status != 200 || !strings.HasPrefix(r.header.Get("X-Redis-Reply"), `":`) || r.echo(t).URI != "/c/"+strconv.Itoa(i) {
				t.Errorf("request %d: %d reply %q", i, r.status, r.header.Get("X-Redis-Reply"))
			}
		}()
	}
	wg.Wait()
	for i, got := range h.StreamsPerVM() {
		if got != n/4 {
			t.Errorf("vm %d served %d streams, want %d", i, got, n/4)
		}
	}
	if v, _ := srv.Client.Text("GET", "hits"); v != strconv.Itoa(n) {
		t.Errorf("hits = %s, want %d", v, n)
	}
	m := h.Metrics()
	if m["probe_requests"] != n || m["probe_paused"] != 0 {
		t.Errorf("metrics %v, want %d requests and no paused streams", m, n)
	}
	sizes := h.Histogram("probe_reply_bytes")
	if len(sizes) != n || sizes[0] < 4 {
		t.Errorf("histogram has %d values (%v), want %d", len(sizes), sizes, n)
	}
	eventually(t, "on_log for every stream", func() bool { return len(h.GuestLogs(wasmhost.LogInfo)) >= 2*n })
	done := 0
	for _, msg := range h.GuestLogs(wasmhost.LogInfo) {
		if strings.HasPrefix(msg, "probe done") && strings.Contains(msg, " status=200 err=<nil> ") {
			done++
		}
	}
	if done != n {
		t.Errorf("%d streams logged done with status 200, want %d", done, n)
	}
	if h.StuckStreams() != 0 {
		t.Errorf("%d stuck streams", h.StuckStreams())
	}
}

func TestCalloutOutlivingItsStream(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	h := startRedisProbe(t, up, ln.Addr().String(), map[string]any{"redis_timeout_ms": 500})

	// The client gives up once the stream waits for Redis.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.URL()+"/", nil)
	req.Header.Set("x-redis", "PING")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("got a response (%d) from a stream waiting for a silent Redis", resp.StatusCode)
		}
		errc <- err
	}()
	eventually(t, "the Redis call", func() bool { return h.RedisCalls()["redis"] == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v, want context.Canceled", err)
	}
	// The reply (a timeout) arrives after the stream was deleted: the guest
	// is told the context is gone, and the host goes on serving.
	eventually(t, "the late callout to reach the guest", func() bool { return hasLog(h, "is gone: error status returned by host: bad argument") })
	if r := do(t, "GET", h.URL()+"/after", "", nil); r.status != 200 {
		t.Errorf("after a late callout: %d %q", r.status, r.body)
	}
	if h.Traps() != 0 || h.StuckStreams() != 0 {
		t.Errorf("traps %d, stuck %d", h.Traps(), h.StuckStreams())
	}
}

// freeAddr is an address where nothing listens until the test ends.
func freeAddr(t *testing.T) string {
	t.Helper()
	return redistest.HoldPort(t).Addr()
}
