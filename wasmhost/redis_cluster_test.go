package wasmhost_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// startClusterProbe starts a one-VM host running the probe, with Redis
// cluster "redis" behind the host's cluster proxy over the nodes seeds.
func startClusterProbe(t *testing.T, seeds ...string) *wasmhost.Host {
	t.Helper()
	return start(t, wasmhost.Config{
		Module:            module(t, "probe"),
		Upstream:          newUpstream(t).URL,
		Workers:           1,
		RedisClusterProxy: map[string][]string{"redis": seeds},
		PluginConfig:      probeConfig(t, map[string]any{"redis_cluster": "redis", "redis_timeout_ms": 1000}),
	})
}

// redisReply sends one command through the probe and returns the raw
// reply; sep separates the arguments.
func redisReply(t *testing.T, h *wasmhost.Host, sep, cmd string) string {
	t.Helper()
	headers := map[string]string{"x-redis": cmd}
	if sep != " " { // the probe's default; a header cannot hold just a space
		headers["x-redis-sep"] = sep
	}
	r := do(t, "GET", h.URL()+"/", "", headers)
	reply, err := strconv.Unquote(r.header.Get("X-Redis-Reply"))
	if r.status != 200 || err != nil {
		t.Fatalf("%s: status %d, reply header %q", cmd, r.status, r.header.Get("X-Redis-Reply"))
	}
	return reply
}

func wantStats(t *testing.T, h *wasmhost.Host, redirections, toGuest, crossSlot, loads int64) wasmhost.RedisClusterStats {
	t.Helper()
	s := h.RedisClusterStats("redis")
	if s.Redirections != redirections || s.RedirectionsToGuest != toGuest || s.CrossSlot != crossSlot || s.SlotMapLoads != loads {
		t.Fatalf("stats %+v; want %d redirections (%d to the guest), %d CROSSSLOT, %d slot map loads",
			s, redirections, toGuest, crossSlot, loads)
	}
	return s
}

func TestRedisClusterRouting(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)

	t.Run("by slot from one seed", func(t *testing.T) {
		h := startClusterProbe(t, cluster.Nodes[2].Addr)
		owners := map[string]bool{}
		for i := range 12 {
			key := fmt.Sprintf("route:%d", i)
			if got := redisReply(t, h, " ", "SET "+key+" v"+strconv.Itoa(i)); got != "+OK\r\n" {
				t.Fatalf("SET %s: %q", key, got)
			}
			owner, err := cluster.MasterFor(key)
			if err != nil {
				t.Fatal(err)
			}
			owners[owner.Addr] = true
			if v, err := owner.Client.Text("GET", key); v != "v"+strconv.Itoa(i) {
				t.Fatalf("GET %s through the cluster client: %q, %v", key, v, err)
			}
		}
		// An EVAL's keys sharing a hash tag go to their slot's owner;
		// numkeys 0 goes anywhere.
		if got := redisReply(t, h, "|", "EVAL|return redis.call('INCRBY', KEYS[1], ARGV[1]) + redis.call('INCR', KEYS[2])|2|{t}a|{t}b|5"); got != ":6\r\n" {
			t.Fatalf("EVAL with a shared hash tag: %q", got)
		}
		if got := redisReply(t, h, "|", "EVAL|return 7|0"); got != ":7\r\n" {
			t.Fatalf("EVAL with no keys: %q", got)
		}
		s := wantStats(t, h, 0, 0, 0, 1)
		if len(owners) != 3 || len(s.NodeCalls) != 3 {
			t.Fatalf("keys on %d masters, calls on %v; want all 3", len(owners), s.NodeCalls)
		}
		for addr := range owners {
			if s.NodeCalls[addr] == 0 {
				t.Fatalf("no call reached %s, which owns some keys: %v", addr, s.NodeCalls)
			}
		}

		// Keys in two slots: the node answers CROSSSLOT, passed on and counted.
		got := redisReply(t, h, "|", "EVAL|return 1|2|route:0|route:1")
		if !strings.HasPrefix(got, "-CROSSSLOT ") {
			t.Fatalf("two slots in one EVAL: %q", got)
		}
		wantStats(t, h, 0, 0, 1, 1)
	})

	t.Run("follows ASK and MOVED during a slot migration", func(t *testing.T) {
		h := startClusterProbe(t, cluster.Addrs()...)
		const key = "{migrating}k"
		if got := redisReply(t, h, " ", "SET "+key+" here"); got != "+OK\r\n" {
			t.Fatalf("SET: %q", got)
		}
		slot, err := cluster.KeySlot(key)
		if err != nil {
			t.Fatal(err)
		}
		owner, err := cluster.MasterFor(key)
		if err != nil {
			t.Fatal(err)
		}
		var src, dst *redistest.Server
		for _, n := range cluster.Nodes {
			switch {
			case n == owner:
				src = n
			case dst == nil:
				dst = n
			}
		}
		srcID, _ := cluster.NodeID(src)
		dstID, _ := cluster.NodeID(dst)
		dstHost, dstPort, _ := strings.Cut(dst.Addr, ":")
		mustDo(t, dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
		mustDo(t, src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
		mustDo(t, src, "MIGRATE", dstHost, dstPort, "", 0, 5000, "KEYS", key)

		// The source no longer has the key: it answers -ASK, and the host
		// asks the target with ASKING first.
		if got := redisReply(t, h, " ", "GET "+key); got != "$4\r\nhere\r\n" {
			t.Fatalf("GET during the migration: %q", got)
		}
		wantStats(t, h, 1, 0, 0, 1)

		// The slot now belongs to the target: the source answers -MOVED,
		// the host reloads the map and retries, and then goes straight to
		// the target.
		for _, n := range cluster.Nodes {
			mustDo(t, n, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
		}
		for range 2 {
			if got := redisReply(t, h, " ", "GET "+key); got != "$4\r\nhere\r\n" {
				t.Fatalf("GET after the migration: %q", got)
			}
		}
		s := wantStats(t, h, 2, 0, 0, 2)
		if s.NodeCalls[dst.Addr] != 3 || s.NodeCalls[src.Addr] != 3 {
			t.Fatalf("calls %v; want 3 on the source (SET, GET, GET) and 3 on the target (retry, retry, GET)", s.NodeCalls)
		}
	})

	t.Run("no reachable seed: the proxy answers an error", func(t *testing.T) {
		h := startClusterProbe(t, freeAddr(t))
		if got := redisReply(t, h, " ", "GET k"); got != "-no upstream host\r\n" {
			t.Fatalf("reply %q; want redis_proxy's -no upstream host", got)
		}
		if !hasLog(h, "redis cluster redis: no slot map") {
			t.Fatal("no host log line about the missing slot map")
		}
	})
}

func mustDo(t *testing.T, s *redistest.Server, args ...any) {
	t.Helper()
	if _, err := s.Do(args...); err != nil {
		t.Fatalf("%v on %s: %v", args, s.Addr, err)
	}
}

func TestRedisClusterConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  wasmhost.Config
		want string
	}{
		{wasmhost.Config{RedisClusters: map[string]string{"r": "127.0.0.1:1"}, RedisClusterProxy: map[string][]string{"r": {"127.0.0.1:2"}}},
			`host: Redis cluster "r" is in both RedisClusters and RedisClusterProxy`},
		{wasmhost.Config{RedisClusterProxy: map[string][]string{"r": nil}}, `host: RedisClusterProxy["r"] has no seed nodes`},
	} {
		tc.cfg.Module, tc.cfg.Upstream = module(t, "noop"), "http://127.0.0.1:1"
		if h, err := wasmhost.Start(context.Background(), tc.cfg); err == nil || err.Error() != tc.want {
			if err == nil {
				h.Close()
			}
			t.Errorf("Start: %v; want %s", err, tc.want)
		}
	}
}
