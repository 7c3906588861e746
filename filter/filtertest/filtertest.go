// Package filtertest runs a filter.Plugin natively against a fake proxy
// and a real Redis: the filter's own tests and the end-to-end tests'
// native target share it.
//
// It does not import filter, so that filter's internal tests can use it.
// Host implements the methods of filter.PluginHost whose signatures name
// no filter type (DispatchRedis, DispatchHTTP, Now) and Stream implements
// filter.StreamHost; a test embeds Host in a type that adds Log, Counter,
// Gauge and Histogram, each one line (Metric satisfies all three metric
// interfaces).
package filtertest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Host is a fake proxy. Redis calls queue up when dispatched; Pump sends
// them, one at a time, to a real Redis and hands each reply to Deliver, as
// the proxy's callout would.
type Host struct {
	// Redis is the address Pump sends calls to.
	Redis string
	// Timeout bounds each call, as the proxy enforces redis.timeout; zero
	// means redistest.DefaultTimeout.
	Timeout time.Duration
	// Deliver hands a call's reply to the plugin: set it to the plugin's
	// OnRedisReply. ok false is a failed call.
	Deliver func(id uint32, ok bool, reply []byte)

	// Counters holds every metric by name. Counters and gauges add to
	// theirs (a gauge's negative delta wraps, so int64(value) reads it);
	// a histogram counts its records under name + ".count".
	Counters map[string]uint64
	// Clock, when set, is what Now returns; zero means the real clock.
	Clock time.Time
	// TickPeriod is the last tick period the plugin asked for.
	TickPeriod time.Duration
	// DispatchErr, when set, makes DispatchRedis fail with it; Down makes
	// every call fail when pumped, as an unreachable Redis would.
	DispatchErr error
	Down        bool

	// Calls is the number of calls dispatched so far, which is also the
	// id of the last one.
	Calls uint32
	// Queue holds the calls dispatched and not yet pumped, oldest first.
	Queue []Call

	conn *redistest.Conn
}

// Call is one dispatched Redis call: its id and the RESP command.
type Call struct {
	ID  uint32
	Cmd []byte
}

// NewHost returns a Host that sends calls to the Redis at redisAddr.
func NewHost(redisAddr string) *Host {
	return &Host{Redis: redisAddr, Counters: map[string]uint64{}}
}

// DispatchRedis queues a copy of cmd.
func (h *Host) DispatchRedis(cmd []byte) (uint32, error) {
	if h.DispatchErr != nil {
		return 0, h.DispatchErr
	}
	h.Calls++
	h.Queue = append(h.Queue, Call{h.Calls, append([]byte(nil), cmd...)})
	return h.Calls, nil
}

// DispatchHTTP fails: the fake speaks RESP to Redis directly.
func (h *Host) DispatchHTTP(string, [][2]string, []byte, time.Duration) (uint32, error) {
	return 0, errors.New("filtertest: no HTTP callouts; the fake sends RESP to Redis directly")
}

// SetTickPeriod records the tick period the plugin asks for (it
// implements filter.Ticker); the test calls OnTick itself.
func (h *Host) SetTickPeriod(d time.Duration) bool {
	h.TickPeriod = d
	return true
}

// Now returns Clock, or the real time when Clock is zero.
func (h *Host) Now() time.Time {
	if h.Clock.IsZero() {
		return time.Now()
	}
	return h.Clock
}

// Metric returns the metric called name, as a counter, gauge or histogram.
func (h *Host) Metric(name string) Metric { return Metric{h, name} }

// Metric is one metric of a Host.
type Metric struct {
	h    *Host
	name string
}

// Increment adds d to a counter.
func (m Metric) Increment(d uint64) { m.h.Counters[m.name] += d }

// Add adds d to a gauge.
func (m Metric) Add(d int64) { m.h.Counters[m.name] += uint64(d) }

// Record counts one record of a histogram.
func (m Metric) Record(uint64) { m.h.Counters[m.name+".count"]++ }

// Pump delivers every queued call, and those the replies queue in turn.
// With Down set each fails; otherwise each goes to Redis, and a network
// error fails it and drops the connection, as the proxy's client would.
func (h *Host) Pump() {
	for len(h.Queue) > 0 {
		q := h.Queue[0]
		h.Queue = h.Queue[1:]
		if h.Down {
			h.Deliver(q.ID, false, nil)
			continue
		}
		reply, err := h.roundTrip(q.Cmd)
		h.Deliver(q.ID, err == nil, reply)
	}
}

func (h *Host) roundTrip(cmd []byte) ([]byte, error) {
	if h.conn == nil {
		c, err := redistest.Dial(h.Redis)
		if err != nil {
			return nil, err
		}
		h.conn = c
	}
	h.conn.Timeout = h.Timeout
	reply, err := h.conn.RoundTrip(cmd)
	if err != nil {
		h.conn.Close()
		h.conn = nil
	}
	return reply, err
}

// Close closes the connection to Redis.
func (h *Host) Close() {
	if h.conn != nil {
		h.conn.Close()
		h.conn = nil
	}
}

// Stream records what the plugin did to one request.
type Stream struct {
	// Source is the downstream address SourceAddress returns; Props are
	// the stream properties Property serves. PathProps are those
	// PropertyPath serves, by their segments joined with NUL (as the ABI
	// passes a path), "metadata\x00filter_metadata\x00..."; a one-segment
	// path falls back to Props.
	Source    string
	Props     map[string]string
	PathProps map[string][]byte

	// Resumed counts Resume calls; Status, Headers and Body are the local
	// reply, if any; Response holds the response headers added.
	Resumed  int
	Status   int
	Headers  map[string]string
	Body     string
	Response map[string]string
	// Upstream are the response headers ResponseHeader serves, with
	// ":status"; Exchange sets them.
	Upstream map[string]string
	// Decision is the last value SetDecision set, Decisions how many
	// times it was set.
	Decision  string
	Decisions int
	// SetRequest holds the request headers the filter set, RemovedRequest
	// those it removed, in order.
	SetRequest     map[string]string
	RemovedRequest []string
	// RequestBody is the request body the filter replaced; "" when none.
	RequestBody string
}

// ResponseHeader returns Upstream[name], "" when absent.
func (s *Stream) ResponseHeader(name string) string { return s.Upstream[name] }

// NewStream returns a Stream from source with the given properties.
func NewStream(source string, props map[string]string) *Stream {
	return &Stream{Source: source, Props: props, Response: map[string]string{}}
}

// SourceAddress returns Source.
func (s *Stream) SourceAddress() string { return s.Source }

// Property returns Props[name], "" when absent.
func (s *Stream) Property(name string) string { return s.Props[name] }

// PropertyPath returns PathProps[path joined with NUL], or for one
// segment Props[path[0]].
func (s *Stream) PropertyPath(path []string) ([]byte, bool) {
	if v, ok := s.PathProps[strings.Join(path, "\x00")]; ok {
		return v, true
	}
	if v, ok := s.Props[path[0]]; ok && len(path) == 1 {
		return []byte(v), true
	}
	return nil, false
}

// Resume counts in Resumed.
func (s *Stream) Resume() { s.Resumed++ }

// SendLocalReply records the reply in Status, Headers and Body.
func (s *Stream) SendLocalReply(status int, headers [][2]string, body []byte) {
	s.Status, s.Body, s.Headers = status, string(body), map[string]string{}
	for _, kv := range headers {
		s.Headers[kv[0]] = kv[1]
	}
}

// AddResponseHeader records the header in Response.
func (s *Stream) AddResponseHeader(name, value string) {
	if s.Response == nil {
		s.Response = map[string]string{}
	}
	s.Response[name] = value
}

// SetRequestHeader records the header in SetRequest.
func (s *Stream) SetRequestHeader(name, value string) {
	if s.SetRequest == nil {
		s.SetRequest = map[string]string{}
	}
	s.SetRequest[name] = value
}

// RemoveRequestHeader records the name in RemovedRequest.
func (s *Stream) RemoveRequestHeader(name string) {
	s.RemovedRequest = append(s.RemovedRequest, name)
}

// ReplaceRequestBody records the body in RequestBody.
func (s *Stream) ReplaceRequestBody(body []byte) { s.RequestBody = string(body) }

// SetDecision records the value in Decision, and counts it.
func (s *Stream) SetDecision(value []byte) {
	s.Decision = string(value)
	s.Decisions++
}

// Outcome is a request's fate as a client would see it.
type Outcome struct {
	Status  int // 200 when admitted
	Headers map[string]string
	Body    string
}

// PluginStream is the part of a *filter.Stream that Send drives; A is
// filter.Action.
type PluginStream[A comparable] interface {
	OnRequestHeaders(headers [][2]string) A
	OnResponseHeaders(endOfStream bool) A
	OnResponseBody(chunk []byte, endOfStream bool)
	OnDone()
}

// Response is the upstream's answer to an admitted request, for Exchange.
type Response struct {
	Headers map[string]string // with ":status"
	Chunks  []string          // the body, as it arrives
	Reset   bool              // the stream ends before the response does
}

// Send runs one request through st, the plugin's stream for s, as the
// proxy would: the request headers; when the stream pauses (returns pause)
// without answering, every queued call (Pump); for an admitted request, the
// response headers; and the end of the stream. It returns what the client
// sees, with an error when the stream was left undecided or was both
// resumed and answered locally. An admitted request's Headers are the
// response headers the plugin added.
func Send[A comparable](h *Host, s *Stream, st PluginStream[A], pause A, headers [][2]string) (Outcome, error) {
	return Exchange(h, s, st, pause, headers, &Response{Headers: map[string]string{":status": "200"}})
}

// Exchange is Send with the upstream's response: an admitted request's
// response goes through the stream (headers, then each chunk), the stream
// ends, and the calls it made at its end (settles) are pumped.
func Exchange[A comparable](h *Host, s *Stream, st PluginStream[A], pause A, headers [][2]string, resp *Response) (Outcome, error) {
	defer h.Pump()
	defer st.OnDone()
	paused := st.OnRequestHeaders(headers) == pause
	if paused && s.Status == 0 {
		h.Pump()
	}
	switch {
	case s.Status != 0 && s.Resumed != 0:
		return Outcome{}, errors.New("filtertest: a stream was both resumed and answered locally")
	case s.Status != 0:
		return Outcome{Status: s.Status, Headers: s.Headers, Body: s.Body}, nil
	case !paused && s.Resumed == 0, paused && s.Resumed == 1:
		s.Upstream = resp.Headers
		st.OnResponseHeaders(len(resp.Chunks) == 0 && !resp.Reset)
		for i, c := range resp.Chunks {
			st.OnResponseBody([]byte(c), i == len(resp.Chunks)-1 && !resp.Reset)
		}
		return Outcome{Status: 200, Headers: s.Response}, nil
	}
	return Outcome{}, fmt.Errorf("filtertest: stream left undecided: paused %t, resumed %d times", paused, s.Resumed)
}
