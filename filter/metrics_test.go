package filter

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/internal/istiotags"
)

// Every fixed metric and every outcome of a plain rule name is left whole
// by Istio's tag regexes, and by the old name's fate: ".shadow_denied" was.
func TestMetricNamesSurviveIstioTags(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"redis":{"cluster":"r"},"rules":[{"name":"api","key":[{"source":"path"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1s"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := &metricNames{}
	newMetrics(cfg, h)
	if len(h.defined) < 10 {
		t.Fatalf("only %d metrics defined", len(h.defined))
	}
	for _, name := range h.defined {
		if tag := istiotags.Match("wasmcustom." + name); tag != "" {
			t.Errorf("%s: tag %s cuts it", name, tag)
		}
	}
	if istiotags.Match("wasmcustom.ratelimit.rule.api.shadow_denied") != "authz_dry_run_result" {
		t.Fatal("the regex set no longer shows why shadow_denied was renamed")
	}
}

// metricNames records the names of the metrics a plugin defines.
type metricNames struct {
	PluginHost
	defined []string
}

func (m *metricNames) Counter(name string) Counter {
	m.defined = append(m.defined, name)
	return nil
}

func (m *metricNames) Gauge(name string) Gauge {
	m.defined = append(m.defined, name)
	return nil
}

func (m *metricNames) Histogram(name string) Histogram {
	m.defined = append(m.defined, name)
	return nil
}
