package v8

import (
	"fmt"
	"os"
)

// The peer: Higress's own Redis rate-limit plugin (cluster-key-rate-limit,
// built by `make peer`), measured beside our builds when $V8_BENCH_PEER
// names its .wasm. It reaches Redis by Higress's Redis callout, through
// the cluster its config names.

// peerCluster is the cluster Higress's SDK names for peerConfig's Redis
// service ("outbound|<port>||<service>").
const peerCluster = "outbound|6379||redis.static"

// peerConfig is the peer's rule for benchConfig's: one limit per x-user
// value, of hourly requests (its denial is the 429 it answers past it).
func peerConfig(rule string, hourly int) string {
	return fmt.Sprintf(`{"rule_name":%q,"rule_items":[{"limit_by_per_header":"x-user",
		"limit_keys":[{"key":"*","query_per_hour":%d}]}],
		"show_limit_quota_header":true,"redis":{"service_name":"redis.static","service_port":6379,"timeout":5000}}`, rule, hourly)
}

// peerModules adds the peer to mods when $V8_BENCH_PEER is set: the
// admitted scenario at benchConfig's hourly limit, the denied one at a
// limit of 1, against the Redis of mods' Higress build (a fresh server per
// run: the rule names are the keys' prefix). The peer has no
// deny cache: its denial is each denied request's Redis call.
func peerModules(mods []benchModule) []benchModule {
	wasm := os.Getenv("V8_BENCH_PEER")
	if wasm == "" {
		return mods
	}
	redis := mods[1].RedisClusters["redis"]
	return append(mods, benchModule{Name: "peer", Wasm: wasm, RedisABI: true, HigressWASI: true,
		RedisClusters: map[string]string{peerCluster: redis},
		Configs: map[string]string{
			"admitted": peerConfig("bench-admitted", 100_000_000),
			"denied":   peerConfig("bench-denied", 1),
		}})
}
