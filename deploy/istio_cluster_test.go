package deploy

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	extensionsv1alpha1 "istio.io/api/extensions/v1alpha1"
)

func istioClusterDocs(t *testing.T) []Document { return yamlDocs(t, "deploy/istio/cluster/*.yaml") }

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(repoPath(rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// istio/cluster/: the WasmPlugin is istio/wasmplugin.yaml's but for
// redis.nodes, which lists each pod of the redis-cluster StatefulSet by its
// announced hostname, with the gateway's cluster of the Service that
// selects that pod alone and reaches its Webdis; the pods run the shipped
// redis-cluster.conf, users-cluster.acl and Webdis node.json, least
// privileged; the install Job reaches the same nodes with the release the
// WasmPlugin pulls.
func TestIstioClusterManifests(t *testing.T) {
	docs := istioClusterDocs(t)
	single, cluster := istioWasmPlugin(t, findDoc(t, istioDocs(t), "WasmPlugin", "ratelimit")), istioWasmPlugin(t, findDoc(t, docs, "WasmPlugin", "ratelimit"))
	single.PluginConfig, cluster.PluginConfig = nil, nil
	if !proto.Equal(single, cluster) {
		t.Errorf("%s differs from %s beyond pluginConfig:\n%v\n%v", IstioClusterWasmPlugin, IstioWasmPlugin, cluster, single)
	}
	cfg := parsePluginConfig(t, IstioClusterWasmPlugin, pluginConfigOf(t, IstioClusterWasmPlugin))
	if !cfg.Redis.ClusterMode || cfg.Redis.Cluster != "" {
		t.Errorf("redis: cluster_mode %v, cluster %q: want true and none (redis.nodes)", cfg.Redis.ClusterMode, cfg.Redis.Cluster)
	}

	var sts statefulSetSpec
	stsDoc := findDoc(t, docs, "StatefulSet", "redis-cluster")
	decodeObject(t, stsDoc, &sts)
	pod := sts.Template.Spec
	checkLeastPrivilege(t, "StatefulSet redis-cluster", pod)
	var headless headlessServiceSpec
	hs := decodeObject(t, findDoc(t, docs, "Service", sts.ServiceName), &headless)
	if headless.ClusterIP != "None" || !headless.PublishNotReadyAddresses || hs.Metadata.Namespace != stsDoc.Namespace ||
		len(headless.Selector) == 0 || !mapsSubset(headless.Selector, sts.Template.Metadata.Labels) {
		t.Errorf("Service %s: %+v: want headless, publishing not-ready pods, selecting the StatefulSet's pods", sts.ServiceName, headless)
	}
	if len(cfg.Redis.Nodes) != sts.Replicas || sts.Replicas != 6 {
		t.Fatalf("redis.nodes: %d, StatefulSet replicas %d: want one node per pod, 6", len(cfg.Redis.Nodes), sts.Replicas)
	}
	redis, webdis := pod.Containers[0], pod.Containers[1]
	domain := "." + sts.ServiceName + "." + stsDoc.Namespace + ".svc.cluster.local"
	env := func(c podContainer, name string) (value, secret, key, field string) {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key, e.ValueFrom.FieldRef.FieldPath
			}
		}
		t.Fatalf("container %s has no env %s", c.Name, name)
		return
	}
	if flagValue(t, redis.Args, "--cluster-announce-hostname") != "$(POD_NAME)"+domain {
		t.Errorf("redis announces %q, want $(POD_NAME)%s", flagValue(t, redis.Args, "--cluster-announce-hostname"), domain)
	}
	if _, _, _, f := env(redis, "POD_NAME"); f != "metadata.name" {
		t.Errorf("POD_NAME from %q, want metadata.name", f)
	}

	// The files the pods read are the shipped ones, and users.acl is
	// users-cluster.acl rendered with the passwords the others use.
	if len(redis.Command) != 1 || redis.Command[0] != "redis-server" || len(redis.Args) == 0 {
		t.Fatalf("redis: command %v args %v: want redis-server <redis-cluster.conf> flags...", redis.Command, redis.Args)
	}
	secretName, confKey := secretFile(t, pod, redis, redis.Args[0])
	secret := decodeObject(t, findDoc(t, docs, "Secret", secretName), nil)
	if secret.StringData[confKey] != readRepoFile(t, "deploy/redis/redis-cluster.conf") {
		t.Errorf("Secret %s's %s is not deploy/redis/redis-cluster.conf", secretName, confKey)
	}
	if s, key := secretFile(t, pod, redis, "/etc/redis/users.acl"); s != secretName || key != "users.acl" {
		t.Errorf("redis-cluster.conf's aclfile /etc/redis/users.acl is %s/%s", s, key)
	}
	for _, m := range redis.VolumeMounts {
		if m.MountPath == flagValue(t, redis.Args, "--dir") && (len(sts.VolumeClaimTemplates) != 1 || sts.VolumeClaimTemplates[0].Metadata.Name != m.Name) {
			t.Errorf("redis's --dir %s is not the StatefulSet's volume claim: nodes.conf must survive a restart", m.MountPath)
		}
	}
	webdisSecret, webdisKey := secretFile(t, pod, webdis, webdis.Command[1])
	wjson := decodeObject(t, findDoc(t, docs, "Secret", webdisSecret), nil).StringData[webdisKey]
	if wjson != readRepoFile(t, "deploy/webdis/node.json") {
		t.Errorf("Secret %s's %s is not deploy/webdis/node.json", webdisSecret, webdisKey)
	}
	w := checkWebdisEnables(t, "Secret "+webdisSecret, []byte(wjson), cfg, "CLUSTER", "FCALL")
	if webdis.Command[0] != "/usr/local/bin/webdis" || w.RedisHost != "127.0.0.1" || w.RedisPort != 6379 {
		t.Errorf("webdis %v in front of %s:%d: want /usr/local/bin/webdis in front of its pod's Redis, 127.0.0.1:6379", webdis.Command, w.RedisHost, w.RedisPort)
	}
	if flagValue(t, redis.Args, "--masterauth") != "$(REPLICATION_PASSWORD)" {
		t.Errorf("redis --masterauth %q, want $(REPLICATION_PASSWORD)", flagValue(t, redis.Args, "--masterauth"))
	}
	_, s, k, _ := env(redis, "REPLICATION_PASSWORD")
	_, s2, k2, _ := env(redis, "OPERATOR_PASSWORD")
	_, s3, k3, _ := env(redis, "ADMIN_PASSWORD")
	if s != secretName || s2 != secretName || s3 != secretName {
		t.Errorf("the passwords come from Secrets %s, %s, %s, want %s", s, s2, s3, secretName)
	}
	want := renderTemplate(t, "users-cluster.acl", map[string]string{"FILTER": "filter-demo-password",
		"OPERATOR": secret.StringData[k2], "WEBDIS": w.redisAuth(t), "REPLICATION": secret.StringData[k], "ADMIN": secret.StringData[k3]})
	if secret.StringData["users.acl"] != want {
		t.Errorf("Secret %s's users.acl is not deploy/redis/users-cluster.acl rendered with its passwords:\n%s\nwant:\n%s", secretName, secret.StringData["users.acl"], want)
	}

	// Node n: the pod's announced name, the gateway's cluster of Service
	// webdis-<n>, which selects that pod alone, on Webdis's port.
	for i, n := range cfg.Redis.Nodes {
		pod := "redis-cluster-" + itoa(i)
		if n.Address != pod+domain+":6379" {
			t.Errorf("redis.nodes[%d].address %q, want %s%s:6379", i, n.Address, pod, domain)
		}
		mc, err := parseMeshCluster(n.Cluster)
		if err != nil || mc.subset != "" || mc.port != 7379 || mc.namespace != stsDoc.Namespace || mc.service != "webdis-"+itoa(i) {
			t.Errorf("redis.nodes[%d].cluster %q: want outbound|7379||webdis-%d.%s.svc.cluster.local (%v)", i, n.Cluster, i, stsDoc.Namespace, err)
			continue
		}
		var svc serviceSpec
		o := decodeObject(t, findDoc(t, docs, "Service", mc.service), &svc)
		if o.Metadata.Namespace != mc.namespace || len(svc.Selector) != 1 || svc.Selector["statefulset.kubernetes.io/pod-name"] != pod {
			t.Errorf("Service %s selects %v, want statefulset.kubernetes.io/pod-name: %s alone", mc.service, svc.Selector, pod)
		}
		if len(svc.Ports) != 1 || svc.Ports[0].Port != 7379 || string(svc.Ports[0].TargetPort) != `"http"` || w.HTTPPort != 7379 ||
			webdis.Ports[0].Name != "http" || webdis.Ports[0].ContainerPort != w.HTTPPort {
			t.Errorf("Service %s: ports %+v: want 7379 to the webdis container's port http, where Webdis listens (%d)", mc.service, svc.Ports, w.HTTPPort)
		}
	}
	checkInstallJob(t, docs, secretName)
}

// The install Job: ratelimitctl install --cluster as the operator, on the
// WasmPlugin's nodes, from the release the WasmPlugin pulls.
func checkInstallJob(t *testing.T, docs []Document, secretName string) {
	t.Helper()
	var job jobSpec
	decodeObject(t, findDoc(t, docs, "Job", "ratelimitctl-install"), &job)
	checkLeastPrivilege(t, "Job ratelimitctl-install", job.Template.Spec)
	c := job.Template.Spec.Containers[0]
	vars := map[string]string{}
	for _, e := range c.Env {
		vars[e.Name] = e.Value
		if e.Name == "RATELIMITCTL_PASSWORD" && (e.ValueFrom.SecretKeyRef.Name != secretName || e.ValueFrom.SecretKeyRef.Key != "operator-password") {
			t.Errorf("RATELIMITCTL_PASSWORD from %+v, want %s's operator-password", e.ValueFrom.SecretKeyRef, secretName)
		}
	}
	cfg := parsePluginConfig(t, IstioClusterWasmPlugin, pluginConfigOf(t, IstioClusterWasmPlugin))
	var addrs []string
	for _, n := range cfg.Redis.Nodes {
		addrs = append(addrs, n.Address)
	}
	if vars["NODES"] != strings.Join(addrs, ",") {
		t.Errorf("Job NODES %q, want the WasmPlugin's nodes %q", vars["NODES"], strings.Join(addrs, ","))
	}
	wp := istioWasmPlugin(t, findDoc(t, docs, "WasmPlugin", "ratelimit"))
	if _, tag, _ := strings.Cut(wp.GetUrl(), ":v"); "v"+tag != vars["VERSION"] {
		t.Errorf("Job VERSION %q, but the WasmPlugin pulls %s", vars["VERSION"], wp.GetUrl())
	}
	script := strings.Join(c.Command, " ")
	for _, want := range []string{`--cluster --redis "$NODES" --username ratelimit-operator install`, `--branch "$VERSION"`} {
		if !strings.Contains(script, want) {
			t.Errorf("Job command %q: no %q", script, want)
		}
	}
	if _, ok := vars["RATELIMITCTL_PASSWORD"]; !ok {
		t.Error("Job: no RATELIMITCTL_PASSWORD: ratelimitctl would log in without a password")
	}
}

func istioWasmPlugin(t *testing.T, d Document) *extensionsv1alpha1.WasmPlugin {
	t.Helper()
	o := decodeObject(t, d, nil)
	var wp extensionsv1alpha1.WasmPlugin
	if err := protojson.Unmarshal(o.Spec, &wp); err != nil {
		t.Fatalf("%s: spec is not an Istio WasmPlugin: %v", d.Name, err)
	}
	return &wp
}

func mapsSubset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}
