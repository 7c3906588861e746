package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
)

// A cluster of one master (redis.nodes with a single node) that never met
// another node prints its own line in CLUSTER NODES with no IP
// (":6379@16379 myself,master ..."): the map load reads it as the node the
// load went to, and calls keep deciding on it, not failing as a node
// missing from redis.nodes.
func TestClusterSingleNodeWithoutIP(t *testing.T) {
	conf := strings.Replace(nodesConf, `"nodes":[{"address":"10.0.0.1:6379","cluster":"webdis-0"},{"address":"10.0.0.2:6379","cluster":"webdis-1"},
	{"address":"10.0.0.3:6379","cluster":"webdis-2"}]`, `"nodes":[{"address":"redis-0.redis:6379","cluster":"webdis-0"}]`, 1)
	if conf == nodesConf {
		t.Fatal("nodesConf changed: the test's configuration is nodesConf's")
	}
	h := newClusterHost(t, conf, map[string]string{"webdis-0": server.Addr})
	h.loadMap("1ca44738fcb75c872d3dea4a4e399a97e1ccb35b :6379@16379 myself,master - 0 0 0 connected 0-16383\n")
	if h.Counters["ratelimit.redis.slot_map_loads"] != 1 {
		t.Fatalf("counters %v", h.Counters)
	}
	fs, st := h.stream("x-user=alice")
	c := h.take(decideFn)
	if c.cluster != "webdis-0" {
		t.Fatalf("sent %+v", c)
	}
	h.forward(c)
	st.OnDone()
	if fs.Resumed != 1 || fs.Status != 0 || h.Counters["ratelimit.redis.unknown_node"] != 0 || h.Counters["ratelimit.redis.errors"] != 0 {
		t.Fatalf("resumed %d, status %d, counters %v", fs.Resumed, fs.Status, h.Counters)
	}
	if logged(h.fakeHost, "not in redis.nodes") {
		t.Fatalf("logged as missing: %q", h.logs)
	}
}

// The first node's Webdis is down at start: the first map load's 503 marks
// it failed, so calls go to the next node at once (its -MOVED corrects
// them), and the next load goes there a second after the first.
func TestClusterFirstNodeDownAtStart(t *testing.T) {
	h := newNodesHost(t)
	h.tick(0)
	c := h.take("CLUSTER/NODES")
	if c.cluster != "webdis-0" {
		t.Fatalf("first load %+v", c)
	}
	h.reply(c, 503, "no healthy upstream")
	if h.has(epochFn) {
		h.forward(h.take(epochFn))
	}
	fs, st := h.stream("x-user=alice")
	if c = h.take(decideFn); c.cluster != "webdis-1" {
		t.Fatalf("a call while node 0 is down went to %+v", c)
	}
	h.forward(c)
	st.OnDone()
	if fs.Resumed != 1 || fs.Status != 0 {
		t.Fatalf("resumed %d, status %d", fs.Resumed, fs.Status)
	}
	h.tick(999 * time.Millisecond)
	if h.has("CLUSTER/NODES") {
		t.Fatal("a load within a second of the failed one")
	}
	h.tick(time.Millisecond)
	if c = h.take("CLUSTER/NODES"); c.cluster != "webdis-1" {
		t.Fatalf("second load %+v", c)
	}
}

// With redis.nodes, the first epoch read answered by another node than the
// last (its replica took over, or its slot moved) clears the caches though
// the value is the same: the bump the old master took may be lost.
func TestClusterEpochFromAnotherNodeClears(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	read := func(cluster string) {
		t.Helper()
		h.tick(time.Second)
		c := h.take(epochFn)
		if c.cluster != cluster {
			t.Fatalf("epoch read %+v, want %s", c, cluster)
		}
		h.forward(c)
	}
	read("webdis-0")
	if got := h.Counters["ratelimit.epoch.changes"]; got != 1 {
		t.Fatalf("changes %d after two reads from node 0", got)
	}
	var m clusterslot.Map
	if _, err := clusterslot.ParseNodes(&m, nodesText("", "0-16383", ""), h.plugin.router.addrs); err != nil {
		t.Fatal(err)
	}
	*h.plugin.router.slots = m
	read("webdis-1")
	if got := h.Counters["ratelimit.epoch.changes"]; got != 2 {
		t.Fatalf("changes %d: the read from node 1 did not clear", got)
	}
	read("webdis-1")
	if got := h.Counters["ratelimit.epoch.changes"]; got != 2 {
		t.Fatalf("changes %d: an unchanged epoch from the same node cleared", got)
	}
}
