package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// Only proxyhost (and main) may depend on the proxy-wasm SDK: the filter's
// logic, the algorithms and the codec are pure Go, testable natively.
func TestOnlyProxyhostImportsTheSDK(t *testing.T) {
	for _, pkg := range []string{"filter", "algorithms", "redisproto"} {
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
