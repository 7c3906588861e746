package filter

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

func TestParseMatchRules(t *testing.T) {
	data := readFixture(t, "config/testdata/valid/match-rules.json")
	c, err := config.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rules) != 1 || c.Rules[0].Name != "per-ip" || len(c.MatchRules) != 4 {
		t.Fatalf("top level: %+v", c)
	}
	login, hosts, search, consumers := c.MatchRules[0], c.MatchRules[1], c.MatchRules[2], c.MatchRules[3]
	if !slices.Equal(login.Routes, []string{"default/login"}) || !slices.Equal(login.Services, []string{"auth.default.svc.cluster.local:8080"}) ||
		login.Config.Rules[0].Name != "login-per-ip" || !login.Config.FailOpen || login.Config.MatchRules != nil {
		t.Fatalf("route entry: %+v", login)
	}
	if !slices.Equal(hosts.Domains, []string{"*.example.com", "api.*", "admin.example.org"}) || hosts.Config.FailOpen || len(hosts.Config.Rules) != 2 {
		t.Fatalf("domain entry (domains in lower case, its own failure_mode): %+v", hosts)
	}
	if !slices.Equal(search.Services, []string{"search.default.svc.cluster.local"}) || search.Config.Headers != config.HeadersDraft10 {
		t.Fatalf("service entry: %+v", search)
	}
	if !slices.Equal(consumers.RoutePrefixes, []string{"api-"}) || !slices.Equal(consumers.Consumers, []string{"alice", "bob"}) ||
		consumers.Config.Headers != config.HeadersLegacy {
		t.Fatalf("route prefix entry: %+v", consumers)
	}
	for _, mr := range c.MatchRules {
		if !mr.Config.Redis.Equal(&c.Redis) {
			t.Fatalf("redis %+v, top level %+v", mr.Config.Redis, c.Redis)
		}
	}

	data = readFixture(t, "config/testdata/valid/match-rules-only.json")
	if c, err = config.Parse(data); err != nil {
		t.Fatal(err)
	}
	if len(c.Rules) != 0 || c.DenyCacheKeys != 0 || c.Redis.Cluster != "redis" || len(c.MatchRules) != 1 {
		t.Fatalf("only _rules_: %+v", c)
	}
}

func TestMatchRuleErrors(t *testing.T) {
	entry := `"redis":{"cluster":"r"},"rules":[{"name":"a","key":[{"source":"path"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1s"}]}]`
	for _, tc := range []struct{ conf, want string }{
		{`{"_rules_":[{"_match_route_":["x"],` + entry + `,"_rules_":[]}]}`, "_rules_[0]._rules_: unknown field"},
		{`{"failure_mode":"open",` + entry + `,"_rules_":[{"_match_route_":["x"],` + entry + `}]}`, "failure_mode: must be one of allow, deny"},
		{`{"failure_mode":"deny","_rules_":[{"_match_route_":["x"],` + entry + `}]}`, "redis: required"},
		{`{"_match_route_":["x"],` + entry + `}`, "_match_route_: unknown field"},
		{`{"_rules_":[{"_match_route_":["x"],"_match_route_prefix_":["y"],` + entry + `}]}`, "_rules_[0]._match_route_prefix_: not allowed with _match_route_"},
		{`{"_rules_":[{"_match_domain_":["x"],"_match_service_":["y"],` + entry + `}]}`, "_rules_[0]._match_service_: not allowed with _match_domain_"},
		{`{"_rules_":[{"_match_service_":["x"],"_match_consumer_":["y"],` + entry + `}]}`, "_rules_[0]._match_consumer_: not allowed with _match_service_"},
		{`{"_rules_":[{"_match_domain_":["*a*"],` + entry + `}]}`, `_rules_[0]._match_domain_[0]: "*" may only be`},
		{`{"_rules_":[{"_match_domain_":["**"],` + entry + `}]}`, `_rules_[0]._match_domain_[0]: "*" may only be`},
		{`{"_rules_":[{"_match_route_":["x",""],` + entry + `}]}`, "_rules_[0]._match_route_: must be a non-empty array of non-empty strings"},
	} {
		_, err := config.Parse([]byte(tc.conf))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s\ngot  %v\nwant %s...", tc.conf, err, tc.want)
		}
	}
}

// propStream serves stream properties and counts the reads.
type propStream struct {
	peer
	props map[string]string
	reads []string
}

func (s *propStream) Property(name string) string {
	s.reads = append(s.reads, name)
	return s.props[name]
}

func TestMatchRuleMatches(t *testing.T) {
	const svc = "outbound|8080||auth.default.svc.cluster.local"
	for _, tc := range []struct {
		name      string
		rule      config.MatchRule
		route     string
		cluster   string
		headers   [][2]string
		want      bool
		wantReads string
	}{
		{"route", config.MatchRule{Routes: []string{"default/a", "default/b"}}, "default/b", "", nil, true, "route_name"},
		{"route is exact", config.MatchRule{Routes: []string{"default/a"}}, "default/ab", "", nil, false, "route_name"},
		{"no route", config.MatchRule{Routes: []string{"default/a"}}, "", "", nil, false, "route_name"},
		{"route and service", config.MatchRule{Routes: []string{"r"}, Services: []string{"auth.default.svc.cluster.local"}}, "r", svc, nil, true, "route_name cluster_name"},
		{"route, other service", config.MatchRule{Routes: []string{"r"}, Services: []string{"search.default.svc.cluster.local"}}, "r", svc, nil, false, "route_name cluster_name"},
		{"service by fqdn", config.MatchRule{Services: []string{"auth.default.svc.cluster.local"}}, "", svc, nil, true, "cluster_name"},
		{"service by fqdn:port", config.MatchRule{Services: []string{"auth.default.svc.cluster.local:8080"}}, "", svc, nil, true, "cluster_name"},
		{"service, other port", config.MatchRule{Services: []string{"auth.default.svc.cluster.local:80"}}, "", svc, nil, false, "cluster_name"},
		{"service with subset", config.MatchRule{Services: []string{"auth.default.svc.cluster.local:8080"}}, "", "outbound|8080|v1|auth.default.svc.cluster.local", nil, true, "cluster_name"},
		{"not a mesh cluster", config.MatchRule{Services: []string{"auth"}}, "", "auth", nil, false, "cluster_name"},
		{"domain", config.MatchRule{Domains: []string{"api.example.com"}}, "", "", [][2]string{{":authority", "API.example.com:8443"}}, true, ""},
		{"domain suffix", config.MatchRule{Domains: []string{"*.example.com"}}, "", "", [][2]string{{":authority", "a.b.example.com"}}, true, ""},
		{"domain suffix, apex", config.MatchRule{Domains: []string{"*.example.com"}}, "", "", [][2]string{{":authority", "example.com"}}, false, ""},
		{"domain prefix", config.MatchRule{Domains: []string{"api.*"}}, "", "", [][2]string{{":authority", "api.example.org"}}, true, ""},
		{"any domain", config.MatchRule{Domains: []string{"*"}}, "", "", [][2]string{{":authority", "x"}}, true, ""},
		{"other domain", config.MatchRule{Domains: []string{"api.example.com"}}, "", "", [][2]string{{":authority", "www.example.com"}}, false, ""},
		{"route prefix", config.MatchRule{RoutePrefixes: []string{"api-"}}, "api-orders", "", nil, true, "route_name"},
		{"route prefix and consumer", config.MatchRule{RoutePrefixes: []string{"api-"}, Consumers: []string{"alice"}}, "api-orders", "",
			[][2]string{{"x-mse-consumer", "alice"}}, true, "route_name"},
		{"consumer is the first value", config.MatchRule{RoutePrefixes: []string{"api-"}, Consumers: []string{"alice"}}, "api-orders", "",
			[][2]string{{"x-mse-consumer", "mallory"}, {"x-mse-consumer", "alice"}}, false, "route_name"},
		{"no consumer", config.MatchRule{RoutePrefixes: []string{"api-"}, Consumers: []string{"alice"}}, "api-orders", "", nil, false, "route_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &propStream{props: map[string]string{"route_name": tc.route, "cluster_name": tc.cluster}}
			ri := routeInfo{r: &request{headers: headermap.Append(nil, tc.headers), source: s}}
			if got := routeMatches(&tc.rule, &ri); got != tc.want {
				t.Fatalf("matches %v, want %v", got, tc.want)
			}
			if got := strings.Join(s.reads, " "); got != tc.wantReads {
				t.Fatalf("read %q, want %q", got, tc.wantReads)
			}
		})
	}
}

const routedConfig = `{"redis":{"cluster":"redis"},"rules":[{"name":"top","key":[{"source":"constant","value":"all"}],
	"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}],
 "_rules_":[
	{"_match_route_":["default/api"],"redis":{"cluster":"redis"},"rules":[{"name":"api","key":[{"source":"constant","value":"all"}],
		"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]}]},
	{"_match_domain_":["*.example.org"],"redis":{"cluster":"redis"},"headers":"legacy","rules":[{"name":"org","key":[{"source":"constant","value":"all"}],
		"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]}]}`

// The first _rules_ entry that matches decides, with its own limits,
// headers and metrics; other requests get the top-level configuration.
func TestMatchRulesPickTheConfiguration(t *testing.T) {
	h := newFakeHost(t, routedConfig)
	steps := []struct {
		route, authority string
		status           int
		header, value    string
	}{
		// Both entries match: the first wins.
		{"default/api", "a.example.org", 200, "ratelimit-policy", `"api";q=2;w=60`},
		{"default/api", "a.example.org", 200, "ratelimit", `"api";r=0;t=60`},
		{"default/api", "a.example.org", 429, "ratelimit", `"api";r=0;t=60`},
		{"default/web", "b.example.org:8080", 200, "x-ratelimit-remaining", "2"},
		{"", "b.example.org", 200, "x-ratelimit-remaining", "1"},
		{"default/web", "b.example.org", 200, "x-ratelimit-remaining", "0"},
		{"default/web", "b.example.org", 429, "x-ratelimit-limit", "3"},
		{"default/web", "example.org", 200, "ratelimit", `"top";r=0;t=60`},
		{"default/web", "example.org", 429, "ratelimit", `"top";r=0;t=60`},
	}
	for i, st := range steps {
		h.props = map[string]string{"route_name": st.route}
		o := h.send(":authority=" + st.authority)
		if o.status != st.status || o.headers[st.header] != st.value {
			t.Fatalf("request %d (%s, %s): %+v", i, st.route, st.authority, o)
		}
	}
	for name, want := range map[string]uint64{"ratelimit.rule.api.allowed": 2, "ratelimit.rule.api.denied": 1,
		"ratelimit.rule.org.allowed": 3, "ratelimit.rule.org.denied": 1, "ratelimit.rule.top.allowed": 1, "ratelimit.rule.top.denied": 1} {
		if h.Counters[name] != want {
			t.Errorf("%s = %d, want %d", name, h.Counters[name], want)
		}
	}
	if h.plugin.Pending() != 0 || len(h.plugin.freeStreams) != 1 {
		t.Fatalf("pending %d; streams go back to the plugin: %d", h.plugin.Pending(),
			len(h.plugin.freeStreams))
	}
}

// With only _rules_, a request no entry matches is not limited, and costs
// no Redis call.
func TestOnlyMatchRulesLimitsNothingElse(t *testing.T) {
	data := readFixture(t, "config/testdata/valid/match-rules-only.json")
	h := newFakeHost(t, string(data))
	h.props = map[string]string{"route_name": "default/other"}
	for range 3 {
		if o := h.send("x-user-id=alice"); o.status != 200 || len(o.headers) != 0 || h.Calls != 0 {
			t.Fatalf("unmatched request: %+v, %d calls", o, h.Calls)
		}
	}
	h.props = map[string]string{"route_name": "default/api"}
	for _, want := range []int{200, 200, 429} {
		if o := h.send("x-user-id=alice"); o.status != want {
			t.Fatalf("matched request: %+v, want %d", o, want)
		}
	}
}

// A conf without _rules_, or whose entries need no property, reads none.
func TestPropertiesReadOnlyWhenNeeded(t *testing.T) {
	for _, tc := range []struct{ conf, want string }{
		{perUser, ""},
		{`{"_rules_":[{"_match_domain_":["*.example.org"],"redis":{"cluster":"redis"},"rules":[{"name":"org","key":[{"source":"path"}],
			"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]}]}`, ""},
		{routedConfig, "route_name"},
	} {
		h := newFakeHost(t, tc.conf)
		s := &propStream{props: map[string]string{}}
		st := h.plugin.NewStream(s)
		st.OnRequestHeaders([][2]string{{":path", "/"}, {":authority", "example.com"}, {"x-user", "a"}})
		h.Pump()
		st.OnDone()
		if got := strings.Join(s.reads, " "); got != tc.want {
			t.Errorf("read %q, want %q", got, tc.want)
		}
	}
}

// The top-level plugin's tick fails an entry's overdue call through the
// entry's plugin: its failure mode, its metrics.
func TestTickFailsAnEntrysOverdueCall(t *testing.T) {
	h := newFakeHost(t, `{"_rules_":[{"_match_route_":["r"],"redis":{"cluster":"redis"},"failure_mode":"deny","failure_status":503,
		"rules":[{"name":"api","key":[{"source":"path"}],"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]}]}`)
	h.Clock = time.Now()
	fs := filtertest.NewStream("", map[string]string{"route_name": "r"})
	st := h.plugin.NewStream(fs)
	if st.OnRequestHeaders([][2]string{{":path", "/"}}) != Pause || h.plugin.Pending() != 1 {
		t.Fatal("not paused on a call")
	}
	h.Clock = h.Clock.Add(h.plugin.policies[1].cfg.Redis.Timeout + 2*time.Second)
	h.plugin.OnTick()
	if fs.Status != 503 || h.plugin.Pending() != 0 || h.Counters["ratelimit.failure_mode.denied"] != 1 {
		t.Fatalf("overdue call: status %d, pending %d, %v", fs.Status, h.plugin.Pending(), h.Counters)
	}
	st.OnDone()
	h.Queue = nil
}

// Choosing an entry costs no allocation: a request matched by a _rules_
// entry allocates as much as the same request under a plain configuration.
func TestMatchRulesAllocateNothingMore(t *testing.T) {
	rule := `"rules":[{"name":"api","key":[{"source":"header","name":"x-user"},{"source":"path"}],
		"limits":[{"name":"second","algorithm":"sliding_log","limit":10,"window":"1s"}]}]`
	plain := `{"redis":{"cluster":"redis"},` + rule + `}`
	routed := `{"_rules_":[{"_match_domain_":["*.example.org"],"redis":{"cluster":"redis"},` + rule + `},
		{"_match_route_":["default/web"],"_match_service_":["web.default.svc.cluster.local"],"redis":{"cluster":"redis"},` + rule + `},
		{"_match_route_":["default/api"],"redis":{"cluster":"redis"},` + rule + `}]}`
	reply := redisproto.AppendArrayLen(nil, 7)
	for _, v := range []int64{1700000000000000, -2, 1, 10, 9, -1, 1000000} {
		reply = redisproto.AppendInt(reply, v)
	}
	headers := [][2]string{{":method", "GET"}, {":path", "/api/orders"}, {":authority", "example.com"}, {"x-user", "alice"}}
	s := &propStream{props: map[string]string{"route_name": "default/api", "cluster_name": "outbound|80||api.default.svc.cluster.local"}}
	allocs := func(conf string) float64 {
		t.Helper()
		cfg, err := config.Parse([]byte(conf))
		if err != nil {
			t.Fatal(err)
		}
		h := &benchHost{}
		p := NewPlugin(cfg, h)
		unpaused := 0
		n := testing.AllocsPerRun(200, func() {
			s.reads = s.reads[:0]
			st := p.NewStream(s)
			if st.OnRequestHeaders(headers) != Pause {
				unpaused++
			}
			p.OnRedisReply(h.id, true, reply)
			st.OnResponseHeaders(true)
			st.OnDone()
		})
		if unpaused > 0 {
			t.Fatalf("%d requests not paused", unpaused)
		}
		return n
	}
	a, b := allocs(plain), allocs(routed)
	t.Logf("allocations per request: %v plain, %v with _rules_", a, b)
	if a != b || len(s.reads) != 1 {
		t.Fatalf("allocations per request: %v plain, %v with _rules_; property reads %v", a, b, s.reads)
	}
}

// BenchmarkPick is choosing among three _rules_ entries, the last of which
// matches by route name: the per-request cost of _rules_, natively.
func BenchmarkPick(b *testing.B) {
	entry := `"redis":{"cluster":"redis"},"rules":[{"name":"a","key":[{"source":"path"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1s"}]}]`
	cfg, err := config.Parse([]byte(`{"_rules_":[{"_match_domain_":["*.example.org","api.*"],` + entry + `},
		{"_match_service_":["web.default.svc.cluster.local:80"],` + entry + `},{"_match_route_":["default/a","default/api"],` + entry + `}]}`))
	if err != nil {
		b.Fatal(err)
	}
	p := NewPlugin(cfg, &benchHost{})
	s := &propStream{props: map[string]string{"route_name": "default/api", "cluster_name": "outbound|8080||api.default.svc.cluster.local"}}
	r := &request{headers: headermap.Append(nil, [][2]string{{":method", "GET"}, {":path", "/api/orders"}, {":authority", "shop.example.com"}}), source: s}
	b.ReportAllocs()
	for range b.N {
		s.reads = s.reads[:0]
		if p.pick(r) != p.policies[3] {
			b.Fatal("picked another entry")
		}
	}
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
