package deploy

import (
	"testing"

	wasmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/wasm/v3"
	"google.golang.org/protobuf/encoding/protojson"
	extensionsv1alpha1 "istio.io/api/extensions/v1alpha1"
)

// A VM that traps is recreated rather than failing every later request
// (deploy/README.md, "Supported versions"): envoy.yaml sets Envoy's
// failure_policy FAIL_RELOAD, the Istio WasmPlugin failStrategy
// FAIL_RELOAD. Higress's WasmPlugin has no such value (higress_test.go
// allows FAIL_CLOSE and FAIL_OPEN only); its Envoy rebuilds a failed VM.
func TestCrashedVMReloads(t *testing.T) {
	b, _ := envoyBootstrap(t)
	w, _, _ := envoyPlugin(t, b)
	if p := w.GetConfig().GetFailurePolicy(); p != wasmv3.FailurePolicy_FAIL_RELOAD {
		t.Errorf("envoy.yaml: failure_policy %v, want FAIL_RELOAD", p)
	}
	if w.GetConfig().GetFailOpen() {
		t.Error("envoy.yaml: fail_open is deprecated in favour of failure_policy")
	}

	o := decodeObject(t, findDoc(t, istioDocs(t), "WasmPlugin", "ratelimit"), nil)
	var wp extensionsv1alpha1.WasmPlugin
	if err := protojson.Unmarshal(o.Spec, &wp); err != nil {
		t.Fatal(err)
	}
	if s := wp.GetFailStrategy(); s != extensionsv1alpha1.FailStrategy_FAIL_RELOAD {
		t.Errorf("%s: failStrategy %v, want FAIL_RELOAD", IstioWasmPlugin, s)
	}
}
