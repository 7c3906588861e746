package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	extensionsv1alpha1 "istio.io/api/extensions/v1alpha1"
)

// istioBase is the first Istio on Envoy 1.33, where a Go wasip1 module
// loads (Istio minors follow Envoy minors one to one).
const istioBase = "1.25"

// istioSince is the first Istio release that accepts each failStrategy:
// FAIL_RELOAD came with istio/api 5e743e9 (PR #3471), first tagged 1.27.0.
var istioSince = map[extensionsv1alpha1.FailStrategy]string{
	extensionsv1alpha1.FailStrategy_FAIL_RELOAD: "1.27",
}

// The README's proxy table states the Istio that the shipped WasmPlugin
// needs: 1.27 for its failStrategy FAIL_RELOAD, not 1.25.
func TestReadmeIstioMinimum(t *testing.T) {
	o := decodeObject(t, findDoc(t, istioDocs(t), "WasmPlugin", "ratelimit"), nil)
	var wp extensionsv1alpha1.WasmPlugin
	if err := protojson.Unmarshal(o.Spec, &wp); err != nil {
		t.Fatal(err)
	}
	want := istioBase
	if v, ok := istioSince[wp.GetFailStrategy()]; ok {
		want = v
	}
	readme, err := os.ReadFile(repoPath("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	stated := regexp.MustCompile(`Istio ≥ (\d+\.\d+)`)
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `dist/ratelimit.wasm`") {
			continue
		}
		m := stated.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("README.md: the stock build's row states no Istio ≥ version: %s", line)
		}
		if m[1] != want {
			t.Errorf("README.md: Istio ≥ %s, but %s (failStrategy %v) needs Istio %s", m[1], IstioWasmPlugin, wp.GetFailStrategy(), want)
		}
		return
	}
	t.Fatal("README.md: no proxy table row for dist/ratelimit.wasm")
}
