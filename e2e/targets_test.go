package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// outcome is a request's fate as the client saw it.
type outcome struct {
	status  int
	headers map[string]string // lower-case names, first value
	body    string
}

// target runs the filter with one configuration; the scenarios run against
// both the compiled .wasm in the host and the filter package natively.
type target interface {
	send(t tester, headers map[string]string) outcome
	metric(name string) int64
}

// kinds are where the scenarios run: both builds in the host, and the
// filter package natively; moduleKinds are the builds alone.
var (
	kinds       = []string{"higress", "stock", "native"}
	moduleKinds = []string{"higress", "stock"}
)

// upstream answers every admitted request with 200 and its path.
func upstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/plain")
		io.WriteString(w, "upstream "+r.URL.Path)
	}))
	t.Cleanup(up.Close)
	return up
}

type wasmTarget struct {
	h *wasmhost.Host
}

// startTarget starts a target of kind (one of kinds) with a config whose
// "redis" section names the cluster "redis"; redisAddr is where that
// cluster points.
func startTarget(t *testing.T, kind, config, redisAddr string) target {
	t.Helper()
	if kind == "native" {
		return startNative(t, config, redisAddr)
	}
	return startBuild(t, kind, wasmhost.Config{}, config, redisAddr)
}

// hostConfig is cfg with the module of the build kind, its way to Redis,
// and config as that build loads it (also returned). config's "redis"
// section starts `"redis":{"cluster":"redis",`.
//   - "higress": the Higress build, calling the Redis at redisAddr as
//     cluster "redis".
//   - "stock": the stock-Envoy build, through a real Webdis started in front
//     of redisAddr.
//   - "webdis": the stock build with redisAddr the Webdis gateway itself.
//
// For the stock build the redis section is turned to the Webdis cluster
// "webdis" with the test credentials, unless it names it already.
func hostConfig(t *testing.T, kind string, cfg wasmhost.Config, config, redisAddr string) (wasmhost.Config, string) {
	t.Helper()
	switch kind {
	case "higress":
		cfg.Module, cfg.RedisClusters = module, map[string]string{"redis": redisAddr}
	case "stock":
		return hostConfig(t, "webdis", cfg, config, redistest.StartWebdis(t, redisAddr))
	case "webdis":
		config = strings.Replace(config, `"redis":{"cluster":"redis",`, fmt.Sprintf(
			`"redis":{"transport":"webdis","cluster":"webdis","username":%q,"password":%q,`,
			redistest.WebdisUser, redistest.WebdisPassword), 1)
		if !strings.Contains(config, `"transport":"webdis"`) || strings.Count(config, `"password"`) != 1 {
			t.Fatalf("config has no redis section to turn to webdis: %s", config)
		}
		cfg.Module, cfg.HTTPClusters = stockModule, map[string]string{"webdis": redisAddr}
	default:
		t.Fatalf("no build %q", kind)
	}
	cfg.PluginConfig = []byte(config)
	return cfg, config
}

// startBuild starts a host of hostConfig(t, kind, cfg, config, redisAddr).
func startBuild(t *testing.T, kind string, cfg wasmhost.Config, config, redisAddr string) *wasmTarget {
	t.Helper()
	cfg, _ = hostConfig(t, kind, cfg, config, redisAddr)
	return startHost(t, cfg)
}

// startHost starts a host of cfg, with 2 workers, upstream(t) and a pause
// timeout of 10s unless cfg sets them, failing the test on stuck streams or
// traps at its end.
func startHost(t *testing.T, cfg wasmhost.Config) *wasmTarget {
	t.Helper()
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	if cfg.Upstream == "" {
		cfg.Upstream = upstream(t).URL
	}
	if cfg.PauseTimeout == 0 {
		cfg.PauseTimeout = 10 * time.Second
	}
	h, err := wasmhost.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stuck, traps := h.StuckStreams(), h.Traps()
		if t.Failed() || stuck != 0 || traps != 0 { // the logs say why
			for _, l := range h.Logs() {
				t.Log(l.String())
			}
		}
		if stuck != 0 {
			t.Errorf("%d streams left paused", stuck)
		}
		if traps != 0 {
			t.Errorf("%d guest traps", traps)
		}
		h.Close()
	})
	return &wasmTarget{h: h}
}

func (w *wasmTarget) send(t tester, headers map[string]string) outcome {
	t.Helper()
	path := headers[":path"]
	if path == "" {
		path = "/"
	}
	req, _ := http.NewRequest(methodOr(headers[":method"]), w.h.URL()+path, nil)
	if a := headers[":authority"]; a != "" {
		req.Host = a
	}
	for k, v := range headers {
		if !strings.HasPrefix(k, ":") {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	o := outcome{status: resp.StatusCode, headers: map[string]string{}, body: string(body)}
	for k, v := range resp.Header {
		o.headers[strings.ToLower(k)] = v[0]
	}
	if o.status == 200 && o.body != "upstream "+strings.SplitN(path, "?", 2)[0] {
		t.Fatalf("admitted request did not reach the upstream: %q", o.body)
	}
	return o
}

func (w *wasmTarget) metric(name string) int64 {
	v, _ := w.h.Metric(name)
	return v
}

func methodOr(m string) string {
	if m == "" {
		return "GET"
	}
	return m
}

// nativeTarget drives filter.Plugin directly, through the fake proxy the
// filter's own tests use (filtertest.Host), sending its Redis calls to the
// real server synchronously when a request pumps them.
type nativeTarget struct {
	*filtertest.Host
	plugin *filter.Plugin
	routes []wasmhost.Route // as wasmhost.Config.Routes
}

func startNative(t *testing.T, conf, redisAddr string) target {
	t.Helper()
	cfg, err := config.Parse([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	n := &nativeTarget{Host: filtertest.NewHost(redisAddr)}
	n.Timeout = cfg.Redis.Timeout // as the proxy enforces it
	n.Deliver = func(id uint32, ok bool, reply []byte) { n.plugin.OnRedisReply(id, ok, reply) }
	n.plugin = filter.NewPlugin(cfg, n)
	t.Cleanup(n.Close)
	return n
}

func (n *nativeTarget) Log(filter.LogLevel, string)            {}
func (n *nativeTarget) Counter(name string) filter.Counter     { return n.Metric(name) }
func (n *nativeTarget) Histogram(name string) filter.Histogram { return n.Metric(name) }
func (n *nativeTarget) Gauge(name string) filter.Gauge         { return n.Metric(name) }
func (n *nativeTarget) metric(name string) int64               { return int64(n.Counters[name]) }

func (n *nativeTarget) send(t tester, headers map[string]string) outcome {
	t.Helper()
	return n.exchange(t, headers, &filtertest.Response{Headers: map[string]string{":status": "200"}})
}

// exchange is send with the upstream's response to an admitted request.
func (n *nativeTarget) exchange(t tester, headers map[string]string, resp *filtertest.Response) outcome {
	t.Helper()
	path := headers[":path"]
	if path == "" {
		path = "/"
	}
	authority := headers[":authority"]
	if authority == "" {
		authority = "127.0.0.1"
	}
	pairs := [][2]string{{":method", methodOr(headers[":method"])}, {":path", path}, {":authority", authority}}
	for k, v := range headers {
		if !strings.HasPrefix(k, ":") {
			pairs = append(pairs, [2]string{strings.ToLower(k), v})
		}
	}
	// Property serves route_name and cluster_name from the target's routes.
	route, _ := wasmhost.RouteFor(n.routes, path)
	s := filtertest.NewStream("127.0.0.1:40000", map[string]string{"route_name": route.Name, "cluster_name": route.Cluster})
	o, err := filtertest.Exchange(n.Host, s, n.plugin.NewStream(s), filter.Pause, pairs, resp)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status == 200 {
		o.Body = "upstream " + strings.SplitN(path, "?", 2)[0]
	}
	return outcome{status: o.Status, headers: o.Headers, body: o.Body}
}
