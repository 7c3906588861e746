package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

func TestMain(m *testing.M) {
	code := m.Run()
	modules.close()
	os.Exit(code)
}

// modules holds each build of the filter, compiled once per test binary;
// the two builds may compile at the same time.
var modules = &moduleCache{m: map[string]*moduleEntry{}}

type moduleCache struct {
	sync.Mutex
	m map[string]*moduleEntry
}

type moduleEntry struct {
	once sync.Once
	mod  *wasmhost.Module
	err  error
}

func (c *moduleCache) close() {
	c.Lock()
	defer c.Unlock()
	for _, e := range c.m {
		if e.mod != nil {
			e.mod.Close(context.Background())
		}
	}
}

// filterModule compiles the filter `make build` wrote to dist/ for the wasm
// host: ratelimit.wasm for tags "", ratelimit-higress.wasm for "higress".
func filterModule(t *testing.T, tags string) *wasmhost.Module {
	t.Helper()
	modules.Lock()
	e := modules.m[tags]
	if e == nil {
		e = &moduleEntry{}
		modules.m[tags] = e
	}
	modules.Unlock()
	e.once.Do(func() { e.mod, e.err = compileModule(tags) })
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.mod
}

func compileModule(tags string) (*wasmhost.Module, error) {
	name := dist.Stock
	if tags == "higress" {
		name = dist.Higress
	}
	wasm, err := dist.Read(name)
	if err != nil {
		return nil, err
	}
	var opts []wasmhost.CompileOption
	if dir, err := dist.CacheDir(); err == nil {
		opts = append(opts, wasmhost.WithCacheDir(dir))
	}
	m, err := wasmhost.Compile(context.Background(), wasm, opts...)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %v", name, err)
	}
	return m, nil
}

// upstream is the echo service: 200 for everything.
func upstream(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from the upstream")
	}))
	t.Cleanup(s.Close)
	return s.URL
}

func startHost(t *testing.T, cfg wasmhost.Config) *wasmhost.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := wasmhost.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() { // the host's logs say why
			for _, l := range h.Logs() {
				t.Log(l.String())
			}
		}
		h.Close()
	})
	return h
}

// runSmoke runs deploy/compose/smoke.sh against url.
func runSmoke(t *testing.T, url string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", repoPath("deploy/compose/smoke.sh"), url)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The Higress deployment's plugin configuration, in the Higress build of the
// filter, against a real Redis with the compose demo's ACL users, the
// library installed by the operator: smoke.sh passes.
func TestSmokeHigressPluginConfig(t *testing.T) {
	t.Parallel()
	js := pluginConfigOf(t, HigressWasmPlugin)
	cfg := parsePluginConfig(t, HigressWasmPlugin, js)
	srv := composeRedis(t)
	h := startHost(t, wasmhost.Config{
		Module:        filterModule(t, "higress"),
		PluginConfig:  js,
		Upstream:      upstream(t),
		RedisClusters: map[string]string{cfg.Redis.Cluster: srv.Addr},
	})
	out, err := runSmoke(t, h.URL())
	t.Log(out)
	if err != nil {
		t.Fatalf("smoke.sh: %v", err)
	}
	if calls := h.RedisCalls()[cfg.Redis.Cluster]; calls == 0 {
		t.Errorf("no Redis calls on %s", cfg.Redis.Cluster)
	}
}

// envoy.yaml's plugin configuration, in the stock build of the filter,
// through a real Webdis running the compose demo's webdis.json (its ACL and
// credentials as they are; only addresses changed) in front of a real Redis
// with the compose demo's ACL users: smoke.sh passes.
func TestSmokeEnvoyPluginConfigThroughWebdis(t *testing.T) {
	t.Parallel()
	b, _ := envoyBootstrap(t)
	_, js, cfg := envoyPlugin(t, b)
	readComposeWebdis(t, cfg)
	srv := composeRedis(t)
	webdis := startWebdis(t, "deploy/compose/webdis.json", srv.Addr)
	h := startHost(t, wasmhost.Config{
		Module:       filterModule(t, ""),
		PluginConfig: js,
		Upstream:     upstream(t),
		HTTPClusters: map[string]string{cfg.Redis.Cluster: webdis},
	})
	out, err := runSmoke(t, h.URL())
	t.Log(out)
	if err != nil {
		t.Fatalf("smoke.sh: %v", err)
	}
}

// startWebdis runs webdis with a configuration file of this repository,
// pointed at redisAddr and listening on a loopback port it binds itself,
// and returns that address. Everything else (the ACL, the credentials) is
// as written.
func startWebdis(t *testing.T, rel, redisAddr string) string {
	t.Helper()
	data, err := os.ReadFile(repoPath(rel))
	if err != nil {
		t.Fatal(err)
	}
	return startWebdisConfig(t, data, redisAddr)
}

// startWebdisConfig is startWebdis for a configuration given as JSON.
func startWebdisConfig(t *testing.T, data []byte, redisAddr string) string {
	t.Helper()
	var conf map[string]any
	if err := json.Unmarshal(data, &conf); err != nil {
		t.Fatal(err)
	}
	rhost, rport, _ := net.SplitHostPort(redisAddr)
	conf["redis_host"], conf["redis_port"] = rhost, json.Number(rport)
	return redistest.RunWebdis(t, conf)
}

// smoke.sh fails when the proxy does not rate-limit, or answers 429 without
// the headers.
func TestSmokeScriptFails(t *testing.T) {
	for name, handler := range map[string]http.HandlerFunc{
		"no filter": func(w http.ResponseWriter, r *http.Request) {},
		"never refuses": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("RateLimit-Policy", `"p";q=1;w=1`)
		},
		"429 without Retry-After": refuseSecond(func(h http.Header) { h.Del("Retry-After") }),
		"429 without RateLimit":   refuseSecond(func(h http.Header) { h.Del("RateLimit") }),
		"refuses a new user": func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.Header.Get("x-user-id"), "smoke-ready-") {
				w.Header().Set("RateLimit-Policy", `"p";q=1;w=1`)
				return
			}
			w.WriteHeader(http.StatusTooManyRequests)
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := httptest.NewServer(handler)
			defer s.Close()
			out, err := runSmoke(t, s.URL, "SMOKE_WAIT=1", "SMOKE_REQUESTS=5")
			if err == nil {
				t.Fatalf("smoke.sh passed:\n%s", out)
			}
			if !strings.Contains(out, "smoke: FAIL") {
				t.Fatalf("smoke.sh failed without saying why: %v\n%s", err, out)
			}
		})
	}
	// The same fake, with nothing removed, passes: the cases above fail for
	// the reason they name.
	s := httptest.NewServer(refuseSecond(func(http.Header) {}))
	defer s.Close()
	if out, err := runSmoke(t, s.URL, "SMOKE_WAIT=1"); err != nil {
		t.Fatalf("smoke.sh against a well-behaved fake: %v\n%s", err, out)
	}
}

// refuseSecond admits each user once, then refuses it as the filter does,
// after edit has changed the 429's headers.
func refuseSecond(edit func(http.Header)) http.HandlerFunc {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		again := seen[r.Header.Get("x-user-id")]
		seen[r.Header.Get("x-user-id")] = true
		mu.Unlock()
		h := w.Header()
		h.Set("RateLimit-Policy", `"per-second";q=2;w=1`)
		if !again {
			h.Set("RateLimit", `"per-second";r=1;t=1`)
			return
		}
		h.Set("Retry-After", "1")
		h.Set("RateLimit", `"per-second";r=0;t=1`)
		edit(h)
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":"rate_limited","rule":"per-user","limit":"per-second","retry_after":1}`)
	}
}
