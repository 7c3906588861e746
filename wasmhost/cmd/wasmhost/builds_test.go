package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// perMinute is a configuration allowing 2 requests a minute per x-user.
func perMinute(prefix, redis string) string {
	return fmt.Sprintf(`{"redis": {%s, "key_prefix": %q, "timeout": "2s"},
	 "rules": [{"name": "api", "key": [{"source": "header", "name": "x-user"}],
	            "limits": [{"name": "per-minute", "algorithm": "sliding_log", "limit": 2, "window": "1m"}]}]}`, redis, prefix)
}

// The Higress build with -redis: the cluster name the configuration uses
// (Higress's, not "redis") reaches the Redis given, so requests get
// RateLimit headers and the third is denied; the admin endpoints show
// the filter's counters as they are now, and every request is logged.
func TestHigressBuildServesTheConfigurationsCluster(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeFile(t, "plugin.json", perMinute(redistest.Prefix(t), `"cluster": "outbound|6379||redis.static"`))
	r := startCmd(t, "-wasm", distPath(t, dist.Higress), "-config", cfg, "-redis", srv.Addr)

	replies := untilDenied(t, r.url+"/api", map[string]string{"x-user": "alice"}, 3)
	if len(replies) != 3 || replies[2].status != 429 {
		t.Fatalf("statuses %v, want 200 200 429", statuses(replies))
	}
	if got := replies[0].header.Get("RateLimit"); got != `"per-minute";r=1;t=60` {
		t.Errorf("first RateLimit %q", got)
	}
	if r.app.host.RedisCalls()["outbound|6379||redis.static"] == 0 {
		t.Errorf("no call on the configuration's cluster: %v", r.app.host.RedisCalls())
	}
	for _, want := range []string{"Higress build (imports proxy_redis_call", "redis.transport redis_abi",
		`redis cluster "outbound|6379||redis.static" -> ` + srv.Addr + " (-redis)", "X-Forwarded-For is not trusted"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("start-up summary lacks %q:\n%s", want, r.stderr)
		}
	}

	stats := adminGet(t, r.adminURL()+"/stats", 200)
	for _, want := range []string{"wasmcustom.ratelimit.rule.api.allowed: 2\n", "wasmcustom.ratelimit.rule.api.denied: 1\n"} {
		if !strings.Contains(stats, want) {
			t.Errorf("/stats lacks %q:\n%s", want, stats)
		}
	}
	if got := adminGet(t, r.adminURL()+"/stats?filter=rule%5C.api%5C.denied", 200); got != "wasmcustom.ratelimit.rule.api.denied: 1\n" {
		t.Errorf("/stats?filter: %q", got)
	}
	prom := adminGet(t, r.adminURL()+"/stats/prometheus", 200)
	for _, want := range []string{"# TYPE ratelimit_rule_api_allowed counter\nratelimit_rule_api_allowed{} 2\n",
		"# TYPE ratelimit_redis_pending gauge\n", "# TYPE ratelimit_redis_latency_ms histogram\n", `ratelimit_redis_latency_ms_bucket{le="+Inf"} `} {
		if !strings.Contains(prom, want) {
			t.Errorf("/stats/prometheus lacks %q:\n%s", want, prom)
		}
	}
	if strings.Contains(prom, "wasmcustom") || strings.Contains(prom, "envoy_") {
		t.Errorf("/stats/prometheus keeps a prefix Envoy strips:\n%s", prom)
	}
	if got := adminGet(t, r.adminURL()+"/ready", 200); got != "LIVE\n" {
		t.Errorf("/ready %q", got)
	}

	lines := r.accessLines()
	if len(lines) != 3 || !strings.Contains(lines[2], `"GET /api HTTP/1.1" 429 `) || !strings.HasSuffix(lines[2], ` rl="rule=api limit=per-minute remaining=0 decision=denied reason=rate_limited"`) {
		t.Errorf("access log:\n%s", strings.Join(lines, "\n"))
	}
}

// The stock build reaches Redis through -http-cluster and a real Webdis.
func TestStockBuildThroughWebdis(t *testing.T) {
	srv := redistest.Start(t)
	webdis := redistest.StartWebdis(t, srv.Addr)
	cfg := writeFile(t, "plugin.json", perMinute(redistest.Prefix(t), fmt.Sprintf(
		`"transport": "webdis", "cluster": "webdis", "username": %q, "password": %q`, redistest.WebdisUser, redistest.WebdisPassword)))
	r := startCmd(t, "-wasm", distPath(t, dist.Stock), "-config", cfg, "-http-cluster", "webdis=http://"+webdis)

	replies := untilDenied(t, r.url+"/", map[string]string{"x-user": "bob"}, 3)
	if len(replies) != 3 || replies[2].status != 429 || replies[0].header.Get("RateLimit") != `"per-minute";r=1;t=60` {
		t.Fatalf("statuses %v, first RateLimit %q; want 200 200 429 with r=1", statuses(replies), replies[0].header.Get("RateLimit"))
	}
	for _, want := range []string{"stock build (no proxy_redis_call import", "redis.transport webdis",
		`http cluster "webdis" -> ` + webdis + " (-http-cluster)"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("start-up summary lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr.String(), "any other Redis cluster name") {
		t.Errorf("the stock build was given a fallback Redis:\n%s", r.stderr)
	}
}

// A stock build with redis_abi (the default transport), or a webdis
// configuration without its cluster, fails at start saying what to do.
func TestBuildAndTransportMismatchRefused(t *testing.T) {
	abi := writeFile(t, "abi.json", perMinute("t:", `"cluster": "redis"`))
	webdis := writeFile(t, "webdis.json", perMinute("t:", `"transport": "webdis", "cluster": "webdis"`))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-wasm", distPath(t, dist.Stock), "-config", abi}, "is the stock build (it does not import proxy_redis_call)"},
		{[]string{"-wasm", distPath(t, dist.Stock), "-config", webdis}, `redis.cluster "webdis" (transport webdis) has no address: pass -http-cluster webdis=`},
		{[]string{"-wasm", distPath(t, dist.Stock), "-config", webdis, "-http-cluster", "webdis=127.0.0.1:1", "-redis-cluster", "r=127.0.0.1:2"},
			"-redis-cluster: the stock build makes no Redis callouts"},
	} {
		if _, err := tryStart(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// With -allow-on-headers-stop-iteration the filter reads a reservation
// from the request body at once: r=692 shows the body's max_tokens (300)
// was reserved, with the body's 30 bytes as 8 input tokens, not the
// default (100) taken after the filter's body wait.
func TestReserveFromBodyWithAllowOnHeadersStopIteration(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeFile(t, "plugin.json", fmt.Sprintf(`{"redis": {"cluster": "redis", "key_prefix": %q, "timeout": "2s"},
	 "rules": [{"name": "tpm", "key": [{"source": "header", "name": "x-api-key"}],
	            "limits": [{"algorithm": "sliding_log", "limit": 1000, "window": "1m"}],
	            "response_cost": {"usage": "openai_chat", "reserve": {"body": "max_tokens", "default": 100}}}]}`, redistest.Prefix(t)))
	r := startCmd(t, "-wasm", distPath(t, dist.Higress), "-config", cfg, "-redis", srv.Addr, "-allow-on-headers-stop-iteration")
	rep := get(t, r.url+"/v1/chat/completions", `{"model":"m","max_tokens":300}`, map[string]string{"x-api-key": "k"})
	if rep.status != 200 || !strings.Contains(rep.header.Get("RateLimit"), "r=692;") {
		t.Fatalf("status %d, RateLimit %q; want 200 with r=692", rep.status, rep.header.Get("RateLimit"))
	}
	// The built-in upstream answers a chat completion of max_tokens tokens:
	// it got the body.
	if u := chatUsageOf(t, rep.body); u.CompletionTokens != 300 {
		t.Errorf("the upstream's usage %+v: it did not get the body's max_tokens 300", u)
	}
	if !strings.Contains(r.stderr.String(), "allow_on_headers_stop_iteration true") {
		t.Errorf("summary:\n%s", r.stderr)
	}
}

func statuses(rs []reply) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.status
	}
	return out
}

// adminGet reads an admin endpoint, which must answer want.
func adminGet(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d %q, want %d", url, resp.StatusCode, b, want)
	}
	return string(b)
}
