package filter

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// quotaAnswer is the quota endpoint's JSON.
type quotaAnswer struct {
	Rules []struct {
		Rule       string `json:"rule"`
		Tier       string `json:"tier"`
		Override   bool   `json:"override"`
		MissingKey bool   `json:"missing_key"`
		Limits     []struct {
			Name       string `json:"name"`
			Algorithm  string `json:"algorithm"`
			Limit      int64  `json:"limit"`
			Used       int64  `json:"used"`
			Remaining  int64  `json:"remaining"`
			Reset      int64  `json:"reset"`
			RetryAfter int64  `json:"retry_after"`
			Quota      int64  `json:"quota"`
			Window     int64  `json:"window"`
		} `json:"limits"`
	} `json:"rules"`
}

// quotaReply is what the client of one request saw, and whether the
// request went on to the upstream.
type quotaReply struct {
	status   int
	headers  map[string]string
	body     string
	answer   quotaAnswer
	upstream bool
}

// request sends one request of method to path, pumping every call.
func (h *fakeHost) request(method, path string, headers ...string) quotaReply {
	h.t.Helper()
	pairs := [][2]string{{":method", method}, {":path", path}, {":authority", "example.com"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = setPair(pairs, k, v)
	}
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	a := st.OnRequestHeaders(pairs)
	h.Pump()
	r := quotaReply{status: fs.Status, headers: fs.Headers, body: fs.Body, upstream: a == Continue || fs.Resumed > 0}
	if r.upstream && r.status != 0 {
		h.t.Fatalf("both answered (%d) and sent upstream", r.status)
	}
	st.OnDone()
	h.Pump()
	if r.status == 200 {
		if err := json.Unmarshal([]byte(r.body), &r.answer); err != nil {
			h.t.Fatalf("quota body %q: %v", r.body, err)
		}
	}
	return r
}

const quotaConfig = `{"redis":{"cluster":"redis"},"quota_endpoint":{"path":"/v1/quota"},"rules":[
	{"name":"chat","match":{"path_prefix":"/v1/chat"},"key":[{"source":"header","name":"x-key"}],
	 "limits":[{"name":"chat.minute","algorithm":"sliding_counter","limit":5,"window":"1m"},
	           {"name":"chat.hour","algorithm":"funnel","capacity":20,"rate":20,"period":"1h"}]},
	{"name":"team","match":{"path_prefix":"/v1/chat"},"key":[{"source":"header","name":"x-team"}],
	 "limits":[{"algorithm":"sliding_log","limit":50,"window":"1h"}]}]}`

// The endpoint reads each rule's key from its own request's headers, as
// the rule builds it, charging nothing; a rule whose key part is missing
// is listed as such; the upstream is never called.
func TestQuotaEndpointKeysFromHeaders(t *testing.T) {
	h := newFakeHost(t, quotaConfig)
	for range 3 {
		if r := h.request("POST", "/v1/chat/completions", "x-key=k1", "x-team=t1"); !r.upstream {
			t.Fatalf("chat: %+v", r)
		}
	}
	for i := range 2 { // twice: the first read charged nothing
		r := h.request("GET", "/v1/quota", "x-key=k1")
		if r.upstream || r.status != 200 || r.headers["content-type"] != "application/json" || len(r.answer.Rules) != 2 {
			t.Fatalf("read %d: %+v", i, r)
		}
		chat, team := r.answer.Rules[0], r.answer.Rules[1]
		if chat.Rule != "chat" || len(chat.Limits) != 2 || team.Rule != "team" || !team.MissingKey || len(team.Limits) != 0 {
			t.Fatalf("read %d: %s", i, r.body)
		}
		m, hr := chat.Limits[0], chat.Limits[1]
		if m.Name != "chat.minute" || m.Algorithm != "sliding_counter" || m.Limit != 5 || m.Used != 3 || m.Remaining != 2 ||
			m.Quota != 5 || m.Window != 60 || m.Reset < 1 || m.Reset > 120 || m.RetryAfter != 0 {
			t.Fatalf("read %d, minute: %s", i, r.body)
		}
		if hr.Name != "chat.hour" || hr.Used != 3 || hr.Remaining != 17 || hr.Window != 3600 {
			t.Fatalf("read %d, hour: %s", i, r.body)
		}
	}
	r := h.request("GET", "/v1/quota", "x-key=k2", "x-team=t1")
	if r.status != 200 || r.answer.Rules[0].Limits[0].Used != 0 || r.answer.Rules[0].Limits[0].Remaining != 5 ||
		r.answer.Rules[1].MissingKey || r.answer.Rules[1].Limits[0].Used != 3 || r.answer.Rules[1].Limits[0].Remaining != 47 {
		t.Fatalf("k2 of team t1: %s", r.body)
	}
	if r := h.request("POST", "/v1/quota", "x-key=k1"); !r.upstream {
		t.Fatalf("another method is an ordinary request: %+v", r)
	}
	if r := h.request("GET", "/v1//quota?x=1", "x-key=k1"); r.status != 200 || r.upstream {
		t.Fatalf("the path is matched normalized, without query: %+v", r)
	}
}

// A tier a header names, and one Redis names, with an operator's
// override, are shown as the call that decides a request would pick them.
func TestQuotaEndpointTiersAndOverrides(t *testing.T) {
	h := newFakeHost(t, strings.Replace(tieredByHeader, `{"redis"`, `{"quota_endpoint":{"path":"/quota"},"redis"`, 1))
	h.send("x-key=k1", "x-plan=pro")
	// The rule matches every path: the read is charged first, as any request.
	r := h.request("GET", "/quota", "x-key=k1", "x-plan=pro")
	if r.status != 200 || r.answer.Rules[0].Tier != "pro" || len(r.answer.Rules[0].Limits) != 2 ||
		r.answer.Rules[0].Limits[0].Used != 2 || r.answer.Rules[0].Limits[1].Name != "pro-hourly" || r.answer.Rules[0].Limits[1].Remaining != 8 {
		t.Fatalf("pro: %s", r.body)
	}
	if r := h.request("GET", "/quota", "x-key=k2"); r.answer.Rules[0].Tier != "free" || len(r.answer.Rules[0].Limits) != 1 ||
		r.answer.Rules[0].Limits[0].Remaining != 1 {
		t.Fatalf("free: %s", r.body)
	}

	h = newFakeHost(t, strings.Replace(tieredInRedis, `{"redis"`, `{"quota_endpoint":{"path":"/quota"},"redis"`, 1))
	h.plugin.top().denyCache = nil
	cfg := h.plugin.cfg
	base, err := keyspace.RuleKey(cfg, &cfg.Rules[0], []string{"k1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Do("SET", keyspace.TierKey(base), "pro"); err != nil {
		t.Fatal(err)
	}
	h.send("x-key=k1")
	if r := h.request("GET", "/quota", "x-key=k1"); r.answer.Rules[0].Tier != "pro" || r.answer.Rules[0].Limits[0].Remaining != 1 {
		t.Fatalf("pro from Redis: %s", r.body)
	}
	v, err := config.ParseOverride(&cfg.Rules[0], []byte(`[{"algorithm":"sliding_log","limit":5000,"window":"1m"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Do("SET", keyspace.OverrideKey(base), v, "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	r = h.request("GET", "/quota", "x-key=k1")
	if l := r.answer.Rules[0].Limits; !r.answer.Rules[0].Override || r.answer.Rules[0].Tier != "" || len(l) != 1 ||
		l[0].Name != "api.override" || l[0].Limit != 5000 || l[0].Used != 3 || l[0].Remaining != 4997 {
		t.Fatalf("override: %s", r.body)
	}
}

// A limit a response charged past its end shows its debt: remaining
// below 0, used beyond the limit, reset at least until it clears.
func TestQuotaEndpointShowsDebt(t *testing.T) {
	for _, algo := range []string{"sliding_log", "funnel"} {
		t.Run(algo, func(t *testing.T) {
			conf := `{"redis":{"cluster":"redis"},"quota_endpoint":{"path":"/quota"},"rules":[{"name":"llm","match":{"path":"/"},
				"key":[{"source":"header","name":"x-key"}],"limits":[` + costLimits[algo] + `],
				"response_cost":{"header":"x-used","reserve":{"header":"x-max","default":10},"max_cost":200}}]}`
			h := newFakeHost(t, conf)
			h.finish(h.admit(10), 150)
			r := h.request("GET", "/quota", "x-key=k")
			l := r.answer.Rules[0].Limits
			if r.status != 200 || len(l) != 1 || l[0].Limit != 100 || l[0].Remaining != -50 || l[0].Used != 150 || l[0].Reset < 1 || l[0].RetryAfter < 1 {
				t.Fatalf("debt: %s", r.body)
			}
			if r := h.request("GET", "/quota", "x-key=other"); r.answer.Rules[0].Limits[0].Remaining != 100 {
				t.Fatalf("another key: %s", r.body)
			}
		})
	}
}

// The endpoint's request is decided by the rules that match it: within
// them it is answered with their headers, past them it is denied, and
// neither reaches the upstream.
func TestQuotaEndpointIsRateLimited(t *testing.T) {
	conf := strings.Replace(quotaConfig, `"rules":[`, `"rules":[
		{"name":"quota-reads","match":{"path":"/v1/quota"},"key":[{"source":"client_ip"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]},`, 1)
	conf = strings.Replace(conf, `"quota_endpoint":{"path":"/v1/quota"}`, `"quota_endpoint":{"path":"/v1/quota","rules":["chat","team"]}`, 1)
	h := newFakeHost(t, conf)
	for i, want := range []string{`"quota-reads";r=1;t=60`, `"quota-reads";r=0;t=60`} {
		r := h.request("GET", "/v1/quota", "x-key=k1")
		if r.status != 200 || r.upstream || r.headers["ratelimit"] != want || len(r.answer.Rules) != 2 {
			t.Fatalf("read %d: %+v", i, r)
		}
	}
	r := h.request("GET", "/v1/quota", "x-key=k1")
	if r.status != 429 || r.upstream || !strings.Contains(r.body, `"rule":"quota-reads"`) {
		t.Fatalf("third read: %+v", r)
	}
}

// When Redis fails, the endpoint answers failure_status with an error,
// whatever failure_mode says: failing open would send it upstream.
func TestQuotaEndpointRedisDown(t *testing.T) {
	for _, mode := range []string{"allow", "deny"} {
		h := newFakeHost(t, strings.Replace(quotaConfig, `{"redis"`, `{"failure_mode":"`+mode+`","failure_status":503,"redis"`, 1))
		h.Down = true
		r := h.request("GET", "/v1/quota", "x-key=k1")
		if r.status != 503 || r.upstream || !strings.Contains(r.body, `"error":"ratelimit_unavailable"`) || r.headers["content-type"] != "application/json" {
			t.Fatalf("%s: %+v", mode, r)
		}
		if h.plugin.Pending() != 0 || h.plugin.LiveStreams() != 0 {
			t.Fatalf("%s: pending %d, live %d", mode, h.plugin.Pending(), h.plugin.LiveStreams())
		}
	}
}

// One call reads every rule's key; under redis.cluster_mode, one per rule,
// as their keys' hash tags differ. A rule with a missing key costs none.
func TestQuotaEndpointCalls(t *testing.T) {
	for _, tc := range []struct {
		redis   string
		headers []string
		calls   uint32
	}{
		{`"redis":{"cluster":"redis"}`, []string{"x-key=k1", "x-team=t1"}, 1},
		{`"redis":{"cluster":"redis","cluster_mode":true}`, []string{"x-key=k1", "x-team=t1"}, 2},
		{`"redis":{"cluster":"redis","cluster_mode":true}`, []string{"x-key=k1"}, 1},
		{`"redis":{"cluster":"redis"}`, nil, 0},
	} {
		h := newFakeHost(t, strings.Replace(quotaConfig, `"redis":{"cluster":"redis"}`, tc.redis, 1))
		r := h.request("GET", "/v1/quota", tc.headers...)
		if r.status != 200 || len(r.answer.Rules) != 2 || h.Calls != tc.calls {
			t.Fatalf("%s %v: %d calls, want %d: %+v", tc.redis, tc.headers, h.Calls, tc.calls, r)
		}
	}
}

// The most calls an endpoint request makes when no rule matches its path:
// redis.cluster_mode, 8 listed rules of one limit each, every limit spent,
// so a peek and a settle per rule; under redis.command: evalsha, each peek
// also meets -NOSCRIPT once. Never more than maxQuotaCalls.
func TestQuotaEndpointCallsBounded(t *testing.T) {
	var rules []string
	for i := range config.MaxRequestLimits {
		rules = append(rules, `{"name":"r`+strconv.Itoa(i)+`","match":{"path_prefix":"/spend"},"key":[{"source":"header","name":"x-key"}],
			"limits":[{"algorithm":"sliding_log","limit":1,"window":"1h"}]}`)
	}
	for _, tc := range []struct {
		command string
		calls   uint32
	}{{"fcall", 2 * config.MaxRequestLimits}, {"evalsha", 3 * config.MaxRequestLimits}} {
		h := newFakeHost(t, `{"redis":{"cluster":"redis","cluster_mode":true,"command":"`+tc.command+`"},
			"deny_cache":{"max_keys":0},"quota_endpoint":{"path":"/v1/quota"},"rules":[`+strings.Join(rules, ",")+`]}`)
		if r := h.request("GET", "/spend", "x-key=k"); !r.upstream {
			t.Fatalf("%s: spending: %+v", tc.command, r)
		}
		if tc.command == "evalsha" {
			if _, err := server.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		before := h.Calls
		r := h.request("GET", "/v1/quota", "x-key=k")
		if r.status != 200 || len(r.answer.Rules) != config.MaxRequestLimits || r.answer.Rules[7].Limits[0].Remaining != 0 {
			t.Fatalf("%s: %+v", tc.command, r)
		}
		if got := h.Calls - before; got != tc.calls || got > maxQuotaCalls {
			t.Errorf("%s: %d calls for one endpoint request, want %d (at most %d)", tc.command, got, tc.calls, maxQuotaCalls)
		}
	}
}
