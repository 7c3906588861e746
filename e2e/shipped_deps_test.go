package e2e

import (
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
		deps := shippedDeps(t, tags, "github.com/redisrate/envoy-redis-ratelimit/filter")
		for _, l := range leftOut {
			for _, pkg := range deps {
				if pkg == l.prefix || strings.HasPrefix(pkg, l.prefix) {
					t.Errorf("the shipped module (tags %q) links %s: %s", tags, pkg, l.why)
				}
			}
		}
	}
}
