package filter

import (
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
)

const bodyReserve = `{"redis":{"cluster":"redis"},"rules":[{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],
	"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}],
	"response_cost":{"usage":"openai_responses","reserve":{"body":"max_tokens","default":100}}}]}`

var bodyPairs = [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"}, {"x-api-key", "k"}}

// The reservation is read from the request body: the headers pause until
// the body's end, which decides the request.
func TestReserveFromRequestBody(t *testing.T) {
	h := newFakeHost(t, bodyReserve)
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(true)
	if a := st.OnRequestHeaders(bodyPairs); a != Pause || !st.WantsRequestBody() || h.plugin.Pending() != 0 {
		t.Fatalf("headers: %v, wants body %t, %d calls sent; want Pause and no call before the body", a, st.WantsRequestBody(), h.plugin.Pending())
	}
	if a := st.OnRequestBody([]byte(`{"model":"m","max_tokens":300}`)); a != Pause || h.plugin.Pending() != 1 {
		t.Fatalf("body: %v with %d calls; want Pause while the call is out", a, h.plugin.Pending())
	}
	h.Pump()
	if fs.Resumed != 1 || fs.Status != 0 {
		t.Fatalf("resumed %d, local reply %d", fs.Resumed, fs.Status)
	}
	fs.Upstream = map[string]string{":status": "200"}
	st.OnResponseHeaders(false)
	if got := fs.Response["ratelimit"]; got != `"tpm";r=692;t=60` {
		t.Fatalf("ratelimit %q: want r=692, after a reservation of max_tokens 300 and 30 bytes' 8 input tokens", got)
	}
}

// A proxy that holds the body behind paused headers (Envoy without
// allow_on_headers_stop_iteration) never delivers it: after bodyWait the
// tick decides with the default estimate, and resumes the stream.
func TestReserveFromBodyFallsBackOnTick(t *testing.T) {
	h := newFakeHost(t, bodyReserve)
	h.Clock = time.Unix(1000, 0)
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	defer st.OnDone()
	st.SetBodyFollows(true)
	if a := st.OnRequestHeaders(bodyPairs); a != Pause {
		t.Fatalf("headers: %v", a)
	}
	h.plugin.OnTick()
	if h.plugin.Pending() != 0 {
		t.Fatal("decided before bodyWait")
	}
	h.Clock = h.Clock.Add(bodyWait)
	h.plugin.OnTick()
	if st.WantsRequestBody() || h.plugin.Pending() != 1 {
		t.Fatalf("after bodyWait: still waiting %t, %d calls", st.WantsRequestBody(), h.plugin.Pending())
	}
	h.Pump()
	if fs.Resumed != 1 {
		t.Fatalf("resumed %d times", fs.Resumed)
	}
	fs.Upstream = map[string]string{":status": "200"}
	st.OnResponseHeaders(false)
	if got := fs.Response["ratelimit"]; got != `"tpm";r=900;t=60` {
		t.Fatalf("ratelimit %q: want r=900, the default estimate of 100", got)
	}
	// The body now arrives, after the resume: it passes.
	if a := st.OnRequestBody([]byte(`{"max_tokens":300}`)); a != Continue {
		t.Fatalf("late body: %v", a)
	}
}

// A request without a body, or one no body rule matches, does not wait.
func TestNoBodyNoWait(t *testing.T) {
	h := newFakeHost(t, bodyReserve)
	if o := h.send("x-api-key=k"); o.status != 200 || o.headers["ratelimit"] != `"tpm";r=900;t=60` {
		t.Fatalf("%+v", o)
	}
}
