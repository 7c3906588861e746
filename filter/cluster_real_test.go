package filter

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// On a real Redis Cluster of 3 masters (each reached through the fake's
// Webdis translation, one cluster name per node): calls before the first
// map load follow the real -MOVED; after it each goes straight to its
// slot's master; while a slot migrates its calls get the real -TRYAGAIN,
// wait in the retry queue, and once the slot is handed over follow the
// -MOVED to the new master, where the charges are.
func TestClusterRealRouting(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	backends := map[string]string{}
	nodes := ""
	for i, s := range c.Nodes {
		name := "webdis-" + strconv.Itoa(i)
		backends[name] = s.Addr
		if i > 0 {
			nodes += ","
		}
		nodes += `{"address":"` + s.Addr + `","cluster":"` + name + `"}`
	}
	conf := `{"redis":{"transport":"webdis","cluster_mode":true,"timeout":"2s","nodes":[` + nodes + `]},
	"failure_mode":"deny","rules":[{"name":"u","key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_log","limit":5,"window":"1h"}]}]}`
	h := newClusterHost(t, conf, backends)
	prefix := h.plugin.Config().Redis.Prefix

	// Before the first load every call goes to node 0; the others' slots
	// answer -MOVED, followed.
	users := []string{}
	for i := range 30 {
		users = append(users, "user"+strconv.Itoa(i))
	}
	for _, u := range users {
		if fs, _ := h.pumped("x-user=" + u); fs.Resumed != 1 {
			t.Fatalf("%s before the load: status %d", u, fs.Status)
		}
	}
	moved := h.Counters["ratelimit.redis.moved"]
	if moved == 0 || moved >= 30 {
		t.Fatalf("%d moves for 30 users on 3 masters before the first load", moved)
	}
	h.tick(0)
	h.pump()
	if h.Counters["ratelimit.redis.slot_map_loads"] != 1 {
		t.Fatalf("counters %v", h.Counters)
	}
	perNode := map[string]int{}
	for _, u := range users {
		fs, st := h.stream("x-user=" + u)
		call := h.take(decideFn)
		perNode[call.cluster]++
		h.forward(call)
		st.OnDone()
		if fs.Resumed != 1 {
			t.Fatalf("%s: status %d", u, fs.Status)
		}
	}
	if h.Counters["ratelimit.redis.moved"] != moved || len(perNode) != 3 || h.Counters["ratelimit.redis.errors"] != 0 {
		t.Fatalf("after the load: calls per node %v, counters %v", perNode, h.Counters)
	}

	// Migrate user0's slot to another master, its keys still on the source.
	key := prefix + "{u|user0}"
	slot, err := c.KeySlot(key)
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.MasterFor(key)
	if err != nil {
		t.Fatal(err)
	}
	dst := c.Nodes[0]
	if dst == src {
		dst = c.Nodes[1]
	}
	srcID, _ := c.NodeID(src)
	dstID, _ := c.NodeID(dst)
	must := func(s *redistest.Server, args ...any) {
		t.Helper()
		if _, err := s.Do(args...); err != nil {
			t.Fatal(err)
		}
	}
	must(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	must(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	fs, st := h.stream("x-user=user0")
	h.pump() // -TRYAGAIN: the block key is missing, the log key is there
	// Re-sent after 10, 20 and 40 ms: the backoff.
	for _, d := range []time.Duration{10, 20, 40} {
		h.tick(d * time.Millisecond)
		h.pump()
	}
	if fs.Resumed != 0 || fs.Status != 0 || h.Counters["ratelimit.redis.retried"] != 3 {
		t.Fatalf("while migrating: resumed %d, status %d, counters %v", fs.Resumed, fs.Status, h.Counters)
	}
	keys, err := src.Client.Strings("CLUSTER", "GETKEYSINSLOT", slot, 100)
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys %v: %v", keys, err)
	}
	host, port := dst.Addr[:len(dst.Addr)-len(strconv.Itoa(portOf(dst.Addr)))-1], portOf(dst.Addr)
	args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	must(src, args...)
	for _, s := range []*redistest.Server{dst, src, c.Nodes[3-nodeIndex(c, src)-nodeIndex(c, dst)]} {
		must(s, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	}
	h.tick(80 * time.Millisecond)
	h.pump() // -MOVED from the source, then decided on the target
	st.OnDone()
	if fs.Resumed != 1 || h.Counters["ratelimit.redis.moved"] <= moved || h.Counters["ratelimit.redis.errors"] != 0 {
		t.Fatalf("after the handover: resumed %d, status %d, counters %v", fs.Resumed, fs.Status, h.Counters)
	}
	n, err := dst.Client.Int("ZCARD", key+":0")
	if err != nil || n != 3 {
		t.Fatalf("the new owner's log holds %d charges (%v), want 3", n, err)
	}
}

// nodeIndex is s's index in c.Nodes.
func nodeIndex(c *redistest.Cluster, s *redistest.Server) int {
	for i, n := range c.Nodes {
		if n == s {
			return i
		}
	}
	panic(fmt.Sprintf("no node %s", s.Addr))
}

// portOf is the port of "host:port".
func portOf(addr string) int {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			p, _ := strconv.Atoi(addr[i+1:])
			return p
		}
	}
	return 0
}
