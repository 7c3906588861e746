package deploy

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// ruleVar is what a per-rule metric name holds in place of the rule's
// name in promMetrics (and what the tests put for Grafana's ${rule}).
const ruleVar = "RULE"

// everyFeature is a plugin configuration that turns on every feature with
// metrics of its own: response_cost with a price table and concurrency
// (per-rule settle metrics), on_limit degrade, a lease, a throttle, failure_mode local, the circuit breaker,
// Higress's Redis callouts. Its rule names are replaced by ruleVar.
const everyFeature = `{
  "redis": {"transport": "redis_abi", "cluster": "redis", "timeout": "200ms"},
  "failure_mode": "local",
  "local_fallback": {"share": 0.5, "max_keys": 100},
  "circuit_breaker": {"failures": 5, "backoff": "1s"},
  "rules": [
    {"name": "llm-slots", "key": [{"source": "header", "name": "x-api-key"}],
     "limits": [{"algorithm": "concurrency", "limit": 2, "max_duration": "1m"},
                {"algorithm": "sliding_counter", "limit": 100, "window": "1m"}],
     "response_cost": {"usage": "openai_chat", "reserve": 0,
                       "price": {"unit": "micro_usd", "default": "refuse", "models": {"m": {"input": "1", "output": "2"}}}},
     "on_limit": {"action": "degrade"}},
    {"name": "leased", "key": [{"source": "constant", "value": "all"}],
     "limits": [{"algorithm": "sliding_counter", "limit": 1000, "window": "1m"}], "lease": {}},
    {"name": "throttled", "key": [{"source": "client_ip"}],
     "limits": [{"algorithm": "funnel", "capacity": 10, "rate": 5, "period": "1s"}], "throttle": {}}
  ]
}`

// everyNode is the stock build's configuration with redis.nodes, whose
// metrics (ratelimit.redis.moved, .slot_map_loads, .unknown_node, and
// .retried once a call waits) exist only there: redis_abi has no nodes.
// Its rule rpc has jsonrpc (ratelimit.jsonrpc.*).
const everyNode = `{
  "redis": {"transport": "webdis", "cluster_mode": true, "timeout": "200ms",
            "nodes": [{"address": "node-0:6379", "cluster": "webdis-0"}]},
  "rules": [
    {"name": "per-node", "key": [{"source": "header", "name": "x-user"}],
     "limits": [{"algorithm": "sliding_counter", "limit": 100, "window": "1m"}]},
    {"name": "rpc", "key": [{"source": "call", "path": "method"}], "jsonrpc": {"max_keys": 1},
     "limits": [{"algorithm": "sliding_counter", "limit": 100, "window": "1m"}]}
  ]
}`

var everyFeatureRules = []string{"llm-slots", "leased", "throttled", "per-node", "rpc"}

// promName is a metric's name as Envoy's /stats/prometheus writes it: the
// "wasmcustom." namespace stripped, no "envoy_" added, every byte outside
// [a-zA-Z0-9_] turned into "_" (source/server/admin/prometheus_stats.cc).
func promName(name string) string {
	name = strings.TrimPrefix(name, "wasmcustom.")
	return regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(name, "_")
}

var promMetricsOnce struct {
	sync.Once
	names map[string]wasmhost.StatKind
	err   string
}

// promMetrics returns the metrics the Higress build defines at plugin
// start in the project's wasm host, given everyFeature, by their
// Prometheus names (histograms as their _bucket, _sum and _count series;
// per-rule names with ruleVar for the rule), each with its kind.
func promMetrics(t *testing.T) map[string]wasmhost.StatKind {
	t.Helper()
	promMetricsOnce.Do(func() {
		defined := definedStats(t)
		promMetricsOnce.names = map[string]wasmhost.StatKind{}
		for name, kind := range defined {
			p := promName(name)
			for _, r := range everyFeatureRules {
				if rest, ok := strings.CutPrefix(p, "ratelimit_rule_"+promName(r)+"_"); ok {
					p = "ratelimit_rule_" + ruleVar + "_" + rest
				}
			}
			if kind == wasmhost.StatHistogram {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					promMetricsOnce.names[p+suffix] = kind
				}
				continue
			}
			promMetricsOnce.names[p] = kind
		}
	})
	if promMetricsOnce.names == nil {
		t.Fatal("the defined metrics could not be read (see the first test that asked)")
	}
	return promMetricsOnce.names
}

// definedStats starts the Higress build with everyFeature, and the stock
// build with everyNode behind a Webdis that answers every call -TRYAGAIN
// (so that one waits, and ratelimit.redis.retried is defined), and returns
// the names of the metrics they defined, with their kinds.
func definedStats(t *testing.T) map[string]wasmhost.StatKind {
	t.Helper()
	parsePluginConfig(t, "everyFeature", []byte(everyFeature))
	parsePluginConfig(t, "everyNode", []byte(everyNode))
	h := startHost(t, wasmhost.Config{
		Module:        filterModule(t, "higress"),
		PluginConfig:  []byte(everyFeature),
		Upstream:      upstream(t),
		Workers:       1,
		RedisClusters: map[string]string{"redis": "127.0.0.1:1"},
	})
	out := map[string]wasmhost.StatKind{}
	for _, s := range h.Stats() {
		out[s.Name] = s.Kind
	}
	webdis := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(string(body), "CLUSTER/NODES") {
			io.WriteString(w, `{"CLUSTER":"0123456789012345678901234567890123456789 127.0.0.1:6379@16379,node-0 myself,master - 0 0 1 connected 0-16383\n"}`)
			return
		}
		io.WriteString(w, `{"FCALL":[false,"TRYAGAIN Multiple keys request during rehashing of slot"]}`)
	}))
	t.Cleanup(webdis.Close)
	stock := startHost(t, wasmhost.Config{
		Module:       filterModule(t, ""),
		PluginConfig: []byte(everyNode),
		Upstream:     upstream(t),
		Workers:      1,
		HTTPClusters: map[string]string{"webdis-0": strings.TrimPrefix(webdis.URL, "http://")},
	})
	req, _ := http.NewRequest("GET", stock.URL()+"/", nil)
	req.Header.Set("x-user", "u")
	resp, err := http.DefaultClient.Do(req) // failure_mode allow, once redis.timeout has passed
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, s := range stock.Stats() {
		out[s.Name] = s.Kind
	}
	return out
}

// sourceMetrics reads the metric names the filter's code defines: each
// literal "ratelimit...." passed to Counter, Gauge or Histogram in
// filter/*.go, and ratelimit.rule.<name>.<event> for each Outcome and
// Event constant of filter/config/names.go.
func sourceMetrics(t *testing.T) map[string]wasmhost.StatKind {
	t.Helper()
	files, err := filepath.Glob(repoPath("filter/*.go"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]wasmhost.StatKind{"Counter": wasmhost.StatCounter, "Gauge": wasmhost.StatGauge, "Histogram": wasmhost.StatHistogram}
	call := regexp.MustCompile(`\.(Counter|Gauge|Histogram)\("(ratelimit\.[a-z_.]+)"\)`)
	out := map[string]wasmhost.StatKind{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(data), -1) {
			out[m[2]] = kinds[m[1]]
		}
	}
	names, err := os.ReadFile(repoPath("filter/config/names.go"))
	if err != nil {
		t.Fatal(err)
	}
	events := regexp.MustCompile(`(?m)^\s*(?:const\s+)?(?:Outcome|Event)\w+\s*=\s*"(\w+)"`).FindAllStringSubmatch(string(names), -1)
	for _, m := range events {
		out["ratelimit.rule."+ruleVar+"."+m[1]] = wasmhost.StatCounter
	}
	if len(out) < 40 || len(events) < 10 {
		t.Fatalf("read %d metric names (%d per-rule events) from the filter's code: the patterns no longer match it", len(out), len(events))
	}
	return out
}

// The metrics the filter defines with every feature on are exactly those
// its code names, with the kinds the code gives them: everyFeature misses
// no feature, and promMetrics is the whole set.
func TestDefinedMetricsMatchTheCode(t *testing.T) {
	want := map[string]wasmhost.StatKind{}
	for name, kind := range sourceMetrics(t) {
		want[promName(name)] = kind
	}
	got := map[string]wasmhost.StatKind{}
	for name, kind := range definedStats(t) {
		for _, r := range everyFeatureRules {
			name = strings.Replace(name, "ratelimit.rule."+r+".", "ratelimit.rule."+ruleVar+".", 1)
		}
		got[promName(name)] = kind
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if k, ok := got[name]; !ok {
			t.Errorf("%s: in the code, not defined with everyFeature: turn its feature on there", name)
		} else if k != want[name] {
			t.Errorf("%s: kind %d, the code says %d", name, k, want[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: defined, but not found in filter/*.go or filter/config/names.go by sourceMetrics", name)
		}
	}
	t.Logf("%d metrics", len(got))
}
