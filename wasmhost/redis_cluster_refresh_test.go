package wasmhost_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// startProxyProbe is startClusterProbe with the cluster proxy's options.
func startProxyProbe(t *testing.T, faithful bool, refresh time.Duration, seeds ...string) *wasmhost.Host {
	t.Helper()
	return start(t, wasmhost.Config{
		Module:              module(t, "probe"),
		Upstream:            newUpstream(t).URL,
		Workers:             1,
		RedisClusterProxy:   map[string][]string{"redis": seeds},
		RedisProxyFaithful:  faithful,
		RedisClusterRefresh: refresh,
		PluginConfig:        probeConfig(t, map[string]any{"redis_cluster": "redis", "redis_timeout_ms": 3000}),
	})
}

// waitReply sends cmd through the probe until the reply is want.
func waitReply(t *testing.T, h *wasmhost.Host, sep, cmd, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got string
	for ctx.Err() == nil {
		if got = redisReply(t, h, sep, cmd); got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: last reply %q, want %q", cmd, got, want)
}

// With RedisProxyFaithful the model answers what redis_proxy answers
// itself (command_splitter_impl.cc): FCALL is unsupported, so the Higress
// build behind it must use EVALSHA, which is routed. Without it, FCALL is
// forwarded, as before.
func TestRedisProxyFaithful(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	h := startProxyProbe(t, true, 0, cluster.Addrs()...)
	for _, tc := range []struct{ cmd, want string }{
		{"FCALL|ratelimit_version|0", "-unsupported command 'FCALL'\r\n"},
		{"fcall|ratelimit_version|1|k", "-unsupported command 'fcall'\r\n"},
		{"FUNCTION|LIST", "-unsupported command 'FUNCTION'\r\n"},
		{"SCRIPT|LOAD|return 1", "-unsupported command 'SCRIPT'\r\n"},
		{"CLUSTER|NODES", "-unsupported command 'CLUSTER'\r\n"},
		{"DBSIZE", "-invalid request\r\n"},
		{"EVAL|return 7|0", "-wrong number of arguments for 'EVAL' command\r\n"},
		{"EVAL|return 7|1|k", ":7\r\n"},
		{"EVALSHA|0000000000000000000000000000000000000000|1|k", "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
		{"SET|k|v", "+OK\r\n"},
		{"ECHO|hi", "$2\r\nhi\r\n"},
	} {
		if got := redisReply(t, h, "|", tc.cmd); got != tc.want {
			t.Errorf("faithful %s: %q, want %q", tc.cmd, got, tc.want)
		}
	}
	if got := redisReply(t, h, "|", "TIME"); !strings.HasPrefix(got, "*2\r\n$10\r\n") {
		t.Errorf("faithful TIME: %q, want two bulk strings", got)
	}
	permissive := startProxyProbe(t, false, 0, cluster.Addrs()...)
	// Redis answers (no such function): the model forwarded it.
	if got := redisReply(t, permissive, "|", "FCALL|ratelimit_version|0"); got != "-ERR Function not found\r\n" {
		t.Errorf("FCALL without RedisProxyFaithful: %q, want it forwarded to Redis", got)
	}
}

// A master crashes and its replica takes over: the node's failed call
// makes the model reload its slot map, so calls reach the new master
// without any -MOVED (there is none to get from a dead node).
func TestRedisProxyReloadsAfterNodeFailure(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1})
	h := startProxyProbe(t, true, time.Hour, c.Addrs()...)
	m0, r0 := c.Nodes[0], c.Nodes[3]
	// "bar" is slot 5061, of master 0.
	if got := redisReply(t, h, " ", "SET bar v"); got != "+OK\r\n" {
		t.Fatalf("SET bar: %q", got)
	}
	if n, err := m0.Client.Int("WAIT", 1, 0); err != nil || n != 1 {
		t.Fatalf("WAIT: %d, %v", n, err)
	}
	if err := c.Crash(m0); err != nil {
		t.Fatal(err)
	}
	if got := redisReply(t, h, " ", "GET bar"); got != "-upstream failure\r\n" {
		t.Errorf("GET bar with its master down: %q, want redis_proxy's -upstream failure", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitPromoted(ctx, r0); err != nil {
		t.Fatal(err)
	}
	waitReply(t, h, " ", "GET bar", "$1\r\nv\r\n")
	s := h.RedisClusterStats("redis")
	if s.SlotMapRefreshes == 0 || s.Redirections != 0 || s.NodeCalls[r0.Addr] == 0 {
		t.Errorf("stats %+v: want slot map refreshes, no redirection, calls on the promoted replica", s)
	}
}

// Every RedisClusterRefresh the model reloads its map, so after a slot
// moved, calls go straight to the new owner; and -TRYAGAIN and
// -CLUSTERDOWN reach the guest as the nodes answer them.
func TestRedisProxyRefreshAndPassOn(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	h := startProxyProbe(t, true, 50*time.Millisecond, c.Addrs()...)
	if got := redisReply(t, h, " ", "SET {m}a 1"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	redisReply(t, h, " ", "SET {m}b 2")
	slot, _ := c.KeySlot("{m}a")
	src, err := c.OwnerOf(slot)
	if err != nil {
		t.Fatal(err)
	}
	dst := c.Nodes[0]
	if dst == src {
		dst = c.Nodes[1]
	}
	if err := c.BeginMigration(slot, src, dst); err != nil {
		t.Fatal(err)
	}
	// Move {m}b alone: MIGRATE by hand, as MoveKeys picks its own keys.
	if _, err := src.Do("MIGRATE", "127.0.0.1", strings.Split(dst.Addr, ":")[1], "", 0, 5000, "KEYS", "{m}b"); err != nil {
		t.Fatal(err)
	}
	// Some of its keys on the source: -TRYAGAIN from there.
	got := redisReply(t, h, "|", "EVAL|return redis.call('MGET', KEYS[1], KEYS[2])|2|{m}a|{m}b")
	if !strings.HasPrefix(got, "-TRYAGAIN ") {
		t.Errorf("EVAL of a present and a moved key mid-migration: %q, want -TRYAGAIN", got)
	}
	// None on the source: -ASK, followed with ASKING; the target lacks one.
	got = redisReply(t, h, "|", "EVAL|return redis.call('MGET', KEYS[1], KEYS[2])|2|{m}b|{m}absent")
	if !strings.HasPrefix(got, "-TRYAGAIN ") {
		t.Errorf("EVAL of a moved and a missing key mid-migration: %q, want -TRYAGAIN from the target", got)
	}
	for {
		n, err := c.MoveKeys(slot, 10)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if err := c.FinishMigration(slot); err != nil {
		t.Fatal(err)
	}
	// Two refreshes counted from now: the second began after the move.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := h.RedisClusterStats("redis").SlotMapRefreshes
	for h.RedisClusterStats("redis").SlotMapRefreshes < base+2 {
		if ctx.Err() != nil {
			t.Fatalf("no two slot map refreshes after the move: %+v", h.RedisClusterStats("redis"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := h.RedisClusterStats("redis")
	if got := redisReply(t, h, " ", "GET {m}a"); got != "$1\r\n1\r\n" {
		t.Errorf("GET after the move: %q", got)
	}
	if s := h.RedisClusterStats("redis"); s.Redirections != before.Redirections || s.NodeCalls[dst.Addr] != before.NodeCalls[dst.Addr]+1 {
		t.Errorf("GET after a refreshed map: stats %+v, before %+v; want one call on the new owner, no redirection", s, before)
	}
	// The owner drops the slot: with full coverage (Redis's default) it
	// answers -CLUSTERDOWN, passed on.
	if _, err := dst.Do("CLUSTER", "DELSLOTS", slot); err != nil {
		t.Fatal(err)
	}
	got = redisReply(t, h, " ", "GET {m}a")
	if !strings.HasPrefix(got, "-CLUSTERDOWN ") {
		t.Errorf("GET of a slot its node dropped: %q, want -CLUSTERDOWN", got)
	}
}

// Nodes that announce hostnames (nothing resolves node-<i>.test here):
// the model dials the IP CLUSTER SLOTS gives beside the name, and follows
// a -MOVED that names a host to that IP, as Envoy would after a DNS lookup.
func TestRedisProxyHostnames(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, Hostnames: true})
	h := startProxyProbe(t, true, time.Hour, c.Nodes[0].Addr)
	for _, k := range []string{"foo", "bar", "k0"} { // one key per master
		if got := redisReply(t, h, " ", "SET "+k+" v"); got != "+OK\r\n" {
			t.Fatalf("SET %s: %q", k, got)
		}
	}
	slot, _ := c.KeySlot("foo")
	src, _ := c.OwnerOf(slot)
	dst := c.Nodes[0]
	if err := c.BeginMigration(slot, src, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MoveKeys(slot, 10); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishMigration(slot); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Do("GET", "foo"); err == nil || !strings.Contains(err.Error(), c.Hostname(dst)) {
		t.Fatalf("GET foo on the old owner: %v, want a -MOVED naming %s", err, c.Hostname(dst))
	}
	if got := redisReply(t, h, " ", "GET foo"); got != "$1\r\nv\r\n" {
		t.Errorf("GET foo after its slot moved: %q", got)
	}
	if s := h.RedisClusterStats("redis"); s.Redirections != 1 || s.NodeCalls[dst.Addr] < 2 {
		t.Errorf("stats %+v: want the -MOVED followed to %s", s, dst.Addr)
	}
}
