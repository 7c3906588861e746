package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	dashboardFile  = "deploy/observability/grafana-dashboard.json"
	alertRulesFile = "deploy/observability/ratelimit-rules.yaml"
	alertTestsFile = "deploy/observability/ratelimit-rules.test.yaml"
	runbookPrefix  = "https://github.com/redisrate/envoy-redis-ratelimit/blob/main/docs/metrics.md#"
)

// sampleRules stand for ${rule} where a name must be matched, in their
// Prometheus spelling.
var sampleRules = []string{"api", "login_per_ip"}

type promRule struct {
	Record      string            `json:"record"`
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// readRules reads the rules file's rules, in order.
func readRules(t *testing.T) []promRule {
	t.Helper()
	d, err := ReadYAMLOne(repoPath(alertRulesFile))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string     `json:"name"`
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(d.JSON, &f); err != nil {
		t.Fatalf("%s: %v", alertRulesFile, err)
	}
	var out []promRule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", alertRulesFile)
	}
	return out
}

// promqlProblems checks that every metric expr selects is one the filter
// defines, in Envoy's Prometheus spelling (per-rule names with ruleVar
// where the rule goes), or one of recorded; a __name__ regex must match,
// for each sample rule, exactly one such name. It returns what is wrong.
func promqlProblems(t *testing.T, expr string, recorded []string) []string {
	t.Helper()
	defined := promMetrics(t)
	refs, err := promqlScan(expr)
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	if len(refs.names)+len(refs.nameREs) == 0 {
		bad = append(bad, fmt.Sprintf("%q selects no metric", expr))
	}
	for _, n := range refs.names {
		if _, ok := defined[n]; !ok && !slices.Contains(recorded, n) {
			bad = append(bad, n+" is not a metric the filter defines (as Envoy's /stats/prometheus names it), nor one the rules record")
		}
	}
	for _, re := range refs.nameREs {
		rx, err := regexp.Compile("^(?:" + re + ")$")
		if err != nil {
			bad = append(bad, fmt.Sprintf("__name__=~%q: %v", re, err))
			continue
		}
		for _, rule := range sampleRules {
			var hits []string
			for n := range defined {
				if n := strings.ReplaceAll(n, ruleVar, rule); rx.MatchString(n) {
					hits = append(hits, n)
				}
			}
			if len(hits) != 1 {
				bad = append(bad, fmt.Sprintf("__name__=~%q matches %v of the filter's metrics for a rule %q, want one", re, hits, rule))
			}
		}
	}
	return bad
}

// Every expression of the rules file selects metrics the filter defines,
// named as Envoy and Istio export them, or series recorded before it in
// the file; each alert has a severity, a summary, a description and a
// runbook_url into a heading of docs/metrics.md.
func TestAlertRulesMetrics(t *testing.T) {
	docs, err := os.ReadFile(repoPath("docs/metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := headingSlugs(string(docs))
	var recorded, alerts []string
	for _, r := range readRules(t) {
		name := r.Record + r.Alert
		for _, p := range promqlProblems(t, r.Expr, recorded) {
			t.Errorf("%s: %s: %s", alertRulesFile, name, p)
		}
		if r.Record != "" {
			recorded = append(recorded, r.Record)
			continue
		}
		alerts = append(alerts, r.Alert)
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: want labels.severity, annotations.summary and annotations.description", r.Alert)
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookPrefix)
		if !ok || !slices.Contains(anchors, anchor) {
			t.Errorf("%s: runbook_url %q: want %s<a heading's anchor>", r.Alert, r.Annotations["runbook_url"], runbookPrefix)
		}
	}
	for _, want := range []string{"RateLimitRedisUnhealthy", "RateLimitCircuitBreakerOpen", "RateLimitAdmittedByFailureMode",
		"RateLimitDeniedByFailureMode", "RateLimitSettleErrors", "RateLimitDenyRatioJump"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("%s: no alert %s", alertRulesFile, want)
		}
	}
}

// headingSlugs returns the anchors GitHub gives the Markdown headings of
// doc: lower case, spaces to "-", other punctuation but "-" and "_" gone.
func headingSlugs(doc string) []string {
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, c := range strings.ToLower(title) {
			switch {
			case c == ' ':
				b.WriteByte('-')
			case c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				b.WriteRune(c)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// The names Envoy exports are what the checks compare against: a rule
// named "login-per-ip" is ratelimit_rule_login_per_ip_allowed, the Redis
// latency histogram has _bucket, _sum and _count series and no plain one,
// and a name that is not the filter's is refused.
func TestCheckPromQLRefuses(t *testing.T) {
	defined := promMetrics(t)
	for _, n := range []string{"ratelimit_rule_" + ruleVar + "_allowed", "ratelimit_redis_latency_ms_bucket", "ratelimit_redis_healthy"} {
		if _, ok := defined[n]; !ok {
			t.Errorf("%s is not among the defined metrics", n)
		}
	}
	for _, n := range []string{"ratelimit_redis_latency_ms", "envoy_ratelimit_redis_healthy", "wasmcustom_ratelimit_redis_healthy", "ratelimit.redis.healthy"} {
		if _, ok := defined[n]; ok {
			t.Errorf("%s is among the defined metrics", n)
		}
	}
	if promName("wasmcustom.ratelimit.rule.login-per-ip.allowed") != "ratelimit_rule_login_per_ip_allowed" {
		t.Error("promName does not spell names as Envoy does")
	}
	for _, expr := range []string{
		`rate(ratelimit_redis_latency_ms[5m])`,
		`rate(ratelimit_rule_api_allowed[5m])`,
		`rate(envoy_ratelimit_redis_errors[5m])`,
		`{__name__=~"ratelimit_rule_.+_refused"}`,
		`{__name__=~"ratelimit_rule_.+"}`,
		`vector(1)`,
	} {
		if len(promqlProblems(t, expr, nil)) == 0 {
			t.Errorf("%s: accepted", expr)
		}
	}
	if bad := promqlProblems(t, `rate(ratelimit_rule_RULE_allowed[5m]) / x:y + {__name__=~"ratelimit_rule_.+_denied"}`, []string{"x:y"}); len(bad) > 0 {
		t.Errorf("refused: %v", bad)
	}
}

// expandGrafana puts Grafana's variables into expr: ${rule} as ruleVar,
// the intervals as 5m, the dashboard's other variables (vars) as ".*".
func expandGrafana(t *testing.T, where, expr string, vars []string) string {
	t.Helper()
	re := regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)
	return re.ReplaceAllStringFunc(expr, func(m string) string {
		sub := re.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		switch {
		case name == "__rate_interval" || name == "__interval" || name == "__range":
			return "5m"
		case name == "rule" && slices.Contains(vars, name):
			return ruleVar
		case slices.Contains(vars, name):
			return ".*"
		}
		t.Errorf("%s: variable $%s is not one of the dashboard's (%v)", where, name, vars)
		return m
	})
}

// promtool runs promtool with args, failing the test when it is missing
// (.ci/deps installs Debian's prometheus package, which has it).
func promtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed (apt-get install prometheus, or make deps); .ci/deps installs it")
	}
	cmd := exec.Command(p, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// promtool check rules accepts the rules file (syntax, PromQL, templates),
// and its unit tests pass: the Redis health, deny ratio and failure-mode
// alerts fire when they should and only then.
func TestPromtoolRules(t *testing.T) {
	if out, err := promtool(t, repoPath("deploy/observability"), "check", "rules", "ratelimit-rules.yaml"); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	out, err := promtool(t, repoPath("deploy/observability"), "test", "rules", "ratelimit-rules.test.yaml")
	if err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules said no SUCCESS:\n%s", out)
	}
}

// promtoolExprs checks that Prometheus parses each expression, by giving
// them to promtool check rules as recording rules.
func promtoolExprs(t *testing.T, exprs map[string]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, where := range slices.Sorted(maps.Keys(exprs)) {
		js, _ := json.Marshal(exprs[where])
		fmt.Fprintf(&b, "      # %s\n      - record: dashboard:expr_%d\n        expr: %s\n", where, i, js)
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/exprs.yaml", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool(t, dir, "check", "rules", "exprs.yaml"); err != nil {
		t.Errorf("promtool refuses an expression of %s: %v\n%s", dashboardFile, err, out)
	}
}
