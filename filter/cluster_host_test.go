package filter

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// clusterHost is a fakeHost whose HTTP callouts are Webdis calls, one
// Envoy cluster per Redis node (redis.nodes): they queue until the test
// answers one itself (reply) or forwards it (forward) as RESP to the real
// Redis its cluster names, turning the reply into Webdis's JSON as Webdis
// 0.1.9 renders it.
type clusterHost struct {
	*fakeHost
	backends map[string]string // Envoy cluster -> redis-server address
	http     []httpCall
	conns    map[string]*redistest.Conn
	// onDispatch, when set, runs at each HTTP callout dispatched.
	onDispatch func()
}

// httpCall is one HTTP callout dispatched.
type httpCall struct {
	id      uint32
	cluster string
	body    string
	timeout time.Duration
}

func newClusterHost(t *testing.T, conf string, backends map[string]string) *clusterHost {
	t.Helper()
	fh := newFakeHost(t, conf)
	h := &clusterHost{fakeHost: fh, backends: backends, conns: map[string]*redistest.Conn{}}
	fh.Clock = time.Now()
	fh.plugin = NewPlugin(fh.plugin.Config(), h)
	t.Cleanup(func() {
		for _, c := range h.conns {
			c.Close()
		}
	})
	return h
}

func (h *clusterHost) DispatchHTTP(cluster string, _ [][2]string, body []byte, timeout time.Duration) (uint32, error) {
	if h.onDispatch != nil {
		h.onDispatch()
	}
	h.Calls++
	h.http = append(h.http, httpCall{h.Calls, cluster, string(body), timeout})
	return h.Calls, nil
}

// next takes the oldest callout queued.
func (h *clusterHost) next() httpCall {
	h.t.Helper()
	if len(h.http) == 0 {
		h.t.Fatal("no callout queued")
	}
	c := h.http[0]
	h.http = h.http[1:]
	return c
}

// reply answers c with status and body.
func (h *clusterHost) reply(c httpCall, status int, body string) {
	h.plugin.OnHTTPReply(c.id, status, []byte(body))
}

// replyError answers c as Webdis renders a Redis error reply.
func (h *clusterHost) replyError(c httpCall, msg string) {
	h.reply(c, 200, `{"`+command(c.body)+`":[false,"`+msg+`"]}`)
}

// forward runs c on the Redis behind its cluster and answers it.
func (h *clusterHost) forward(c httpCall) {
	h.t.Helper()
	addr, ok := h.backends[c.cluster]
	if !ok {
		h.t.Fatalf("callout to unknown cluster %q", c.cluster)
	}
	conn := h.conns[addr]
	if conn == nil {
		var err error
		if conn, err = redistest.Dial(addr); err != nil {
			h.t.Fatal(err)
		}
		h.conns[addr] = conn
	}
	var args []string
	for _, a := range strings.Split(c.body, "/") {
		s, err := url.PathUnescape(a)
		if err != nil {
			h.t.Fatal(err)
		}
		args = append(args, s)
	}
	v, err := conn.Decode(conn.RoundTrip(redisproto.AppendCommand(nil, args...)))
	if err != nil && v.Kind != redisproto.KindError {
		h.t.Fatal(err)
	}
	h.reply(c, 200, webdisJSON(command(c.body), v))
}

// pump forwards every queued callout, and those the replies queue in turn.
func (h *clusterHost) pump() {
	for len(h.http) > 0 {
		h.forward(h.next())
	}
}

// command is the command's name as Webdis keys its reply.
func command(body string) string {
	name, _, _ := strings.Cut(body, "/")
	return strings.ToUpper(name)
}

// webdisJSON renders a reply as Webdis 0.1.9 does: {"CMD": value}, an
// error as [false, "message"].
func webdisJSON(cmd string, v redisproto.Value) string {
	var val any
	switch v.Kind {
	case redisproto.KindError:
		val = []any{false, string(v.Str)}
	case redisproto.KindInteger:
		val = v.Int
	case redisproto.KindArray:
		var ints []int64
		for _, e := range v.Elems {
			ints = append(ints, e.Int)
		}
		val = ints
	default:
		val = string(v.Str)
	}
	b, _ := json.Marshal(map[string]any{cmd: val})
	return string(b)
}

// stream starts a request and leaves its callouts queued.
func (h *clusterHost) stream(headers ...string) (*fakeStream, *Stream) {
	fs := filtertest.NewStream("192.0.2.7:40000", nil)
	st := h.plugin.NewStream(fs)
	pairs := [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "example.com"}}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, "=")
		pairs = setPair(pairs, k, v)
	}
	st.OnRequestHeaders(pairs)
	return fs, st
}

// tick advances the clock by d and ticks.
func (h *clusterHost) tick(d time.Duration) {
	h.Clock = h.Clock.Add(d)
	h.plugin.OnTick()
}
