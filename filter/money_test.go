package filter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// teamSpend is docs/ai-budgets.md's team-spend rule, a sliding log of
// limit micro-dollars an hour: refuse, x-model, gpt-4o and o3-mini.
func teamSpend(limit int) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis"},"rules":[{"name":"team","key":[{"source":"header","name":"x-team"}],"on_missing_key":"deny",
		"limits":[{"algorithm":"sliding_log","limit":%d,"window":"1h"}],
		"response_cost":{"usage":"openai_chat","reserve":{"header":"x-max-tokens","default":1000},
		"price":{"unit":"micro_usd","default":"refuse","model_header":"x-model","models":{
			"gpt-4o":{"input":"2.50","output":"10"},"o3-mini":{"input":"1.10","output":"4.40"}}}}}]}`, limit)
}

// llmCall is one request to an LLM route and the upstream's answer.
type llmCall struct {
	headers []string // name=value
	body    string
	resp    string // the response body; "" answers no body
	sse     bool   // the response is an event stream
	enc     string // the response's content-encoding
	reset   bool   // the stream ends before the response does
}

// llmResult is what the client saw, and what the rule's key holds after.
type llmResult struct {
	status    int
	body      string
	ratelimit string
	fs        *filtertest.Stream
	waited    bool // the decision waited for the body
}

// llm runs c through the filter as a proxy would: the headers, the body,
// the calls, the response and the settle.
func (h *fakeHost) llm(c llmCall) llmResult {
	h.t.Helper()
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	pairs := [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"}}
	for _, kv := range c.headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = append(pairs, [2]string{k, v})
	}
	st.SetBodyFollows(c.body != "")
	st.OnRequestHeaders(pairs)
	waited := st.WantsRequestBody()
	if waited {
		st.OnRequestBody([]byte(c.body))
	}
	h.Pump()
	r := llmResult{status: fs.Status, body: fs.Body, fs: fs, waited: waited}
	if fs.Status != 0 {
		st.OnDone()
		h.Pump()
		return r
	}
	r.status = 200
	ct := "application/json"
	if c.sse {
		ct = "text/event-stream"
	}
	fs.Upstream = map[string]string{":status": "200", "content-type": ct, "content-encoding": c.enc}
	st.OnResponseHeaders(c.resp == "" && !c.reset)
	r.ratelimit = fs.Response["ratelimit"]
	if c.resp != "" {
		st.OnResponseBody([]byte(c.resp), !c.reset)
	}
	st.OnDone()
	h.Pump()
	return r
}

// chatJSON is an OpenAI chat completion naming model, with its usage.
func chatJSON(model string, in, out int) string {
	return fmt.Sprintf(`{"object":"chat.completion","model":%q,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		model, in, out, in+out)
}

// The attack: x-model names o3-mini while the body asks for a
// model the table does not list. Under refuse, the request is refused,
// whichever of the two names the unlisted model. On b8f0dfd only the
// header was read: 200.
func TestPriceRefusesEveryModelTheRequestNames(t *testing.T) {
	h := newFakeHost(t, teamSpend(1_000_000))
	for i, c := range []struct{ header, body string }{
		{"o3-mini", "gpt-5"},
		{"gpt-5", "o3-mini"},
		{"", "gpt-5"},
	} {
		headers := []string{"x-team=a"}
		if c.header != "" {
			headers = append(headers, "x-model="+c.header)
		}
		r := h.llm(llmCall{headers: headers, body: `{"model":"` + c.body + `","max_tokens":10}`, resp: chatJSON(c.body, 10, 10)})
		if r.status != 400 || r.body != `{"error":"unknown_model","rule":"team","model":"gpt-5"}`+"\n" {
			t.Errorf("case %d (header %q, body %q): %d %s; want 400 unknown_model gpt-5", i, c.header, c.body, r.status, r.body)
		}
	}
	if got := h.logCount("{team|a}:0"); got != 0 {
		t.Errorf("refused requests charged %d", got)
	}
}

// When the header, the body and the response name different listed
// models, the reservation and the charge take, per kind, the dearest of
// their prices: here gpt-4o's, whichever names it. On b8f0dfd the header's
// model priced the reservation, and the response's the charge.
func TestPriceChargesTheDearestModelNamed(t *testing.T) {
	const body = `{"model":"gpt-4o","max_tokens":100}` // 36 bytes: 9 input tokens
	// 9 × 2.50 + 100 × 10 = 1,022.5, reserved 1,023; 1,000 × 2.50 + 100 × 10 = 3,500 charged.
	for _, c := range []struct{ header, body, resp string }{
		{"o3-mini", body, "o3-mini"},
		{"gpt-4o", strings.Replace(body, "gpt-4o", "o3-mini", 1), "o3-mini"},
		{"o3-mini", strings.Replace(body, "gpt-4o", "o3-mini", 1), "gpt-4o"},
	} {
		t.Run(c.header+"/"+c.resp, func(t *testing.T) {
			h := newFakeHost(t, teamSpend(1_000_000))
			r := h.llm(llmCall{headers: []string{"x-team=a", "x-model=" + c.header, "x-max-tokens=100"}, body: c.body, resp: chatJSON(c.resp, 1000, 100)})
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if c.resp == "o3-mini" && !strings.Contains(r.ratelimit, fmt.Sprintf("r=%d;", 1_000_000-1023)) {
				t.Errorf("ratelimit %q: want r=%d, 1,023 reserved at gpt-4o's prices", r.ratelimit, 1_000_000-1023)
			}
			if got := h.logCount("{team|a}:0"); got != 3500 {
				t.Errorf("charged %d, want 3,500 at gpt-4o's prices (o3-mini's: 1,540)", got)
			}
		})
	}
}

// A response naming a model the table does not list, under refuse, pays
// the table's dearest prices, never the request's cheaper model: counted
// in model_unlisted and logged. On b8f0dfd it paid o3-mini's, 1,540.
func TestPriceUnlistedResponseModelPaysTheDearest(t *testing.T) {
	h := newFakeHost(t, teamSpend(1_000_000))
	r := h.llm(llmCall{headers: []string{"x-team=a", "x-model=o3-mini", "x-max-tokens=100"},
		body: `{"model":"o3-mini","max_tokens":100}`, resp: chatJSON("gpt-5", 1000, 100)})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got := h.logCount("{team|a}:0"); got != 3500 {
		t.Errorf("charged %d, want 3,500 at the table's dearest (gpt-4o's) prices", got)
	}
	if n := h.Counters["ratelimit.rule.team.model_unlisted"]; n != 1 {
		t.Errorf("model_unlisted %d, want 1", n)
	}
	if !strings.Contains(strings.Join(h.logs, "\n"), `"gpt-5", which the price table does not list`) {
		t.Errorf("no log names the model: %v", h.logs)
	}
}

// The ceiling of one response's charge: by default the rule's largest
// capacity, so a response reporting 2^40 units leaves its key one budget
// in debt, not 2^40. On b8f0dfd the key held 2^40.
func TestResponseChargeCeiling(t *testing.T) {
	for algorithm, limit := range costLimits {
		for _, maxCost := range []string{"", `,"max_cost":250`} {
			t.Run(algorithm+maxCost, func(t *testing.T) {
				h := newFakeHost(t, strings.Replace(costConfig(limit, ""), `"default":10}`, `"default":10}`+maxCost, 1))
				h.finish(h.admit(10), 1<<40)
				want := int64(100)
				if maxCost != "" {
					want = 250
				}
				if got := h.units(algorithm); got != want {
					t.Errorf("Redis holds %d, want the ceiling %d", got, want)
				}
			})
		}
	}
}

// With an on_limit degrade rule the decision is made at the headers, before
// the proxy routes (degrade.go): the body is not awaited for its model, nor
// held to ask a stream for its usage. The response still pays the dearest.
func TestPriceWithDegradeDecidesAtHeaders(t *testing.T) {
	conf := strings.Replace(teamSpend(1_000_000), `}}}}}]}`, `}}}},"on_limit":{"action":"degrade"}}]}`, 1)
	h := newFakeHost(t, conf)
	r := h.llm(llmCall{headers: []string{"x-team=a", "x-model=o3-mini", "x-max-tokens=100", "content-length=58"},
		body: `{"model":"gpt-5","max_tokens":100,"stream":true,"messages":[]}`, resp: chatJSON("gpt-5", 1000, 100)})
	if r.status != 200 || r.waited || r.fs.RequestBody != "" || len(r.fs.RemovedRequest) != 0 {
		t.Fatalf("%d %s, waited for the body %t, body replaced %q, removed %v; want 200 decided at the headers, the body as it came",
			r.status, r.body, r.waited, r.fs.RequestBody, r.fs.RemovedRequest)
	}
	if got := h.logCount("{team|a}:0"); got != 3500 {
		t.Errorf("charged %d, want 3,500 at the table's dearest prices", got)
	}
}

// With body_while_headers_paused, a degrade configuration holds the
// headers for the body: the body's model is read before the proxy routes,
// and refused under refuse whatever x-model says.
func TestPriceWithDegradeReadsTheBodyWhenHeadersWait(t *testing.T) {
	conf := strings.Replace(teamSpend(1_000_000), `}}}}}]}`, `}}}},"on_limit":{"action":"degrade"}}],"body_while_headers_paused":true}`, 1)
	h := newFakeHost(t, conf)
	r := h.llm(llmCall{headers: []string{"x-team=a", "x-model=o3-mini", "x-max-tokens=100"},
		body: `{"model":"gpt-5","max_tokens":100}`, resp: chatJSON("gpt-5", 1000, 100)})
	if !r.waited || r.status != 400 || !strings.Contains(r.body, "unknown_model") {
		t.Fatalf("waited for the body %t, %d %s; want 400 unknown_model after the body", r.waited, r.status, r.body)
	}
	if got := h.logCount("{team|a}:0"); got != 0 {
		t.Errorf("a refused request charged %d", got)
	}
}
