package wasmhost_test

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The model of Higress's Redis client (redis.go, redis_pipe.go), through
// the probe on one VM.

func startOneVMProbe(t *testing.T, addr string, cfg map[string]any) *wasmhost.Host {
	t.Helper()
	if _, ok := cfg["redis_timeout_ms"]; !ok {
		cfg["redis_timeout_ms"] = 1000
	}
	return start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: newUpstream(t).URL, Workers: 1,
		RedisClusters: map[string]string{"redis": addr}, PluginConfig: probeConfig(t, cfg)})
}

// silentRedis accepts connections and reads what it is sent, but never
// answers.
type silentRedis struct {
	ln net.Listener
}

func newSilentRedis(t *testing.T) *silentRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentRedis{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go s.serve(c)
		}
	}()
	return s
}

func (s *silentRedis) serve(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// One timer per connection, for the oldest pending call: when it fires, the
// connection closes and every pending call fails at once. The checks need
// the three calls sent within the 2 s timeout of the first, all on one
// connection; a run where one went out later (on a second connection)
// proves nothing, and runs again.
func TestRedisTimeoutFailsEveryPendingCall(t *testing.T) {
	t.Parallel()
	const attempts = 5
	for n := 1; ; n++ {
		srv := newSilentRedis(t)
		h := startOneVMProbe(t, srv.ln.Addr().String(), map[string]any{"redis_cluster": "redis?buffer_flush_timeout=0", "redis_timeout_ms": 2000})
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "GET k" + strconv.Itoa(i)})
				if r.status != 503 || r.header.Get("X-Redis-Status") != "1" {
					t.Errorf("call %d: %d, status %q; want a failed call (status 1)", i, r.status, r.header.Get("X-Redis-Status"))
				}
			}()
		}
		wg.Wait()
		s := h.RedisClientStats("redis")
		if s.Connections > 1 && n < attempts {
			t.Logf("run %d: the calls went out over %d connections, more than one timeout apart; running again", n, s.Connections)
			continue
		}
		if s.Connections != 1 || s.Timeouts != 1 || s.FailedByTimeout != 3 {
			t.Fatalf("stats %+v; want one connection whose one timeout failed the 3 calls", s)
		}
		if !hasLog(h, "no reply within 2s: closing the connection, failing its 3 pending calls") {
			t.Fatal("no host log line for the timeout")
		}
		return
	}
}

// Writes wait in the buffer until it holds max_buffer_size_before_flush
// bytes (1024) or buffer_flush_timeout has passed.
func TestRedisWriteBuffer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	h := startOneVMProbe(t, srv.Addr, map[string]any{"redis_cluster": "redis?buffer_flush_timeout=60000", "redis_timeout_ms": 60000})
	echo := map[string]string{"x-redis": "ECHO|" + strings.Repeat("a", 600), "x-redis-sep": "|"} // 622 bytes as RESP
	first := make(chan response, 1)
	go func() { first <- do(t, "GET", h.URL()+"/", "", echo) }()
	waitCalls(t, h, 1)
	select {
	case r := <-first:
		t.Fatalf("a 622-byte call went out before the buffer held 1024 bytes or 60 s passed: %d %q", r.status, r.header.Get("X-Redis-Reply"))
	case <-time.After(300 * time.Millisecond):
	}
	second := do(t, "GET", h.URL()+"/", "", echo) // 1244 bytes: both go
	for _, r := range []response{<-first, second} {
		if r.status != 200 || !strings.HasPrefix(r.header.Get("X-Redis-Reply"), `"$600\r\n`) {
			t.Fatalf("%d %q", r.status, r.header.Get("X-Redis-Reply"))
		}
	}
	if s := h.RedisClientStats("redis"); s.Writes != 1 {
		t.Fatalf("stats %+v; want the two calls written together, once", s)
	}
}

func waitCalls(t *testing.T, h *wasmhost.Host, n int64) {
	t.Helper()
	eventually(t, strconv.FormatInt(n, 10)+" Redis calls", func() bool { return h.RedisCalls()["redis"] >= n })
}

// An init with the configuration in place keeps the connection; another
// closes it. A rebuilt cluster entry forgets the init: its new connection
// sends no AUTH, and the calls get -NOAUTH.
func TestRedisInitAndRebuild(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", "s3cret")
	h := startOneVMProbe(t, srv.Addr, map[string]any{"redis_cluster": "redis", "redis_password": "s3cret"})
	ping := func() string {
		return do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "PING"}).header.Get("X-Redis-Reply")
	}
	if got := ping(); got != strconv.Quote("+PONG\r\n") {
		t.Fatalf("before: %s", got)
	}
	h.RebuildRedisCluster("redis")
	if got := ping(); got != strconv.Quote("-NOAUTH Authentication required.\r\n") {
		t.Fatalf("after the rebuild: %s", got)
	}
	if s := h.RedisClientStats("redis"); s.Connections != 2 {
		t.Fatalf("stats %+v; want a second connection after the rebuild", s)
	}
}

// Against a raw Redis Cluster, Higress's client sends every call to the
// node it points at: a key of another node's slot gets -MOVED, status 0.
func TestRedisRawClusterHandsBackMoved(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	node := cluster.Nodes[0]
	var foreign string
	for i := 0; foreign == ""; i++ {
		key := "k" + strconv.Itoa(i)
		if owner, err := cluster.MasterFor(key); err != nil {
			t.Fatal(err)
		} else if owner != node {
			foreign = key
		}
	}
	h := startOneVMProbe(t, node.Addr, map[string]any{"redis_cluster": "redis", "redis_timeout_ms": 1000})
	r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-redis": "GET " + foreign})
	if reply, _ := strconv.Unquote(r.header.Get("X-Redis-Reply")); r.status != 200 || !strings.HasPrefix(reply, "-MOVED ") {
		t.Fatalf("got %d reply %q; want -MOVED handed back with status 0", r.status, reply)
	}
}
