package v8

import (
	"encoding/binary"
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A VM's start runs only what its configuration uses: V8 compiles each
// function the first time it runs, so every function the first VM's start
// reaches adds to it. For a plain rule (one rule of two limits keyed by a
// header, over the Redis ABI), the start compiles no parser of a feature
// the configuration does not name, no time.ParseDuration (its durations
// are whole units), and neither the usage presets nor the Lua sources.
// The functions compiled are read from V8's --trace-wasm-compilation-times
// and named from the module's name section.
func TestStartRunsOnlyUsedParsers(t *testing.T) {
	cfg := benchConfig(`"cluster":"redis"`, "start:", false, true)
	s := benchSpec{Modules: []benchModule{{Name: "higress", Wasm: higressWasm, RedisABI: true,
		RedisClusters: map[string]string{"redis": "127.0.0.1:1"}, Configs: map[string]string{"admitted": cfg}}},
		StartupVMs: 1, StartupOnly: "higress"}
	stdout, stderr, err := runNodeFlags(t, append(v8Flags, "--trace-wasm-compilation-times"), "bench.mjs", s, hostTimeout)
	if err != nil {
		t.Fatalf("bench.mjs start-up: %v\n%s", err, tail(stderr, 20))
	}
	b, err := os.ReadFile(higressWasm)
	if err != nil {
		t.Fatal(err)
	}
	names, err := wasmFuncNames(b)
	if err != nil {
		t.Fatal(err)
	}
	compiled := map[string]bool{}
	re := regexp.MustCompile(`^Compiled function \S+#(\d+) using TurboFan`)
	for _, line := range strings.Split(stdout, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			i, _ := strconv.Atoi(m[1])
			compiled[names[i]] = true
		}
	}
	const cfgPkg = "github.com_redisrate_envoy_redis_ratelimit_filter_config."
	for _, fn := range []string{"parseRule", "parseLimit", "parseKey"} {
		if !compiled[cfgPkg+fn] {
			t.Fatalf("%s not compiled at start (%d functions compiled): the trace is not read right", fn, len(compiled))
		}
	}
	var unused []string
	for _, fn := range []string{"parseMatch", "parseCost", "parseResponseCost", "parseTiers", "checkShares", "parseLease",
		"parseThrottle", "parseOnLimit", "parseNearLimit", "parseMaxRequestBody", "parseUnreadableBody", "parseRefusalStatus",
		"parseQuotaEndpoint", "parseFailureMode", "parseBreaker", "parseRedisABI", "parseWebdis", "checkLocalLimits",
		"checkClusterThrottles"} {
		unused = append(unused, cfgPkg+fn)
	}
	unused = append(unused, "time.ParseDuration", "github.com_redisrate_envoy_redis_ratelimit_filter_usage.buildPresets",
		"github.com_redisrate_envoy_redis_ratelimit_algorithms_lua.buildLibrary")
	for _, fn := range unused {
		if compiled[fn] {
			t.Errorf("a plain rule's start compiled %s", fn)
		}
	}
}

// wasmFuncNames reads the function names of a wasm module's name section
// (the "name" custom section, subsection 1), by function index.
func wasmFuncNames(b []byte) (map[int]string, error) {
	errBad := errors.New("wasm: malformed module")
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return nil, errBad
	}
	p := 8
	uleb := func() (int, bool) {
		v, n := binary.Uvarint(b[p:])
		if n <= 0 || v > uint64(len(b)) {
			return 0, false
		}
		p += n
		return int(v), true
	}
	for p < len(b) {
		id := b[p]
		p++
		size, ok := uleb()
		if !ok || p+size > len(b) {
			return nil, errBad
		}
		end := p + size
		if id == 0 {
			n, ok := uleb()
			if ok && p+n <= end && string(b[p:p+n]) == "name" {
				p += n
				for p < end {
					sub := b[p]
					p++
					subSize, ok := uleb()
					if !ok || p+subSize > end {
						return nil, errBad
					}
					if sub != 1 {
						p += subSize
						continue
					}
					count, _ := uleb()
					names := make(map[int]string, count)
					for range count {
						idx, ok1 := uleb()
						l, ok2 := uleb()
						if !ok1 || !ok2 || p+l > end {
							return nil, errBad
						}
						names[idx] = string(b[p : p+l])
						p += l
					}
					return names, nil
				}
			}
		}
		p = end
	}
	return nil, errors.New("wasm: no name section")
}
