package v8

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// config limits each x-user to 1 request per window, with keys under
// prefix, reaching Redis through redis (the "redis" object's fields).
func config(redis, prefix, window string) string {
	return fmt.Sprintf(`{"redis":{%s,"timeout":"5s","key_prefix":%q},
		"rules":[{"name":"v8","key":[{"source":"header","name":"x-user"}],
		"limits":[{"algorithm":"sliding_log","limit":1,"window":%q}]}]}`, redis, prefix, window)
}

// module is one build with the proxy it is made for.
type module struct {
	name  string
	setup func(t *testing.T, s *spec, redisAddr, prefix, window string)
}

var modules = []module{
	// Higress's Envoy: Redis callout ABI, raw RESP to the real redis-server.
	{"higress", func(t *testing.T, s *spec, redisAddr, prefix, window string) {
		s.Wasm, s.RedisABI = higressWasm, true
		s.RedisClusters = map[string]string{"redis": redisAddr}
		s.PluginConfig = config(`"cluster":"redis"`, prefix, window)
	}},
	// Stock Envoy: HTTP callouts to a real Webdis in front of it.
	{"stock", func(t *testing.T, s *spec, redisAddr, prefix, window string) {
		s.Wasm = stockWasm
		s.HTTPClusters = map[string]string{"webdis": redistest.StartWebdis(t, redisAddr)}
		s.PluginConfig = config(fmt.Sprintf(`"transport":"webdis","cluster":"webdis","username":%q,"password":%q`,
			redistest.WebdisUser, redistest.WebdisPassword), prefix, window)
	}},
}

func get(user string, extra ...[2]string) request {
	return request{Headers: append([][2]string{{":method", "GET"}, {":path", "/api"},
		{":authority", "example.com"}, {":scheme", "http"}, {"x-user", user}}, extra...)}
}

// In V8, each build starts its plugin, lets the first request of a user
// through with the rate-limit headers, and answers the second with 429
// from the decision a real Redis returned.
func TestV8AllowThenDeny(t *testing.T) {
	for _, m := range modules {
		t.Run(m.name, func(t *testing.T) {
			srv := redistest.Start(t)
			prefix := redistest.Prefix(t)
			var s spec
			m.setup(t, &s, srv.Addr, prefix, "1m")
			s.Requests = []request{get("alice"), get("alice")}
			began := time.Now()
			r := runHost(t, s)
			spent := time.Since(began) // bounds the time between the two decisions
			mustSucceed(t, r)
			t.Logf("V8 %s: compile %.0f ms, _initialize to proxy_on_configure %.0f ms, 2 requests %.0f ms",
				r.start.V8, r.start.CompileMs, r.start.StartMs, r.end.RequestsMs)
			if len(r.responses) != 2 {
				t.Fatalf("%d responses, want 2", len(r.responses))
			}
			first, second := r.responses[0], r.responses[1]
			if first.Status != 200 || first.Local || first.header("ratelimit") != `"v8";r=0;t=60` {
				t.Errorf("first request: status %d, local reply %v, headers %v; want it resumed with RateLimit: \"v8\";r=0;t=60",
					first.Status, first.Local, first.Headers)
			}
			// Retry-After is 60 when the second decision comes within a
			// second of the first; a whole second later, 59; and so on.
			if second.Status != 429 || !second.Local || !secondsWithin(second.header("retry-after"), 60, spent) {
				t.Errorf("second request: status %d, local reply %v, headers %v; want a local 429 with Retry-After: 60 (less a second per second of the %v the run took)",
					second.Status, second.Local, second.Headers, spent)
			}
			// Each request's decision is in its filter state, for an
			// access log.
			if first.Decision != "rule=v8 limit=v8 remaining=0 decision=allowed" ||
				second.Decision != "rule=v8 limit=v8 remaining=0 decision=denied reason=rate_limited" {
				t.Errorf("filter state wasm.ratelimit.decision: %q, then %q", first.Decision, second.Decision)
			}
			// The decision was Redis's: the sliding log holds the one
			// admitted request.
			if n, err := srv.Do("ZCARD", prefix+"{v8|alice}:0"); err != nil || n != int64(1) {
				t.Errorf("ZCARD of alice's log = %v (%v), want 1", n, err)
			}
		})
	}
}

// Several hundred requests through one VM in V8, eight at a time, with
// 32 KiB of cookie each so that the Go GC runs (GODEBUG=gctrace=1 counts
// its cycles): no runtime throw although poll_oneoff answers ENOSYS, and
// every decision is right.
func TestV8ManyRequestsGC(t *testing.T) {
	const requests, users = 500, 100
	cookie := [2]string{"cookie", "session=" + strings.Repeat("c", 32<<10)}
	for _, m := range modules {
		t.Run(m.name, func(t *testing.T) {
			srv := redistest.Start(t)
			var s spec
			m.setup(t, &s, srv.Addr, redistest.Prefix(t), "1h")
			s.Env = map[string]string{"GODEBUG": "gctrace=1"}
			s.Concurrency = 8
			for i := range requests {
				s.Requests = append(s.Requests, get(fmt.Sprintf("u%d", i%users), cookie))
			}
			r := runHost(t, s)
			mustSucceed(t, r)
			statuses := map[int]int{}
			for _, e := range r.responses {
				statuses[e.Status]++
			}
			if statuses[200] != users || statuses[429] != requests-users {
				t.Errorf("statuses %v; want %d × 200 and %d × 429", statuses, users, requests-users)
			}
			if r.end.GCCycles < 1 {
				t.Errorf("the Go GC never completed a cycle in %d requests; the test shows nothing", requests)
			}
			t.Logf("%d requests in %.0f ms of wall clock, 8 in flight; %d GC cycles; %d poll_oneoff calls; linear memory %d MiB",
				requests, r.end.RequestsMs, r.end.GCCycles, r.end.PollOneoffCalls, r.end.MemoryBytes>>20)
		})
	}
}

// In V8, each build follows a streamed response and settles its cost:
// the request reserves 500 tokens, the server-sent events (cut mid-event
// across chunks) end with usage of 40 + 60 tokens, and one settle call
// refunds 400, which Redis's log and the filter's metric show. The stock
// build sends its settle from the root context through a shared queue.
func TestV8ResponseCost(t *testing.T) {
	event := func(data string) string { return "data: " + data + "\n\n" }
	body := event(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}`) +
		event(`{"choices":[{"index":0,"delta":{"content":"Hello"}}],"usage":null}`) +
		event(`{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":60,"total_tokens":100}}`) + event("[DONE]")
	third := len(body) / 3
	sse := &response{Headers: [][2]string{{":status", "200"}, {"content-type", "text/event-stream; charset=utf-8"}},
		Chunks: []string{body[:third], body[third : 2*third], body[2*third:]}}
	for _, m := range modules {
		t.Run(m.name, func(t *testing.T) {
			srv := redistest.Start(t)
			prefix := redistest.Prefix(t)
			var s spec
			m.setup(t, &s, srv.Addr, prefix, "1m")
			s.PluginConfig = strings.Replace(s.PluginConfig, `"limit":1,`, `"limit":1000,`, 1)
			s.PluginConfig = strings.Replace(s.PluginConfig, `}]}]}`, `}],"response_cost":{"usage":"openai_chat","reserve":500}}]}`, 1)
			req := get("alice")
			req.Response = sse
			s.Requests = []request{req}
			r := runHost(t, s)
			mustSucceed(t, r)
			if len(r.responses) != 1 || r.responses[0].Status != 200 || r.responses[0].header("ratelimit") != `"v8";r=500;t=60` {
				t.Fatalf("responses %+v; want one 200 with RateLimit: \"v8\";r=500;t=60 (1000 less the reservation)", r.responses)
			}
			if got := r.end.Metrics["ratelimit.rule.v8.units_refunded"]; got != 400 {
				t.Errorf("units_refunded = %v, want 400 (500 reserved, 100 used); metrics %v", got, r.end.Metrics)
			}
			// The log holds the request's entry, now of weight 100, and the
			// total: 100.
			if total, err := srv.Do("ZSCORE", prefix+"{v8|alice}:0", "s"); err != nil || total != "-100" {
				t.Errorf("ZSCORE of the log's total = %v (%v), want -100", total, err)
			}
		})
	}
}

// The checks can fail: a Go module that sleeps makes the runtime wait in
// poll_oneoff, which answers ENOSYS as in Envoy up to 1.38, and the
// runtime throws.
func TestV8CatchesRuntimeThrow(t *testing.T) {
	r := runHost(t, spec{Wasm: sleeperWasm, Requests: []request{get("a"), get("a"), get("a")}})
	failedWith(t, r, "fatal error: poll_oneoff failed")
	if throws := runtimeThrows(r.stderr); len(throws) == 0 {
		t.Fatalf("runtimeThrows found nothing in:\n%s", tail(r.stderr, 40))
	}
}

// The checks can fail: the Higress build needs proxy_redis_init, which
// upstream Envoy lacks, so offered as upstream Envoy does it fails to load.
func TestV8MissingImport(t *testing.T) {
	r := runHost(t, spec{Wasm: higressWasm, PluginConfig: config(`"cluster":"redis"`, "x:", "1m")})
	failedWith(t, r, "Failed to load Wasm module due to a missing import: env.proxy_redis_init")
}

// secondsWithin reports whether header holds whole seconds counting down
// from full: full when read less than a second after the count began, at
// least full less the whole seconds of spent (which bounds the time since).
func secondsWithin(header string, full int, spent time.Duration) bool {
	n, err := strconv.Atoi(header)
	return err == nil && n <= full && n >= full-int(spent/time.Second)
}
