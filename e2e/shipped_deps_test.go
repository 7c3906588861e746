package e2e

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// leftOut are the packages neither build of the shipped module may link,
// by import-path prefix, and why.
var leftOut = []struct{ prefix, why string }{
	{"github.com/tidwall/", "gjson (145 KB of code), its pretty (27 KB) and match: package jsonvalue reads JSON"},
	{"encoding/json", "linked only by tidwall/pretty: 223 KB of code, and reflect's type data"},
}

// Neither build of the shipped module (default and -tags higress) links a
// package of leftOut (issue 31: the module's size).
func TestShippedModuleLeavesOutPackages(t *testing.T) {
	for _, tags := range []string{"", "higress"} {
		deps := shippedDepsTagged(t, tags)
		for _, l := range leftOut {
			for _, pkg := range deps {
				if pkg == l.prefix || strings.HasPrefix(pkg, l.prefix) {
					t.Errorf("the shipped module (tags %q) links %s: %s", tags, pkg, l.why)
				}
			}
		}
	}
}

// shippedDepsTagged lists the packages a build of the wasm module links,
// checking that the list holds package filter (else it was not read
// right).
func shippedDepsTagged(t *testing.T, tags string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-tags", tags, ".")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/redisrate/envoy-redis-ratelimit/filter") {
		t.Fatalf("go list did not list package filter:\n%s", out)
	}
	return deps
}
