package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

const twoSlots = `{"redis":{"cluster":"redis"},"headers":"both","rules":[{"name":"slots",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"concurrency","limit":2,"max_duration":"5m"}]}]}`

// openStream is a request whose stream stays open until the test ends it.
type openStream struct {
	h  *fakeHost
	fs *fakeStream
	st *Stream
}

// open sends a request's headers and pumps its calls.
func (h *fakeHost) open(headers ...string) *openStream {
	h.t.Helper()
	pairs := [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = setPair(pairs, k, v)
	}
	o := &openStream{h: h, fs: filtertest.NewStream("192.0.2.7:40000", h.props)}
	o.st = h.plugin.NewStream(o.fs)
	if o.st.OnRequestHeaders(pairs) == Pause && o.fs.Status == 0 {
		h.Pump()
	}
	return o
}

func (o *openStream) admitted() bool { return o.fs.Status == 0 }

// respond passes a whole response, then ends the stream.
func (o *openStream) respond() {
	o.fs.Upstream = map[string]string{":status": "200"}
	o.st.OnResponseHeaders(false)
	o.st.OnResponseBody([]byte("ok"), true)
	o.end()
}

// end ends the stream as it is, and pumps what its end sent.
func (o *openStream) end() {
	o.st.OnDone()
	o.h.Pump()
}

// inFlight is the number of slots a key holds in Redis.
func (h *fakeHost) inFlight(key string) int64 {
	h.t.Helper()
	n, err := server.Do("ZCARD", h.plugin.cfg.Redis.Prefix+key)
	if err != nil {
		h.t.Fatal(err)
	}
	return n.(int64)
}

// Two slots: two open requests hold them, the third is denied, and each
// way a stream ends frees its slot, which the next request takes: a
// concurrency denial is never cached.
func TestConcurrencyHeldUntilStreamEnds(t *testing.T) {
	h := newFakeHost(t, twoSlots)
	a, b := h.open("x-user=alice"), h.open("x-user=alice")
	if !a.admitted() || !b.admitted() || h.inFlight("{slots|alice}:0") != 2 {
		t.Fatalf("two requests: %+v %+v, %d slots", a.fs, b.fs, h.inFlight("{slots|alice}:0"))
	}
	c := h.open("x-user=alice")
	retry := c.fs.Headers["retry-after"]
	if c.admitted() || c.fs.Status != 429 || c.fs.Headers["ratelimit-policy"] != `"slots";q=2;qu="concurrent-requests"` ||
		c.fs.Headers["ratelimit"] != `"slots";r=0;t=`+retry || retry != "300" {
		t.Fatalf("third: %+v", c.fs)
	}
	c.end()
	a.fs.Upstream = map[string]string{":status": "200"}
	a.st.OnResponseHeaders(false)
	if !a.st.Watching() || a.fs.Response["ratelimit"] != `"slots";r=1;t=300` {
		t.Fatalf("a stream holding a slot is followed to its end: watching %t, headers %v", a.st.Watching(), a.fs.Response)
	}
	a.st.OnResponseBody([]byte("done"), true)
	h.Pump()
	if a.st.Watching() || h.inFlight("{slots|alice}:0") != 1 {
		t.Fatalf("after the response's end: watching %t, %d slots", a.st.Watching(), h.inFlight("{slots|alice}:0"))
	}
	a.end()
	calls := h.Calls
	d := h.open("x-user=alice")
	if !d.admitted() || h.Calls == calls {
		t.Fatalf("after a release: %+v, %d calls (the denial must not be cached)", d.fs, h.Calls-calls)
	}
	b.end() // reset: no response at all
	d.respond()
	if n := h.inFlight("{slots|alice}:0"); n != 0 {
		t.Fatalf("%d slots left once every stream ended", n)
	}
	if h.plugin.Pending() != 0 || h.plugin.LiveStreams() != 0 || h.Counters["ratelimit.settle.errors"] != 0 ||
		h.Counters["ratelimit.rule.slots.allowed"] != 3 || h.Counters["ratelimit.rule.slots.denied"] != 1 {
		t.Fatalf("pending %d, live %d, metrics %v", h.plugin.Pending(), h.plugin.LiveStreams(), h.Counters)
	}
}

// A slot taken by a call whose request another call denied is released:
// in cluster mode each rule has its call, and a shadow rule always does.
func TestConcurrencyReleasedWhenAnotherCallDenies(t *testing.T) {
	for _, tc := range []struct{ name, config string }{
		{"cluster mode", `{"redis":{"cluster":"redis","cluster_mode":true},"rules":[
			{"name":"slots","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"concurrency","limit":5,"max_duration":"1m"}]},
			{"name":"once","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]}`},
		{"shadow", `{"redis":{"cluster":"redis"},"rules":[
			{"name":"slots","shadow":true,"key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"concurrency","limit":5,"max_duration":"1m"}]},
			{"name":"once","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, tc.config)
			first := h.open()
			second := h.open()
			if !first.admitted() || second.fs.Status != 429 {
				t.Fatalf("first %+v, second %+v", first.fs, second.fs)
			}
			second.end()
			if n := h.inFlight("{slots|all}:0"); n != 1 {
				t.Fatalf("%d slots held once the denied request ended, want the first's alone", n)
			}
			first.respond()
			if n := h.inFlight("{slots|all}:0"); n != 0 {
				t.Fatalf("%d slots held at the end", n)
			}
		})
	}
}

// A request the failure mode admits acquired nothing, and releases
// nothing.
func TestConcurrencyFailureModeReleasesNothing(t *testing.T) {
	h := newFakeHost(t, twoSlots)
	h.Down = true
	o := h.open("x-user=alice")
	if !o.admitted() || h.Counters["ratelimit.failure_mode.allowed"] != 1 {
		t.Fatalf("Redis down: %+v, %v", o.fs, h.Counters)
	}
	h.Down = false
	calls := h.Calls
	o.respond()
	if h.Calls != calls {
		t.Fatalf("%d calls sent at the end of a request admitted by the failure mode", h.Calls-calls)
	}
}

// A stream that ends while its call is out (the client gone during the
// decision) releases what the call acquired when its reply comes; and
// when no reply ever comes (through Webdis the SDK drops it), the sweep
// releases blind.
func TestConcurrencyStreamEndsWhileDeciding(t *testing.T) {
	h := newFakeHost(t, twoSlots)
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	if st.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/"}, {"x-user", "alice"}}) != Pause {
		t.Fatal("not paused")
	}
	st.OnDone()
	h.Pump() // the decision, which acquires; then the release it sends
	if n := h.inFlight("{slots|alice}:0"); n != 0 || fs.Resumed != 0 || h.plugin.Pending() != 0 {
		t.Fatalf("%d slots, resumed %d, pending %d", n, fs.Resumed, h.plugin.Pending())
	}

	fs = filtertest.NewStream("192.0.2.7:40000", nil)
	st = h.plugin.NewStream(fs)
	st.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/"}, {"x-user", "bob"}})
	st.OnDone()
	lost := h.Queue[0]
	h.Queue = nil
	conn, err := redistest.Dial(server.Addr) // Redis runs it; its reply is lost
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.RoundTrip(lost.Cmd); err != nil {
		t.Fatal(err)
	}
	if n := h.inFlight("{slots|bob}:0"); n != 1 {
		t.Fatalf("%d slots before the sweep", n)
	}
	h.Clock = time.Now().Add(h.plugin.cfg.Redis.Timeout + 2*time.Second)
	h.plugin.OnTick()
	h.Pump()
	if n := h.inFlight("{slots|bob}:0"); n != 0 || h.plugin.Pending() != 0 {
		t.Fatalf("after the sweep: %d slots, %d pending", n, h.plugin.Pending())
	}
}

// A release that fails is counted, and its slot expires after
// max_duration; a release that finds its slot gone is counted too.
func TestConcurrencyReleaseMetrics(t *testing.T) {
	h := newFakeHost(t, twoSlots)
	o := h.open("x-user=alice")
	h.Down = true
	o.respond()
	if h.Counters["ratelimit.rule.slots.releases_failed"] != 1 || h.Counters["ratelimit.settle.errors"] != 1 {
		t.Fatalf("a failed release: %v", h.Counters)
	}
	h.Down = false
	o = h.open("x-user=alice")
	if _, err := server.Do("DEL", h.plugin.cfg.Redis.Prefix+"{slots|alice}:0"); err != nil { // Redis lost it
		t.Fatal(err)
	}
	o.respond()
	if h.Counters["ratelimit.rule.slots.slots_expired"] != 1 {
		t.Fatalf("a release of a slot gone: %v", h.Counters)
	}
}

// A concurrency limit beside a rate limit, in tiers from Redis with
// overrides: whatever picks the limits, the slot is the request's one
// slot, whatever its cost, and is released at its end.
func TestConcurrencyInTiers(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"plans","key":[{"source":"header","name":"x-user"}],
		"tiers":{"from":"redis","default":"free","limits":{
			"free":[{"algorithm":"concurrency","limit":1,"max_duration":"1m"}],
			"pro":[{"algorithm":"concurrency","limit":3,"max_duration":"1m"},{"algorithm":"sliding_log","limit":100,"window":"1m"}]}},
		"overrides":true,"cost":{"header":"x-cost","default":1}}]}`)
	cfg := h.plugin.cfg
	base, _ := keyspace.RuleKey(cfg, &cfg.Rules[0], []string{"alice"})
	a := h.open("x-user=alice", "x-cost=7")
	if b := h.open("x-user=alice"); !a.admitted() || b.admitted() {
		t.Fatalf("free, one slot: %+v %+v", a.fs, b.fs)
	}
	if _, err := server.Do("SET", keyspace.TierKey(base), "pro"); err != nil {
		t.Fatal(err)
	}
	b := h.open("x-user=alice", "x-cost=7")
	if !b.admitted() || h.inFlight("{plans|alice}:0") != 2 {
		t.Fatalf("pro: %+v, %d slots", b.fs, h.inFlight("{plans|alice}:0"))
	}
	over, err := config.ParseOverride(&cfg.Rules[0], []byte(`[{"algorithm":"concurrency","limit":2,"max_duration":"1m"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Do("SET", keyspace.OverrideKey(base), over); err != nil {
		t.Fatal(err)
	}
	if c := h.open("x-user=alice"); c.admitted() {
		t.Fatalf("the override's two slots are taken: %+v", c.fs)
	}
	pk, err := keyspace.NewPeek(cfg, &cfg.Rules[0], base, "")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := runPeek(t, pk)
	if err != nil || !ks.Override || len(ks.Limits) != 1 || ks.Limits[0].Used != 2 || ks.Limits[0].Remaining != 0 ||
		ks.Limits[0].Algorithm != "concurrency" || ks.Limits[0].RetryAfter <= 0 || ks.Limits[0].Window != 0 {
		t.Fatalf("peek: %+v, %v", ks, err)
	}
	a.respond()
	b.end()
	if n := h.inFlight("{plans|alice}:0"); n != 0 {
		t.Fatalf("%d slots once both ended", n)
	}
}
