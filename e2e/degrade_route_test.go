package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Degrade beside a body key, routed: wasmhost picks the route when the
// request headers go on, as Envoy's router does, and a route matches the
// degrade header, as deploy/envoy-degrade.yaml's does. With
// body_while_headers_paused and allow_on_headers_stop_iteration the
// headers wait for the body: a client's own header never reaches the
// fallback, and a degraded request always does.

func degradeBodyConfig(prefix string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"body_while_headers_paused":true,"rules":[
	{"name":"tokens","key":[{"source":"query","name":"team"}],
	 "limits":[{"name":"per-month","algorithm":"sliding_log","limit":2,"window":"1h"}],
	 "on_limit":{"action":"degrade"}},
	{"name":"per-model","key":[{"source":"body","path":"model"}],
	 "limits":[{"algorithm":"sliding_log","limit":100,"window":"1m"}]}]}`, prefix)
}

// postTo posts body to url with the given headers, and returns the status
// and the response body.
func postTo(t *testing.T, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDegradeRoutesBeforeTheBody(t *testing.T) {
	for _, build := range moduleKinds {
		t.Run(build, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			primary := &seenHeader{name: "x-ratelimit-exhausted"}
			fallback := &seenHeader{name: "x-ratelimit-exhausted"}
			w := startBuild(t, build, wasmhost.Config{
				Upstream: primary.serve(t).URL, AllowOnHeadersStopIteration: true,
				Routes: []wasmhost.Route{
					{PathPrefix: "/v1/", Header: "x-ratelimit-exhausted", Name: "fallback", Upstream: fallback.serve(t).URL},
					{PathPrefix: "/", Name: "primary"},
				}}, degradeBodyConfig(prefix), server.Addr)
			url := w.h.URL() + "/v1/chat?team=a"
			body := `{"model":"gpt-4o","messages":[]}`
			want := []struct {
				forged     bool
				route, saw string
			}{
				{true, "primary", "[]"}, // the client's own header is removed before routing
				{false, "primary", "[]"},
				{true, "fallback", "[tokens/per-month]"}, // spent: degraded, whatever the client said
				{false, "fallback", "[tokens/per-month]"},
			}
			for i, x := range want {
				h := map[string]string{}
				if x.forged {
					h["x-ratelimit-exhausted"] = "tokens/per-month"
				}
				status, _ := postTo(t, url, body, h)
				up := primary
				if x.route == "fallback" {
					up = fallback
				}
				up.mu.Lock()
				n := len(up.seen)
				up.mu.Unlock()
				if status != 200 || n == 0 || up.last() != x.saw {
					t.Fatalf("request %d: %d; %s saw %d requests, the last with %s; want 200 and %s",
						i+1, status, x.route, n, lastOr(up), x.saw)
				}
				if p, f := count(primary), count(fallback); p+f != i+1 {
					t.Fatalf("request %d: primary %d, fallback %d requests", i+1, p, f)
				}
			}
			if p, f := count(primary), count(fallback); p != 2 || f != 2 {
				t.Fatalf("primary %d, fallback %d; want 2, 2", p, f)
			}
			if n, err := server.Do("ZCARD", prefix+"{tokens|a}:0"); err != nil || n != int64(2) {
				t.Fatalf("tokens' log holds %v (%v), want 2", n, err)
			}
		})
	}
}

func count(s *seenHeader) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func lastOr(s *seenHeader) string {
	if count(s) == 0 {
		return "none"
	}
	return s.last()
}

// Without allow_on_headers_stop_iteration the body never reaches the
// filter while the headers wait: after its body wait the request is
// decided without it, and a degrade rule that reads the body degrades it
// unchecked, so it never reaches the primary route for free.
func TestDegradeWithoutTheBodyGoesToTheFallback(t *testing.T) {
	for _, build := range moduleKinds {
		t.Run(build, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			primary := &seenHeader{name: "x-ratelimit-exhausted"}
			fallback := &seenHeader{name: "x-ratelimit-exhausted"}
			config := fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"body_while_headers_paused":true,"rules":[
	{"name":"model-budget","key":[{"source":"body","path":"model"}],
	 "limits":[{"name":"day","algorithm":"sliding_log","limit":100,"window":"1h"}],
	 "on_limit":{"action":"degrade"}}]}`, prefix)
			w := startBuild(t, build, wasmhost.Config{
				Upstream: primary.serve(t).URL,
				Routes: []wasmhost.Route{
					{PathPrefix: "/v1/", Header: "x-ratelimit-exhausted", Name: "fallback", Upstream: fallback.serve(t).URL},
					{PathPrefix: "/", Name: "primary"},
				}}, config, server.Addr)
			status, _ := postTo(t, w.h.URL()+"/v1/chat", `{"model":"gpt-4o"}`, nil)
			if status != 200 || count(primary) != 0 || count(fallback) != 1 || fallback.last() != "[model-budget/*]" {
				t.Fatalf("%d; primary %d, fallback %d requests, the last with %s; want the fallback, with model-budget/*",
					status, count(primary), count(fallback), lastOr(fallback))
			}
		})
	}
}
