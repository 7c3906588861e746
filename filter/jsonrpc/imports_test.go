package jsonrpc

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsArePure: the package links neither the proxy-wasm SDK nor
// fmt, reflect or encoding/json, as the shipped module must not.
func TestImportsArePure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc") {
		t.Fatalf("go list did not list the package:\n%s", out)
	}
	for _, dep := range deps {
		if dep == "fmt" || dep == "reflect" || dep == "encoding/json" || strings.Contains(dep, "proxy-wasm") ||
			dep == "github.com/redisrate/envoy-redis-ratelimit/filter" {
			t.Errorf("filter/jsonrpc depends on %s", dep)
		}
	}
}
