// Package deploy holds the deployment files of the rate-limit filter and the
// tests that keep them true:
//
//   - ../envoy.yaml: a static Envoy bootstrap loading dist/ratelimit.wasm,
//     which reaches Redis through Webdis;
//   - envoy-degrade.yaml: one whose routes send the requests a spent
//     on_limit degrade rule marked to a fallback cluster;
//   - istio/: an Istio WasmPlugin for the same module, with Webdis and Redis;
//   - envoy-cluster.yaml and istio/cluster/: the same in front of a Redis
//     Cluster, a Webdis per node (webdis/node.json) and redis.nodes, the
//     cluster's nodes a StatefulSet in Istio, with the install Job;
//   - higress/: a Higress WasmPlugin for dist/ratelimit-higress.wasm, which
//     uses Higress's Redis callouts, and the McpBridge entry naming Redis;
//   - webdis/local.json: a Webdis in front of a local redis-server, for the
//     README's local run of ../envoy.yaml in wasmhost;
//   - compose/: a docker-compose demo of both, and smoke.sh, which proves
//     that a running proxy rate-limits, with Prometheus and Grafana beside
//     Envoy;
//   - observability/: a Grafana dashboard and Prometheus rules, checked
//     against the metrics the filter defines and with promtool;
//   - redis/: the Redis ACL users of the proxies and of ratelimitctl (and
//     of a cluster's replicas and admin, users-cluster.acl), render.sh,
//     which sets their passwords, and redis.conf, a limiter's Redis
//     (docs/redis.md), which redis_conf_test.go runs and
//     redis_flood_test.go floods under the filter's credential;
//     redis-cluster.conf, a node of a Redis Cluster, which
//     acl_cluster_test.go runs as 3 masters and 3 replicas.
//   - image/ and cmd/image/: make image, the OCI image of each module that
//     the manifests pin by sha256, and the release's push (package image).
//
// The tests decode every file with the schema of what reads it (Envoy's API
// via go-control-plane, Istio's API, the shapes of Higress's CRDs and of
// docker-compose), parse every embedded plugin configuration with
// config.Parse (filter/config), check that names, ports and credentials agree across
// files, and run smoke.sh against the filter in the project's wasm host.
// README.md in this directory is the guide.
//
// The Go code here only reads these files, for the tests of this package and
// of package schema.
package deploy
