package v8

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The modules compared with this tree's builds: the baseline release's
// and the peer.

// loadBaselineLibrary loads dir's library.lua, the baseline's Redis
// Functions library, when its Lua differs from this tree's (its name
// carries a digest of its code, so both are loaded side by side).
func loadBaselineLibrary(t testing.TB, srv *redistest.Server, dir string) {
	src, err := os.ReadFile(filepath.Join(dir, "library.lua"))
	if err != nil {
		return // the baseline shares this tree's library, or has none
	}
	if _, err := srv.Do("FUNCTION", "LOAD", string(src)); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("the baseline's library.lua: %v", err)
	}
}

// baselineModules are the builds in $V8_BENCH_BASELINE, if set, to
// compare with this tree's in the same run: "higress@base", "stock@base",
// each when its file is there (and library.lua, its Redis Functions
// library, when it differs from this tree's) (a stock build from before the Functions
// library sends EVALSHA, which the bench's Webdis refuses: leave it out).
// With them, "higress GOGC=100" shows the GC setting's CPU cost.
func baselineModules(mods []benchModule) []benchModule {
	gc := mods[1]
	gc.Name, gc.Env = "higress GOGC=100", map[string]string{"GOGC": "100"}
	gc.Configs = map[string]string{"admitted": strings.Replace(gc.Configs["admitted"], `"key_prefix":"`, `"key_prefix":"gc`, 1)}
	mods = append(mods, gc)
	dir := os.Getenv("V8_BENCH_BASELINE")
	if dir == "" {
		return mods
	}
	for _, m := range mods[1:3] {
		m.Name += "@base"
		m.Wasm = filepath.Join(dir, filepath.Base(m.Wasm))
		if _, err := os.Stat(m.Wasm); err != nil {
			continue
		}
		configs := map[string]string{} // no price table or body key: 13bdab3 predates them
		for _, k := range []string{"admitted", "denied", "cached", "llm", "llm_exact", "llm_plain"} {
			configs[k] = strings.Replace(m.Configs[k], `"key_prefix":"`, `"key_prefix":"base`, 1)
		}
		m.Configs = configs
		mods = append(mods, m)
	}
	return mods
}

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
