package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
	"github.com/redisrate/envoy-redis-ratelimit/filter"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
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
	send(t *testing.T, headers map[string]string) outcome
	metric(name string) int64
}

// startFunc starts a target with a config whose "redis" section names the
// cluster "redis"; redisAddr is where that cluster points.
type startFunc func(t *testing.T, config, redisAddr string) target

var targets = map[string]startFunc{"higress": startWasm, "stock": startStock, "native": startNative}

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

// startWasm runs the Higress build, with the Redis callout ABI.
func startWasm(t *testing.T, config, redisAddr string) target {
	return startHost(t, wasmhost.Config{Module: module, PluginConfig: []byte(config),
		RedisClusters: map[string]string{"redis": redisAddr}})
}

// startStock runs the stock-Envoy build, through a real Webdis in front of
// redisAddr.
func startStock(t *testing.T, config, redisAddr string) target {
	return startStockGateway(t, config, redistest.StartWebdis(t, redisAddr))
}

// startStockGateway runs the stock build with webdisAddr as the gateway; a
// config written for the Redis ABI is turned to webdis with the test
// credentials.
func startStockGateway(t *testing.T, config, webdisAddr string) target {
	config = strings.Replace(config, `"redis":{"cluster":"redis",`, fmt.Sprintf(
		`"redis":{"transport":"webdis","cluster":"webdis","username":%q,"password":%q,`,
		redistest.WebdisUser, redistest.WebdisPassword), 1)
	if !strings.Contains(config, `"transport":"webdis"`) || strings.Count(config, `"password"`) != 1 {
		t.Fatalf("config has no redis section to turn to webdis: %s", config)
	}
	return startHost(t, wasmhost.Config{Module: stockModule, PluginConfig: []byte(config),
		HTTPClusters: map[string]string{"webdis": webdisAddr}})
}

func startHost(t *testing.T, cfg wasmhost.Config) target {
	t.Helper()
	cfg.Workers, cfg.Upstream, cfg.PauseTimeout = 2, upstream(t).URL, 10*time.Second
	h := startHostWith(t, cfg)
	return &wasmTarget{h: h}
}

func (w *wasmTarget) send(t *testing.T, headers map[string]string) outcome {
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

// nativeTarget drives filter.Plugin directly, sending its Redis calls to
// the real server synchronously when the test pumps them.
type nativeTarget struct {
	plugin   *filter.Plugin
	addr     string
	timeout  time.Duration
	conn     net.Conn
	r        *bufio.Reader
	nextID   uint32
	queue    []queuedCall
	counters map[string]int64
	routes   []wasmhost.Route // as wasmhost.Config.Routes
}

type queuedCall struct {
	id  uint32
	cmd []byte
}

func startNative(t *testing.T, config, redisAddr string) target {
	t.Helper()
	cfg, err := filter.ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	n := &nativeTarget{addr: redisAddr, timeout: cfg.Redis.Timeout, counters: map[string]int64{}}
	n.plugin = filter.NewPlugin(cfg, n)
	t.Cleanup(func() {
		if n.conn != nil {
			n.conn.Close()
		}
	})
	return n
}

func (n *nativeTarget) DispatchRedis(cmd []byte) (uint32, error) {
	n.nextID++
	n.queue = append(n.queue, queuedCall{n.nextID, append([]byte(nil), cmd...)})
	return n.nextID, nil
}

func (n *nativeTarget) DispatchHTTP(string, [][2]string, []byte, time.Duration) (uint32, error) {
	return 0, errors.New("the native target sends RESP directly")
}

func (n *nativeTarget) Log(filter.LogLevel, string)            {}
func (n *nativeTarget) Now() time.Time                         { return time.Now() }
func (n *nativeTarget) Counter(name string) filter.Counter     { return nativeMetric{n, name} }
func (n *nativeTarget) Histogram(name string) filter.Histogram { return nativeMetric{n, name} }
func (n *nativeTarget) Gauge(name string) filter.Gauge         { return nativeMetric{n, name} }
func (n *nativeTarget) metric(name string) int64               { return n.counters[name] }

type nativeMetric struct {
	n    *nativeTarget
	name string
}

func (m nativeMetric) Increment(d uint64) { m.n.counters[m.name] += int64(d) }
func (m nativeMetric) Record(uint64)      { m.n.counters[m.name]++ }
func (m nativeMetric) Add(d int64)        { m.n.counters[m.name] += d }

// roundTrip sends one command and reads one reply; an error stands for a
// network failure or timeout, and drops the connection.
func (n *nativeTarget) roundTrip(cmd []byte) ([]byte, error) {
	if n.conn == nil {
		c, err := net.DialTimeout("tcp", n.addr, n.timeout)
		if err != nil {
			return nil, err
		}
		n.conn, n.r = c, bufio.NewReader(c)
	}
	n.conn.SetDeadline(time.Now().Add(n.timeout))
	var buf []byte
	_, err := n.conn.Write(cmd)
	for err == nil {
		var b byte
		if b, err = n.r.ReadByte(); err == nil {
			buf = append(buf, b)
			if _, _, derr := redisproto.Decode(buf); !errors.Is(derr, redisproto.ErrIncomplete) {
				return buf, nil
			}
		}
	}
	n.conn.Close()
	n.conn = nil
	return nil, err
}

type nativeStream struct {
	route    wasmhost.Route
	resumed  int
	status   int
	headers  map[string]string
	body     string
	response map[string]string
}

func (s *nativeStream) SourceAddress() string { return "127.0.0.1:40000" }
func (s *nativeStream) Resume()               { s.resumed++ }
func (s *nativeStream) SendLocalReply(status int, headers [][2]string, body []byte) {
	s.status, s.body, s.headers = status, string(body), map[string]string{}
	for _, kv := range headers {
		s.headers[kv[0]] = kv[1]
	}
}
func (s *nativeStream) AddResponseHeader(k, v string) { s.response[k] = v }

// Property serves route_name and cluster_name from the target's routes.
func (s *nativeStream) Property(name string) string {
	return map[string]string{"route_name": s.route.Name, "cluster_name": s.route.Cluster}[name]
}

func (n *nativeTarget) send(t *testing.T, headers map[string]string) outcome {
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
	route, _ := wasmhost.RouteFor(n.routes, path)
	s := &nativeStream{route: route, response: map[string]string{}}
	st := n.plugin.NewStream(s)
	defer st.OnDone()
	action := st.OnRequestHeaders(pairs)
	for len(n.queue) > 0 {
		q := n.queue[0]
		n.queue = n.queue[1:]
		reply, err := n.roundTrip(q.cmd)
		n.plugin.OnRedisReply(q.id, err == nil, reply)
	}
	switch {
	case s.status != 0 && s.resumed == 0:
		return outcome{status: s.status, headers: s.headers, body: s.body}
	case action == filter.Continue && s.resumed == 0, action == filter.Pause && s.resumed == 1:
		st.OnResponseHeaders()
		return outcome{status: 200, headers: s.response, body: "upstream " + strings.SplitN(path, "?", 2)[0]}
	}
	t.Fatalf("stream left undecided: action %v, resumed %d, status %d", action, s.resumed, s.status)
	return outcome{}
}

// startHostWith starts a host with cfg as given (Workers and Upstream
// included), failing the test on stuck streams or traps at its end.
func startHostWith(t *testing.T, cfg wasmhost.Config) *wasmhost.Host {
	t.Helper()
	if cfg.PauseTimeout == 0 {
		cfg.PauseTimeout = 10 * time.Second
	}
	h, err := wasmhost.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range h.Logs() {
				t.Log(l.String())
			}
		}
		if n := h.StuckStreams(); n != 0 {
			t.Errorf("%d streams left paused", n)
		}
		if n := h.Traps(); n != 0 {
			t.Errorf("%d guest traps", n)
		}
		h.Close()
	})
	return h
}
