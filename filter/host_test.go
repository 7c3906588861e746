package filter

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
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

// fakeHost stands in for the proxy natively. Redis calls are queued and
// sent, when the test pumps them, to the real redis-server.
type fakeHost struct {
	t        *testing.T
	conn     net.Conn
	r        *bufio.Reader
	plugin   *Plugin
	nextID   uint32
	queue    []queued
	counters map[string]uint64
	logs     []string
	now      time.Time // zero: the real clock
	// props are the stream properties (route_name, ...) of every request.
	props map[string]string
	// dispatchErr makes DispatchRedis fail; down makes calls fail.
	dispatchErr error
	down        bool
}

type queued struct {
	id  uint32
	cmd []byte
}

func newFakeHost(t *testing.T, config string) *fakeHost {
	t.Helper()
	cfg, err := ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Redis.Prefix = redistest.Prefix(t)
	for i := range cfg.MatchRules {
		cfg.MatchRules[i].Config.Redis.Prefix = cfg.Redis.Prefix
	}
	c, err := net.Dial("tcp", server.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	h := &fakeHost{t: t, conn: c, r: bufio.NewReader(c), counters: map[string]uint64{}}
	h.plugin = NewPlugin(cfg, h)
	return h
}

func (h *fakeHost) DispatchRedis(cmd []byte) (uint32, error) {
	if h.dispatchErr != nil {
		return 0, h.dispatchErr
	}
	h.nextID++
	h.queue = append(h.queue, queued{h.nextID, append([]byte(nil), cmd...)})
	return h.nextID, nil
}

func (h *fakeHost) DispatchHTTP(cluster string, headers [][2]string, body []byte, timeout time.Duration) (uint32, error) {
	return 0, errors.New("fakeHost: no HTTP callouts")
}

func (h *fakeHost) Log(level LogLevel, msg string) { h.logs = append(h.logs, msg) }

func (h *fakeHost) Now() time.Time {
	if h.now.IsZero() {
		return time.Now()
	}
	return h.now
}

type fakeCounter struct {
	h    *fakeHost
	name string
}

func (c fakeCounter) Increment(d uint64) { c.h.counters[c.name] += d }
func (c fakeCounter) Record(v uint64)    { c.h.counters[c.name+".count"]++ }
func (c fakeCounter) Add(d int64)        { c.h.counters[c.name] += uint64(d) }

func (h *fakeHost) Counter(name string) Counter     { return fakeCounter{h, name} }
func (h *fakeHost) Histogram(name string) Histogram { return fakeCounter{h, name} }
func (h *fakeHost) Gauge(name string) Gauge         { return fakeCounter{h, name} }

// pump delivers every queued call, and those they queue in turn.
func (h *fakeHost) pump() {
	h.t.Helper()
	for len(h.queue) > 0 {
		q := h.queue[0]
		h.queue = h.queue[1:]
		if h.down {
			h.plugin.OnRedisReply(q.id, false, nil)
			continue
		}
		h.plugin.OnRedisReply(q.id, true, h.roundTrip(q.cmd))
	}
}

func (h *fakeHost) roundTrip(cmd []byte) []byte {
	h.t.Helper()
	if _, err := h.conn.Write(cmd); err != nil {
		h.t.Fatal(err)
	}
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := h.r.Read(chunk)
		if err != nil {
			h.t.Fatal(err)
		}
		buf = append(buf, chunk[:n]...)
		if _, _, err := redisproto.Decode(buf); !errors.Is(err, redisproto.ErrIncomplete) {
			return buf
		}
	}
}

// fakeStream records what the filter did to one request.
type fakeStream struct {
	source   string
	props    map[string]string
	resumed  int
	status   int
	headers  map[string]string
	body     string
	response map[string]string
}

func (s *fakeStream) SourceAddress() string       { return s.source }
func (s *fakeStream) Property(name string) string { return s.props[name] }
func (s *fakeStream) Resume()                     { s.resumed++ }
func (s *fakeStream) SendLocalReply(status int, headers [][2]string, body []byte) {
	s.status, s.body, s.headers = status, string(body), map[string]string{}
	for _, kv := range headers {
		s.headers[kv[0]] = kv[1]
	}
}
func (s *fakeStream) AddResponseHeader(name, value string) { s.response[name] = value }

// outcome is a request's fate as a client would see it.
type outcome struct {
	status  int // 200 when admitted
	headers map[string]string
	body    string
}

// send runs one request through the filter, pumping Redis replies.
func (h *fakeHost) send(headers ...string) outcome {
	h.t.Helper()
	fs := &fakeStream{source: "192.0.2.7:40000", props: h.props, response: map[string]string{}}
	st := h.plugin.NewStream(fs)
	pairs := [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = setPair(pairs, k, v)
	}
	action := st.OnRequestHeaders(pairs)
	if action == Pause && fs.status == 0 {
		h.pump()
	}
	defer st.OnDone()
	switch {
	case fs.status != 0:
		if fs.resumed != 0 {
			h.t.Fatal("a stream was both resumed and answered locally")
		}
		return outcome{status: fs.status, headers: fs.headers, body: fs.body}
	case action == Continue && fs.resumed == 0, action == Pause && fs.resumed == 1:
		st.OnResponseHeaders()
		return outcome{status: 200, headers: fs.response}
	default:
		h.t.Fatalf("stream left undecided: action %v, resumed %d", action, fs.resumed)
		return outcome{}
	}
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
