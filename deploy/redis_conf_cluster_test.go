package deploy

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// What redis/redis-cluster.conf sets besides redis.conf's settings, as
// CONFIG GET answers (docs/redis.md, "Redis Cluster through Webdis").
var clusterConfig = map[string]string{
	"cluster-enabled":                 "yes",
	"cluster-config-file":             "nodes.conf",
	"cluster-node-timeout":            "5000",
	"cluster-require-full-coverage":   "no",
	"cluster-preferred-endpoint-type": "hostname",
	"replica-read-only":               "yes",
	"masteruser":                      "ratelimit-replication",
}

// redis-cluster.conf holds every directive of redis.conf, with the same
// value, then the cluster's; redis-server runs it as shipped (port, bind,
// dir, aclfile and the bus port overridden), with each setting in force.
func TestShippedRedisClusterConf(t *testing.T) {
	t.Parallel()
	plain := confDirectives(t, "deploy/redis/redis.conf")
	cluster := map[string]string{}
	for _, d := range confDirectives(t, "deploy/redis/redis-cluster.conf") {
		cluster[d[0]] = d[1]
	}
	for _, d := range plain {
		if v, ok := cluster[d[0]]; !ok || v != d[1] {
			t.Errorf("redis-cluster.conf: %s %q, want redis.conf's %q", d[0], v, d[1])
		}
	}
	for name, want := range clusterConfig {
		if name != "cluster-enabled" && cluster[name] != want {
			t.Errorf("redis-cluster.conf: %s %q, want %q", name, cluster[name], want)
		}
	}
	if _, ok := cluster["masterauth"]; ok {
		t.Error("redis-cluster.conf holds masterauth: give the password on the command line")
	}

	dir := t.TempDir()
	acl := filepath.Join(dir, "users.acl")
	reader := "user conf-reader on >" + confReader.Password + " resetchannels -@all +config|get +ping\n"
	if err := os.WriteFile(acl, []byte(renderClusterUsers(t)+reader), 0o600); err != nil {
		t.Fatal(err)
	}
	bus := redistest.HoldPort(t).Number
	s := &confServer{t: t, addr: redistest.HoldPort(t).Addr(), dir: dir, acl: acl, conf: "deploy/redis/redis-cluster.conf",
		args: []string{"--cluster-port", strconv.Itoa(bus)}}
	s.start()
	t.Cleanup(s.stop)
	r := s.client(confReader)
	defer r.Close()
	for _, m := range []map[string]string{limiterConfig, clusterConfig} {
		for name, want := range m {
			got, err := r.Strings("CONFIG", "GET", name)
			if err != nil || len(got) != 2 || got[1] != want {
				t.Errorf("CONFIG GET %s: %q (%v), want %q", name, got, err, want)
			}
		}
	}
}
