package config

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/istiotags"
)

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
			name := "wasmcustom." + RuleMetricName(rule, o)
			got, want := istioTagIn(name) != "", istiotags.Match(name) != ""
			if got != want {
				t.Fatalf("%s: istioTagIn says %v, the regexes %v (%s)", name, got, want, istiotags.Match(name))
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
		_, err := Parse(config(tc.rules...))
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("%v:\ngot  %v\nwant %s", tc.rules, err, tc.err)
		}
	}
}
