package deploy

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	extensionsv1alpha1 "istio.io/api/extensions/v1alpha1"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

func istioDocs(t *testing.T) []Document { return yamlDocs(t, "deploy/istio/*.yaml") }

// yamlDocs reads every document of the files pattern names.
func yamlDocs(t *testing.T, pattern string) []Document {
	t.Helper()
	files, err := filepath.Glob(repoPath(pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s: %v", pattern, err)
	}
	var docs []Document
	for _, f := range files {
		d, err := ReadYAML(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d...)
	}
	return docs
}

// meshCluster is an Istio outbound cluster name:
// outbound|<port>|<subset>|<service>.<namespace>.svc.cluster.local.
type meshCluster struct {
	port            int
	service, subset string
	namespace       string
}

func parseMeshCluster(name string) (meshCluster, error) {
	parts := strings.Split(name, "|")
	if len(parts) != 4 || parts[0] != "outbound" {
		return meshCluster{}, fmt.Errorf("%q is not outbound|<port>|<subset>|<host>", name)
	}
	port, err := strconv.Atoi(parts[1])
	if err != nil {
		return meshCluster{}, fmt.Errorf("%q: port: %v", name, err)
	}
	host, ok := strings.CutSuffix(parts[3], ".svc.cluster.local")
	svc, ns, ok2 := strings.Cut(host, ".")
	if !ok || !ok2 || strings.Contains(ns, ".") {
		return meshCluster{}, fmt.Errorf("%q: host is not <service>.<namespace>.svc.cluster.local", name)
	}
	return meshCluster{port: port, subset: parts[2], service: svc, namespace: ns}, nil
}

// The WasmPlugin is a valid Istio WasmPlugin (decoded with Istio's own API
// types, unknown fields and bad enum values refused) whose configuration the
// filter and the schema accept, and its redis.cluster is the gateway's
// cluster for the webdis Service.
func TestIstioWasmPlugin(t *testing.T) {
	docs := istioDocs(t)
	d := findDoc(t, docs, "WasmPlugin", "ratelimit")
	if d.APIVersion != "extensions.istio.io/v1alpha1" {
		t.Errorf("apiVersion %s", d.APIVersion)
	}
	o := decodeObject(t, d, nil)
	var wp extensionsv1alpha1.WasmPlugin
	if err := protojson.Unmarshal(o.Spec, &wp); err != nil {
		t.Fatalf("spec is not an Istio WasmPlugin: %v", err)
	}
	u, err := url.Parse(wp.GetUrl())
	if err != nil || !slices.Contains([]string{"oci", "file", "http", "https"}, u.Scheme) {
		t.Errorf("url %q: want oci://, file:// or http(s)://", wp.GetUrl())
	}
	if (u.Scheme == "http" || u.Scheme == "https") && wp.GetSha256() == "" {
		t.Errorf("url %q: a module fetched over HTTP needs sha256", wp.GetUrl())
	}
	if len(wp.GetSelector().GetMatchLabels()) == 0 {
		t.Error("no selector: the plugin would apply to every workload of the namespace")
	}
	if wp.GetPhase() != extensionsv1alpha1.PluginPhase_STATS {
		t.Errorf("phase %v: want STATS, after Istio's authentication and authorization", wp.GetPhase())
	}
	if ty := wp.GetType(); ty != extensionsv1alpha1.PluginType_HTTP && ty != extensionsv1alpha1.PluginType_UNSPECIFIED_PLUGIN_TYPE {
		t.Errorf("type %v: the filter is an HTTP filter", ty)
	}

	cfg := parsePluginConfig(t, IstioWasmPlugin, pluginConfigOf(t, IstioWasmPlugin))
	if cfg.Redis.Transport != config.TransportWebdis {
		t.Fatalf("redis.transport %v: Istio's proxy has no Redis callouts, want webdis", cfg.Redis.Transport)
	}
	mc, err := parseMeshCluster(cfg.Redis.Cluster)
	if err != nil || mc.subset != "" {
		t.Fatalf("redis.cluster: %v (subset %q)", err, mc.subset)
	}
	svc := findDoc(t, docs, "Service", mc.service)
	if svc.Namespace != mc.namespace {
		t.Fatalf("redis.cluster names namespace %s, the %s Service is in %s", mc.namespace, mc.service, svc.Namespace)
	}
	var svcSpec serviceSpec
	decodeObject(t, svc, &svcSpec)
	var dep deploymentSpec
	decodeObject(t, findDoc(t, docs, "Deployment", mc.service), &dep)
	containerPort := servedPort(t, svcSpec, dep, mc.port)

	w := webdisFromDeployment(t, docs, dep, cfg)
	if w.HTTPPort != containerPort {
		t.Errorf("Webdis listens on %d, the Service targets %d", w.HTTPPort, containerPort)
	}
	checkIstioRedis(t, docs, mc.namespace, w)
}

// webdisFromDeployment finds the Webdis configuration the Deployment's
// command loads (a file of a mounted Secret) and checks it.
func webdisFromDeployment(t *testing.T, docs []Document, dep deploymentSpec, cfg *config.Config) webdisConfig {
	t.Helper()
	c := dep.Template.Spec.Containers[0]
	if len(c.Command) != 2 || c.Command[0] != "/usr/local/bin/webdis" {
		t.Fatalf("webdis command %v: want /usr/local/bin/webdis <config> (not the image's default, which also starts Redis)", c.Command)
	}
	dir, file := filepath.Split(c.Command[1])
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) != filepath.Clean(dir) {
			continue
		}
		for _, v := range dep.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret.SecretName != "" {
				s := decodeObject(t, findDoc(t, docs, "Secret", v.Secret.SecretName), nil)
				data, ok := s.StringData[file]
				if !ok {
					t.Fatalf("Secret %s has no stringData %q", v.Secret.SecretName, file)
				}
				return checkWebdisConfig(t, "Secret "+v.Secret.SecretName, []byte(data), cfg)
			}
		}
	}
	t.Fatalf("no Secret volume mounted at %s", dir)
	return webdisConfig{}
}

// checkIstioRedis checks that Webdis reaches the redis Service, with the
// password the Redis Deployment requires.
func checkIstioRedis(t *testing.T, docs []Document, namespace string, w webdisConfig) {
	t.Helper()
	name, ok := strings.CutSuffix(w.RedisHost, "."+namespace+".svc.cluster.local")
	if !ok && strings.Contains(w.RedisHost, ".") {
		t.Fatalf("redis_host %q: want a Service of namespace %s", w.RedisHost, namespace)
	}
	svc := findDoc(t, docs, "Service", name)
	if svc.Namespace != namespace {
		t.Fatalf("Service %s is in %s, Webdis is in %s", name, svc.Namespace, namespace)
	}
	var svcSpec serviceSpec
	decodeObject(t, svc, &svcSpec)
	var dep deploymentSpec
	decodeObject(t, findDoc(t, docs, "Deployment", name), &dep)
	if port := servedPort(t, svcSpec, dep, w.RedisPort); port != 6379 {
		t.Errorf("the redis Service targets port %d; redis-server listens on 6379", port)
	}
	c := dep.Template.Spec.Containers[0]
	aclFile := flagValue(t, c.Args, "--aclfile")
	secret := mountedSecret(t, docs, dep, c, aclFile)
	if _, hashes := aclUsers(t, secret.StringData["users.acl"]); hashes["default"] != sha256hex(w.redisAuth(t)) {
		t.Errorf("Webdis sends redis_auth %q, which is not the password of default in Secret %s's users.acl", w.redisAuth(t), secret.Metadata.Name)
	}
	want := renderUsers(t, "users-webdis.acl", "filter-demo-password", secret.StringData["operator-password"], w.redisAuth(t))
	if secret.StringData["users.acl"] != want {
		t.Errorf("Secret %s's users.acl is not deploy/redis/users-webdis.acl rendered with its passwords:\n%s\nwant:\n%s",
			secret.Metadata.Name, secret.StringData["users.acl"], want)
	}
}

// mountedSecret is the Secret mounted where the container reads file.
func mountedSecret(t *testing.T, docs []Document, dep deploymentSpec, c container, file string) k8sObject {
	t.Helper()
	dir, _ := filepath.Split(file)
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) != filepath.Clean(dir) {
			continue
		}
		for _, v := range dep.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret.SecretName != "" {
				return decodeObject(t, findDoc(t, docs, "Secret", v.Secret.SecretName), nil)
			}
		}
	}
	t.Fatalf("no Secret mounted for %s", file)
	return k8sObject{}
}

// pluginConfigOf returns the plugin configuration of one file, as
// PluginConfigs finds it (package schema validates the same).
func pluginConfigOf(t *testing.T, file string) []byte {
	t.Helper()
	all, err := PluginConfigs(root)
	if err != nil {
		t.Fatal(err)
	}
	var found [][]byte
	for _, c := range all {
		if c.File == file {
			found = append(found, c.JSON)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d plugin configurations, want 1", file, len(found))
	}
	return found[0]
}

func TestParseMeshCluster(t *testing.T) {
	got, err := parseMeshCluster("outbound|7379||webdis.ratelimit.svc.cluster.local")
	if err != nil || got != (meshCluster{port: 7379, service: "webdis", namespace: "ratelimit"}) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"webdis", "inbound|7379||webdis.ratelimit.svc.cluster.local", "outbound|x||webdis.ratelimit.svc.cluster.local",
		"outbound|7379||webdis.ratelimit", "outbound|7379||webdis.svc.cluster.local", "outbound|6379||redis.static"} {
		if _, err := parseMeshCluster(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
