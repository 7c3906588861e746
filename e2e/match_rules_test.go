package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// matchRoutes stand for a Higress gateway's route table: Ingress routes
// named <namespace>/<name>, each sending to a service's cluster.
var matchRoutes = []wasmhost.Route{
	{PathPrefix: "/api/", Name: "default/api", Cluster: "outbound|8080||api.default.svc.cluster.local"},
	{PathPrefix: "/search/", Name: "default/search", Cluster: "outbound|80||search.default.svc.cluster.local"},
	{PathPrefix: "/", Name: "default/web", Cluster: "outbound|80||web.default.svc.cluster.local"},
}

// matchRulesConfig is what Higress makes of a WasmPlugin whose matchRules
// name an ingress, a domain and a service, with no defaultConfig: _rules_
// only, so requests none of them matches are not limited.
func matchRulesConfig(prefix string) string {
	redis := fmt.Sprintf(`"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q}`, prefix)
	entry := func(match, rule, key string, limit int) string {
		return fmt.Sprintf(`{%s,%s,"rules":[{"name":%q,"key":[%s],"limits":[{"algorithm":"sliding_log","limit":%d,"window":"1m"}]}]}`,
			match, redis, rule, key, limit)
	}
	return `{"_rules_":[` + strings.Join([]string{
		entry(`"_match_route_":["default/api"]`, "api", `{"source":"header","name":"x-user"}`, 2),
		entry(`"_match_domain_":["*.example.org"]`, "org", `{"source":"constant","value":"all"}`, 1),
		entry(`"_match_service_":["search.default.svc.cluster.local:80"]`, "search", `{"source":"constant","value":"all"}`, 3),
	}, ",") + `]}`
}

// Higress's matchRules, as _rules_: the first entry that matches the route
// (route_name), the domain (:authority) or the service (cluster_name)
// limits the request with its own limits; a request no entry matches is
// not limited. Through the compiled Higress module, and natively.
func TestMatchRulesLimitPerRouteDomainService(t *testing.T) {
	starts := map[string]func(t *testing.T, config string) target{
		"higress": func(t *testing.T, config string) target {
			return startBuild(t, "higress", wasmhost.Config{Routes: matchRoutes}, config, server.Addr)
		},
		"native": func(t *testing.T, config string) target {
			tg := startNative(t, config, server.Addr)
			tg.(*nativeTarget).routes = matchRoutes
			return tg
		},
	}
	for _, name := range []string{"higress", "native"} {
		t.Run(name, func(t *testing.T) {
			// The 429s' reset seconds hold exactly when the requests are
			// decided within a second: timed.
			timed(t, time.Second, func(t *attempt) {
				tg := starts[name](t.T, matchRulesConfig(redistest.Prefix(t)))
				req := func(path, authority, user string) map[string]string {
					return map[string]string{":path": path, ":authority": authority, "x-user": user}
				}
				// The route entry, per user.
				expect(t, tg.send(t, req("/api/orders", "shop.example.com", "alice")), 200, "ratelimit", `"api";r=1;t=60`)
				expect(t, tg.send(t, req("/api/orders", "shop.example.com", "alice")), 200, "ratelimit", `"api";r=0;t=60`)
				expect(t, tg.send(t, req("/api/orders", "shop.example.com", "alice")), 429, "ratelimit", `"api";r=0;t=60`)
				expect(t, tg.send(t, req("/api/orders", "shop.example.com", "bob")), 200, "ratelimit", `"api";r=1;t=60`)
				// The route entry comes first, so it wins over the domain entry.
				o := tg.send(t, req("/api/orders", "shop.example.org", "alice"))
				expect(t, o, 429)
				if !strings.Contains(o.body, `"rule":"api"`) {
					t.Fatalf("the route entry did not decide: %q", o.body)
				}
				// The domain entry, with the port stripped and case ignored.
				expect(t, tg.send(t, req("/", "Shop.Example.org:8443", "")), 200, "ratelimit", `"org";r=0;t=60`)
				expect(t, tg.send(t, req("/about", "shop.example.org", "")), 429, "ratelimit", `"org";r=0;t=60`)
				// The service entry, by fqdn:port.
				for r := 2; r >= 0; r-- {
					expect(t, tg.send(t, req("/search/q", "shop.example.com", "")), 200, "ratelimit", fmt.Sprintf(`"search";r=%d;t=60`, r))
				}
				expect(t, tg.send(t, req("/search/q", "shop.example.com", "")), 429)
				// Nothing matches: not limited.
				for range 5 {
					if o := tg.send(t, req("/about", "shop.example.com", "alice")); o.status != 200 || o.headers["ratelimit"] != "" {
						t.Fatalf("an unmatched request was limited: %+v", o)
					}
				}
				for metric, want := range map[string]int64{"ratelimit.rule.api.allowed": 3, "ratelimit.rule.api.denied": 2,
					"ratelimit.rule.org.allowed": 1, "ratelimit.rule.org.denied": 1, "ratelimit.rule.search.allowed": 3} {
					if got := tg.metric(metric); got != want {
						t.Fatalf("%s = %d, want %d", metric, got, want)
					}
				}
			})
		})
	}
}

// With a top-level configuration beside _rules_ (a WasmPlugin's
// defaultConfig), requests no entry matches get the top level's limits;
// an entry's configuration replaces it, with nothing inherited.
func TestMatchRulesFallBackToDefaultConfig(t *testing.T) {
	prefix := redistest.Prefix(t)
	redis := fmt.Sprintf(`"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q}`, prefix)
	config := fmt.Sprintf(`{%s,"headers":"legacy","rules":[{"name":"default","key":[{"source":"constant","value":"all"}],
		"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}],
		"_rules_":[{"_match_route_":["default/api"],%s,"rules":[{"name":"api","key":[{"source":"constant","value":"all"}],
		"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]}]}`, redis, redis)
	tg := startBuild(t, "higress", wasmhost.Config{Routes: matchRoutes}, config, server.Addr)
	// The entry does not inherit headers: legacy; it sends the default, draft 10.
	expect(t, tg.send(t, map[string]string{":path": "/api/a"}), 200, "ratelimit", `"api";r=0;t=60`, "x-ratelimit-limit", "")
	expect(t, tg.send(t, map[string]string{":path": "/api/a"}), 429)
	expect(t, tg.send(t, map[string]string{":path": "/web"}), 200, "x-ratelimit-limit", "1", "ratelimit", "")
	expect(t, tg.send(t, map[string]string{":path": "/web"}), 429)
}
