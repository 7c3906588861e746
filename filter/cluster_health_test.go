package filter

import (
	"fmt"
	"testing"
	"time"
)

// With one node of three down, answers from the others do not make the
// VM healthy: ratelimit.redis.healthy stays 0, with no recovery line,
// until the down node answers or serves no slot any more (its replica
// took over, as a map load shows).
func TestClusterHealthOneNodeDown(t *testing.T) {
	h := newNodesHost(t)
	a, b := userSlot("alice"), userSlot("bob")
	h.loadMap(nodesText(fmt.Sprint(a), fmt.Sprint(b), ""))
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
	// Node 0's replica, node 2, takes alice's slot over.
	h.tick(time.Second)
	h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(nodesText("", fmt.Sprint(b), fmt.Sprint(a)))))
	if g := gauge(h.fakeHost, "ratelimit.redis.healthy"); g != 1 || !logged(h.fakeHost, "decides again") {
		t.Fatalf("node 0 serves no slot now: gauge %d, logs %q", g, h.logs)
	}
}
