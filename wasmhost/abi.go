package wasmhost

import "fmt"

// Status codes returned by host functions (proxy-wasm WasmResult).
const (
	statusOK                   uint32 = 0
	statusNotFound             uint32 = 1
	statusBadArgument          uint32 = 2
	statusSerializationFailure uint32 = 3
	statusInvalidMemoryAccess  uint32 = 6
	statusEmpty                uint32 = 7
	statusCasMismatch          uint32 = 8
	statusInternalFailure      uint32 = 10
	statusUnimplemented        uint32 = 12
)

// Buffer types of proxy_get_buffer_bytes / proxy_set_buffer_bytes.
const (
	bufferHTTPRequestBody      uint32 = 0
	bufferHTTPResponseBody     uint32 = 1
	bufferDownstreamData       uint32 = 2
	bufferUpstreamData         uint32 = 3
	bufferHTTPCallResponseBody uint32 = 4
	bufferGrpcReceiveBuffer    uint32 = 5
	bufferVMConfiguration      uint32 = 6
	bufferPluginConfiguration  uint32 = 7
	bufferCallData             uint32 = 8
	bufferRedisCallResponse    uint32 = 9 // Higress extension
)

// Header map types.
const (
	mapRequestHeaders          uint32 = 0
	mapRequestTrailers         uint32 = 1
	mapResponseHeaders         uint32 = 2
	mapResponseTrailers        uint32 = 3
	mapGrpcInitialMetadata     uint32 = 4
	mapGrpcTrailingMetadata    uint32 = 5
	mapHTTPCallResponseHeaders uint32 = 6
	mapHTTPCallResponseTrailer uint32 = 7
)

// Stream types of proxy_continue_stream / proxy_close_stream.
const (
	streamRequest    uint32 = 0
	streamResponse   uint32 = 1
	streamDownstream uint32 = 2
	streamUpstream   uint32 = 3
)

// Metric types of proxy_define_metric.
const (
	metricCounter   uint32 = 0
	metricGauge     uint32 = 1
	metricHistogram uint32 = 2
)

// Redis call status passed to proxy_on_redis_call_response
// (Higress RedisStatus): 0 = Ok, 1 = NetworkError.
const (
	redisStatusOK           uint32 = 0
	redisStatusNetworkError uint32 = 1
)

// Results of the HTTP stream callbacks. Headers: Continue, StopIteration,
// ContinueAndEndStream, StopAllIterationAndBuffer, StopAllIterationAndWatermark.
// Bodies and trailers: 0 continues, anything else stops.
const (
	actionContinue             uint64 = 0
	actionStopIteration        uint64 = 1 // Pause
	actionContinueAndEndStream uint64 = 2
)

// LogLevel is the level of a guest log line (proxy_log's log_level).
type LogLevel uint32

// Log levels as the proxy-wasm ABI numbers them.
const (
	LogTrace LogLevel = iota
	LogDebug
	LogInfo
	LogWarn
	LogError
	LogCritical
)

// String returns the level's lower-case name, e.g. "warn".
func (l LogLevel) String() string {
	switch l {
	case LogTrace:
		return "trace"
	case LogDebug:
		return "debug"
	case LogInfo:
		return "info"
	case LogWarn:
		return "warn"
	case LogError:
		return "error"
	case LogCritical:
		return "critical"
	}
	return fmt.Sprintf("level(%d)", uint32(l))
}
