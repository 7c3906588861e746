package config

import (
	"strings"
)

// Rule outcomes, the last segment of ratelimit.rule.<name>.<outcome>. None
// may end in a way a proxy's stats tag regex cuts out of the name: Istio's
// bootstrap turns a trailing ".shadow_denied" into the label
// authz_dry_run_result, so shadow denials are "would_deny".
const (
	OutcomeAllowed   = "allowed"
	OutcomeDenied    = "denied"
	OutcomeWouldDeny = "would_deny"
	OutcomeBlocked   = "blocked"
	// OutcomeDegraded: an on_limit degrade rule's limit was spent, and
	// the request went on with its header.
	OutcomeDegraded = "degraded"
)

// EventNearLimit is a rule's admissions with a limit past
// near_limit_ratio of its quota.
const EventNearLimit = "near_limit"

// Settling events of a response_cost rule, the same metric's last segment.
const (
	EventCharged      = "units_charged"
	EventRefunded     = "units_refunded"
	EventOverdrawn    = "units_overdrawn"
	EventUsageMissing = "usage_missing"
	EventStreamReset  = "stream_reset"
	// EventModelUnlisted counts a priced rule's responses charged at the
	// table's dearest prices: their model is not listed, under refuse.
	EventModelUnlisted = "model_unlisted"
)

// Release events of a rule with concurrency limits.
const (
	EventReleasesFailed = "releases_failed"
	EventSlotsExpired   = "slots_expired"
)

var ruleOutcomes = [...]string{OutcomeAllowed, OutcomeDenied, OutcomeWouldDeny, OutcomeBlocked, OutcomeDegraded, EventNearLimit,
	EventCharged, EventRefunded, EventOverdrawn, EventUsageMissing, EventStreamReset, EventModelUnlisted,
	EventReleasesFailed, EventSlotsExpired}

// RuleMetricName is the proxy-wasm metric for a rule's outcome. Envoy
// shows it as wasmcustom.<name> in /stats, and /stats/prometheus as
// <name> with every byte outside [a-zA-Z0-9_:] turned into "_".
func RuleMetricName(rule, outcome string) string {
	return "ratelimit.rule." + rule + "." + outcome
}

// checkRuleNames rejects rule names whose metrics Prometheus or Istio would
// mangle: two names that differ only in ".", "-" and "_" share one
// Prometheus name, and some names put a tag pattern of Istio's bootstrap
// into the metric name, which Envoy then cuts out into a label. path is
// where the rules list sits, e.g. "rules".
func checkRuleNames(rules []Rule, path string) error {
	first := map[string]int{}
	for i, r := range rules {
		at := elem(path, i) + ".name"
		key := prometheusName(r.Name)
		if j, ok := first[key]; ok {
			return errAt(at, "%q and %s[%d].name %q give the same Prometheus metric names (%s): \".\" and \"-\" become \"_\"",
				r.Name, path, j, rules[j].Name, prometheusName(RuleMetricName(r.Name, OutcomeAllowed)))
		}
		first[key] = i
		for _, o := range ruleOutcomes {
			name := "wasmcustom." + RuleMetricName(r.Name, o)
			if tag := istioTagIn(name); tag != "" {
				return errAt(at, "%q: Istio's stats tag %q would cut part of the metric %s out into a label; choose another name", r.Name, tag, name[len("wasmcustom."):])
			}
		}
	}
	return nil
}

// prometheusName is name as Envoy's /stats/prometheus writes it.
func prometheusName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':') {
			b[i] = '_'
		}
	}
	return string(b)
}

// istioTagIn returns the name of the first stats tag of Istio's bootstrap
// (tools/packaging/common/envoy_bootstrap.json, stats_tags) whose regex
// matches name, or "". Only the unanchored regexes can match a name that
// starts with "wasmcustom.", and of those only these can match the bytes
// a rule name may hold (no "=" or ";") followed by an outcome word:
//
//	cache, component, wasm_filter   (<word>\.(.+?)\.)
//	authz_enforce_result            rbac(\.(allowed|denied))
//	authz_dry_run_action            (\.istio_dry_run_(allow|deny)_)
//	authz_dry_run_result            (\.shadow_(allowed|denied))
//
// A test checks this against the regexes themselves.
func istioTagIn(name string) string {
	for _, tag := range [...]string{"cache", "component", "wasm_filter"} {
		word := tag + "."
		for from := 0; ; {
			i := strings.Index(name[from:], word)
			if i < 0 {
				break
			}
			rest := name[from+i+len(word):]
			if len(rest) > 1 && strings.IndexByte(rest[1:], '.') >= 0 {
				return tag
			}
			from += i + 1
		}
	}
	for _, s := range [...]struct{ tag, sub string }{
		{"authz_enforce_result", "rbac.allowed"}, {"authz_enforce_result", "rbac.denied"},
		{"authz_dry_run_action", ".istio_dry_run_allow_"}, {"authz_dry_run_action", ".istio_dry_run_deny_"},
		{"authz_dry_run_result", ".shadow_allowed"}, {"authz_dry_run_result", ".shadow_denied"},
	} {
		if strings.Contains(name, s.sub) {
			return s.tag
		}
	}
	return ""
}

// validName reports whether s is 1-64 bytes of A-Z a-z 0-9 _ . -, so it
// can sit in keys, metric names and quoted header values unescaped.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
