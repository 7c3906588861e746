package deploy

import (
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

const composeFile = "deploy/compose/docker-compose.yaml"

// composeService is the part of a docker-compose service the tests read,
// in the forms docker-compose.yaml uses (lists, not strings, for commands).
type composeService struct {
	Image       string            `json:"image"`
	Profiles    []string          `json:"profiles"`
	Command     []string          `json:"command"`
	Entrypoint  []string          `json:"entrypoint"`
	Environment map[string]string `json:"environment"`
	Volumes     []string          `json:"volumes"`
	Ports       []string          `json:"ports"`
	DependsOn   map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
	Healthcheck struct {
		Test []string `json:"test"`
	} `json:"healthcheck"`
	Networks json.RawMessage `json:"networks"`
}

type compose struct {
	Services map[string]composeService `json:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `json:"subnet"`
			} `json:"config"`
		} `json:"ipam"`
	} `json:"networks"`
}

func readCompose(t *testing.T) compose {
	t.Helper()
	d, err := ReadYAMLOne(repoPath(composeFile))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := json.Unmarshal(d.JSON, &c); err != nil {
		t.Fatalf("%s: %v", composeFile, err)
	}
	return c
}

func (c compose) service(t *testing.T, name string) composeService {
	t.Helper()
	s, ok := c.Services[name]
	if !ok {
		t.Fatalf("%s: no service %s", composeFile, name)
	}
	return s
}

// mount returns the source of the bind mount at target, resolved against
// the compose file's directory as docker-compose does.
func (s composeService) mount(t *testing.T, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == target {
			if !strings.HasPrefix(parts[0], ".") {
				t.Fatalf("volume %q: want a bind mount of a repository file", v)
			}
			return filepath.Join(filepath.Dir(repoPath(composeFile)), parts[0])
		}
	}
	t.Fatalf("nothing mounted at %s (volumes %v)", target, s.Volumes)
	return ""
}

// ipv4 is the service's fixed address on the demo network.
func (s composeService) ipv4(t *testing.T) string {
	t.Helper()
	var nets map[string]struct {
		IPv4Address string `json:"ipv4_address"`
	}
	if err := json.Unmarshal(s.Networks, &nets); err != nil || nets["demo"].IPv4Address == "" {
		t.Fatalf("networks %s: want demo with an ipv4_address", s.Networks)
	}
	return nets["demo"].IPv4Address
}

// flagValue returns the argument after flag in args.
func flagValue(t *testing.T, args []string, flag string) string {
	t.Helper()
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("%v: no %s", args, flag)
	}
	return args[i+1]
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

// readComposeWebdis reads and checks deploy/compose/webdis.json against the
// filter configuration that calls it.
func readComposeWebdis(t *testing.T, cfg *config.Config) webdisConfig {
	t.Helper()
	data, err := os.ReadFile(repoPath("deploy/compose/webdis.json"))
	if err != nil {
		t.Fatal(err)
	}
	return checkWebdisConfig(t, "deploy/compose/webdis.json", data, cfg)
}

// docker-compose (Debian's docker-compose 1.29), and the docker compose
// plugin where it is installed, parse and validate the file, for each
// profile. It needs no Docker engine.
func TestComposeConfigValid(t *testing.T) {
	for _, c := range composeImpls(t) {
		for _, profiles := range [][]string{nil, {"envoy"}, {"higress"}, {"envoy", "monitoring"}} {
			args := append(slices.Clone(c.base[1:]), "-f", repoPath(composeFile))
			for _, p := range profiles {
				args = append(args, "--profile", p)
			}
			args = append(args, "config", "-q")
			cmd := exec.Command(c.base[0], args...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: %v: %v\n%s", c.name, cmd.Args, err, out)
			}
		}
	}
}

// Each service belongs where the README says: Redis, install and the echo upstream to
// both demos, the rest to one profile (Prometheus and Grafana to monitoring,
// which goes with envoy).
func TestComposeProfiles(t *testing.T) {
	c := readCompose(t)
	want := map[string][]string{"redis": nil, "install": nil, "echo": nil, "webdis": {"envoy"}, "envoy": {"envoy"}, "higress": {"higress"},
		"prometheus": {"monitoring"}, "grafana": {"monitoring"}}
	if len(c.Services) != len(want) {
		t.Errorf("services %v, want %v", slices.Sorted(mapKeys(c.Services)), slices.Sorted(mapKeys(want)))
	}
	for name, profiles := range want {
		if got := c.service(t, name).Profiles; !slices.Equal(got, profiles) {
			t.Errorf("service %s: profiles %v, want %v", name, got, profiles)
		}
		if img := c.service(t, name).Image; !strings.Contains(img, ":") || strings.HasSuffix(img, ":latest") {
			t.Errorf("service %s: image %q: pin a tag", name, img)
		}
	}
	if fi, err := os.Stat(repoPath("deploy/compose/smoke.sh")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("deploy/compose/smoke.sh is not executable: %v", err)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The envoy profile runs the repository's envoy.yaml itself, with the module
// at the path envoy.yaml loads, and its clusters, Webdis and Redis agree on
// names, ports and credentials.
func TestComposeEnvoyProfile(t *testing.T) {
	c := readCompose(t)
	b, _ := envoyBootstrap(t)
	w, _, cfg := envoyPlugin(t, b)
	envoy := c.service(t, "envoy")

	if !sameFile(t, envoy.mount(t, "/etc/envoy/envoy.yaml"), repoPath(EnvoyBootstrap)) {
		t.Error("the envoy service does not mount the top-level envoy.yaml at /etc/envoy/envoy.yaml")
	}
	module := w.GetConfig().GetVmConfig().GetCode().GetLocal().GetFilename()
	if src := envoy.mount(t, module); filepath.Clean(src) != filepath.Clean(repoPath("dist/ratelimit.wasm")) {
		t.Errorf("%s is mounted from %s, want dist/ratelimit.wasm (make build)", module, src)
	}
	if !slices.Contains(envoy.Ports, "8080:8080") {
		t.Errorf("envoy ports %v: the listener (8080) must be published on 8080", envoy.Ports)
	}
	if envoy.DependsOn["webdis"].Condition != "service_healthy" {
		t.Error("envoy must wait for a healthy webdis")
	}

	eps := envoyEndpoints(t, b)
	echo := c.service(t, "echo")
	if eps["echo"] != "echo:8080" || !slices.Contains(echo.Command, "-listen=:8080") {
		t.Errorf("envoy's echo cluster is %s; the echo service runs %v", eps["echo"], echo.Command)
	}

	webdis := c.service(t, "webdis")
	wc := readComposeWebdis(t, cfg)
	if eps[cfg.Redis.Cluster] != "webdis:"+itoa(wc.HTTPPort) {
		t.Errorf("envoy's %s cluster is %s; Webdis listens on port %d", cfg.Redis.Cluster, eps[cfg.Redis.Cluster], wc.HTTPPort)
	}
	if len(webdis.Command) != 2 || webdis.Command[0] != "/usr/local/bin/webdis" {
		t.Fatalf("webdis command %v: want /usr/local/bin/webdis <config>", webdis.Command)
	}
	if !sameFile(t, webdis.mount(t, webdis.Command[1]), repoPath("deploy/compose/webdis.json")) {
		t.Errorf("webdis does not load deploy/compose/webdis.json")
	}
	probe, err := url.Parse(webdis.Healthcheck.Test[len(webdis.Healthcheck.Test)-1])
	if pw, _ := probe.User.Password(); err != nil || probe.User.Username() != cfg.Redis.Username || pw != cfg.Redis.Password ||
		probe.Port() != itoa(wc.HTTPPort) {
		t.Errorf("webdis healthcheck %v: want the filter's credentials and port %d", webdis.Healthcheck.Test, wc.HTTPPort)
	}

	if wc.RedisHost != "redis" || wc.RedisPort != 6379 {
		t.Errorf("Webdis reaches Redis at %s:%d, want the redis service, redis:6379", wc.RedisHost, wc.RedisPort)
	}
	if _, hashes := composeUsers(t); hashes["default"] != sha256hex(wc.redisAuth(t)) {
		t.Errorf("Webdis sends redis_auth %q, which is not the password of users.acl's default user", wc.redisAuth(t))
	}
	if webdis.DependsOn["install"].Condition != "service_completed_successfully" {
		t.Error("webdis must wait for ratelimitctl install")
	}
}

// The higress profile seeds Higress's file configuration with the files in
// deploy/compose/higress: the same plugin configuration as the Higress
// deployment, the module at the path the WasmPlugin names, and registry
// entries at the addresses compose gives Redis and the echo upstream.
func TestComposeHigressProfile(t *testing.T) {
	c := readCompose(t)
	hi := c.service(t, "higress")
	if seed := hi.mount(t, "/seed"); filepath.Clean(seed) != filepath.Clean(repoPath("deploy/compose/higress")) {
		t.Errorf("/seed is mounted from %s", seed)
	}
	if len(hi.Entrypoint) != 3 || !strings.HasPrefix(hi.Entrypoint[2], "cp -R /seed/. /data/ && exec supervisord ") {
		t.Errorf("entrypoint %v: want the seed copied to /data before supervisord starts", hi.Entrypoint)
	}
	if hi.Environment["MODE"] != "gateway" || !slices.Contains(hi.Ports, "8081:8080") {
		t.Errorf("higress: MODE %q, ports %v: want the gateway alone, its HTTP port 8080 published on 8081", hi.Environment["MODE"], hi.Ports)
	}
	checkSeedFiles(t)

	wp, cfg := higressPlugin(t, ComposeHigressWasmPlugin)
	u, err := url.Parse(wp.URL)
	if err != nil || u.Scheme != "file" {
		t.Fatalf("url %q: want file://", wp.URL)
	}
	if src := hi.mount(t, u.Path); filepath.Clean(src) != filepath.Clean(repoPath("dist/ratelimit-higress.wasm")) {
		t.Errorf("%s is mounted from %s, want dist/ratelimit-higress.wasm (make build)", u.Path, src)
	}
	if got, want := pluginConfigOf(t, ComposeHigressWasmPlugin), pluginConfigOf(t, HigressWasmPlugin); !jsonEqual(t, got, want) {
		t.Errorf("the defaultConfig of %s and %s differ", ComposeHigressWasmPlugin, HigressWasmPlugin)
	}

	regs := mcpBridge(t, "deploy/compose/higress/mcpbridges/default.yaml")
	redis := c.service(t, "redis")
	if _, eps := registryFor(t, cfg.Redis.Cluster, regs); !slices.Equal(eps, []string{redis.ipv4(t) + ":6379"}) {
		t.Errorf("%s resolves to %v; the redis service is at %s:6379", cfg.Redis.Cluster, eps, redis.ipv4(t))
	}
	if _, hashes := composeUsers(t); cfg.Redis.Username != "ratelimit-filter" || hashes["ratelimit-filter"] != sha256hex(cfg.Redis.Password) {
		t.Errorf("the plugin logs in as %q with %q: want ratelimit-filter with its password in users.acl", cfg.Redis.Username, cfg.Redis.Password)
	}
	if hi.DependsOn["install"].Condition != "service_completed_successfully" {
		t.Error("higress must wait for ratelimitctl install")
	}

	ing := decodeObject(t, findDoc(t, readYAML(t, "deploy/compose/higress/ingresses/echo.yaml"), "Ingress", "echo"), nil)
	dest := ing.Metadata.Annotations["higress.io/destination"]
	host, port, _ := strings.Cut(dest, ":")
	name, kind, _ := strings.Cut(host, ".")
	_, eps := registryFor(t, "outbound|"+port+"||"+name+"."+kind, regs)
	echo := c.service(t, "echo")
	if !slices.Equal(eps, []string{echo.ipv4(t) + ":8080"}) || !slices.Contains(echo.Command, "-listen=:8080") {
		t.Errorf("the route goes to %s, at %v; the echo service runs %v at %s", dest, eps, echo.Command, echo.ipv4(t))
	}
	for _, s := range []composeService{redis, echo} {
		_, subnet, err := net.ParseCIDR(c.Networks["demo"].IPAM.Config[0].Subnet)
		if err != nil || !subnet.Contains(net.ParseIP(s.ipv4(t))) {
			t.Errorf("%s is outside the demo network's subnet", s.ipv4(t))
		}
	}
}

// checkSeedFiles checks the layout Higress's file storage reads:
// <resource>/<name>.yaml, one object each, named after the file.
func checkSeedFiles(t *testing.T) {
	t.Helper()
	kinds := map[string]string{"wasmplugins": "WasmPlugin", "mcpbridges": "McpBridge", "ingresses": "Ingress"}
	files, err := filepath.Glob(repoPath("deploy/compose/higress/*/*"))
	if err != nil || len(files) != 3 {
		t.Fatalf("seed files %v: want one WasmPlugin, one McpBridge, one Ingress", files)
	}
	for _, f := range files {
		d, err := ReadYAMLOne(f)
		if err != nil {
			t.Fatal(err)
		}
		dir, base := filepath.Base(filepath.Dir(f)), filepath.Base(f)
		if d.Kind != kinds[dir] || d.Name+".yaml" != base || d.Namespace != "higress-system" {
			t.Errorf("%s: a %s named %s in %q: want a %s named %s in higress-system", f, d.Kind, d.Name, d.Namespace,
				kinds[dir], strings.TrimSuffix(base, ".yaml"))
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		t.Fatal("not JSON")
	}
	return reflect.DeepEqual(va, vb)
}
