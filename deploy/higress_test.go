package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// higressWasmPlugin is the spec of Higress's WasmPlugin
// (extensions.higress.io/v1alpha1, api/extensions/v1alpha1/wasmplugin.proto
// in alibaba/higress), every field, so a misspelt one is an error.
type higressWasmPlugin struct {
	URL                  string            `json:"url"`
	Sha256               string            `json:"sha256"`
	ImagePullPolicy      string            `json:"imagePullPolicy"`
	ImagePullSecret      string            `json:"imagePullSecret"`
	VerificationKey      string            `json:"verificationKey"`
	PluginConfig         json.RawMessage   `json:"pluginConfig"`
	PluginName           string            `json:"pluginName"`
	Phase                string            `json:"phase"`
	Priority             *int32            `json:"priority"`
	FailStrategy         string            `json:"failStrategy"`
	VMConfig             json.RawMessage   `json:"vmConfig"`
	DefaultConfig        json.RawMessage   `json:"defaultConfig"`
	MatchRules           []json.RawMessage `json:"matchRules"`
	DefaultConfigDisable *bool             `json:"defaultConfigDisable"`
}

// mcpRegistry is an entry of McpBridge.spec.registries
// (networking.higress.io/v1): the fields of static and dns entries.
type mcpRegistry struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Domain   string `json:"domain"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
	SNI      string `json:"sni"`
}

func strictDecode(t *testing.T, where string, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
}

// higressPlugin decodes the WasmPlugin of a file, checks its spec and
// parses its defaultConfig, which must use the Redis callouts.
func higressPlugin(t *testing.T, file string) (higressWasmPlugin, *config.Config) {
	t.Helper()
	d := findDoc(t, readYAML(t, file), "WasmPlugin", "ratelimit")
	o := decodeObject(t, d, nil)
	if d.APIVersion != "extensions.higress.io/v1alpha1" || d.Namespace != "higress-system" {
		t.Errorf("%s: %s in namespace %q: want extensions.higress.io/v1alpha1 in higress-system", file, d.APIVersion, d.Namespace)
	}
	var wp higressWasmPlugin
	strictDecode(t, file+": spec", o.Spec, &wp)
	enums := []struct {
		field, value string
		allowed      []string
	}{
		{"phase", wp.Phase, []string{"", "UNSPECIFIED_PHASE", "AUTHN", "AUTHZ", "STATS"}},
		{"imagePullPolicy", wp.ImagePullPolicy, []string{"", "UNSPECIFIED_POLICY", "IfNotPresent", "Always"}},
		{"failStrategy", wp.FailStrategy, []string{"", "FAIL_CLOSE", "FAIL_OPEN"}},
	}
	for _, e := range enums {
		if !slices.Contains(e.allowed, e.value) {
			t.Errorf("%s: %s %q: want one of %q", file, e.field, e.value, e.allowed)
		}
	}
	if u, err := url.Parse(wp.URL); err != nil || !slices.Contains([]string{"oci", "file", "http", "https"}, u.Scheme) {
		t.Errorf("%s: url %q: want oci://, file:// or http(s)://", file, wp.URL)
	}
	if (len(wp.MatchRules) != 0) != (file == HigressMatchRulesWasmPlugin) || len(wp.PluginConfig) != 0 || (wp.DefaultConfigDisable != nil && *wp.DefaultConfigDisable) {
		t.Errorf("%s: the configuration belongs in defaultConfig, enabled (and matchRules only in %s)", file, HigressMatchRulesWasmPlugin)
	}
	cfg := parsePluginConfig(t, file, pluginConfigOf(t, file))
	if cfg.Redis.Transport != config.TransportRedisABI {
		t.Errorf("%s: redis.transport %v: the Higress build calls Redis through Higress's Redis callouts, want redis_abi", file, cfg.Redis.Transport)
	}
	return wp, cfg
}

// higressCluster is the cluster Higress makes for an McpBridge registry
// entry: outbound|<port>||<name>.<type>.
type higressCluster struct {
	port       int
	name, kind string
}

func parseHigressCluster(s string) (higressCluster, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 4 || parts[0] != "outbound" || parts[2] != "" {
		return higressCluster{}, fmt.Errorf("%q is not outbound|<port>||<name>.<type>", s)
	}
	port, err := strconv.Atoi(parts[1])
	name, kind, ok := strings.Cut(parts[3], ".")
	if err != nil || !ok || strings.Contains(kind, ".") {
		return higressCluster{}, fmt.Errorf("%q is not outbound|<port>||<name>.<type>", s)
	}
	return higressCluster{port: port, name: name, kind: kind}, nil
}

// mcpBridge reads the McpBridge of a file: Higress watches only the one
// named default in its namespace.
func mcpBridge(t *testing.T, file string) []mcpRegistry {
	t.Helper()
	d := findDoc(t, readYAML(t, file), "McpBridge", "default")
	if d.APIVersion != "networking.higress.io/v1" || d.Namespace != "higress-system" {
		t.Errorf("%s: %s in namespace %q: want networking.higress.io/v1 in higress-system", file, d.APIVersion, d.Namespace)
	}
	var spec struct {
		Registries []mcpRegistry `json:"registries"`
	}
	strictDecode(t, file+": spec", decodeObject(t, d, nil).Spec, &spec)
	return spec.Registries
}

// registryFor returns the registry entry that makes cluster, and the
// endpoints ("ip:port") of a static entry.
func registryFor(t *testing.T, cluster string, regs []mcpRegistry) (mcpRegistry, []string) {
	t.Helper()
	hc, err := parseHigressCluster(cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range regs {
		if r.Name != hc.name || r.Type != hc.kind {
			continue
		}
		if r.Port != hc.port {
			t.Fatalf("registry %s.%s has port %d, the cluster %s names %d", r.Name, r.Type, r.Port, cluster, hc.port)
		}
		if r.Type != "static" {
			t.Fatalf("registry %s: type %s, want static", r.Name, r.Type)
		}
		eps := strings.Split(r.Domain, ",")
		for _, ep := range eps {
			host, port, err := net.SplitHostPort(ep)
			if n, perr := strconv.Atoi(port); err != nil || net.ParseIP(host) == nil || perr != nil || n < 1 || n > 65535 {
				t.Fatalf("registry %s: endpoint %q: a static entry needs IP:port", r.Name, ep)
			}
		}
		return r, eps
	}
	t.Fatalf("no McpBridge registry makes the cluster %s (want type %s, name %s, port %d)", cluster, hc.kind, hc.name, hc.port)
	return mcpRegistry{}, nil
}

func TestHigressWasmPlugin(t *testing.T) {
	wp, cfg := higressPlugin(t, HigressWasmPlugin)
	if !strings.HasPrefix(wp.URL, "oci://") && !strings.HasPrefix(wp.URL, "http") {
		t.Errorf("url %q: a gateway in Kubernetes fetches the module from a registry or a web server", wp.URL)
	}
	if cfg.Redis.Cluster != "outbound|6379||redis.static" {
		t.Errorf("redis.cluster %q", cfg.Redis.Cluster)
	}
	reg, _ := registryFor(t, cfg.Redis.Cluster, mcpBridge(t, "deploy/higress/mcpbridge.yaml"))
	if reg.Protocol != "" && !strings.EqualFold(reg.Protocol, "tcp") && !strings.EqualFold(reg.Protocol, "http") {
		t.Errorf("registry %s: protocol %q", reg.Name, reg.Protocol)
	}
}

func TestParseHigressCluster(t *testing.T) {
	got, err := parseHigressCluster("outbound|6379||redis.static")
	if err != nil || got != (higressCluster{port: 6379, name: "redis", kind: "static"}) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"redis.static", "outbound|6379|v1|redis.static", "outbound|x||redis.static", "outbound|6379||redis",
		"outbound|7379||webdis.ratelimit.svc.cluster.local"} {
		if _, err := parseHigressCluster(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
