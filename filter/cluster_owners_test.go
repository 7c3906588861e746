package filter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// The epoch read goes to the epoch key's slot: it follows -MOVED at once,
// and -TRYAGAIN on the next fast tick, neither a failure.
func TestClusterEpochFollowsMoved(t *testing.T) {
	h := newNodesHost(t)
	h.tick(0)
	h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(nodesText("0-16383", "", ""))))
	slot := clusterslot.Slot(h.plugin.epoch.key)
	h.replyError(h.take(epochFn), fmt.Sprintf("MOVED %d 10.0.0.2:6379", slot))
	e := h.take(epochFn)
	if e.cluster != "webdis-1" {
		t.Fatalf("epoch read re-sent to %s", e.cluster)
	}
	h.forward(e)
	h.tick(time.Second)
	e = h.take(epochFn)
	if e.cluster != "webdis-1" {
		t.Fatalf("next epoch read to %s", e.cluster)
	}
	h.replyError(e, "TRYAGAIN Multiple keys request during rehashing of slot")
	h.tick(10 * time.Millisecond)
	h.forward(h.take(epochFn))
	if h.Counters["ratelimit.epoch.failed"] != 0 || h.Counters["ratelimit.redis.errors"] != 0 ||
		h.Counters["ratelimit.redis.moved"] != 1 || h.Counters["ratelimit.redis.retried"] != 1 || h.Counters["ratelimit.epoch.polls"] != 4 {
		t.Fatalf("counters %v", h.Counters)
	}
}

// A settle (here a concurrency slot's release) is retried as a decision
// is, and lands.
func TestClusterSettleRetried(t *testing.T) {
	conf := strings.Replace(nodesConf, `{"algorithm":"sliding_log","limit":5,"window":"1m"}`,
		`{"algorithm":"concurrency","limit":2,"max_duration":"5m"}`, 1)
	h := newClusterHost(t, conf, map[string]string{"webdis-0": server.Addr, "webdis-1": server.Addr, "webdis-2": server.Addr})
	h.loadMap(nodesText("0-16383", "", ""))
	fs, st := h.stream("x-user=alice")
	h.forward(h.take(decideFn))
	st.OnDone()
	if fs.Resumed != 1 {
		t.Fatalf("status %d", fs.Status)
	}
	settle := algorithms.Library.Settle
	h.replyError(h.take(settle), fmt.Sprintf("ASK %d 10.0.0.3:6379", userSlot("alice")))
	h.tick(10 * time.Millisecond)
	c := h.take(settle)
	if c.cluster != "webdis-0" {
		t.Fatalf("release re-sent to %s, not the source", c.cluster)
	}
	h.forward(c)
	if h.Counters["ratelimit.settle.errors"] != 0 || h.Counters["ratelimit.redis.retried"] != 1 || h.Counters[config.RuleMetricName("u", config.EventReleasesFailed)] != 0 {
		t.Fatalf("counters %v", h.Counters)
	}
}

// Without redis.nodes, a cluster-aware proxy (redis_proxy) passes
// -TRYAGAIN on: the call is retried the same way.
func TestTryAgainRetriedWithoutNodes(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis","timeout":"200ms"},"failure_mode":"deny",
	"rules":[{"name":"u","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1m"}]}]}`)
	h.Clock = time.Now()
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	st.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}, {"x-user", "alice"}})
	q := h.Queue[0]
	h.Queue = h.Queue[1:]
	h.plugin.OnRedisReply(q.ID, true, []byte("-TRYAGAIN Multiple keys request during rehashing of slot\r\n"))
	if len(h.Queue) != 0 || h.TickPeriod != 10*time.Millisecond {
		t.Fatalf("queue %d, tick %v", len(h.Queue), h.TickPeriod)
	}
	h.Clock = h.Clock.Add(10 * time.Millisecond)
	h.plugin.OnTick()
	h.Pump()
	st.OnDone()
	if fs.Resumed != 1 || h.Counters["ratelimit.redis.retried"] != 1 || h.Counters["ratelimit.redis.errors"] != 0 {
		t.Fatalf("resumed %d, status %d, counters %v", fs.Resumed, fs.Status, h.Counters)
	}
}

// FuzzClusterNodesText: any Webdis response to CLUSTER NODES is read
// without panic, in bounded work.
func FuzzClusterNodesText(f *testing.F) {
	f.Add([]byte(`{"CLUSTER":"` + strings.ReplaceAll(nodesText("0-5460", "5461-10922", "10923-16383"), "\n", `\n`) + `"}`))
	f.Add([]byte(`{"CLUSTER":[false,"NOPERM User ratelimit has no permissions to run the 'cluster|nodes' command"]}`))
	f.Add([]byte(`{"CLUSTER":[null,null]}`))
	f.Add([]byte(`{"CLUSTER":`))
	f.Fuzz(func(t *testing.T, body []byte) {
		text, refusal, err := clusterNodesText(body)
		if err == nil && refusal == "" {
			var m clusterslot.Map
			_, _ = clusterslot.ParseNodes(&m, text, []string{"10.0.0.1:6379"})
		}
	})
}

// A -MOVED to a node that failed lately asks for a map load within a
// second, not 100 ms: a dead master's slots would else reload the map ten
// times a second.
func TestClusterMovedToFailedNode(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	fs, _ := h.stream("x-user=bob")
	h.replyError(h.take(decideFn), fmt.Sprintf("MOVED %d 10.0.0.2:6379", userSlot("bob")))
	h.reply(h.take(decideFn), 503, "") // node 1 is down
	if fs.Status != 503 {
		t.Fatalf("status %d", fs.Status)
	}
	h.tick(time.Second)
	h.reply(h.take("CLUSTER/NODES"), 200, webdisJSON("CLUSTER", bulk(nodesText("0-16383", "", ""))))
	_, st := h.stream("x-user=alice")
	h.replyError(h.take(decideFn), fmt.Sprintf("MOVED %d 10.0.0.2:6379", userSlot("alice")))
	st.OnDone() // node 1's breaker is open: not sent
	if h.has(decideFn) || h.Counters["ratelimit.circuit_breaker.skipped"] != 1 {
		t.Fatalf("queued %v, counters %v", h.http, h.Counters)
	}
	h.tick(500 * time.Millisecond)
	if h.has("CLUSTER/NODES") {
		t.Fatal("a move to a failed node reloaded the map within a second")
	}
	h.tick(600 * time.Millisecond)
	h.take("CLUSTER/NODES")
}

// The quota endpoint's reads follow -MOVED and wait out -TRYAGAIN.
func TestClusterQuotaRouted(t *testing.T) {
	conf := strings.Replace(nodesConf, `"failure_mode"`, `"quota_endpoint":{"path":"/v1/quota"},"failure_mode"`, 1)
	h := newClusterHost(t, conf, map[string]string{"webdis-0": server.Addr, "webdis-1": server.Addr, "webdis-2": server.Addr})
	h.loadMap(nodesText("0-16383", "", ""))
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	st.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/v1/quota"}, {":authority", "example.com"}, {"x-user", "alice"}})
	h.forward(h.take(decideFn))
	peek := algorithms.Library.Peek
	h.replyError(h.take(peek), fmt.Sprintf("MOVED %d 10.0.0.3:6379", userSlot("alice")))
	c := h.take(peek)
	if c.cluster != "webdis-2" {
		t.Fatalf("peek re-sent to %s", c.cluster)
	}
	h.replyError(c, "TRYAGAIN Multiple keys request during rehashing of slot")
	h.tick(10 * time.Millisecond)
	h.forward(h.take(peek))
	st.OnDone()
	if fs.Status != 200 || !strings.Contains(fs.Body, `"rule":"u"`) || h.Counters["ratelimit.redis.errors"] != 0 {
		t.Fatalf("status %d, body %s, counters %v", fs.Status, fs.Body, h.Counters)
	}
}

// A tick sends its retries before it fails the expired ones: a failure
// resumes or answers its stream, whose context the proxy then holds
// effective, and a retry sent after would belong to that stream.
func TestClusterRetriesBeforeFailures(t *testing.T) {
	h := newNodesHost(t)
	h.loadMap(nodesText("0-16383", "", ""))
	tryAgain := "TRYAGAIN Multiple keys request during rehashing of slot"
	a, sa := h.stream("x-user=alice")
	h.replyError(h.take(decideFn), tryAgain)
	h.Clock = h.Clock.Add(150 * time.Millisecond)
	_, sb := h.stream("x-user=bob")
	h.replyError(h.take(decideFn), tryAgain)
	sent := false
	h.onDispatch = func() {
		sent = true
		if a.Status != 0 {
			t.Error("a retry was sent after a failure answered its stream")
		}
	}
	h.tick(50 * time.Millisecond) // alice's deadline, not bob's
	if !sent || a.Status != 503 {
		t.Fatalf("sent %v, alice's status %d", sent, a.Status)
	}
	sa.OnDone()
	sb.OnDone()
}

// routedHost is a benchHost whose HTTP callouts get ids too.
type routedHost struct {
	benchHost
	clusters map[string]int
}

func (h *routedHost) DispatchHTTP(cluster string, _ [][2]string, _ []byte, _ time.Duration) (uint32, error) {
	h.id++
	h.clusters[cluster]++
	return h.id, nil
}

// A routed request (redis.nodes) allocates what a plain one does: its
// slot, node and breaker cost no allocation.
func TestRoutedRequestAllocs(t *testing.T) {
	conf := strings.Replace(allocConfig, `{"cluster":"redis","key_prefix":"x:"}`,
		`{"transport":"webdis","cluster_mode":true,"key_prefix":"x:","nodes":[{"address":"10.0.0.1:6379","cluster":"webdis-0"},{"address":"10.0.0.2:6379","cluster":"webdis-1"}]}`, 1)
	cfg, err := config.Parse([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	h := &routedHost{clusters: map[string]int{}}
	p := NewPlugin(cfg, h)
	var m clusterslot.Map
	if _, err := clusterslot.ParseNodes(&m, nodesText("", "0-16383"), p.router.addrs); err != nil {
		t.Fatal(err)
	}
	*p.router.slots = m
	s := &benchStream{}
	reply := []byte(`{"FCALL":[1700000000000000,-2,1,1000000,999999,-1,0,1,100000000,99999999,-1,0]}`)
	request := func() {
		st := p.NewStream(s)
		if st.OnRequestHeaderMap(allocHeaders) == Pause {
			p.OnHTTPReply(h.id, 200, reply)
		}
		st.OnResponseHeaders(true)
		st.OnDone()
	}
	if got := testing.AllocsPerRun(100, request); got > 2 {
		t.Errorf("routed: %.1f allocations per request, want at most 2", got)
	}
	if s.resumed != 101 || h.clusters["webdis-1"] != 101 || len(h.clusters) != 1 {
		t.Fatalf("%d resumed, callouts per cluster %v", s.resumed, h.clusters)
	}
}
