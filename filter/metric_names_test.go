package filter

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

// istioStatsTags are the stats_tags regexes of Istio's bootstrap
// (tools/packaging/common/envoy_bootstrap.json) that are not anchored to a
// prefix our metrics cannot have (cluster., tcp., listener., http., mongo.)
// and do not need "=" (the name=.=value;.; tags), which a rule name cannot
// hold. The response_code regexes end in $, after a digit; ours end in an
// outcome word.
var istioStatsTags = map[string]*regexp.Regexp{
	"cache":                regexp.MustCompile(`(cache\.(.+?)\.)`),
	"component":            regexp.MustCompile(`(component\.(.+?)\.)`),
	"tag":                  regexp.MustCompile(`(tag\.(.+?);\.)`),
	"wasm_filter":          regexp.MustCompile(`(wasm_filter\.(.+?)\.)`),
	"authz_enforce_result": regexp.MustCompile(`rbac(\.(allowed|denied))`),
	"authz_dry_run_action": regexp.MustCompile(`(\.istio_dry_run_(allow|deny)_)`),
	"authz_dry_run_result": regexp.MustCompile(`(\.shadow_(allowed|denied))`),
	"response_code":        regexp.MustCompile(`_rq(_(\d{3}))$`),
	"response_code_class":  regexp.MustCompile(`_rq(_(\dxx))$`),
}

func regexTag(name string) string {
	for tag, re := range istioStatsTags {
		if re.MatchString(name) {
			return tag
		}
	}
	return ""
}

// Every fixed metric and every outcome of a plain rule name is left whole
// by Istio's tag regexes, and by the old name's fate: ".shadow_denied" was.
func TestMetricNamesSurviveIstioTags(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"redis":{"cluster":"r"},"rules":[{"name":"api","key":[{"source":"path"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1s"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := &metricNames{}
	newMetrics(cfg, h)
	if len(h.defined) < 10 {
		t.Fatalf("only %d metrics defined", len(h.defined))
	}
	for _, name := range h.defined {
		if tag := regexTag("wasmcustom." + name); tag != "" {
			t.Errorf("%s: tag %s cuts it", name, tag)
		}
	}
	if regexTag("wasmcustom.ratelimit.rule.api.shadow_denied") != "authz_dry_run_result" {
		t.Fatal("the regex set no longer shows why shadow_denied was renamed")
	}
}

// istioTagIn agrees with the regexes on names built from the bytes a rule
// name may hold, with the tags' words mixed in.
func TestIstioTagInAgreesWithRegexes(t *testing.T) {
	words := []string{"cache", "component", "wasm_filter", "rbac", "allowed", "denied", "istio_dry_run_allow_",
		"istio_dry_run_deny_", "shadow_allowed", "shadow_denied", "shadow", "x", "_", ".", "-", "rq", "200", "tag"}
	rng := rand.New(rand.NewSource(1))
	tagged := 0
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := 1 + rng.Intn(6); n > 0; n-- {
			b.WriteString(words[rng.Intn(len(words))])
			if rng.Intn(2) == 0 {
				b.WriteByte('.')
			}
		}
		rule := strings.Trim(b.String(), ".")
		if rule == "" {
			continue
		}
		for _, o := range ruleOutcomes {
			name := "wasmcustom." + ruleMetricName(rule, o)
			got, want := istioTagIn(name) != "", regexTag(name) != ""
			if got != want {
				t.Fatalf("%s: istioTagIn says %v, the regexes %v (%s)", name, got, want, regexTag(name))
			}
			if got {
				tagged++
			}
		}
	}
	if tagged < 1000 {
		t.Fatalf("only %d tagged names generated: the test proves little", tagged)
	}
}

func TestRuleNameChecks(t *testing.T) {
	rule := func(name string) string {
		return `{"name":"` + name + `","key":[{"source":"path"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1s"}]}`
	}
	config := func(rules ...string) []byte {
		return []byte(`{"redis":{"cluster":"r"},"rules":[` + strings.Join(rules, ",") + `]}`)
	}
	for _, tc := range []struct {
		rules []string
		err   string
	}{
		{[]string{rule("a.b"), rule("a-b")}, `rules[1].name: "a-b" and rules[0].name "a.b" give the same Prometheus metric names (ratelimit_rule_a_b_allowed): "." and "-" become "_"`},
		{[]string{rule("x"), rule("a_b"), rule("a.b")}, `rules[2].name: "a.b" and rules[1].name "a_b" give the same Prometheus metric names (ratelimit_rule_a_b_allowed): "." and "-" become "_"`},
		{[]string{rule("rbac")}, `rules[0].name: "rbac": Istio's stats tag "authz_enforce_result" would cut part of the metric ratelimit.rule.rbac.allowed out into a label; choose another name`},
		{[]string{rule("cache.users")}, `rules[0].name: "cache.users": Istio's stats tag "cache" would cut part of the metric ratelimit.rule.cache.users.allowed out into a label; choose another name`},
		{[]string{rule("a.b"), rule("a.c"), rule("cache"), rule("user-cache"), rule("shadow")}, ""},
	} {
		_, err := ParseConfig(config(tc.rules...))
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("%v:\ngot  %v\nwant %s", tc.rules, err, tc.err)
		}
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
