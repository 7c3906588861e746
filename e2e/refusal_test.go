package e2e

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// A request refused for its own content gets its rule's refusal_status
// (400 unless set) and a body naming what is wrong, with no Retry-After
// or rate-limit headers, through both builds in the host with real Redis
// and natively; a request over the limit still gets 429 with them.
func TestRefusalStatus(t *testing.T) {
	for _, name := range kinds {
		t.Run(name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			tg := startTarget(t, name, `{"redis":{"cluster":"redis","timeout":"2s","key_prefix":"`+prefix+`"},"rules":[
				{"name":"keyed","match":{"path":"/k"},"key":[{"source":"header","name":"x-user"}],"on_missing_key":"deny","refusal_status":401,
				 "limits":[{"algorithm":"sliding_log","limit":5,"window":"1h"}]},
				{"name":"units","match":{"path":"/u"},"key":[{"source":"header","name":"x-user"}],"cost":{"header":"x-cost"},
				 "limits":[{"name":"burst","algorithm":"funnel","capacity":3,"rate":3,"period":"1h"}]}]}`, server.Addr)
			for _, c := range []struct {
				headers map[string]string
				status  int
				body    string
			}{
				{map[string]string{":path": "/k"}, 401, `{"error":"missing_key","rule":"keyed","part":"header x-user"}`},
				{map[string]string{":path": "/u", "x-user": "u", "x-cost": "4"}, 400, `{"error":"cost_exceeds_capacity","rule":"units","limit":"burst"}`},
			} {
				o := tg.send(t, c.headers)
				if o.status != c.status || o.body != c.body+"\n" || o.headers["retry-after"] != "" || o.headers["ratelimit"] != "" || o.headers["ratelimit-policy"] != "" {
					t.Fatalf("%v: %d %q %v; want %d %s without rate-limit headers", c.headers, o.status, o.body, o.headers, c.status, c.body)
				}
			}
			expect(t, tg.send(t, map[string]string{":path": "/u", "x-user": "u", "x-cost": "3"}), 200)
			o := tg.send(t, map[string]string{":path": "/u", "x-user": "u", "x-cost": "3"})
			if o.status != 429 || o.headers["retry-after"] == "" || o.headers["ratelimit-policy"] == "" {
				t.Fatalf("over the limit: %d %v, want 429 with Retry-After and RateLimit-Policy", o.status, o.headers)
			}
			if got := tg.metric("ratelimit.rule.keyed.denied"); got != 1 {
				t.Errorf("keyed denied %d, want 1", got)
			}
		})
	}
}
