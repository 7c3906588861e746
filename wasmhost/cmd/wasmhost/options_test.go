package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Every malformed or conflicting command line is refused with a message
// that names the flag; no plugin configuration at all is one.
func TestFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no plugin configuration: pass -config FILE"},
		{[]string{"-config", "a.json", "-no-config"}, "-config and -no-config conflict"},
		{[]string{"-config", ""}, "-config: empty file name"},
		{[]string{"-no-config", "extra"}, `unexpected argument "extra"`},
		{[]string{"-no-config", "-workers", "0"}, "-workers 0: must be at least 1"},
		{[]string{"-no-config", "-xff-num-trusted-hops", "-1"}, "-xff-num-trusted-hops -1: must be >= 0"},
		{[]string{"-no-config", "-http-cluster", "webdis"}, "want NAME=ADDRESS"},
		{[]string{"-no-config", "-http-cluster", "w=https://h:1"}, `scheme "https": only http is supported`},
		{[]string{"-no-config", "-http-cluster", "w=http://h:1/path"}, "no path, query or user"},
		{[]string{"-no-config", "-http-cluster", "w=h:1", "-http-cluster", "w=h:2"}, `cluster "w" given twice`},
		{[]string{"-no-config", "-redis-cluster", "r=nohostport"}, "r: want HOST:PORT"},
		{[]string{"-no-config", "-redis", "localhost"}, `-redis "localhost": want HOST:PORT`},
		{[]string{"-no-config", "-upstream", "127.0.0.1:80"}, "-upstream \"127.0.0.1:80\": want http://HOST:PORT"},
		{[]string{"-no-config", "-path-with-escaped-slashes-action", "REDIRECT"}, "-path-with-escaped-slashes-action: unknown"},
		{[]string{"-no-config", "-listen", "127.0.0.1:9000", "-admin", "127.0.0.1:9000"}, "-admin and -listen are both 127.0.0.1:9000"},
		{[]string{"-no-config", "-use-remote-address=maybe"}, "invalid boolean value"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// run() says the configuration is missing before it opens anything.
func TestRunWithoutConfigSaysSo(t *testing.T) {
	err := run(context.Background(), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-no-config for a filter that takes none") {
		t.Errorf("error %v", err)
	}
}

func TestHelp(t *testing.T) {
	var out syncBuffer
	if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("error %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"Usage: wasmhost", "-http-cluster NAME=http://HOST:PORT", "-envoy file", "(default \"127.0.0.1:9901\")"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestFlagsParsed(t *testing.T) {
	o, err := parseFlags([]string{"-config", "p.json", "-http-cluster", "webdis=http://127.0.0.1:7379", "-http-cluster", "auth=10.0.0.1:80",
		"-redis-cluster", "r=127.0.0.1:6380", "-xff-num-trusted-hops", "2", "-admin", ""}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"webdis": "127.0.0.1:7379", "auth": "10.0.0.1:80"}; !reflect.DeepEqual(o.httpClusters.m, want) {
		t.Errorf("http clusters %v", o.httpClusters.m)
	}
	if o.redisClusters.m["r"] != "127.0.0.1:6380" || o.xffHops != 2 || o.admin != "" || o.redis != defaultRedis || !o.useRemote {
		t.Errorf("options %+v", o)
	}
	if !o.set["xff-num-trusted-hops"] || o.set["listen"] {
		t.Errorf("flags given: %v", o.set)
	}
}

// Without -wasm, the module is the build the configuration's transport
// needs.
func TestDefaultWasmFollowsTransport(t *testing.T) {
	abi := writeFile(t, "abi.json", `{"redis": {"cluster": "redis"}}`)
	webdis := writeFile(t, "webdis.json", `{"redis": {"transport": "webdis", "cluster": "webdis"}}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-config", abi}, higressWasm},
		{[]string{"-config", webdis}, stockWasm},
		{[]string{"-no-config"}, higressWasm},
		{[]string{"-config", webdis, "-wasm", "x.wasm"}, "x.wasm"},
	} {
		o, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		p, err := makePlan(o)
		if err != nil {
			t.Fatal(err)
		}
		if p.wasmPath != tc.want {
			t.Errorf("%q: wasm %q, want %q", tc.args, p.wasmPath, tc.want)
		}
	}
}

// The Redis cluster names of a configuration: the top level's, each
// _rules_ entry's and each matchRules entry's.
func TestReadPluginRedis(t *testing.T) {
	p := readPluginRedis([]byte(`{"redis": {"cluster": "outbound|6379||redis.static"},
		"_rules_": [{"_match_route_": ["a"], "redis": {"cluster": "r2", "transport": "redis_abi"}}, {"rules": []}],
		"matchRules": [{"config": {"redis": {"cluster": "w", "transport": "webdis"}}}]}`))
	if got := p.names("redis_abi"); !reflect.DeepEqual(got, []string{"outbound|6379||redis.static", "r2"}) {
		t.Errorf("redis_abi names %q", got)
	}
	if p.transport() != "mixed" || !reflect.DeepEqual(p.names("webdis"), []string{"w"}) {
		t.Errorf("transport %q, webdis names %q", p.transport(), p.names("webdis"))
	}
	if q := readPluginRedis([]byte("not json")); q.json || q.transport() != "" {
		t.Errorf("not JSON: %+v", q)
	}
	if p.reservesBody {
		t.Error("no rule reserves from the body, but reservesBody")
	}
	body := `{"rules": [{"response_cost": {"reserve": 5}}, {"response_cost": {"reserve": {"body": "max_tokens"}}}]}`
	for _, cfg := range []string{body, `{"_rules_": [` + body + `]}`, `{"matchRules": [{"config": ` + body + `}]}`} {
		if !readPluginRedis([]byte(cfg)).reservesBody {
			t.Errorf("reserve.body not seen in %s", cfg)
		}
	}
}

// A reserve.body rule without -allow-on-headers-stop-iteration is not
// silently slow: the summary says why.
func TestReserveBodyNoted(t *testing.T) {
	cfg := writeFile(t, "p.json", `{"redis": {"cluster": "redis"}, "rules": [{"response_cost": {"reserve": {"body": "max_tokens"}}}]}`)
	for _, allow := range []bool{false, true} {
		args := []string{"-config", cfg}
		if allow {
			args = append(args, "-allow-on-headers-stop-iteration")
		}
		o, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		p, err := makePlan(o)
		if err != nil {
			t.Fatal(err)
		}
		if noted := strings.Contains(strings.Join(p.notes, "\n"), "waits 1 s for it"); noted == allow {
			t.Errorf("allow %v: notes %q", allow, p.notes)
		}
	}
}

// Without -compile-cache, compiled code is kept in wasmhost's folder of
// the user's cache directory: a later start skips compiling (14 to 18 s on
// a busy machine for the filter). An empty -compile-cache keeps none.
func TestCompileCacheByDefault(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir())
	o, err := parseFlags([]string{"-no-config"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "wasmhost"); o.compileCache != want {
		t.Fatalf("compile cache %q, want %q", o.compileCache, want)
	}
	if o, _ := parseFlags([]string{"-no-config", "-compile-cache", ""}, io.Discard); o.compileCache != "" {
		t.Errorf("-compile-cache '': cache %q, want none", o.compileCache)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	if o, _ := parseFlags([]string{"-no-config"}, io.Discard); o.compileCache != "" {
		t.Errorf("without a cache directory: cache %q, want none", o.compileCache)
	}
	// A start without the flag fills it.
	probe := distPath(t, "testdata/noop.wasm")
	t.Setenv("XDG_CACHE_HOME", cache)
	o, err = parseFlags([]string{"-wasm", probe, "-no-config", "-listen", "127.0.0.1:0", "-admin", "", "-workers", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a, err := start(context.Background(), o, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a.close()
	var files int
	filepath.WalkDir(filepath.Join(cache, "wasmhost"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Errorf("nothing kept in %s after a start", filepath.Join(cache, "wasmhost"))
	}
}

// A default compile cache that cannot be used (here, the cache directory
// is a file, which stops root too) does not fail the start: wasmhost says
// so, naming the folder and the flag, and compiles without it. A
// -compile-cache given on the command line that cannot be used fails the
// start, naming the flag.
func TestCompileCacheUnusable(t *testing.T) {
	notDir := writeFile(t, "cache", "a file, not a folder")
	t.Setenv("XDG_CACHE_HOME", notDir)
	probe := distPath(t, "testdata/noop.wasm")
	base := []string{"-wasm", probe, "-no-config", "-listen", "127.0.0.1:0", "-admin", "", "-workers", "1"}
	o, err := parseFlags(base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	a, err := start(context.Background(), o, io.Discard, &stderr)
	if err != nil {
		t.Fatalf("the default cache %s unusable: the start failed: %v", o.compileCache, err)
	}
	a.close()
	want := "wasmhost: compile cache " + filepath.Join(notDir, "wasmhost") + " unusable ("
	if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "compiling without one; -compile-cache DIR names another") {
		t.Errorf("stderr %q; want a line starting %q", stderr.String(), want)
	}

	o, err = parseFlags(append(base, "-compile-cache", filepath.Join(notDir, "x")), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := start(context.Background(), o, io.Discard, io.Discard); err == nil || !strings.HasPrefix(err.Error(), "-compile-cache "+filepath.Join(notDir, "x")+": ") {
		t.Fatalf("an unusable -compile-cache: %v; want an error naming the flag", err)
	}
}

// A default compile cache whose entry cannot be read back (here, garbled)
// costs the compile and a line, not the start.
func TestCompileCacheGarbled(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	args := []string{"-wasm", distPath(t, "testdata/noop.wasm"), "-no-config", "-listen", "127.0.0.1:0", "-admin", "", "-workers", "1"}
	startOnce := func() (string, error) {
		t.Helper()
		o, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		a, err := start(context.Background(), o, io.Discard, &stderr)
		if err == nil {
			a.close()
		}
		return stderr.String(), err
	}
	if _, err := startOnce(); err != nil {
		t.Fatal(err)
	}
	var garbled int
	filepath.WalkDir(filepath.Join(cache, "wasmhost"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && os.WriteFile(p, []byte("not compiled code"), 0o600) == nil {
			garbled++
		}
		return nil
	})
	if garbled == 0 {
		t.Fatal("nothing kept in the cache to garble")
	}
	stderr, err := startOnce()
	if err != nil {
		t.Fatalf("a garbled entry in the default cache failed the start: %v", err)
	}
	if !strings.Contains(stderr, "compiled without it") {
		t.Errorf("stderr %q; want a line saying the cache failed", stderr)
	}
}
