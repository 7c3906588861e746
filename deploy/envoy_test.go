package deploy

import (
	"bytes"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	wasmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// The typed configs envoy.yaml may use. Importing their packages registers
// the types, so protojson can resolve the Anys that hold them; a type not
// listed here fails to decode, as an unknown extension fails in Envoy.
var _ = []proto.Message{&hcmv3.HttpConnectionManager{}, &wasmfilterv3.Wasm{}, &routerv3.Router{}, &wrapperspb.StringValue{}}

// validator is what protoc-gen-validate generates for Envoy's messages.
type validator interface{ ValidateAll() error }

// loadBootstrap decodes envoy.yaml as Envoy does: YAML to JSON, then JSON to
// the v3 Bootstrap, rejecting unknown fields and unresolvable typed configs,
// then Envoy's own validation rules, inside every Any as well.
func loadBootstrap(t *testing.T, yamlJSON []byte) (*bootstrapv3.Bootstrap, error) {
	t.Helper()
	b := &bootstrapv3.Bootstrap{}
	if err := protojson.Unmarshal(yamlJSON, b); err != nil {
		return nil, err
	}
	if err := b.ValidateAll(); err != nil {
		return nil, err
	}
	return b, checkAnys(b.ProtoReflect())
}

// checkAnys unpacks every google.protobuf.Any under m, recursively, and runs
// the validation rules of the message it holds: ValidateAll stops at an Any.
func checkAnys(m protoreflect.Message) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len() && err == nil; i++ {
				err = checkMessage(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				err = checkMessage(mv.Message())
				return err == nil
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			err = checkMessage(v.Message())
		}
		return err == nil
	})
	return err
}

func checkMessage(m protoreflect.Message) error {
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return checkAnys(m)
	}
	inner, err := a.UnmarshalNew()
	if err != nil {
		return err
	}
	if v, ok := inner.(validator); ok {
		if err := v.ValidateAll(); err != nil {
			return err
		}
	}
	return checkAnys(inner.ProtoReflect())
}

func envoyBootstrap(t *testing.T) (*bootstrapv3.Bootstrap, Document) {
	t.Helper()
	return envoyBootstrapFile(t, EnvoyBootstrap)
}

// envoyBootstrapFile decodes a bootstrap file under the repository root.
func envoyBootstrapFile(t *testing.T, file string) (*bootstrapv3.Bootstrap, Document) {
	t.Helper()
	doc, err := ReadYAMLOne(repoPath(file))
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadBootstrap(t, doc.JSON)
	if err != nil {
		t.Fatalf("%s is not a valid Envoy v3 bootstrap: %v", file, err)
	}
	return b, doc
}

func unpack[M proto.Message](t *testing.T, a *anypb.Any, m M) M {
	t.Helper()
	if err := a.UnmarshalTo(m); err != nil {
		t.Fatalf("typed_config %s: %v", a.GetTypeUrl(), err)
	}
	return m
}

// envoyPlugin returns the wasm filter's plugin configuration and the filter
// configuration it carries, parsed.
func envoyPlugin(t *testing.T, b *bootstrapv3.Bootstrap) (*wasmfilterv3.Wasm, []byte, *config.Config) {
	t.Helper()
	hcm := httpConnectionManager(t, b)
	filters := hcm.GetHttpFilters()
	if len(filters) != 2 || filters[0].GetName() != "envoy.filters.http.wasm" || filters[1].GetName() != "envoy.filters.http.router" {
		t.Fatalf("http_filters: want [envoy.filters.http.wasm, envoy.filters.http.router], got %v", filters)
	}
	unpack(t, filters[1].GetTypedConfig(), &routerv3.Router{})
	w := unpack(t, filters[0].GetTypedConfig(), &wasmfilterv3.Wasm{})
	s := unpack(t, w.GetConfig().GetConfiguration(), &wrapperspb.StringValue{})
	js := []byte(s.GetValue())
	return w, js, parsePluginConfig(t, "envoy.yaml", js)
}

func httpConnectionManager(t *testing.T, b *bootstrapv3.Bootstrap) *hcmv3.HttpConnectionManager {
	t.Helper()
	ls := b.GetStaticResources().GetListeners()
	if len(ls) != 1 {
		t.Fatalf("%d listeners, want 1", len(ls))
	}
	addr := ls[0].GetAddress().GetSocketAddress()
	if addr.GetAddress() != "0.0.0.0" || addr.GetPortValue() != 8080 {
		t.Fatalf("listener on %s:%d, want 0.0.0.0:8080", addr.GetAddress(), addr.GetPortValue())
	}
	chains := ls[0].GetFilterChains()
	if len(chains) != 1 || len(chains[0].GetFilters()) != 1 {
		t.Fatal("want one filter chain with one network filter")
	}
	return unpack(t, chains[0].GetFilters()[0].GetTypedConfig(), &hcmv3.HttpConnectionManager{})
}

// envoyEndpoints maps each static cluster to its one endpoint, "host:port".
func envoyEndpoints(t *testing.T, b *bootstrapv3.Bootstrap) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetType() != clusterv3.Cluster_STRICT_DNS {
			t.Errorf("cluster %s: type %v, want STRICT_DNS", c.GetName(), c.GetType())
		}
		var eps []*corev3.SocketAddress
		for _, l := range c.GetLoadAssignment().GetEndpoints() {
			for _, e := range l.GetLbEndpoints() {
				eps = append(eps, e.GetEndpoint().GetAddress().GetSocketAddress())
			}
		}
		if len(eps) != 1 || c.GetLoadAssignment().GetClusterName() != c.GetName() {
			t.Fatalf("cluster %s: want one endpoint and load_assignment.cluster_name %[1]s", c.GetName())
		}
		out[c.GetName()] = eps[0].GetAddress() + ":" + itoa(int(eps[0].GetPortValue()))
	}
	return out
}

func TestEnvoyBootstrap(t *testing.T) {
	b, doc := envoyBootstrap(t)

	if a := b.GetAdmin().GetAddress().GetSocketAddress(); a.GetPortValue() != 9901 {
		t.Errorf("admin on port %d, want 9901", a.GetPortValue())
	}
	hcm := httpConnectionManager(t, b)
	// Otherwise Envoy takes source.address (client_ip) from the last
	// X-Forwarded-For entry, which any client can send.
	if !hcm.GetUseRemoteAddress().GetValue() || hcm.GetSkipXffAppend() || len(hcm.GetOriginalIpDetectionExtensions()) > 0 {
		t.Errorf("use_remote_address %v, skip_xff_append %v, original_ip_detection_extensions %d: want true, false, none",
			hcm.GetUseRemoteAddress().GetValue(), hcm.GetSkipXffAppend(), len(hcm.GetOriginalIpDetectionExtensions()))
	}
	// One spelling per path, so that the filter's path keys and matches
	// cannot be walked around with "//", "/../" or escapes.
	if !hcm.GetNormalizePath().GetValue() || !hcm.GetMergeSlashes() ||
		hcm.GetPathWithEscapedSlashesAction() != hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT {
		t.Errorf("normalize_path %v, merge_slashes %v, path_with_escaped_slashes_action %v: want true, true, UNESCAPE_AND_REDIRECT",
			hcm.GetNormalizePath().GetValue(), hcm.GetMergeSlashes(), hcm.GetPathWithEscapedSlashesAction())
	}
	vhosts := hcm.GetRouteConfig().GetVirtualHosts()
	if len(vhosts) != 1 || len(vhosts[0].GetRoutes()) != 1 || vhosts[0].GetDomains()[0] != "*" {
		t.Fatalf("want one virtual host for * with one route, got %v", vhosts)
	}
	route := vhosts[0].GetRoutes()[0]
	if route.GetMatch().GetPrefix() != "/" || route.GetRoute().GetCluster() != "echo" {
		t.Errorf("route %v: want prefix / to cluster echo", route)
	}

	w, js, cfg := envoyPlugin(t, b)
	pc := w.GetConfig()
	vm := pc.GetVmConfig()
	if pc.GetName() != "ratelimit" || pc.GetRootId() != "ratelimit" || vm.GetRuntime() != "envoy.wasm.runtime.v8" ||
		vm.GetCode().GetLocal().GetFilename() != "/etc/envoy/ratelimit.wasm" {
		t.Errorf("wasm plugin: name %q, root_id %q, runtime %q, code %v", pc.GetName(), pc.GetRootId(), vm.GetRuntime(), vm.GetCode())
	}
	if cfg.Redis.Transport != config.TransportWebdis {
		t.Errorf("redis.transport %v: stock Envoy has no Redis callouts, want webdis", cfg.Redis.Transport)
	}
	eps := envoyEndpoints(t, b)
	if eps[cfg.Redis.Cluster] != "webdis:7379" || eps["echo"] != "echo:8080" || len(eps) != 2 {
		t.Errorf("clusters %v: want echo at echo:8080 and %s (redis.cluster) at webdis:7379", eps, cfg.Redis.Cluster)
	}

	// The generic extraction package schema uses finds the same string.
	generic, err := EnvoyPluginConfigs(doc.JSON)
	if err != nil || len(generic) != 1 || !bytes.Equal(generic[0], js) {
		t.Errorf("EnvoyPluginConfigs: %v, %d configs", err, len(generic))
	}
}

// The decoding above can fail: an unknown field, an unknown typed config or
// a value Envoy's validation rules refuse each make it fail.
func TestEnvoyBootstrapChecksBite(t *testing.T) {
	_, doc := envoyBootstrap(t)
	for name, edit := range map[string][2]string{
		"unknown field":         {`"stat_prefix":"ingress"`, `"stat_prefix":"ingress","stat_prefixes":"x"`},
		"unresolvable type":     {`router.v3.Router"`, `router.v3.NoSuchRouter"`},
		"type of another field": {`wasm.v3.Wasm"`, `wasm.v3.PluginConfig"`},
		"rule inside an Any":    {`"stat_prefix":"ingress"`, `"stat_prefix":""`},
		"rule outside an Any":   {`"port_value":8080`, `"port_value":80800`},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(string(doc.JSON), edit[0]) {
				t.Fatalf("envoy.yaml no longer holds %s", edit[0])
			}
			broken := strings.Replace(string(doc.JSON), edit[0], edit[1], 1)
			if _, err := loadBootstrap(t, []byte(broken)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
