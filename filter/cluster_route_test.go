package filter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// nodesConf routes over three nodes, each behind a Webdis of its own
// (webdis-0..2), which the tests back with the one test Redis.
const nodesConf = `{"redis":{"transport":"webdis","cluster_mode":true,"timeout":"200ms","slot_map_refresh":"10s",
	"nodes":[{"address":"10.0.0.1:6379","cluster":"webdis-0"},{"address":"10.0.0.2:6379","cluster":"webdis-1"},
	{"address":"10.0.0.3:6379","cluster":"webdis-2"}]},
	"failure_mode":"deny","circuit_breaker":{"failures":1,"backoff":"5s"},
	"rules":[{"name":"u","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1m"}]}]}`

func newNodesHost(t *testing.T) *clusterHost {
	t.Helper()
	return newClusterHost(t, nodesConf, map[string]string{"webdis-0": server.Addr, "webdis-1": server.Addr, "webdis-2": server.Addr})
}

// userSlot is the slot of rule u's keys for user.
func userSlot(user string) uint16 { return clusterslot.Slot("{u|" + user + "}") }

// nodesText is CLUSTER NODES for masters 10.0.0.<i+1>:6379, master i
// serving ranges[i] ("" for none).
func nodesText(ranges ...string) string {
	var b strings.Builder
	for i, r := range ranges {
		fmt.Fprintf(&b, "%040x 10.0.0.%d:6379@16379 master - 0 0 %d connected %s\n", i+1, i+1, i+1, r)
	}
	return b.String()
}

// take removes and returns the first callout whose body holds substr.
func (h *clusterHost) take(substr string) httpCall {
	h.t.Helper()
	for i, c := range h.http {
		if strings.Contains(c.body, substr) {
			h.http = append(h.http[:i], h.http[i+1:]...)
			return c
		}
	}
	h.t.Fatalf("no callout with %q queued: %v", substr, h.http)
	return httpCall{}
}

// has reports whether a callout whose body holds substr is queued.
func (h *clusterHost) has(substr string) bool {
	for _, c := range h.http {
		if strings.Contains(c.body, substr) {
			return true
		}
	}
	return false
}

// bulk is a bulk string reply.
func bulk(s string) redisproto.Value {
	return redisproto.Value{Kind: redisproto.KindBulkString, Str: []byte(s)}
}

var (
	decideFn = algorithms.Library.Decide
	epochFn  = algorithms.Library.Epoch
)

// loadMap ticks and answers the map load the tick sends with text; the
// epoch read goes to Redis.
func (h *clusterHost) loadMap(text string) {
	h.t.Helper()
	h.tick(0)
	h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(text)))
	if h.has(epochFn) {
		h.forward(h.take(epochFn))
	}
}

// The first tick loads the slot map through node 0; each call then goes to
// the Webdis of its slot's node, and a -MOVED re-sends it at once to the
// node named, within what is left of its redis.timeout, and fixes the map.
func TestClusterMovedRedispatch(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	if h.Counters["ratelimit.redis.slot_map_loads"] != 1 {
		t.Fatalf("counters %v", h.Counters)
	}
	fs, st := h.stream("x-user=alice")
	c := h.take(decideFn)
	if c.cluster != "webdis-0" || c.timeout != 200*time.Millisecond {
		t.Fatalf("first send %+v", c)
	}
	slot := userSlot("alice")
	h.Clock = h.Clock.Add(50 * time.Millisecond)
	h.replyError(c, fmt.Sprintf("MOVED %d 10.0.0.2:6379", slot))
	if h.TickPeriod != config.ThrottleTick {
		t.Fatalf("tick %v while a load is wanted", h.TickPeriod)
	}
	c = h.take(decideFn)
	if c.cluster != "webdis-1" || c.timeout != 150*time.Millisecond {
		t.Fatalf("after -MOVED: %+v, want webdis-1 within the 150ms left", c)
	}
	h.forward(c)
	st.OnDone()
	if fs.Resumed != 1 || fs.Status != 0 || h.Counters["ratelimit.redis.moved"] != 1 || h.Counters["ratelimit.redis.errors"] != 0 {
		t.Fatalf("resumed %d, status %d, counters %v", fs.Resumed, fs.Status, h.Counters)
	}
	if logged(h.fakeHost, "raw Redis Cluster") {
		t.Fatalf("the filter routes, yet the log says otherwise: %q", h.logs)
	}
	_, st = h.stream("x-user=alice")
	if c = h.take(decideFn); c.cluster != "webdis-1" {
		t.Fatalf("the map kept the old owner: %+v", c)
	}
	h.forward(c)
	st.OnDone()
	h.tick(49 * time.Millisecond) // the move asked for a load: at most one per 100 ms
	if h.has("CLUSTER/NODES") {
		t.Fatal("load within 100 ms of the last")
	}
	h.tick(time.Millisecond)
	h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(nodesText("", "", "0-16383"))))
	h.tick(10 * time.Millisecond)
	if h.TickPeriod != slowTick {
		t.Fatalf("tick %v once nothing waits", h.TickPeriod)
	}
	_, st = h.stream("x-user=alice")
	if c = h.take(decideFn); c.cluster != "webdis-2" {
		t.Fatalf("after the reload: %+v", c)
	}
	h.forward(c)
	st.OnDone()
}

// A call follows at most 3 moves; the 4th fails it with the failure mode,
// not counted by the node's breaker (it did not fail).
func TestClusterRedirectCap(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	fs, st := h.stream("x-user=alice")
	for i := range 4 {
		h.replyError(h.take(decideFn), fmt.Sprintf("MOVED %d 10.0.0.%d:6379", userSlot("alice"), 2+i%2))
	}
	st.OnDone()
	if fs.Status != 503 || h.Counters["ratelimit.redis.moved"] != 4 || h.Counters["ratelimit.circuit_breaker.opened"] != 0 || h.has(decideFn) {
		t.Fatalf("status %d, counters %v, queued %v", fs.Status, h.Counters, h.http)
	}
	if !logged(h.fakeHost, "still redirected after 3 moves") {
		t.Fatalf("logs %q", h.logs)
	}
}

// -TRYAGAIN and -ASK hold the call, re-sent on the 10 ms tick (-ASK to
// the node it went to, the slot's source) until it is answered: the
// paused stream then goes on.
func TestClusterRetryResumesStream(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	fs, st := h.stream("x-user=alice")
	slot := userSlot("alice")
	h.replyError(h.take(decideFn), "TRYAGAIN Multiple keys request during rehashing of slot")
	if h.has(decideFn) || h.TickPeriod != config.ThrottleTick {
		t.Fatalf("re-sent before the tick, or tick %v", h.TickPeriod)
	}
	h.tick(10 * time.Millisecond)
	c := h.take(decideFn)
	if c.cluster != "webdis-0" || c.timeout != 190*time.Millisecond {
		t.Fatalf("retry %+v", c)
	}
	h.replyError(c, fmt.Sprintf("ASK %d 10.0.0.3:6379", slot))
	h.tick(10 * time.Millisecond)
	if h.has(decideFn) {
		t.Fatal("re-sent 10 ms after the last: the backoff doubles")
	}
	h.tick(10 * time.Millisecond)
	if c = h.take(decideFn); c.cluster != "webdis-0" {
		t.Fatalf("after -ASK the call went to %s, not the source", c.cluster)
	}
	if fs.Resumed != 0 || fs.Status != 0 {
		t.Fatal("decided before the reply")
	}
	h.forward(c)
	if fs.Resumed != 1 || fs.Status != 0 || h.Counters["ratelimit.redis.retried"] != 2 || h.Counters["ratelimit.redis.errors"] != 0 {
		t.Fatalf("resumed %d, status %d, counters %v", fs.Resumed, fs.Status, h.Counters)
	}
	st.OnDone()
	h.tick(10 * time.Millisecond)
	if h.TickPeriod != slowTick || h.plugin.Pending() != 0 {
		t.Fatalf("tick %v, pending %d", h.TickPeriod, h.plugin.Pending())
	}
}

// A slot that stays migrating holds its call until redis.timeout, then
// the call gets the failure mode with a named error, not counted by the
// breaker; -CLUSTERDOWN alike.
func TestClusterRetryUntilDeadline(t *testing.T) {
	for _, tc := range []struct{ reply, log string }{
		{"TRYAGAIN Multiple keys request during rehashing of slot", "is migrating (TRYAGAIN"},
		{"CLUSTERDOWN The cluster is down", "the cluster is down (CLUSTERDOWN"},
	} {
		h := newNodesHost(t)
		h.loadMap(nodesText("0-16383", "", ""))
		fs, st := h.stream("x-user=alice")
		for i := 0; i < 30 && fs.Status == 0; i++ {
			if h.has(decideFn) {
				h.replyError(h.take(decideFn), tc.reply)
			}
			h.tick(10 * time.Millisecond)
		}
		st.OnDone()
		want := fmt.Sprintf("slot %d", userSlot("alice"))
		// Re-sent at 10, 30, 70 and 150 ms; failed at 200 ms.
		if fs.Status != 503 || h.Counters["ratelimit.redis.retried"] != 4 || h.Counters["ratelimit.circuit_breaker.opened"] != 0 {
			t.Fatalf("%s: status %d, counters %v", tc.reply, fs.Status, h.Counters)
		}
		if !logged(h.fakeHost, want) || !logged(h.fakeHost, tc.log) {
			t.Fatalf("%s: logs %q", tc.reply, h.logs)
		}
		// -CLUSTERDOWN (a master failed) reloads the map within a second.
		h.tick(time.Second)
		if down := strings.HasPrefix(tc.reply, "CLUSTERDOWN"); h.has("CLUSTER/NODES") != down {
			t.Fatalf("%s: map load sent %v", tc.reply, !down)
		}
	}
}

// A timeout, Webdis's 503 or a failed callout may have run the call: it
// is never sent again, and it counts toward its node's breaker.
func TestClusterNoResendAfterFailure(t *testing.T) {
	for _, status := range []int{0, 503} {
		h := newNodesHost(t)
		h.loadMap(nodesText("0-16383", "", ""))
		fs, st := h.stream("x-user=alice")
		h.reply(h.take(decideFn), status, "")
		for range 30 {
			h.tick(10 * time.Millisecond)
		}
		st.OnDone()
		if fs.Status != 503 || h.has(decideFn) || h.Counters["ratelimit.circuit_breaker.opened"] != 1 {
			t.Fatalf("status %d: %d, queued %v, counters %v", status, fs.Status, h.http, h.Counters)
		}
		if !logged(h.fakeHost, "node 10.0.0.1:6379 through webdis-0") {
			t.Fatalf("the health line does not name the node: %q", h.logs)
		}
	}
}

// One node's failures open its breaker alone: the other nodes' slots go
// on deciding.
func TestClusterBreakerPerNode(t *testing.T) {
	h := newNodesHost(t)
	a, b := userSlot("alice"), userSlot("bob")
	if a == b {
		t.Fatal("alice and bob share a slot")
	}
	h.loadMap(nodesText(fmt.Sprintf("%d", a), fmt.Sprintf("%d", b), ""))
	fs, st := h.stream("x-user=alice")
	h.reply(h.take(decideFn), 503, "")
	st.OnDone()
	if fs.Status != 503 || h.Counters["ratelimit.circuit_breaker.opened"] != 1 {
		t.Fatalf("status %d, counters %v", fs.Status, h.Counters)
	}
	if o, _ := h.pumped("x-user=bob"); o.Resumed != 1 {
		t.Fatalf("bob, on node 1: %+v", o)
	}
	if o, _ := h.pumped("x-user=alice"); o.Status != 503 || h.Counters["ratelimit.circuit_breaker.skipped"] != 1 {
		t.Fatalf("alice, on node 0: status %d, counters %v", o.Status, h.Counters)
	}
}

// pumped runs a request with its callouts forwarded.
func (h *clusterHost) pumped(headers ...string) (*fakeStream, *Stream) {
	fs, st := h.stream(headers...)
	h.pump()
	st.OnDone()
	return fs, st
}

// A master missing from redis.nodes is logged once, naming it; its
// slots' calls get the failure mode, counted in
// ratelimit.redis.unknown_node, not by the breaker. A -MOVED to it alike.
func TestClusterUnknownNode(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-100", "", "") + fmt.Sprintf("%040x 10.9.9.9:6379@16379 master - 0 0 9 connected 101-16383\n", 9))
	for range 2 {
		if fs, _ := h.pumped("x-user=alice"); fs.Status != 503 {
			t.Fatalf("status %d", fs.Status)
		}
	}
	if h.Counters["ratelimit.redis.unknown_node"] != 2 || h.Counters["ratelimit.circuit_breaker.opened"] != 0 {
		t.Fatalf("counters %v", h.Counters)
	}
	if n := strings.Count(strings.Join(h.logs, "\n"), "node 10.9.9.9:6379 serves slots but is not in redis.nodes"); n != 1 {
		t.Fatalf("logged %d times: %q", n, h.logs)
	}
	h.Clock = h.Clock.Add(11 * time.Second) // the periodic reload
	h.loadMap(nodesText("0-16383", "", ""))
	_, st := h.stream("x-user=alice")
	h.replyError(h.take(decideFn), fmt.Sprintf("MOVED %d 10.8.8.8:6379", userSlot("alice")))
	st.OnDone()
	if !logged(h.fakeHost, "node 10.8.8.8:6379 serves slots") || h.Counters["ratelimit.redis.unknown_node"] != 3 {
		t.Fatalf("counters %v, logs %q", h.Counters, h.logs)
	}
}

// CLUSTER NODES refused (Webdis's 403, or Redis's -NOPERM) is logged once
// with the fix; the map is then learnt from -MOVED alone.
func TestClusterNodesRefused(t *testing.T) {
	for _, refuse := range []func(h *clusterHost, c httpCall){
		func(h *clusterHost, c httpCall) { h.reply(c, 403, "") },
		func(h *clusterHost, c httpCall) {
			h.replyError(c, "NOPERM User ratelimit has no permissions to run the 'cluster|nodes' command")
		},
	} {
		h := newNodesHost(t)
		h.tick(0)
		refuse(h, h.take("CLUSTER/NODES"))
		_, st := h.stream("x-user=alice")
		h.replyError(h.take(decideFn), fmt.Sprintf("MOVED %d 10.0.0.3:6379", userSlot("alice")))
		c := h.take(decideFn)
		h.forward(c)
		st.OnDone()
		for range 20 {
			h.tick(10 * time.Millisecond)
		}
		if c.cluster != "webdis-2" || h.has("CLUSTER/NODES") {
			t.Fatalf("re-sent to %s; queued %v", c.cluster, h.http)
		}
		if n := strings.Count(strings.Join(h.logs, "\n"), "grant +cluster|nodes to the filter's Redis user and enable CLUSTER in Webdis's acl"); n != 1 {
			t.Fatalf("logged %d times: %q", n, h.logs)
		}
		h.tick(11 * time.Second) // the refresh tries again; granted now
		h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(nodesText("0-16383", "", ""))))
		if h.Counters["ratelimit.redis.slot_map_loads"] != 1 {
			t.Fatalf("counters %v", h.Counters)
		}
	}
}

// The map is reloaded every slot_map_refresh, ±10%, from the nodes in
// turn; after a node's failure, within a second, skipping the nodes that
// failed in the last 5 s.
func TestClusterPeriodicReload(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	h.tick(8900 * time.Millisecond)
	if h.has("CLUSTER/NODES") {
		t.Fatal("reloaded before 90% of slot_map_refresh")
	}
	h.tick(2200 * time.Millisecond)
	c := h.take("CLUSTER/NODES")
	if c.cluster != "webdis-1" {
		t.Fatalf("reload through %s, want the next node", c.cluster)
	}
	h.reply(c, 200, webdisJSON("CLUSTER", bulk(nodesText("", "0-16383", ""))))
	if h.Counters["ratelimit.redis.slot_map_loads"] != 2 {
		t.Fatalf("counters %v", h.Counters)
	}
	fs, _ := h.stream("x-user=alice")
	h.reply(h.take(decideFn), 503, "") // node 1 fails
	if fs.Status != 503 {
		t.Fatalf("status %d", fs.Status)
	}
	h.tick(900 * time.Millisecond)
	if h.has("CLUSTER/NODES") {
		t.Fatal("reloaded within a second of the last load")
	}
	h.tick(200 * time.Millisecond)
	if c = h.take("CLUSTER/NODES"); c.cluster != "webdis-2" {
		t.Fatalf("reload through %s, want webdis-2 (webdis-1 failed)", c.cluster)
	}
}

// A stream that ends while its call waits in the retry queue takes it
// out: nothing is sent for it, and nothing is left pending.
func TestClusterRetryStreamEnds(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	_, st := h.stream("x-user=alice")
	h.replyError(h.take(decideFn), "TRYAGAIN Multiple keys request during rehashing of slot")
	st.OnDone()
	for range 5 {
		h.tick(10 * time.Millisecond)
	}
	if h.has(decideFn) || h.plugin.Pending() != 0 || h.plugin.LiveStreams() != 0 || h.TickPeriod != slowTick {
		t.Fatalf("queued %v, pending %d, tick %v", h.http, h.plugin.Pending(), h.TickPeriod)
	}
	// Re-sent from the tick, then the stream ends: the reply is dropped.
	fs, st := h.stream("x-user=bob")
	h.replyError(h.take(decideFn), "TRYAGAIN Multiple keys request during rehashing of slot")
	h.tick(10 * time.Millisecond)
	c := h.take(decideFn)
	st.OnDone()
	h.forward(c)
	if fs.Resumed != 0 || fs.Status != 0 || h.plugin.Pending() != 0 {
		t.Fatalf("resumed %d, status %d, pending %d", fs.Resumed, fs.Status, h.plugin.Pending())
	}
}
