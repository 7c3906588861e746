package filter

import (
	"os"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

var server *redistest.Server

func TestMain(m *testing.M) {
	var err error
	if server, err = redistest.StartServer(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

// fakeHost is the shared fake proxy (filtertest.Host) with the methods
// that name this package's types. Redis calls are queued and sent, when
// the test pumps them, to the real redis-server.
type fakeHost struct {
	*filtertest.Host
	t      *testing.T
	plugin *Plugin
	logs   []string
	levels []LogLevel // per log line
	// props are the stream properties (route_name, ...) of every request.
	props map[string]string
}

func newFakeHost(t *testing.T, conf string) *fakeHost {
	t.Helper()
	cfg, err := config.Parse([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Redis.Prefix = redistest.Prefix(t)
	for i := range cfg.MatchRules {
		cfg.MatchRules[i].Config.Redis.Prefix = cfg.Redis.Prefix
	}
	h := &fakeHost{Host: filtertest.NewHost(server.Addr), t: t}
	h.Deliver = func(id uint32, ok bool, reply []byte) { h.plugin.OnRedisReply(id, ok, reply) }
	t.Cleanup(h.Close)
	h.plugin = NewPlugin(cfg, h)
	return h
}

func (h *fakeHost) Log(level LogLevel, msg string) {
	h.logs, h.levels = append(h.logs, msg), append(h.levels, level)
}
func (h *fakeHost) Counter(name string) Counter     { return h.Metric(name) }
func (h *fakeHost) Histogram(name string) Histogram { return h.Metric(name) }
func (h *fakeHost) Gauge(name string) Gauge         { return h.Metric(name) }

// fakeStream records what the filter did to one request.
type fakeStream = filtertest.Stream

// outcome is a request's fate as a client would see it.
type outcome struct {
	status  int // 200 when admitted
	headers map[string]string
	body    string
}

// send runs one request through the filter, pumping Redis replies.
func (h *fakeHost) send(headers ...string) outcome {
	h.t.Helper()
	o, _ := h.sendStream(headers...)
	return o
}

// sendStream is send, also returning what the filter did to the request
// (the request headers it set or removed, its decision). A ":path=..."
// among headers replaces the default "/".
func (h *fakeHost) sendStream(headers ...string) (outcome, *fakeStream) {
	h.t.Helper()
	pairs := [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = setPair(pairs, k, v)
	}
	fs := filtertest.NewStream("192.0.2.7:40000", h.props)
	o, err := filtertest.Send(h.Host, fs, h.plugin.NewStream(fs), Pause, pairs)
	if err != nil {
		h.t.Fatal(err)
	}
	return outcome{status: o.Status, headers: o.Headers, body: o.Body}, fs
}

func setPair(pairs [][2]string, k, v string) [][2]string {
	for i := range pairs {
		if pairs[i][0] == k {
			pairs[i][1] = v
			return pairs
		}
	}
	return append(pairs, [2]string{k, v})
}
