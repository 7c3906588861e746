package filter

import (
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// A degrade rule beside a body key: the proxy routes when the headers go
// on, so they wait for the body (body_while_headers_paused).
const degradeBody = `{"redis":{"cluster":"redis"},"body_while_headers_paused":true,"rules":[
	{"name":"tokens","match":{"path":"/v1/chat"},"key":[{"source":"header","name":"x-team"}],
	 "limits":[{"name":"per-month","algorithm":"sliding_log","limit":1,"window":"1h"}],
	 "on_limit":{"action":"degrade"}},
	{"name":"per-model","match":{"path_prefix":"/v1/"},"key":[{"source":"body","path":"model"}],
	 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1m"}]}]}`

// headersStep is what one request's callbacks did, as the proxy sees it
// when its headers callback returns, then after the body and the replies.
type headersStep struct {
	action            Action   // the headers callback's
	removed, set      []string // request headers removed and set by then
	afterSet          map[string]string
	afterResumed      int
	afterBody, status int
}

// sendDegradeBody sends one request: the headers (with extra), then the
// body unless body is "", then Redis's replies.
func (h *fakeHost) sendDegradeBody(path, body string, extra ...[2]string) headersStep {
	h.t.Helper()
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(body != "")
	hs := append([][2]string{{":method", "POST"}, {":path", path}, {":authority", "llm"}, {"x-team", "t1"}}, extra...)
	var r headersStep
	r.action = st.OnRequestHeaders(hs)
	r.removed = slices.Clone(fs.RemovedRequest)
	for k := range fs.SetRequest {
		r.set = append(r.set, k)
	}
	if st.WantsRequestBody() {
		r.afterBody = int(st.OnRequestBody([]byte(body)))
	}
	h.Pump()
	r.afterSet, r.afterResumed, r.status = fs.SetRequest, fs.Resumed, fs.Status
	return r
}

// The client's copy of the degrade header is removed in the headers'
// callback, and a degraded request's header is set before its headers go
// on: they wait (Pause) for the body, and resume once it is decided.
func TestDegradeBeforeHeadersGoOn(t *testing.T) {
	h := newFakeHost(t, degradeBody)
	forged := [2]string{"x-ratelimit-exhausted", "tokens/per-month"}
	body := `{"model":"gpt-4o"}`
	r := h.sendDegradeBody("/v1/chat", body, forged)
	if r.action != Pause || !slices.Equal(r.removed, []string{"x-ratelimit-exhausted"}) || len(r.afterSet) != 0 {
		t.Fatalf("first request: headers %v, removed %v in them; set %v", r.action, r.removed, r.afterSet)
	}
	r = h.sendDegradeBody("/v1/chat", body)
	if r.action != Pause || len(r.set) != 0 || r.afterSet["x-ratelimit-exhausted"] != "tokens/per-month" || r.afterResumed != 1 || r.status != 0 {
		t.Fatalf("spent: headers %v; set %v, resumed %d, status %d; want Pause, then the header and one resume",
			r.action, r.afterSet, r.afterResumed, r.status)
	}
	// A request no degrade rule matches goes on at once, its body held,
	// and still loses the header.
	r = h.sendDegradeBody("/v1/other", body, forged)
	if r.action != Continue || !slices.Equal(r.removed, []string{"x-ratelimit-exhausted"}) {
		t.Fatalf("/v1/other: headers %v, removed %v", r.action, r.removed)
	}
	// So does one that waits for nothing.
	if r = h.sendDegradeBody("/elsewhere", "", forged); r.action != Continue || len(r.removed) != 1 {
		t.Fatalf("/elsewhere: headers %v, removed %v", r.action, r.removed)
	}
}

// A _rules_ entry with no degrade rule still removes the top level's
// degrade header: a client must not bring it to any route.
func TestDegradeHeaderStrippedUnderEveryPolicy(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
		{"name":"tokens","key":[{"source":"header","name":"x-team"}],
		 "limits":[{"name":"per-month","algorithm":"sliding_log","limit":1,"window":"1h"}],
		 "on_limit":{"action":"degrade","header":"x-fallback"}}],
		"_rules_":[{"_match_domain_":["llm"],"redis":{"cluster":"redis"},"rules":[
		{"name":"per-model","key":[{"source":"body","path":"model"}],
		 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1m"}]}]}]}`)
	r := h.sendDegradeBody("/v1/chat", `{"model":"m"}`, [2]string{"x-fallback", "tokens/per-month"})
	if r.action != Continue || !slices.Equal(r.removed, []string{"x-fallback"}) {
		t.Fatalf("headers %v, removed %v in them", r.action, r.removed)
	}
}

// A body that does not come within bodyWait: the request is decided
// without it, and a degrade rule that reads the body degrades it
// unchecked ("<rule>/*"), where a rule that does not is decided as ever.
func TestDegradeBodyNeverComes(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"body_while_headers_paused":true,"rules":[
		{"name":"model-budget","key":[{"source":"body","path":"model"}],
		 "limits":[{"name":"day","algorithm":"sliding_log","limit":5,"window":"1h"}],
		 "on_limit":{"action":"degrade"}},
		{"name":"team","key":[{"source":"header","name":"x-team"}],
		 "limits":[{"name":"hour","algorithm":"sliding_log","limit":5,"window":"1h"}],
		 "on_limit":{"action":"degrade"}}]}`)
	fs := h.bodyNeverComes(t)
	if fs.Resumed != 1 || fs.SetRequest["x-ratelimit-exhausted"] != "model-budget/*" {
		t.Fatalf("resumed %d, set %v; want model-budget/*", fs.Resumed, fs.SetRequest)
	}
	if !strings.Contains(fs.Decision, "rule=model-budget") || !strings.Contains(fs.Decision, "decision=degraded") {
		t.Fatalf("decision %q", fs.Decision)
	}
	if n := h.Counters["ratelimit.rule.model-budget.degraded"]; n != 1 {
		t.Fatalf("model-budget degraded %d", n)
	}
	if got := h.logCount("{team|t1}:0"); got != 1 {
		t.Fatalf("team charged %d, want 1", got)
	}
}
