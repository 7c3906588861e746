package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The quota endpoint through both builds (the Redis callout ABI, and
// Webdis over HTTP callouts): what a caller used shows in JSON, with the
// endpoint's own rate-limit headers; the endpoint is rate-limited like any
// request; and the upstream never sees it.
func TestQuotaEndpointEndToEnd(t *testing.T) {
	t.Parallel()
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.URL.Path)
				mu.Unlock()
				io.WriteString(w, "upstream "+r.URL.Path)
			}))
			t.Cleanup(up.Close)
			conf := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},
				"quota_endpoint":{"path":"/v1/quota","rules":["chat","team"]},"rules":[
				{"name":"chat","match":{"path_prefix":"/v1/chat"},"key":[{"source":"header","name":"x-key"}],
				 "limits":[{"algorithm":"sliding_counter","limit":5,"window":"1m"}]},
				{"name":"team","match":{"path_prefix":"/v1/chat"},"key":[{"source":"header","name":"x-team"}],
				 "limits":[{"algorithm":"sliding_log","limit":50,"window":"1h"}]},
				{"name":"reads","match":{"path":"/v1/quota"},"key":[{"source":"header","name":"x-key"}],
				 "limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]}`, redistest.Prefix(t))
			cfg, _ := hostConfig(t, kind, wasmhost.Config{Workers: 1, Upstream: up.URL}, conf, server.Addr)
			tg := startHost(t, cfg)
			get := func(method, path string, headers ...string) (int, http.Header, string) {
				t.Helper()
				req, _ := http.NewRequest(method, tg.h.URL()+path, nil)
				for i := 0; i+1 < len(headers); i += 2 {
					req.Header.Set(headers[i], headers[i+1])
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, resp.Header, string(body)
			}
			for range 2 {
				if st, _, body := get("POST", "/v1/chat/completions", "x-key", "k1", "x-team", "t1"); st != 200 {
					t.Fatalf("chat: %d %s", st, body)
				}
			}
			for i, rl := range []string{`"reads";r=2;t=60`, `"reads";r=1;t=60`, `"reads";r=0;t=60`} {
				st, h, body := get("GET", "/v1/quota", "x-key", "k1")
				var a struct {
					Rules []struct {
						Rule       string `json:"rule"`
						MissingKey bool   `json:"missing_key"`
						Limits     []struct {
							Used      int64 `json:"used"`
							Remaining int64 `json:"remaining"`
						} `json:"limits"`
					} `json:"rules"`
				}
				if st != 200 || h.Get("content-type") != "application/json" || h.Get("ratelimit") != rl {
					t.Fatalf("read %d: %d %v %s", i, st, h, body)
				}
				if err := json.Unmarshal([]byte(body), &a); err != nil || len(a.Rules) != 2 || a.Rules[0].Rule != "chat" ||
					len(a.Rules[0].Limits) != 1 || a.Rules[0].Limits[0].Used != 2 || a.Rules[0].Limits[0].Remaining != 3 || !a.Rules[1].MissingKey {
					t.Fatalf("read %d: %s (%v)", i, body, err)
				}
			}
			if st, _, body := get("GET", "/v1/quota", "x-key", "k1"); st != 429 {
				t.Fatalf("fourth read: %d %s", st, body)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 || seen[0] != "/v1/chat/completions" || seen[1] != "/v1/chat/completions" {
				t.Fatalf("the upstream saw %v", seen)
			}
		})
	}
}
