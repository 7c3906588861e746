package e2e

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Only proxyhost (and main) may depend on the proxy-wasm SDK: the filter's
// logic, the algorithms, the codec and the JSON check are pure Go,
// testable natively.
func TestOnlyProxyhostImportsTheSDK(t *testing.T) {
	for _, pkg := range []string{"filter", "algorithms", "redisproto", "jsonbound"} {
		out, err := exec.Command("go", "list", "-deps", "../"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		if strings.Contains(string(out), "proxy-wasm-go-sdk") {
			t.Errorf("%s depends on the proxy-wasm SDK", pkg)
		}
		if !strings.Contains(string(out), "envoy-redis-ratelimit/"+pkg) {
			t.Fatalf("go list did not list %s itself:\n%s", pkg, out)
		}
	}
	out, _ := exec.Command("go", "list", "-deps", "../proxyhost").CombinedOutput()
	if !strings.Contains(string(out), "proxy-wasm-go-sdk") {
		t.Fatal("the check cannot see the SDK: proxyhost should depend on it")
	}
}

// The filter's module, the one users import or vendor, needs only the
// proxy-wasm SDK, for its code and for its tests alike: every module in
// its build list is the SDK or a requirement of it.
func TestFilterModuleNeedsOnlyTheSDK(t *testing.T) {
	goInRoot := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	const self = "github.com/redisrate/envoy-redis-ratelimit"
	const sdk = "github.com/proxy-wasm/proxy-wasm-go-sdk"
	direct := map[string]bool{sdk: true}
	// requires maps a module (path@version, or the main module's path) to
	// what its go.mod requires.
	requires := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(goInRoot("mod", "graph")), "\n") {
		from, to, _ := strings.Cut(line, " ")
		requires[from] = append(requires[from], to)
	}
	reachable := map[string]bool{}
	var visit func(m string)
	visit = func(m string) {
		path, _, _ := strings.Cut(m, "@")
		if reachable[m] {
			return
		}
		reachable[m], reachable[path] = true, true
		for _, r := range requires[m] {
			visit(r)
		}
	}
	var others []string
	for _, m := range requires[self] {
		path, _, _ := strings.Cut(m, "@")
		switch {
		case path == "go" || path == "toolchain":
		case direct[path]:
			visit(m)
		default:
			others = append(others, m)
		}
	}
	for _, m := range others { // indirect requirements: the SDK's
		if path, _, _ := strings.Cut(m, "@"); !reachable[path] {
			t.Errorf("the filter's go.mod requires %s", m)
		}
	}
	all := strings.Split(strings.TrimSpace(goInRoot("list", "-m", "all")), "\n")
	for _, line := range all[1:] { // all[0] is the filter's module itself
		if path, _, _ := strings.Cut(line, " "); !reachable[path] {
			t.Errorf("the filter's module needs %s, which the SDK does not require", line)
		}
	}
	if len(all) < 2 || !reachable[sdk] {
		t.Fatalf("too little to check:\n%s", strings.Join(all, "\n"))
	}
}

// The shipped module does not link net/netip (nor net/url, which imports
// it): netip's package init makes unique handles, about 45 ms of a VM's
// start-up in V8. Package filter/ipaddr reads addresses instead.
func TestShippedModuleLeavesOutNetip(t *testing.T) {
	deps := shippedDeps(t, "", "github.com/redisrate/envoy-redis-ratelimit/filter/ipaddr")
	for _, pkg := range []string{"net/netip", "unique", "net/url"} {
		if slices.Contains(deps, pkg) {
			t.Errorf("the shipped module depends on %s", pkg)
		}
	}
}

// Nor does it link Go's zone database (algorithms/zones.go keeps each
// zone's current rule: 25 KB, not 376 KB) or crypto/sha256, whose FIPS
// 140 module took 157 KB (filter/keyspace computes its SHA-256).
func TestShippedModuleLeavesOutZonesAndCrypto(t *testing.T) {
	deps := shippedDeps(t, "", "github.com/redisrate/envoy-redis-ratelimit/algorithms")
	for _, pkg := range deps {
		if pkg == "time/tzdata" || pkg == "crypto" || strings.HasPrefix(pkg, "crypto/") {
			t.Errorf("the shipped module depends on %s", pkg)
		}
	}
}

// shippedDeps lists the packages a build of the wasm module links (tags:
// "" or "higress"), checking that the list holds pkg (else it was not
// read right).
func shippedDeps(t *testing.T, tags, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, ".")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, pkg) {
		t.Fatalf("go list did not list %s:\n%s", pkg, out)
	}
	return deps
}

// The filter's pure packages sit below it: none imports package filter,
// so each builds and tests without the runtime.
func TestLayersPurePackagesDoNotImportFilter(t *testing.T) {
	const filter = "github.com/redisrate/envoy-redis-ratelimit/filter"
	for _, pkg := range []string{"config", "keyspace", "usage", "webdis", "pathnorm", "ipaddr", "headermap", "localstate", "jwt", "redisfail", "decision", "headerparts", "hotkey"} {
		out, err := exec.Command("go", "list", "-deps", "../filter/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list filter/%s: %v\n%s", pkg, err, out)
		}
		if !strings.Contains(string(out), filter+"/"+pkg+"\n") {
			t.Fatalf("go list did not list filter/%s itself:\n%s", pkg, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == filter {
				t.Errorf("filter/%s depends on package filter", pkg)
			}
		}
	}
}

// ratelimitctl reads the configuration and the key space without the
// filter's runtime: its code depends on filter/config and filter/keyspace,
// not on package filter (its tests may).
func TestLayersRatelimitctlDoesNotImportFilter(t *testing.T) {
	const filter = "github.com/redisrate/envoy-redis-ratelimit/filter"
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Dir = "../cmd/ratelimitctl"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/ratelimitctl: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, filter+"/keyspace") || !slices.Contains(deps, filter+"/config") {
		t.Fatalf("ratelimitctl does not depend on filter/config and filter/keyspace:\n%s", out)
	}
	if slices.Contains(deps, filter) {
		t.Error("ratelimitctl depends on package filter")
	}
}
