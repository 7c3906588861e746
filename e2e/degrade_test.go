package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Degrade instead of deny, end to end through both builds: the upstream
// sees the header on the requests a spent degrade limit admits, which
// Redis does not charge, and never a client's own copy of it; the
// response near the limit carries the warning. Routing by the header is
// degrade_route_test.go's; deploy/envoy-degrade.yaml's route is checked
// against Envoy's schema in the deploy tests.

func degradeConfig(prefix string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"headers":"draft10","rules":[{"name":"tokens",
	"key":[{"source":"query","name":"team"}],
	"limits":[{"name":"per-month","algorithm":"sliding_log","limit":2,"window":"1h"}],
	"on_limit":{"action":"degrade"},
	"near_limit":{"ratio":0.5,"header":"x-ratelimit-warning"}}]}`, prefix)
}

// seenHeader is an upstream that notes one request header of each request.
type seenHeader struct {
	mu   sync.Mutex
	name string
	seen []string
}

func (s *seenHeader) serve(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, fmt.Sprint(r.Header.Values(s.name)))
		s.mu.Unlock()
		w.Write([]byte("upstream " + r.URL.Path))
	}))
	t.Cleanup(up.Close)
	return up
}

func (s *seenHeader) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[len(s.seen)-1]
}

func TestDegradeReachesTheUpstreamUncharged(t *testing.T) {
	for _, build := range moduleKinds {
		t.Run(build, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			up := &seenHeader{name: "x-ratelimit-exhausted"}
			w := startBuild(t, build, wasmhost.Config{Upstream: up.serve(t).URL}, degradeConfig(prefix), server.Addr)
			want := []struct{ upstream, warning string }{
				{"[]", ""},
				{"[]", `"per-month";r=0`},
				{"[tokens/per-month]", ""},
				{"[tokens/per-month]", ""},
			}
			for i, x := range want {
				o := w.send(t, map[string]string{":path": "/v1/chat?team=a"})
				if o.status != 200 || up.last() != x.upstream || o.headers["x-ratelimit-warning"] != x.warning {
					t.Fatalf("request %d: %d, upstream saw %s, warning %q; want 200, %s, %q",
						i+1, o.status, up.last(), o.headers["x-ratelimit-warning"], x.upstream, x.warning)
				}
			}
			n, err := server.Do("ZCARD", prefix+"{tokens|a}:0")
			if err != nil || n != int64(2) {
				t.Fatalf("the log holds %v (%v), want 2: a degraded request is charged nothing", n, err)
			}
			if got := w.metric("ratelimit.rule.tokens.degraded"); got != 2 {
				t.Fatalf("degraded %d, want 2", got)
			}
			// A client's own header never reaches the upstream.
			o := w.send(t, map[string]string{":path": "/v1/chat?team=b", "x-ratelimit-exhausted": "tokens/per-month"})
			if o.status != 200 || up.last() != "[]" {
				t.Fatalf("team b with its own header: %d, upstream saw %s", o.status, up.last())
			}
		})
	}
}
