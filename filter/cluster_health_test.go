package filter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
)

// except is the slot ranges of every slot but those given, as CLUSTER
// NODES lists them.
func except(slots ...uint16) string {
	var out []string
	lo := 0
	for s := range clusterslot.Slots + 1 {
		taken := s == clusterslot.Slots
		for _, x := range slots {
			taken = taken || s == int(x)
		}
		if taken {
			if s > lo {
				out = append(out, fmt.Sprintf("%d-%d", lo, s-1))
			}
			lo = s + 1
		}
	}
	return strings.Join(out, " ")
}

// With one node of three down, answers from the others do not make the
// VM healthy: ratelimit.redis.healthy stays 0, with no recovery line,
// until the down node answers or serves no slot any more (its replica
// took over, as a map load shows).
func TestClusterHealthOneNodeDown(t *testing.T) {
	h := newNodesHost(t)
	a, b := userSlot("alice"), userSlot("bob")
	h.loadMap(nodesText(fmt.Sprint(a), fmt.Sprint(b), except(a, b)))
	if o, _ := h.pumped("x-user=bob"); o.Resumed != 1 || gauge(h.fakeHost, "ratelimit.redis.healthy") != 1 {
		t.Fatalf("bob %+v, gauge %d", o, gauge(h.fakeHost, "ratelimit.redis.healthy"))
	}
	fs, st := h.stream("x-user=alice")
	h.reply(h.take(decideFn), 503, "")
	st.OnDone()
	if fs.Status != 503 || gauge(h.fakeHost, "ratelimit.redis.healthy") != 0 {
		t.Fatalf("alice: status %d, gauge %d", fs.Status, gauge(h.fakeHost, "ratelimit.redis.healthy"))
	}
	for i := range 3 {
		if o, _ := h.pumped("x-user=bob"); o.Resumed != 1 {
			t.Fatalf("bob %d: %+v", i, o)
		}
		if g := gauge(h.fakeHost, "ratelimit.redis.healthy"); g != 0 {
			t.Fatalf("node 0 is down, yet bob's answer %d made the VM healthy", i)
		}
	}
	if logged(h.fakeHost, "decides again") {
		t.Fatalf("recovery logged while node 0 is down: %q", h.logs)
	}
	// Node 0 flagged fail: its slot is unserved, not served elsewhere.
	h.tick(time.Second)
	failed := strings.Replace(nodesText(fmt.Sprint(a), fmt.Sprint(b), except(a, b)), "master -", "master,fail -", 1)
	h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(failed)))
	if g := gauge(h.fakeHost, "ratelimit.redis.healthy"); g != 0 {
		t.Fatalf("node 0 failed, its slot served by none, yet the gauge shows %d", g)
	}
	// Node 0's replica, node 2, takes alice's slot over.
	h.plugin.router.load.want(h.Clock, time.Second)
	h.tick(time.Second)
	h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(nodesText("", fmt.Sprint(b), except(b)))))
	if g := gauge(h.fakeHost, "ratelimit.redis.healthy"); g != 1 || !logged(h.fakeHost, "decides again") {
		t.Fatalf("node 0 serves no slot now: gauge %d, logs %q", g, h.logs)
	}
}

// A -MOVED answered when the call's redis.timeout has passed fails the
// call, not counted by the breaker: a re-send would have a budget of
// nothing, and its certain timeout would count against a live node.
func TestClusterMovedPastDeadline(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	fs, st := h.stream("x-user=alice")
	c := h.take(decideFn)
	h.Clock = h.Clock.Add(200 * time.Millisecond)
	h.replyError(c, fmt.Sprintf("MOVED %d 10.0.0.2:6379", userSlot("alice")))
	if h.has(decideFn) {
		h.reply(h.take(decideFn), 0, "") // what the host does with a 1 ms budget
	}
	st.OnDone()
	if fs.Status != 503 || h.Counters["ratelimit.circuit_breaker.opened"] != 0 {
		t.Fatalf("status %d, counters %v", fs.Status, h.Counters)
	}
	if o, _ := h.pumped("x-user=alice"); o.Resumed != 1 {
		t.Fatalf("node 1 was counted as failing: %+v, counters %v", o, h.Counters)
	}
}

// A re-send whose budget left is under a millisecond still has one: the
// host passes whole milliseconds, and to Envoy a timeout of 0 is none.
func TestClusterResendSubMillisecond(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	_, st := h.stream("x-user=alice")
	c := h.take(decideFn)
	h.Clock = h.Clock.Add(189*time.Millisecond + 500*time.Microsecond)
	h.replyError(c, "TRYAGAIN Multiple keys request during rehashing of slot")
	h.tick(10 * time.Millisecond)
	if c = h.take(decideFn); c.timeout < time.Millisecond {
		t.Fatalf("re-sent with a timeout of %v", c.timeout)
	}
	st.OnDone()
}

// A call held by a slot migrating for 300 ms is re-sent after 10 ms, then
// 20, 40, 80 and 100 ms: 6 re-sends, not one per 10 ms tick (30), and
// never more than 100 ms after the handover.
func TestClusterRetryBackoff(t *testing.T) {
	conf := strings.Replace(nodesConf, `"timeout":"200ms"`, `"timeout":"2s"`, 1)
	h := newClusterHost(t, conf, map[string]string{"webdis-0": server.Addr, "webdis-1": server.Addr, "webdis-2": server.Addr})
	h.loadMap(nodesText("0-16383", "", ""))
	start := h.Clock
	fs, st := h.stream("x-user=alice")
	last := start
	for fs.Resumed == 0 && h.Clock.Sub(start) < time.Second {
		if h.has(decideFn) {
			if gap := h.Clock.Sub(last); gap > maxRetryBackoff {
				t.Fatalf("re-sent %v after the last", gap)
			}
			last = h.Clock
			if c := h.take(decideFn); h.Clock.Sub(start) < 300*time.Millisecond {
				h.replyError(c, "TRYAGAIN Multiple keys request during rehashing of slot")
			} else {
				h.forward(c)
			}
		}
		h.tick(10 * time.Millisecond)
	}
	st.OnDone()
	if fs.Resumed != 1 || h.Counters["ratelimit.redis.retried"] != 6 {
		t.Fatalf("resumed %d, counters %v", fs.Resumed, h.Counters)
	}
}

// Nodes listed by hostname, whose -MOVED names them by IP (the cluster's
// preferred endpoint type is ip): CLUSTER NODES gives both forms, and the
// move goes to the node's Webdis, not to the failure mode as unlisted.
func TestClusterMovedOtherForm(t *testing.T) {
	conf := strings.NewReplacer("10.0.0.1:6379", "node-0.test:6379", "10.0.0.2:6379", "node-1.test:6379",
		"10.0.0.3:6379", "node-2.test:6379").Replace(nodesConf)
	h := newClusterHost(t, conf, map[string]string{"webdis-0": server.Addr, "webdis-1": server.Addr, "webdis-2": server.Addr})
	var text strings.Builder
	for i, r := range []string{"0-16383", "", ""} {
		fmt.Fprintf(&text, "%040x 10.0.0.%d:6379@16379,node-%d.test master - 0 0 %d connected %s\n", i+1, i+1, i, i+1, r)
	}
	h.loadMap(text.String())
	fs, st := h.stream("x-user=alice")
	h.replyError(h.take(decideFn), fmt.Sprintf("MOVED %d 10.0.0.2:6379", userSlot("alice")))
	if !h.has(decideFn) {
		st.OnDone()
		t.Fatalf("not re-sent: status %d, counters %v, logs %q", fs.Status, h.Counters, h.logs)
	}
	c := h.take(decideFn)
	h.forward(c)
	st.OnDone()
	if c.cluster != "webdis-1" || fs.Resumed != 1 || h.Counters["ratelimit.redis.unknown_node"] != 0 {
		t.Fatalf("re-sent to %s, resumed %d, counters %v", c.cluster, fs.Resumed, h.Counters)
	}
}

// -MOVED names endpoints from Redis's error text: a cluster naming ever
// new unlisted ones logs at most 64 of them per VM, not a line per call.
func TestClusterUnlistedLogBounded(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	for i := range 100 {
		_, st := h.stream("x-user=alice")
		h.replyError(h.take(decideFn), fmt.Sprintf("MOVED %d 10.9.%d.%d:6379", userSlot("alice"), i/250, i%250))
		st.OnDone()
		h.tick(100 * time.Millisecond)
		if h.has("CLUSTER/NODES") {
			h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(nodesText("0-16383", "", ""))))
		}
	}
	if n := strings.Count(strings.Join(h.logs, "\n"), "is not in redis.nodes: calls to its slots"); n > 64 {
		t.Fatalf("%d lines naming unlisted nodes", n)
	}
}

// A batch call (rules[].lease) held by a migrating slot when its stream
// ends leaves its lease entry free to ask again, not pending for ever.
func TestClusterRetryStreamEndsLease(t *testing.T) {
	conf := strings.Replace(nodesConf, `"window":"1m"}]}]}`,
		`"window":"1m"}],"lease":{"max_hold":"1h","max_batch":5,"hot_rate":1}}]}`, 1)
	h := newClusterHost(t, conf, map[string]string{"webdis-0": server.Addr, "webdis-1": server.Addr, "webdis-2": server.Addr})
	h.loadMap(nodesText("0-16383", "", ""))
	pending := func() bool {
		for _, tb := range h.plugin.top().leases {
			for _, e := range tb.order {
				if e.pending {
					return true
				}
			}
		}
		return false
	}
	asked := false
	for i := 0; i < 5 && !asked; i++ {
		_, st := h.stream("x-user=alice")
		if asked = pending(); asked {
			h.replyError(h.take(decideFn), "TRYAGAIN Multiple keys request during rehashing of slot")
		} else {
			h.pump()
		}
		st.OnDone()
		h.tick(10 * time.Millisecond)
	}
	if !asked {
		t.Fatal("no batch asked for")
	}
	if pending() {
		t.Fatal("the lease entry stays pending: the key never asks for a batch again")
	}
}

// An idle VM whose node failed once learns that it answers again: while
// a node is down, a map load goes to it every 5 s, and its answer clears
// it. Without that, the gauge would stay 0 until a request hit its slots.
func TestClusterHealthIdleRecovers(t *testing.T) {
	h := newNodesHost(t)
	a, b := userSlot("alice"), userSlot("bob")
	// Node 2 serves every other slot, the epoch key's too.
	text := nodesText(fmt.Sprint(a), fmt.Sprint(b), except(a, b))
	h.loadMap(text)
	fs, st := h.stream("x-user=alice")
	h.reply(h.take(decideFn), 503, "")
	st.OnDone()
	if fs.Status != 503 || gauge(h.fakeHost, "ratelimit.redis.healthy") != 0 {
		t.Fatalf("status %d", fs.Status)
	}
	for range 12 { // idle: epoch reads and loads only, every one answered
		h.tick(time.Second)
		for len(h.http) > 0 {
			c := h.next()
			if strings.Contains(c.body, "CLUSTER/NODES") {
				h.reply(c, 200, webdisJSON("CLUSTER", bulk(text)))
			} else {
				h.forward(c)
			}
		}
	}
	if g := gauge(h.fakeHost, "ratelimit.redis.healthy"); g != 1 {
		t.Fatalf("node 0 answers again, yet the idle VM shows %d; logs %q", g, h.logs)
	}
}

// Redis's error texts reach the log lines clipped and printable: a
// -TRYAGAIN held to the deadline, and a CLUSTER NODES refused with an
// error, each 10 KB with line breaks.
func TestClusterErrorTextsClipped(t *testing.T) {
	long := strings.Repeat("x\ny", 5000)
	h := newNodesHost(t)
	h.tick(0)
	h.reply(h.take("CLUSTER/NODES"), 200, `{"CLUSTER":[false,"ERR `+strings.ReplaceAll(long, "\n", `\n`)+`"]}`)
	h.http = nil                            // epoch reads
	h.Clock = h.Clock.Add(11 * time.Second) // an unreadable load waits for the refresh
	h.loadMap(nodesText("0-16383", "", ""))
	fs, st := h.stream("x-user=alice")
	for i := 0; i < 30 && fs.Status == 0; i++ {
		if h.has(decideFn) {
			h.replyError(h.take(decideFn), "TRYAGAIN "+long)
		}
		h.tick(10 * time.Millisecond)
	}
	st.OnDone()
	if fs.Status != 503 || len(h.logs) < 2 {
		t.Fatalf("status %d, logs %q", fs.Status, h.logs)
	}
	for _, l := range h.logs {
		if len(l) > 1000 || strings.Contains(l, "\n") {
			t.Fatalf("a log line of %d bytes: %.300q", len(l), l)
		}
	}
}
