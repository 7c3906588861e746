package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// awaitingDigest are the compose demo's images whose digest could not be
// verified from here (no registry access): they keep their tag alone
// until someone with one reads it (docker buildx imagetools inspect, or
// crane digest) and pins it. The list may only shrink.
var awaitingDigest = map[string]bool{
	"nicolas/webdis:0.1.23": true,
	"higress-registry.cn-hangzhou.cr.aliyuncs.com/higress/all-in-one:2.2.2": true,
}

var pinnedImage = regexp.MustCompile(`^[a-z0-9][a-z0-9./_-]*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)

// Every image of the compose demo is pinned by digest, name:tag@sha256:,
// but those listed in awaitingDigest, which keep an exact tag; a listed
// image that gets its digest must leave the list.
func TestComposeImagesPinned(t *testing.T) {
	c := readCompose(t)
	for name, s := range c.Services {
		switch {
		case awaitingDigest[s.Image]:
			t.Logf("service %s: %s is not pinned by digest yet", name, s.Image)
		case strings.Contains(s.Image, "@"):
			if base, _, _ := strings.Cut(s.Image, "@"); awaitingDigest[base] {
				t.Errorf("service %s: %s is pinned now: remove it from awaitingDigest", name, base)
			}
			if !pinnedImage.MatchString(s.Image) {
				t.Errorf("service %s: image %q: want name:tag@sha256:<64 hex digits>", name, s.Image)
			}
		default:
			t.Errorf("service %s: image %q: pin it by digest, %[2]s@sha256:... (docker buildx imagetools inspect %[2]s)", name, s.Image)
		}
	}
	if !pinnedImage.MatchString("redis:7.4.2-alpine@sha256:"+strings.Repeat("0a", 32)) ||
		pinnedImage.MatchString("redis:7.4.2-alpine@sha256:0a") || pinnedImage.MatchString("redis@sha256:"+strings.Repeat("0a", 32)) {
		t.Error("pinnedImage does not tell a pinned image from others")
	}
}

// Every file the demo bind-mounts exists (dist/ once make build has run).
func TestComposeMountsExist(t *testing.T) {
	c := readCompose(t)
	n := 0
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, ".") {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join(filepath.Dir(repoPath(composeFile)), src)); err != nil {
				t.Errorf("service %s mounts %s: %v", name, src, err)
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d bind mounts, want the demo's", n)
	}
}

type promScrapeConfig struct {
	RuleFiles     []string `json:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `json:"job_name"`
		MetricsPath   string `json:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `json:"targets"`
		} `json:"static_configs"`
	} `json:"scrape_configs"`
}

// The monitoring profile's Prometheus reads deploy/compose/prometheus.yml,
// which scrapes /stats/prometheus at the envoy service's admin port (the
// one envoy.yaml sets) and loads the mounted rules file; promtool check
// config accepts it with the mounts put in.
func TestComposePrometheus(t *testing.T) {
	c := readCompose(t)
	prom := c.service(t, "prometheus")
	cfgPath := prom.mount(t, "/etc/prometheus/prometheus.yml")
	if !sameFile(t, cfgPath, repoPath("deploy/compose/prometheus.yml")) {
		t.Errorf("prometheus loads %s, want deploy/compose/prometheus.yml", cfgPath)
	}
	d, err := ReadYAMLOne(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg promScrapeConfig
	if err := json.Unmarshal(d.JSON, &cfg); err != nil {
		t.Fatal(err)
	}
	b, _ := envoyBootstrap(t)
	admin := "envoy:" + itoa(int(b.GetAdmin().GetAddress().GetSocketAddress().GetPortValue()))
	if len(cfg.ScrapeConfigs) != 1 || cfg.ScrapeConfigs[0].MetricsPath != "/stats/prometheus" ||
		len(cfg.ScrapeConfigs[0].StaticConfigs) != 1 || strings.Join(cfg.ScrapeConfigs[0].StaticConfigs[0].Targets, ",") != admin {
		t.Errorf("prometheus.yml scrapes %+v; want /stats/prometheus at %s (envoy.yaml's admin port)", cfg.ScrapeConfigs, admin)
	}
	if len(cfg.RuleFiles) != 1 || !sameFile(t, prom.mount(t, cfg.RuleFiles[0]), repoPath(alertRulesFile)) {
		t.Fatalf("rule_files %v: want the mount of %s", cfg.RuleFiles, alertRulesFile)
	}
	// promtool reads rule_files from this machine: point it at the source.
	abs, err := filepath.Abs(repoPath(alertRulesFile))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	local := strings.ReplaceAll(string(raw), cfg.RuleFiles[0], abs)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool(t, dir, "check", "config", "prometheus.yml"); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

// The monitoring profile's Grafana is provisioned with the prometheus
// service as its default data source and with the dashboard file of
// deploy/observability, which is also its home dashboard.
func TestComposeGrafana(t *testing.T) {
	c := readCompose(t)
	g := c.service(t, "grafana")
	dsPath := g.mount(t, "/etc/grafana/provisioning/datasources/ratelimit.yaml")
	d, err := ReadYAMLOne(dsPath)
	if err != nil {
		t.Fatal(err)
	}
	var ds struct {
		Datasources []struct {
			Type, URL string
			IsDefault bool `json:"isDefault"`
		} `json:"datasources"`
	}
	if err := json.Unmarshal(d.JSON, &ds); err != nil {
		t.Fatal(err)
	}
	prom := c.service(t, "prometheus")
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || !ds.Datasources[0].IsDefault ||
		ds.Datasources[0].URL != "http://prometheus:9090" || !slices.Contains(prom.Ports, "127.0.0.1:9090:9090") {
		t.Errorf("data sources %+v: want the default, prometheus at http://prometheus:9090", ds.Datasources)
	}

	provPath := g.mount(t, "/etc/grafana/provisioning/dashboards/ratelimit.yaml")
	if d, err = ReadYAMLOne(provPath); err != nil {
		t.Fatal(err)
	}
	var prov struct {
		Providers []struct {
			Type    string `json:"type"`
			Options struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	if err := json.Unmarshal(d.JSON, &prov); err != nil {
		t.Fatal(err)
	}
	if len(prov.Providers) != 1 || prov.Providers[0].Type != "file" {
		t.Fatalf("dashboard providers %+v: want one of type file", prov.Providers)
	}
	home := g.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
	if filepath.Dir(home) != prov.Providers[0].Options.Path {
		t.Errorf("the home dashboard %s is not in the provider's directory %s", home, prov.Providers[0].Options.Path)
	}
	if !sameFile(t, g.mount(t, home), repoPath(dashboardFile)) {
		t.Errorf("%s is not %s", home, dashboardFile)
	}
}

// The compose workflow's monitoring job starts the profile beside Envoy,
// then asks the published Prometheus for the filter's gauge and the rules,
// and Grafana for the dashboard by its uid.
func TestComposeMonitoringWorkflow(t *testing.T) {
	runs := readWorkflow(t, ".github/workflows/compose.yml").runs("monitoring")
	c := readCompose(t)
	prom, graf := c.service(t, "prometheus"), c.service(t, "grafana")
	for _, want := range []string{
		"make build",
		"--profile envoy --profile monitoring up -d --wait",
		"smoke.sh http://localhost:8080",
		"http://127.0.0.1:9090/api/v1/query?query=ratelimit_redis_healthy",
		"RateLimitDenyRatioJump",
		"http://127.0.0.1:3000/api/dashboards/uid/" + readDashboard(t).UID,
		"--profile envoy --profile monitoring down",
	} {
		if !strings.Contains(runs, want) {
			t.Errorf("compose.yml, job monitoring: no %q", want)
		}
	}
	if !slices.Contains(prom.Ports, "127.0.0.1:9090:9090") || !slices.Contains(graf.Ports, "127.0.0.1:3000:3000") {
		t.Errorf("prometheus publishes %v, grafana %v: want 9090 and 3000 on 127.0.0.1", prom.Ports, graf.Ports)
	}
}
