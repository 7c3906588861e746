package filter

import (
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

// Under body_while_headers_paused the proxy delivers the body while the
// headers wait, so a body that has not come within bodyWait is late (a
// client trickling it), not one the proxy withholds: a rule that reads it
// denies the request with 408, instead of matching nothing and letting the
// body follow to the upstream unchecked.
func TestLateBodyIsUnreadable(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"body_while_headers_paused":true,"rules":[
	{"name":"tokens","match":{"path":"/v1/chat"},"key":[{"source":"header","name":"x-team"}],
	 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1h"}],"on_limit":{"action":"degrade"}},
	{"name":"gpt4o","match":{"path_prefix":"/v1/","body":[{"path":"model","exact":"gpt-4o"}]},"key":[{"source":"header","name":"x-team"}],
	 "limits":[{"algorithm":"sliding_log","limit":1,"window":"1h"}]}]}`)
	fs := h.bodyNeverComes(t)
	if fs.Status != 408 || !strings.Contains(fs.Body, `"reason":"the body did not come in time"`) || fs.Resumed != 0 {
		t.Fatalf("after the wait: status %d %s, resumed %d; want 408, not resumed", fs.Status, fs.Body, fs.Resumed)
	}
}

// bodyNeverComes sends a POST's headers, a body to follow, and lets
// bodyWait pass at the tick without the body; it returns the stream.
func (h *fakeHost) bodyNeverComes(t *testing.T) *filtertest.Stream {
	t.Helper()
	h.Clock = time.Unix(1000, 0)
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	t.Cleanup(st.OnDone)
	st.SetBodyFollows(true)
	if a := st.OnRequestHeaders([][2]string{{":method", "POST"}, {":path", "/v1/chat"}, {"x-team", "t1"}}); a != Pause {
		t.Fatalf("headers: %v, want Pause until the body", a)
	}
	h.Clock = h.Clock.Add(bodyWait)
	h.plugin.OnTick()
	h.Pump()
	return fs
}

// A rule that reads the body only for its usage preset (openai_chat: the
// stream flags) or its price table's model denies a body it cannot read
// as the upstream will, as a key or match does; a stream flag any lax
// parser streams for is asked for its usage.
func TestUsageRuleDeniesUnreadableBody(t *testing.T) {
	const rule = `{"redis":{"cluster":"redis"},"rules":[
	{"name":"chat","key":[{"source":"header","name":"x-team"}],"max_request_body_bytes":80,
	 "limits":[{"algorithm":"sliding_log","limit":100000,"window":"1h"}],
	 "response_cost":{"usage":"openai_chat","reserve":{"header":"x-max","default":10}}}]}`
	for _, c := range []struct {
		body   string
		status int
		reason string
	}{
		{`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hello there, padding padding padding"}]}`, 413, "larger than"},
		{`{"model":"gpt-4o","stream":true,"x":"\ud800"}`, 400, "lone surrogate"},
		{`{"model":"gpt-4o","Stream":true}`, 400, "only in case"},
		{`{"model":"gpt-4o","stream":true,"Stream_options":{}}`, 400, "only in case"},
		{`{"model":"gpt-4o","stream":1}`, 200, ""},
		{`{"model":"gpt-4o","stream":true}`, 200, ""},
	} {
		h := newFakeHost(t, rule)
		r := h.llm(llmCall{headers: []string{"x-team=t1", "content-length=10"}, body: c.body, resp: chatJSON("gpt-4o", 1, 1)})
		if r.status != c.status || !strings.Contains(r.body, c.reason) {
			t.Errorf("%s: %d %s, want %d %q", c.body, r.status, r.body, c.status, c.reason)
		}
		if c.status == 200 && !strings.Contains(r.fs.RequestBody, `"include_usage":true`) {
			t.Errorf("%s: body %q, want include_usage asked", c.body, r.fs.RequestBody)
		}
	}
}

// An integer past 2^53 is read exactly by Python and rounded by float64
// parsers, so a body key part or match refuses it rather than pick one.
func TestBodyBigIntegerRefused(t *testing.T) {
	for raw, big := range map[string]bool{
		"9007199254740992": false, "-9007199254740992": false, "123": false, "1e30": false,
		"9007199254740993": true, "-9007199254740993": true, "10000000000000000001": true,
	} {
		if got := bigInteger(raw); got != big {
			t.Errorf("bigInteger(%s) = %t, want %t", raw, got, big)
		}
	}
	var r request
	r.body, r.bodyLen, r.bodyMax = []byte(`{"id":10000000000000000001}`), 27, 1000
	if v, present := r.bodyValue("id"); present || r.refused == 0 {
		t.Errorf("id: %q %t, refused %v; want refused", v, present, r.refused)
	}
}
