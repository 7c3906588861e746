package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// bodyRecorder is an upstream that records every request it receives: its
// model (the body's, as received) and whether any byte of it came.
type bodyRecorder struct {
	mu     sync.Mutex
	bodies []string
}

func newBodyRecorder(t *testing.T) (*bodyRecorder, string) {
	rec := &bodyRecorder{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, string(b))
		rec.mu.Unlock()
	}))
	t.Cleanup(up.Close)
	return rec, up.URL
}

func (r *bodyRecorder) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// postBody sends body, with a trailer when trailer is set (chunked), and
// returns the status and RateLimit header.
func postBody(t *testing.T, url, body string, trailer bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, io.NopCloser(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", "k")
	req.ContentLength = int64(len(body))
	if trailer {
		req.ContentLength = -1
		req.TransferEncoding = []string{"chunked"}
		req.Trailer = http.Header{"X-Checksum": {"c0ffee"}}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("ratelimit")
}

// A limit per model, keyed on the body's model, through both builds and
// with both settings of allow_on_headers_stop_iteration: each model has its
// own counter, a refused request reaches the upstream not at all (in
// wasmhost; Envoy's router may have sent its headers, never its body), and
// a body followed by trailers is complete at them.
func TestBodyKeyPerModel(t *testing.T) {
	for _, kind := range moduleKinds {
		for _, allow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/allow_on_headers_stop_iteration=%t", kind, allow), func(t *testing.T) {
				rec, up := newBodyRecorder(t)
				conf := llmConfig(redistest.Prefix(t), `{"name":"per-model","key":[{"source":"header","name":"x-api-key"},{"source":"body","path":"model"}],`+
					`"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}`)
				h := startBuild(t, kind, wasmhost.Config{Upstream: up, AllowOnHeadersStopIteration: allow}, conf, server.Addr).h
				url := h.URL() + "/v1/chat/completions"
				a, b := `{"model":"model-a","messages":[]}`, `{"model":"model-b","messages":[]}`
				if st, rl := postBody(t, url, a, false); st != 200 || !strings.Contains(rl, "r=0;") {
					t.Fatalf("model-a: %d %q; want 200, r=0", st, rl)
				}
				if st, _ := postBody(t, url, a, true); st != 429 {
					t.Fatalf("model-a again, with trailers: %d; want 429 (its key read at the trailers)", st)
				}
				if st, rl := postBody(t, url, b, true); st != 200 || !strings.Contains(rl, "r=0;") {
					t.Fatalf("model-b with trailers: %d %q; want 200, its own counter", st, rl)
				}
				if st, _ := postBody(t, url, b, false); st != 429 {
					t.Fatalf("model-b again: %d; want 429", st)
				}
				if got := rec.received(); len(got) != 2 || got[0] != a || got[1] != b {
					t.Fatalf("upstream received %q; want the two admitted bodies only, whole", got)
				}
			})
		}
	}
}

// A reservation from the body, with trailers: with
// allow_on_headers_stop_iteration the body reaches the filter and is
// complete at the trailers, so max_tokens (300) is reserved, not the
// default (100) that the wait of bodyWait would take. Without it, the body
// waits behind the paused headers and the default is taken.
func TestReserveFromBodyCompleteAtTrailers(t *testing.T) {
	for _, kind := range moduleKinds {
		for _, allow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/allow_on_headers_stop_iteration=%t", kind, allow), func(t *testing.T) {
				_, up := newBodyRecorder(t)
				conf := llmConfig(redistest.Prefix(t), `{"name":"tpm","key":[{"source":"header","name":"x-api-key"}],`+
					`"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}],`+
					`"response_cost":{"statuses":["2xx"],"reserve":{"body":"max_tokens","default":100}}}`)
				h := startBuild(t, kind, wasmhost.Config{Upstream: up, AllowOnHeadersStopIteration: allow}, conf, server.Addr).h
				want := "r=900;" // the default estimate, after bodyWait
				if allow {
					want = "r=700;" // max_tokens, read at the trailers
				}
				if st, rl := postBody(t, h.URL()+"/v1/chat/completions", `{"max_tokens":300}`, true); st != 200 || !strings.Contains(rl, want) {
					t.Fatalf("%d %q; want 200 with %s", st, rl, want)
				}
			})
		}
	}
}
