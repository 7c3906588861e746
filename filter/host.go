package filter

import "time"

// Action tells the proxy whether to go on with a stream.
type Action uint8

const (
	Continue Action = iota
	Pause
)

// LogLevel is a proxy-wasm log level.
type LogLevel uint8

const (
	LogDebug LogLevel = iota + 1
	LogInfo
	LogWarn
	LogError
	LogCritical // limits are off, or run with rights they must not have
)

// PluginHost is what a Plugin needs of the proxy. The SDK adapter in
// proxyhost implements it; tests use a fake.
type PluginHost interface {
	// DispatchRedis sends one RESP command; the reply arrives later through
	// Plugin.OnRedisReply with the returned id.
	DispatchRedis(cmd []byte) (calloutID uint32, err error)
	// DispatchHTTP makes an HTTP callout to an upstream cluster; the
	// response arrives later through Plugin.OnHTTPReply with the returned id.
	DispatchHTTP(cluster string, headers [][2]string, body []byte, timeout time.Duration) (calloutID uint32, err error)
	Log(level LogLevel, msg string)
	Now() time.Time
	Counter(name string) Counter
	Gauge(name string) Gauge
	Histogram(name string) Histogram
}

// StreamHost acts on one HTTP stream. Methods called from a Redis callback
// must first make the stream the proxy's effective context.
type StreamHost interface {
	// SourceAddress is the downstream peer, "ip:port" (property source.address).
	SourceAddress() string
	// Property returns a stream property with a one-segment path, such as
	// "route_name" or "cluster_name", or "" when the proxy has none. Only
	// a _rules_ entry that needs one reads it: in wasm a read is host calls.
	Property(name string) string
	// PropertyPath returns the property at path, segments as the proxy
	// takes them (["metadata", "filter_metadata", "envoy.filters.http.jwt_authn",
	// "jwt_payload", "sub"]), as the bytes the proxy serializes it to: a
	// string's own bytes, 8 little-endian bytes for a number. ok is false
	// when the proxy has no such property. Only a key part that needs one
	// reads it.
	PropertyPath(path []string) (value []byte, ok bool)
	Resume()
	// SendLocalReply answers the request. The filter never changes
	// headers once sent, so a host may keep their encoding for the next
	// reply with the same slice (the deny cache answers a flood with one).
	SendLocalReply(status int, headers [][2]string, body []byte)
	AddResponseHeader(name, value string)
	// SetDecision sets the stream property ratelimit.decision (Envoy's
	// filter state wasm.ratelimit.decision) to value, the line that says
	// which limit decided the request (decision.go); the host copies it.
	// Called at most once per request, when it is decided.
	SetDecision(value []byte)
}

// Counter is a proxy-wasm counter metric.
type Counter interface{ Increment(delta uint64) }

// Gauge is a proxy-wasm gauge metric.
type Gauge interface{ Add(delta int64) }

// Histogram is a proxy-wasm histogram metric.
type Histogram interface{ Record(value uint64) }
