package main

import (
	"io"
	"log"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// shippedEnvoy is the repository's envoy.yaml.
const shippedEnvoy = "../../../envoy.yaml"

// -envoy reads from the shipped file what Envoy would take from it.
func TestLoadShippedEnvoyYAML(t *testing.T) {
	e, err := loadEnvoy(shippedEnvoy)
	if err != nil {
		t.Fatal(err)
	}
	if e.listen != "0.0.0.0:8080" || e.admin != "0.0.0.0:9901" {
		t.Errorf("listen %q, admin %q", e.listen, e.admin)
	}
	if !e.useRemote || e.xffHops != 0 || e.skipXffAppend || !e.normalizePath || !e.mergeSlashes || e.escapedSlashes != "UNESCAPE_AND_REDIRECT" {
		t.Errorf("connection manager: %+v", e)
	}
	if want := map[string]string{"echo": "echo:8080", "webdis": "webdis:7379"}; !reflect.DeepEqual(e.clusters, want) {
		t.Errorf("clusters %v, want %v", e.clusters, want)
	}
	if e.upstreamCluster != "echo" || len(e.routes) != 1 || e.routes[0].PathPrefix != "/" || e.routes[0].Cluster != "echo" {
		t.Errorf("routes %+v to %q", e.routes, e.upstreamCluster)
	}
	if e.wasmFile != "/etc/envoy/ratelimit.wasm" || e.pluginName != "ratelimit" || e.rootID != "ratelimit" || e.vmID != "ratelimit" ||
		e.failurePolicy != "FAIL_RELOAD" || e.allowStopOnHead {
		t.Errorf("wasm filter: %+v", e)
	}
	if p := readPluginRedis(e.pluginConfig); p.transport() != "webdis" || !reflect.DeepEqual(p.names("webdis"), []string{"webdis"}) {
		t.Errorf("plugin configuration: %q", e.pluginConfig)
	}
}

// Shapes -envoy cannot run as Envoy would are refused, naming the field.
func TestEnvoyRefusesUnsupportedShapes(t *testing.T) {
	shipped, err := os.ReadFile(shippedEnvoy)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"use_remote_address: true", "useRemoteAddress: true", "field useRemoteAddress: write it as use_remote_address"},
		{"    filter_chains:", "    listener_filters: [{name: envoy.filters.listener.proxy_protocol}]\n    filter_chains:",
			"listeners[0].listener_filters: not supported"},
		{"route: {cluster: echo}", "redirect: {path_redirect: /x}", "routes[0]: only route (to a cluster)"},
		{"route: {cluster: echo}", "route: {cluster: nosuch}", `route cluster "nosuch": no such cluster`},
		{`match: {prefix: "/"}`, `match: {path: "/"}`, "routes[0].match: only prefix"},
		{"          http_filters:\n", "          http_filters:\n          - name: envoy.filters.http.cors\n" +
			"            typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors}\n",
			"http_filters[0] (envoy.filters.http.cors): @type \"type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors\" is not supported"},
		{"local:\n                      filename: /etc/envoy/ratelimit.wasm", "remote: {}", "vm_config.code.remote: not supported"},
		{`"@type": type.googleapis.com/google.protobuf.StringValue`, `"@type": type.googleapis.com/google.protobuf.Struct`,
			`config.configuration: @type "type.googleapis.com/google.protobuf.Struct"`},
		{"path_with_escaped_slashes_action: UNESCAPE_AND_REDIRECT", "path_with_escaped_slashes_action: UNESCAPE",
			`path_with_escaped_slashes_action: unknown path_with_escaped_slashes_action "UNESCAPE"`},
		{"xff_num_trusted_hops: 0", "xff_num_trusted_hops: -1", "xff_num_trusted_hops: -1 is negative"},
		{"static_resources:", "dynamic_resources: {}\nstatic_resources:", "dynamic_resources: xDS is not supported"},
		{"address:\n      socket_address: {address: 0.0.0.0, port_value: 8080}", "address:\n      pipe: {path: /tmp/x}",
			"listeners[0].address: only socket_address is supported"},
		{"port_value: 7379", "port_value: 70000", "socket_address.port_value: required, 0 to 65535"},
		{"use_remote_address: true", "use_remote_address: sometimes", "cannot unmarshal"},
	} {
		if !strings.Contains(string(shipped), tc.old) {
			t.Fatalf("the shipped file no longer has %q: update this test", tc.old)
		}
		path := writeFile(t, "envoy.yaml", strings.Replace(string(shipped), tc.old, tc.new, 1))
		if _, err := loadEnvoy(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q -> %q: error %v, want %q", tc.old, tc.new, err, tc.want)
		}
	}
}

// Without the flags that override it, the file gives the listener, the
// upstream cluster, the Webdis cluster and the module; the module named
// in the file is not here, so the configuration's transport picks it.
func TestEnvoyFileUnderFlags(t *testing.T) {
	o, err := parseFlags([]string{"-envoy", shippedEnvoy, "-listen", "127.0.0.1:9999"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := makePlan(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.bindClusters(o, false); err != nil {
		t.Fatal(err)
	}
	if p.listen != "127.0.0.1:9999" || p.admin != "0.0.0.0:9901" || p.upstream != "http://echo:8080" || p.http["webdis"] != "webdis:7379" {
		t.Errorf("listen %q, admin %q, upstream %q, http clusters %v", p.listen, p.admin, p.upstream, p.http)
	}
	if p.wasmPath != stockWasm || !strings.Contains(strings.Join(p.notes, "\n"), "/etc/envoy/ratelimit.wasm is not here: using dist/ratelimit.wasm") {
		t.Errorf("wasm %q, notes %q", p.wasmPath, p.notes)
	}
	if len(p.redis) != 0 || p.fallback != "" {
		t.Errorf("the stock build got Redis clusters %v, fallback %q", p.redis, p.fallback)
	}
}

// The shipped envoy.yaml runs as Envoy would, with the stock build, a real
// Webdis that takes the file's credentials, and a local upstream: a user
// is limited, X-Forwarded-For is not trusted but appended to, and an
// escaped slash is redirected.
func TestShippedEnvoyYAMLRuns(t *testing.T) {
	srv := redistest.Start(t)
	webdis := redistest.StartWebdisUser(t, srv.Addr, "ratelimit", "webdis-demo-password")
	up, closeUp, err := startEcho(log.New(os.Stderr, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer closeUp()
	r := startCmd(t, "-envoy", shippedEnvoy, "-wasm", distPath(t, dist.Stock),
		"-http-cluster", "webdis=http://"+webdis, "-upstream", up)
	for _, want := range []string{`http cluster "webdis" -> ` + webdis + " (-http-cluster)", "redis.transport webdis",
		"client address: the TCP peer (use_remote_address true, xff_num_trusted_hops 0)",
		"paths: normalize_path true, merge_slashes true, path_with_escaped_slashes_action UNESCAPE_AND_REDIRECT",
		"note: failure_policy FAIL_RELOAD is not modelled", "configuration from " + shippedEnvoy} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stderr)
		}
	}

	// 10 a minute: the 11th request at the latest is denied, unless a
	// call outlived the file's 250 ms timeout (failure_mode allow lets
	// that request through uncounted): hence the margin.
	user := map[string]string{"x-user-id": redistest.Prefix(t), "x-forwarded-for": "6.6.6.6"}
	replies := untilDenied(t, r.url+"/x/../api//v1", user, 30)
	first, last := replies[0], replies[len(replies)-1]
	limited := 0
	for _, rep := range replies {
		if rep.header.Get("RateLimit") != "" && rep.header.Get("RateLimit-Policy") != "" {
			limited++
		}
	}
	if last.status != 429 || limited == 0 {
		t.Fatalf("statuses %v, %d with RateLimit headers: want RateLimit headers, then a 429", statuses(replies), limited)
	}
	e := first.echo(t)
	if e.URI != "/api/v1" {
		t.Errorf("the upstream got %q, want the normalized /api/v1", e.URI)
	}
	if xff := strings.Join(e.Headers["X-Forwarded-For"], ","); !strings.HasPrefix(xff, "6.6.6.6,") {
		t.Errorf("x-forwarded-for %q, want the client's with this proxy's address appended", xff)
	}
	if line := r.accessLines()[0]; !strings.Contains(line, " client=127.0.0.1:") {
		t.Errorf("access log client is not the TCP peer: %q", line)
	}
	if rep := get(t, r.url+"/a%2Fb", "", nil); rep.status != 307 || rep.header.Get("Location") != "/a/b" {
		t.Errorf("escaped slash: %d, Location %q; want 307 to /a/b", rep.status, rep.header.Get("Location"))
	}
}

// A Higress-flavoured file: its Redis cluster's address is used unless
// -redis or -redis-cluster say otherwise, and its
// allow_on_headers_stop_iteration unless the flag is given.
func TestEnvoyFileRedisClusters(t *testing.T) {
	shipped, err := os.ReadFile(shippedEnvoy)
	if err != nil {
		t.Fatal(err)
	}
	const name = "outbound|6379||redis.static"
	text := strings.NewReplacer(
		`"transport": "webdis",`, "",
		`"cluster": "webdis",`, `"cluster": "`+name+`",`,
		`"authority": "webdis",`, "",
		`"path": "/",`, "",
		"  - name: webdis\n", "  - name: "+name+"\n",
		"cluster_name: webdis", "cluster_name: "+name,
		"{address: webdis, port_value: 7379}", "{address: 127.0.0.1, port_value: 6390}",
		"failure_policy: FAIL_RELOAD", "failure_policy: FAIL_RELOAD\n                allow_on_headers_stop_iteration: true",
	).Replace(string(shipped))
	file := writeFile(t, "higress.yaml", text)
	for _, tc := range []struct {
		args      []string
		addr      string
		allowBody bool
	}{
		{nil, "127.0.0.1:6390", true},
		{[]string{"-redis", "127.0.0.1:7000"}, "127.0.0.1:7000", true},
		{[]string{"-redis-cluster", name + "=127.0.0.1:7001", "-allow-on-headers-stop-iteration=false"}, "127.0.0.1:7001", false},
	} {
		o, err := parseFlags(append([]string{"-envoy", file}, tc.args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		p, err := makePlan(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.bindClusters(o, true); err != nil {
			t.Fatal(err)
		}
		if p.redis[name] != tc.addr || p.allowStopOnHead != tc.allowBody || p.wasmPath != higressWasm {
			t.Errorf("%v: redis %v, allow %v, wasm %q; want %s, %v", tc.args, p.redis, p.allowStopOnHead, p.wasmPath, tc.addr, tc.allowBody)
		}
		if _, asHTTP := p.http[name]; asHTTP {
			t.Errorf("%v: the Redis cluster is also an HTTP cluster: %v", tc.args, p.http)
		}
	}
}
