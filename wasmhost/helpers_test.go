package wasmhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The fixtures, built by `make fixtures` into dist/testdata, are compiled
// once per test binary, on first use.
var (
	fixtureOnce sync.Once
	fixtureMods map[string]*wasmhost.Module
	fixtureErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, mod := range fixtureMods {
		mod.Close(context.Background())
	}
	os.Exit(code)
}

// module returns the compiled fixture wasmhost/testdata/<name>.
func module(t testing.TB, name string) *wasmhost.Module {
	t.Helper()
	fixtureOnce.Do(func() { fixtureMods, fixtureErr = compileFixtures(dist.Noop, dist.Probe) })
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureMods[name]
}

// compileFixtures compiles the built fixtures with wazero, keeping the
// compiled code in dist's cache so that later test binaries skip it.
func compileFixtures(files ...string) (map[string]*wasmhost.Module, error) {
	cache, err := dist.CacheDir()
	if err != nil {
		return nil, err
	}
	mods := make(map[string]*wasmhost.Module, len(files))
	for _, file := range files {
		wasm, err := dist.Read(file)
		if err != nil {
			return nil, err
		}
		mod, err := wasmhost.Compile(context.Background(), wasm, wasmhost.WithCacheDir(cache))
		if err != nil {
			return nil, fmt.Errorf("compiling fixture %s: %w", file, err)
		}
		mods[strings.TrimSuffix(filepath.Base(file), ".wasm")] = mod
	}
	return mods, nil
}

// start starts a host for the test and closes it when the test ends.
func start(t *testing.T, cfg wasmhost.Config) *wasmhost.Host {
	t.Helper()
	if cfg.PluginName == "" {
		cfg.PluginName = "wasmhost-test"
	}
	h, err := wasmhost.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("wasmhost.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("wasmhost.Close: %v", err)
		}
	})
	return h
}

// probeConfig returns the probe's plugin configuration as JSON.
func probeConfig(t *testing.T, fields map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// echoed is what the echo upstream saw.
type echoed struct {
	Method  string              `json:"method"`
	URI     string              `json:"uri"`
	Host    string              `json:"host"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
}

// upstream is a real HTTP upstream that echoes the request as JSON (or, on
// /status/N, answers status N) and counts its calls.
type upstream struct {
	*httptest.Server
	calls atomic.Int64
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Upstream", "yes")
		if r.URL.Path == "/trailer" {
			w.Header().Set("Trailer", "X-Checksum")
			defer w.Header().Set("X-Checksum", "c0ffee")
		}
		w.Header().Set("Content-Type", "application/json")
		var status int
		if _, err := fmt.Sscanf(r.URL.Path, "/status/%d", &status); err != nil {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(echoed{Method: r.Method, URI: r.RequestURI, Host: r.Host, Headers: r.Header, Body: string(body)})
	}))
	t.Cleanup(u.Close)
	return u
}

type response struct {
	status  int
	header  http.Header
	trailer http.Header
	body    string
	elapsed time.Duration
}

// do sends a request to the host and reads the whole response.
func do(t *testing.T, method, url string, body string, headers map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	begin := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, trailer: resp.Trailer, body: string(b), elapsed: time.Since(begin)}
}

func (r response) echo(t *testing.T) echoed {
	t.Helper()
	var e echoed
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("response is not the upstream's echo (status %d): %q", r.status, r.body)
	}
	return e
}

// waitGuard bounds every wait for an event. It guards against a hang, and
// is no statement about speed.
const waitGuard = 30 * time.Second

// eventually polls cond until it holds, failing the test after waitGuard.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func hasLog(h *wasmhost.Host, substr string) bool {
	for _, e := range h.Logs() {
		if strings.Contains(e.Message, substr) {
			return true
		}
	}
	return false
}
