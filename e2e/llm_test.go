package e2e

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Costs known at the response (issue 12), end to end: the filter in the
// host in front of an upstream speaking OpenAI's and Anthropic's formats,
// through both modules, and natively.

// llmTarget sends one request through the filter to the LLM upstream.
type llmTarget interface {
	call(t *testing.T, path string, headers map[string]string) llmResult
	metric(name string) int64
}

type llmResult struct {
	status  int
	headers map[string]string
	body    string
	reset   bool // the response ended early: the connection dropped
}

func llmConfig(prefix, rules string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q,"timeout":"2s"},"rules":[%s]}`, prefix, rules)
}

// startLLM starts a target of the given kind in front of up.
func startLLM(t *testing.T, kind, config string, up *llmUpstream) llmTarget {
	t.Helper()
	if kind == "native" {
		return &nativeLLM{n: startNative(t, config, server.Addr).(*nativeTarget), up: up}
	}
	return &hostLLM{h: startBuild(t, kind, wasmhost.Config{Upstream: up.URL}, config, server.Addr).h}
}

type hostLLM struct{ h *wasmhost.Host }

// llmBody is the key of a call's headers that holds the request body,
// instead of the default `{"model":"m","messages":[]}`; the native target
// sends none.
const llmBody = ":body"

// llmInputTokens are the input tokens a usage rule reserves for the
// default body's 27 bytes (its content-length for the native target): 4
// bytes a token, rounded up.
const llmInputTokens = 7

func (w *hostLLM) call(t *testing.T, path string, headers map[string]string) llmResult {
	t.Helper()
	body, ok := headers[llmBody]
	if !ok {
		body = `{"model":"m","messages":[]}`
	}
	req, _ := http.NewRequest("POST", w.h.URL()+path, strings.NewReader(body))
	for k, v := range headers {
		if k != llmBody {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return llmResult{reset: true}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	r := llmResult{status: resp.StatusCode, headers: map[string]string{}, body: string(data), reset: err != nil}
	for k, v := range resp.Header {
		r.headers[strings.ToLower(k)] = v[0]
	}
	return r
}

func (w *hostLLM) metric(name string) int64 {
	v, _ := w.h.Metric(name)
	return v
}

// nativeLLM runs filter.Plugin directly: it fetches the upstream's
// response itself, then hands it to the stream chunk by chunk.
type nativeLLM struct {
	n  *nativeTarget
	up *llmUpstream
}

func (n *nativeLLM) call(t *testing.T, path string, headers map[string]string) llmResult {
	t.Helper()
	resp := n.fetch(t, path, headers)
	h := map[string]string{":path": path, ":method": "POST", "content-length": "27"} // the hosts' default body
	for k, v := range headers {
		h[k] = v
	}
	o := n.n.exchange(t, h, resp)
	r := llmResult{status: o.status, headers: o.headers, reset: o.status == 200 && resp.Reset, body: o.body}
	if o.status == 200 {
		fmt.Sscan(resp.Headers[":status"], &r.status)
	}
	return r
}

// fetch gets the upstream's response, in the chunks its reads return.
func (n *nativeLLM) fetch(t *testing.T, path string, headers map[string]string) *filtertest.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", n.up.URL+path, nil)
	for k, v := range headers {
		if k != llmBody {
			req.Header.Set(k, v)
		}
	}
	resp := &filtertest.Response{Headers: map[string]string{}}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	resp.Headers[":status"] = fmt.Sprint(res.StatusCode)
	for k, v := range res.Header {
		resp.Headers[strings.ToLower(k)] = v[0]
	}
	buf := make([]byte, 512) // small reads: several chunks per response
	for {
		k, err := res.Body.Read(buf)
		if k > 0 {
			resp.Chunks = append(resp.Chunks, string(buf[:k]))
		}
		if errors.Is(err, io.EOF) {
			return resp
		}
		if err != nil {
			resp.Reset = true
			return resp
		}
	}
}

// openStream is a native stream driven step by step, so that many can be
// admitted before any response starts.
type openStream struct {
	n        *nativeTarget
	s        *filtertest.Stream
	st       *filter.Stream
	admitted bool
}

func newOpenStream(n *nativeTarget, pairs [][2]string) *openStream {
	o := &openStream{n: n, s: filtertest.NewStream("127.0.0.1:40000", nil)}
	o.st = n.plugin.NewStream(o.s)
	paused := o.st.OnRequestHeaders(pairs) == filter.Pause
	if paused && o.s.Status == 0 {
		n.Pump()
	}
	o.admitted = o.s.Status == 0 && (!paused || o.s.Resumed == 1)
	return o
}

func (o *openStream) respond(resp *filtertest.Response) {
	o.s.Upstream = resp.Headers
	o.st.OnResponseHeaders(len(resp.Chunks) == 0)
	for i, c := range resp.Chunks {
		o.st.OnResponseBody([]byte(c), i == len(resp.Chunks)-1 && !resp.Reset)
	}
	o.done()
}

func (o *openStream) done() {
	o.st.OnDone()
	o.n.Pump()
}

func (n *nativeLLM) metric(name string) int64 { return n.n.metric(name) }

// Tokens per minute, reserving only the request's input tokens (7) and
// charged at the response: requests pass while anything is left, the last
// one may overdraw, and the next is denied. Each API, as JSON and as SSE.
func TestLLMTokensPerMinute(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			prefix := redistest.Prefix(t)
			var rules []string
			for _, api := range []string{"openai_chat", "openai_responses", "anthropic"} {
				rules = append(rules, fmt.Sprintf(`{"name":"tpm_%s","match":{"path":%q},"key":[{"source":"header","name":"x-api-key"}],`+
					`"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}],"response_cost":{"usage":%q}}`, api, llmPath(api), api))
			}
			tg := startLLM(t, kind, llmConfig(prefix, strings.Join(rules, ",")), up)
			for _, api := range []string{"openai_chat", "openai_responses", "anthropic"} {
				for _, stream := range []string{"0", "1"} {
					key := api + "-stream" + stream
					charged := fmt.Sprintf("ratelimit.rule.tpm_%s.units_charged", api)
					before := tg.metric(charged)
					for i := 1; i <= 4; i++ {
						r := tg.call(t, llmPath(api), map[string]string{"x-api-key": key, "x-usage-in": "100", "x-usage-out": "200", "x-stream": stream})
						if r.status != 200 || r.reset {
							t.Fatalf("%s request %d: status %d (reset %t), want 200", key, i, r.status, r.reset)
						}
						waitMetric(t, tg, charged, before+int64((300-llmInputTokens)*i))
					}
					r := tg.call(t, llmPath(api), map[string]string{"x-api-key": key, "x-usage-in": "1", "x-usage-out": "1", "x-stream": stream})
					if r.status != 429 || r.headers["retry-after"] == "" {
						t.Fatalf("%s: the fifth request, after 1200 of 1000 tokens: status %d, retry-after %q; want 429 with retry-after", key, r.status, r.headers["retry-after"])
					}
				}
				if got := tg.metric(fmt.Sprintf("ratelimit.rule.tpm_%s.units_overdrawn", api)); got != 2*200 {
					t.Errorf("%s: units_overdrawn %d, want 400 (200 beyond the limit per key)", api, got)
				}
			}
		})
	}
}

func llmPath(api string) string {
	return map[string]string{"openai_chat": "/v1/chat/completions", "openai_responses": "/v1/responses", "anthropic": "/v1/messages"}[api]
}

// waitMetric waits until a counter reaches want: a settle is sent as the
// response ends, and its reply may come after the client has the response.
func waitMetric(t *testing.T, tg llmTarget, name string, want int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s to reach %d (now %d)", name, want, tg.metric(name)), func() bool { return tg.metric(name) >= want })
	if got := tg.metric(name); got != want {
		t.Fatalf("%s = %d, want %d", name, got, want)
	}
}

// A reservation larger than the real cost is refunded at the response; the
// RateLimit header of the next response shows what is left after its own
// reservation.
func TestLLMReservationRefund(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), `{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],`+
				`"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}],`+
				`"response_cost":{"usage":"openai_chat","reserve":{"header":"x-max-tokens","default":500}}}`), up)
			r := tg.call(t, "/v1/chat/completions", map[string]string{"x-api-key": "k", "x-usage-in": "40", "x-usage-out": "60", "x-stream": "1"})
			if r.status != 200 || !strings.Contains(r.headers["ratelimit"], "r=493;") {
				t.Fatalf("first: status %d, ratelimit %q; want 200 with r=493 (1000 - the reservation of 500 + 7 input tokens)", r.status, r.headers["ratelimit"])
			}
			waitMetric(t, tg, "ratelimit.rule.tpm.units_refunded", 407)
			r = tg.call(t, "/v1/chat/completions", map[string]string{"x-api-key": "k", "x-max-tokens": "300", "x-usage-in": "107", "x-usage-out": "200"})
			if r.status != 200 || !strings.Contains(r.headers["ratelimit"], "r=593;") {
				t.Fatalf("second: status %d, ratelimit %q; want 200 with r=593 (1000 - 100 used - 307 reserved)", r.status, r.headers["ratelimit"])
			}
			if got := tg.metric("ratelimit.rule.tpm.units_charged"); got != 0 {
				t.Errorf("units_charged %d: a cost equal to its reservation sends no settle", got)
			}
		})
	}
}

// A stream reset mid-way charges what on_reset says: here a default of 200
// against a reservation of 507 (500 and 7 input tokens), so 307 come back.
func TestLLMResetMidStream(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), `{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],`+
				`"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}],`+
				`"response_cost":{"usage":"anthropic","reserve":500,"on_reset":"default","default":200}}`), up)
			r := tg.call(t, "/v1/messages", map[string]string{"x-api-key": "k", "x-usage-in": "10", "x-usage-out": "20", "x-stream": "1", "x-reset": "1"})
			if !r.reset {
				t.Fatalf("the client got a whole response (status %d): the upstream reset did not reach it", r.status)
			}
			waitMetric(t, tg, "ratelimit.rule.tpm.stream_reset", 1)
			waitMetric(t, tg, "ratelimit.rule.tpm.units_refunded", 307)
			r = tg.call(t, "/v1/messages", map[string]string{"x-api-key": "k", "x-usage-in": "250", "x-usage-out": "250"})
			if r.status != 200 || !strings.Contains(r.headers["ratelimit"], "r=293;") {
				t.Fatalf("after the reset: status %d, ratelimit %q; want r=293 (1000 - 200 charged - 507 reserved)", r.status, r.headers["ratelimit"])
			}
			if got := tg.metric("ratelimit.rule.tpm.usage_missing"); got != 0 {
				t.Errorf("usage_missing %d, want 0", got)
			}
		})
	}
}

// A status-only rule counts failed logins: 401s are charged, 200s are not,
// and after three failures the key is denied.
func TestLLMStatusOnlyFailedLogins(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), `{"name":"logins","match":{"path":"/login"},"key":[{"source":"header","name":"x-user"}],`+
				`"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}],"response_cost":{"statuses":[401,403]}}`), up)
			login := func(status string) llmResult {
				return tg.call(t, "/login", map[string]string{"x-user": "alice", "x-status": status})
			}
			for i := 1; i <= 3; i++ {
				if r := login("200"); r.status != 200 {
					t.Fatalf("good login %d: %d", i, r.status)
				}
				if r := login("401"); r.status != 401 {
					t.Fatalf("failed login %d: %d, want 401 from the upstream", i, r.status)
				}
				waitMetric(t, tg, "ratelimit.rule.logins.units_charged", int64(i))
			}
			if r := login("200"); r.status != 429 {
				t.Fatalf("after three failed logins: %d, want 429", r.status)
			}
		})
	}
}

// A reservation bounds the overshoot of concurrent streams; reserving the
// input tokens alone does not. 32 streams, each reserving 100 of 1000
// tokens per minute (93 output, 7 input) and using 150: with the
// reservation 10 are admitted and the overshoot is 10 × (150 - 100) =
// 500; reserving 7 input tokens, all 32 are admitted, and the overshoot
// is 32 × 150 - 1000 = 3800.
func TestLLMReservationBoundsConcurrentOvershoot(t *testing.T) {
	const streams, limit, reserve, used = 32, 1000, 100, 150
	for _, kind := range kinds {
		for _, reserved := range []bool{true, false} {
			name := kind + "/check_only"
			if reserved {
				name = kind + "/reserve"
			}
			t.Run(name, func(t *testing.T) {
				up := newLLMUpstream(t)
				rc := `{"usage":"openai_chat"}`
				if reserved {
					rc = fmt.Sprintf(`{"usage":"openai_chat","reserve":{"header":"x-max-tokens","default":%d}}`, reserve-llmInputTokens)
				}
				config := llmConfig(redistest.Prefix(t), fmt.Sprintf(`{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],`+
					`"limits":[{"algorithm":"sliding_log","limit":%d,"window":"1m"}],"response_cost":%s}`, limit, rc))
				headers := map[string]string{"x-api-key": "k", "x-max-tokens": fmt.Sprint(reserve - llmInputTokens), "x-usage-in": "50",
					"x-usage-out": fmt.Sprint(used - 50), "x-stream": "1", "x-hold": "all"}
				var admitted int
				if kind == "native" {
					admitted = concurrentNative(t, config, up, headers, streams)
				} else {
					admitted = concurrentHost(t, startLLM(t, kind, config, up), up, headers, streams)
				}
				tg := lastLLM
				wantAdmitted, wantOver := limit/reserve, limit/reserve*(used-reserve)
				if !reserved {
					wantAdmitted, wantOver = streams, streams*used-limit
				}
				if admitted != wantAdmitted {
					t.Fatalf("%d of %d streams admitted, want %d", admitted, streams, wantAdmitted)
				}
				charged := int64(admitted) * (used - llmInputTokens)
				if reserved {
					charged = int64(admitted) * (used - reserve)
				}
				waitMetric(t, tg, "ratelimit.rule.tpm.units_charged", charged)
				if got := tg.metric("ratelimit.rule.tpm.units_overdrawn"); got != int64(wantOver) {
					t.Fatalf("overshoot %d tokens, want %d", got, wantOver)
				}
				t.Logf("%s: %d admitted, overshoot %d tokens beyond %d", name, admitted, wantOver, limit)
			})
		}
	}
}

// lastLLM is the target the last concurrent run used, for its metrics.
var lastLLM llmTarget

// concurrentHost sends n requests at once; the admitted ones hold their
// stream open until all n are decided, then finish together.
func concurrentHost(t *testing.T, tg llmTarget, up *llmUpstream, headers map[string]string, n int) int {
	lastLLM = tg
	results := make(chan llmResult, n)
	for range n {
		go func() { results <- tg.call(t, "/v1/chat/completions", headers) }()
	}
	admitted, denied := 0, 0
	for admitted+denied < n {
		select {
		case <-up.started:
			admitted++
		case r := <-results:
			if r.status != 429 {
				t.Errorf("a request finished before the release: status %d", r.status)
			}
			denied++
		}
	}
	up.release("all")
	for range admitted {
		if r := <-results; r.status != 200 || r.reset {
			t.Errorf("an admitted stream ended with %d (reset %t)", r.status, r.reset)
		}
	}
	return admitted
}

// concurrentNative admits n streams before any response starts, then
// answers each admitted one.
func concurrentNative(t *testing.T, config string, up *llmUpstream, headers map[string]string, n int) int {
	native := startLLM(t, "native", config, up).(*nativeLLM)
	lastLLM = native
	h := maps.Clone(headers)
	delete(h, "x-hold")
	// The upstream's answer, fetched once; each admitted stream gets it.
	resp := native.fetch(t, "/v1/chat/completions", h)
	pairs := [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"}, {"content-length", "27"}} // the hosts' default body
	for k, v := range h {
		pairs = append(pairs, [2]string{k, v})
	}
	var open []*openStream
	for range n {
		o := newOpenStream(native.n, pairs)
		if o.admitted {
			open = append(open, o)
		} else {
			o.done()
		}
	}
	for _, o := range open {
		o.respond(resp)
	}
	return len(open)
}

// A reservation read from the request body (max_tokens). The host holds
// the body behind paused headers, as Envoy does without
// allow_on_headers_stop_iteration, so the filter decides after bodyWait
// with the estimate's default, and the request is never left paused.
func TestLLMReserveFromBodyWithoutBodyDelivery(t *testing.T) {
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			up := newLLMUpstream(t)
			tg := startLLM(t, kind, llmConfig(redistest.Prefix(t), `{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],`+
				`"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}],`+
				`"response_cost":{"usage":"openai_responses","reserve":{"body":"max_tokens","default":100}}}`), up)
			r := tg.call(t, "/v1/responses", map[string]string{"x-api-key": "k", "x-usage-in": "100", "x-usage-out": "0"})
			if r.status != 200 || !strings.Contains(r.headers["ratelimit"], "r=893;") {
				t.Fatalf("status %d, ratelimit %q; want 200 with r=893 (the default estimate of 100, and the 27 bytes' 7 input tokens)", r.status, r.headers["ratelimit"])
			}
		})
	}
}
