package filter

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

const bodyKeys = `{"redis":{"cluster":"redis"},"rules":[
	{"name":"per-model","match":{"path":"/v1/chat/completions"},
	 "key":[{"source":"header","name":"x-api-key"},{"source":"body","path":"model"}],
	 "limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}],"max_request_body_bytes":200},
	{"name":"gpt-team","match":{"path":"/v1/chat/completions","body":[{"path":"model","prefix":"gpt-"}]},
	 "key":[{"source":"body","path":"metadata.team"}],"on_missing_key":"deny",
	 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1m"}]},
	{"name":"other","match":{"path":"/other"},"key":[{"source":"client_ip"}],
	 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1m"}]}]}`

// bodyRequest is one request through the filter as proxyhost drives it:
// the headers, then, when the stream wants it, the body at its end (or its
// size, past the limit), then the Redis replies.
type bodyRequest struct {
	path, body string
	tooLarge   int // the body's size when it is not read
}

type bodyResult struct {
	headers, body Action // what the headers' and the body's callbacks returned
	calledEarly   int    // calls sent before the body's end
	status        int    // the local reply's, 0 if none
	resumed       int
}

func (h *fakeHost) sendBody(r bodyRequest) bodyResult {
	h.t.Helper()
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(r.body != "" || r.tooLarge > 0)
	var res bodyResult
	res.headers = st.OnRequestHeaders([][2]string{{":method", "POST"}, {":path", r.path}, {":authority", "llm"}, {"x-api-key", "k"}})
	res.calledEarly = h.plugin.Pending()
	if st.WantsRequestBody() {
		if r.tooLarge > 0 {
			res.body = st.OnRequestBodyTooLarge(r.tooLarge)
		} else {
			res.body = st.OnRequestBody([]byte(r.body))
		}
	}
	h.Pump()
	res.status, res.resumed = fs.Status, fs.Resumed
	return res
}

// A body key: the headers go on (Continue) with no call sent, and the body,
// held, decides; each model has its own counter.
func TestBodyKeySeparatesModels(t *testing.T) {
	h := newFakeHost(t, bodyKeys)
	chat := "/v1/chat/completions"
	first := h.sendBody(bodyRequest{path: chat, body: `{"model":"m1"}`})
	if first.headers != Continue || first.calledEarly != 0 || first.body != Pause || first.resumed != 1 || first.status != 0 {
		t.Fatalf("first m1: %+v; want headers Continue, no call before the body, body Pause, then resumed", first)
	}
	if r := h.sendBody(bodyRequest{path: chat, body: `{"model":"m1"}`}); r.status != 429 || r.resumed != 0 {
		t.Fatalf("second m1: %+v; want 429 (limit 1 per model)", r)
	}
	if r := h.sendBody(bodyRequest{path: chat, body: `{"model":"m2"}`}); r.status != 0 || r.resumed != 1 {
		t.Fatalf("first m2: %+v; want admitted: its own counter", r)
	}
}

// A denial known in the body callback (here a missing key under
// on_missing_key deny) is answered from it: the local reply, and Pause.
func TestBodyDenialFromBodyCallback(t *testing.T) {
	h := newFakeHost(t, bodyKeys)
	r := h.sendBody(bodyRequest{path: "/v1/chat/completions", body: `{"model":"gpt-4o"}`})
	if r.headers != Continue || r.body != Pause || r.status != 400 || r.resumed != 0 {
		t.Fatalf("%+v; want 400 from the body callback (gpt-team's key metadata.team is missing)", r)
	}
	if got := h.Counters["ratelimit.rule.gpt-team.denied"]; got != 1 {
		t.Fatalf("gpt-team denied %d, want 1", got)
	}
}

// match.body: a rule applies only when its body fields hold.
func TestBodyMatch(t *testing.T) {
	h := newFakeHost(t, bodyKeys)
	for i, body := range []string{`{"model":"claude","metadata":{"team":"t"}}`, `{"model":"gpt-4o","metadata":{"team":"t"}}`} {
		h.sendBody(bodyRequest{path: "/v1/chat/completions", body: body})
		if got, want := h.Counters["ratelimit.rule.gpt-team.allowed"], uint64(i); got != want {
			t.Fatalf("after %s: gpt-team allowed %d, want %d", body, got, want)
		}
	}
}

// bodyKeysMissing is bodyKeys with on_unreadable_body: missing on its
// two body rules.
var bodyKeysMissing = strings.Replace(bodyKeys, `"key":[`, `"on_unreadable_body":"missing","key":[`, 2)

// Under on_unreadable_body: missing, a body over max_request_body_bytes,
// not JSON, or nested too deep has no fields: per-model's key is missing
// and the rule is skipped (gpt-team's match fails), so nothing is called.
func TestBodyFieldsMissing(t *testing.T) {
	h := newFakeHost(t, bodyKeysMissing)
	chat := "/v1/chat/completions"
	padded := func(n int) string { // a body of n bytes
		return `{"model":"m1","pad":"` + strings.Repeat("x", n-23) + `"}`
	}
	for name, r := range map[string]bodyRequest{
		"too large": {path: chat, tooLarge: 201},
		"limit+1":   {path: chat, body: padded(201)},
		"not JSON":  {path: chat, body: `{"model":"m1"`},
		"too deep":  {path: chat, body: `{"model":"m1","z":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`},
	} {
		if res := h.sendBody(r); res.body != Continue || res.status != 0 || h.plugin.Pending() != 0 {
			t.Fatalf("%s: %+v; want Continue from the body, no call", name, res)
		}
	}
	if got := h.Counters["ratelimit.rule.per-model.allowed"]; got != 0 {
		t.Fatalf("per-model allowed %d, want 0: its key was missing each time", got)
	}
	// At the limit, the body is read.
	body := padded(200)
	if res := h.sendBody(bodyRequest{path: chat, body: body}); len(body) != 200 || res.resumed != 1 {
		t.Fatalf("%d bytes: %+v; want the rule decided", len(body), res)
	}
}

// A request without a body, or one that no body rule matches by its
// headers, is decided at its headers.
func TestBodyRulesDoNotDelayOthers(t *testing.T) {
	h := newFakeHost(t, bodyKeys)
	if r := h.sendBody(bodyRequest{path: "/v1/chat/completions"}); r.headers != Continue || r.calledEarly != 0 {
		t.Fatalf("no body: %+v; want Continue at the headers, the body key missing", r)
	}
	if r := h.sendBody(bodyRequest{path: "/other", body: `{"model":"m1"}`}); r.headers != Pause || r.calledEarly != 1 || r.body != 0 {
		t.Fatalf("other path: %+v; want the headers' call sent at once, no body read", r)
	}
}
