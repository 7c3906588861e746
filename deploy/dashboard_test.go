package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// grafanaDS is a panel's or a query's data source.
type grafanaDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Repeat     string                   `json:"repeat"`
	Datasource *grafanaDS               `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Panels     []grafanaPanel           `json:"panels"`
	Targets    []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource *grafanaDS `json:"datasource"`
	} `json:"targets"`
}

type grafanaDashboard struct {
	UID        string         `json:"uid"`
	Title      string         `json:"title"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string     `json:"name"`
			Type       string     `json:"type"`
			Query      string     `json:"query"`
			Regex      string     `json:"regex"`
			Datasource *grafanaDS `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	data, err := os.ReadFile(repoPath(dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels returns the panels, those inside collapsed rows too.
func (d grafanaDashboard) allPanels() []grafanaPanel {
	var out []grafanaPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

func (d grafanaDashboard) varNames() []string {
	var out []string
	for _, v := range d.Templating.List {
		out = append(out, v.Name)
	}
	return out
}

// The dashboard imports anywhere: its data source is the variable
// ${datasource} (no uid of one Grafana), every panel and query uses it,
// panel ids are unique and fit the 24-column grid, and one row repeats per
// rule.
func TestDashboardShape(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Error("want a uid and a title")
	}
	if got := d.varNames(); !slices.Equal(got, []string{"datasource", "instance", "rule"}) {
		t.Errorf("variables %v, want datasource, instance, rule", got)
	}
	if v := d.Templating.List[0]; v.Type != "datasource" || v.Query != "prometheus" {
		t.Errorf("variable datasource: type %q, query %q: want a Prometheus data source variable", v.Type, v.Query)
	}
	want := grafanaDS{Type: "prometheus", UID: "${datasource}"}
	for _, v := range d.Templating.List[1:] {
		if v.Datasource == nil || *v.Datasource != want {
			t.Errorf("variable %s: data source %v, want %v", v.Name, v.Datasource, want)
		}
	}
	ids := map[int]bool{}
	repeated := 0
	for _, p := range d.allPanels() {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d is 0 or taken", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v outside the grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			if p.Repeat == "rule" && strings.Contains(p.Title, "$rule") {
				repeated++
			}
			continue
		}
		if p.Datasource == nil || *p.Datasource != want || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %v, %d queries: want %v and queries", p.Title, p.Datasource, len(p.Targets), want)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if q.Datasource == nil || *q.Datasource != want || q.RefID == "" || refs[q.RefID] || q.Expr == "" {
				t.Errorf("panel %q: query %q (refId %q, data source %v): want a unique refId, an expr and %v", p.Title, q.Expr, q.RefID, q.Datasource, want)
			}
			refs[q.RefID] = true
		}
	}
	if repeated != 1 {
		t.Errorf("%d rows repeat per rule with $rule in their title, want 1", repeated)
	}
}

// dashboardExprs returns the dashboard's PromQL, by where it is, with
// Grafana's variables put in (expandGrafana).
func dashboardExprs(t *testing.T, d grafanaDashboard) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range d.allPanels() {
		for _, q := range p.Targets {
			where := fmt.Sprintf("panel %d %q query %s", p.ID, p.Title, q.RefID)
			out[where] = expandGrafana(t, where, q.Expr, d.varNames())
		}
	}
	return out
}

// Every metric the dashboard queries is one the filter defines, as Envoy
// and Istio export it, or one the rules file records; per-rule metrics
// take the rule from ${rule}. Prometheus parses every query. The queries
// cover what docs/metrics.md lists for the dashboard.
func TestDashboardMetrics(t *testing.T) {
	d := readDashboard(t)
	var recorded []string
	for _, r := range readRules(t) {
		if r.Record != "" {
			recorded = append(recorded, r.Record)
		}
	}
	exprs := dashboardExprs(t, d)
	queried := map[string]bool{}
	forPromtool := map[string]string{}
	for where, expr := range exprs {
		for _, p := range promqlProblems(t, expr, recorded) {
			t.Errorf("%s: %s", where, p)
		}
		refs, _ := promqlScan(expr)
		for _, n := range refs.names {
			queried[n] = true
		}
		forPromtool[where] = strings.ReplaceAll(expr, ruleVar, sampleRules[0])
	}
	for _, want := range []string{
		"ratelimit_rule_" + ruleVar + "_allowed", "ratelimit_rule_" + ruleVar + "_denied", "ratelimit_rule_" + ruleVar + "_would_deny",
		"ratelimit_rule_" + ruleVar + "_near_limit", "ratelimit_failure_mode_allowed", "ratelimit_failure_mode_denied",
		"ratelimit_redis_latency_ms_bucket", "ratelimit_redis_errors", "ratelimit_redis_healthy",
		"ratelimit_circuit_breaker_opened", "ratelimit_settle_errors", "ratelimit_rule_" + ruleVar + "_units_charged",
		"ratelimit_rule_" + ruleVar + "_units_refunded", "ratelimit_rule_" + ruleVar + "_units_overdrawn", "ratelimit_lease_grants",
		"ratelimit_throttle_held",
	} {
		if !queried[want] {
			t.Errorf("the dashboard does not query %s", want)
		}
	}
	promtoolExprs(t, forPromtool)
}

// The variables' own queries name defined metrics: the proxies are the
// instances of ratelimit_redis_healthy, and the rules are read from the
// names of the allowed counters.
func TestDashboardVariables(t *testing.T) {
	d := readDashboard(t)
	defined := promMetrics(t)
	labelValues := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`)
	metrics := regexp.MustCompile(`^metrics\((.+)\)$`)
	for _, v := range d.Templating.List[1:] {
		switch m, n := labelValues.FindStringSubmatch(v.Query), metrics.FindStringSubmatch(v.Query); {
		case m != nil:
			if _, ok := defined[m[1]]; !ok {
				t.Errorf("variable %s: %s is not a metric the filter defines", v.Name, m[1])
			}
		case n != nil:
			names := regexp.MustCompile(n[1])
			pick := regexp.MustCompile(strings.Trim(v.Regex, "/"))
			for _, rule := range sampleRules {
				var values []string
				for name := range defined {
					name = strings.ReplaceAll(name, ruleVar, rule)
					if names.MatchString(name) {
						if m := pick.FindStringSubmatch(name); len(m) == 2 {
							values = append(values, m[1])
						}
					}
				}
				if !slices.Equal(values, []string{rule}) {
					t.Errorf("variable %s: %q with regex %q gives %v for a rule %q", v.Name, v.Query, v.Regex, values, rule)
				}
			}
		default:
			t.Errorf("variable %s: query %q: want label_values(metric, label) or metrics(regex)", v.Name, v.Query)
		}
	}
}
