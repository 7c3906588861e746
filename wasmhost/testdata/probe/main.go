// Command probe is a proxy-wasm filter that exercises the host's ABI for the
// e2e host tests. It lives under testdata so that `go build ./...` skips it;
// the tests build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o probe.wasm .
//
// Plugin configuration (JSON, every field optional):
//
//	{"fail": "msg"}               log msg as an error and fail plugin start
//	{"redis_cluster": "redis?db=1", "redis_user": "u", "redis_password": "p",
//	 "redis_timeout_ms": 500}     call proxy_redis_init at plugin start
//	{"http_cluster": "svc"}       cluster for x-probe-mode: http
//	{"tick_ms": 20}               count ticks in the counter probe_ticks
//
// Per request, headers drive it:
//
//	x-redis: PING                 send this command (split on x-redis-sep,
//	                              default " ") as RESP, pause, and on the
//	                              reply resume and add x-redis-reply (the raw
//	                              reply, Go-quoted) to the response; a failed
//	                              call answers 503 with x-redis-status
//	x-redis-reply-mode: local     answer the reply as a local 200 instead
//	x-redis-reply-mode: never     never resume after the reply
//	x-probe-mode: local           local reply 429 "denied by probe"
//	x-probe-mode: double-local    two local replies; logs the second's error
//	x-probe-mode: hang            pause forever
//	x-probe-mode: trap            panic
//	x-probe-mode: http            proxy_http_call GET /callout, then resume
//	x-probe-mode: shared          increment shared data "probe_counter" (CAS)
//	x-probe-mode: queue           enqueue the path on shared queue "probe_q"
//	x-probe-mode: append-body     append "+probe" to the request body
//	x-probe-mode: rewrite-body    replace the response body (dropping
//	                              content-length, as a filter must)
//	x-probe-body: log             log each response body and trailers
//	                              callback: "probe response body id=N
//	                              size=N eos=B body=Q" (body Go-quoted),
//	                              "probe response trailers id=N n=N"
//	x-probe-body: hold            log, and pause each body callback until
//	                              the body holds "RELEASE"; then make the
//	                              x-probe-mode: http callout and continue
//	                              the response (continue_stream) when it
//	                              answers
//	x-probe-body: reply           log, and answer a local 500 from the
//	                              first body callback
//	x-probe-mode: sleep | gc | timer-gc | rand-gc   Go runtime paths (runtime.go)
//	x-probe-mode: hold-headers    pause the request headers for good; the
//	                              request body callback logs "probe request
//	                              body id=N size=N eos=B" and continues
//	x-probe-decision: V           set the property ratelimit.decision to V
//
// It always adds x-probe-added to the request, removes x-probe-remove,
// suffixes x-probe-replace, adds x-prop-* response headers with properties
// and x-probe-now / x-probe-nonce with the guest's clock and randomness,
// counts requests in probe_requests and logs "probe done <id> ... details=
// <response.code_details>" in on_log.
package main

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

func init() {
	proxywasm.SetVMContext(&vmContext{})
}

func main() {}

type config struct {
	Fail           string `json:"fail"`
	RedisCluster   string `json:"redis_cluster"`
	RedisUser      string `json:"redis_user"`
	RedisPassword  string `json:"redis_password"`
	RedisTimeoutMs uint32 `json:"redis_timeout_ms"`
	HTTPCluster    string `json:"http_cluster"`
	TickMs         uint32 `json:"tick_ms"`
}

var (
	cfg       config
	requests  proxywasm.MetricCounter
	ticks     proxywasm.MetricCounter
	paused    proxywasm.MetricGauge
	replySize proxywasm.MetricHistogram
	queueID   uint32
	// pending maps a Redis callout id to the stream waiting for it.
	pending = map[uint32]*httpContext{}
)

type vmContext struct{ types.DefaultVMContext }

func (*vmContext) NewPluginContext(uint32) types.PluginContext { return &pluginContext{} }

type pluginContext struct{ types.DefaultPluginContext }

func (*pluginContext) OnPluginStart(int) types.OnPluginStartStatus {
	data, err := proxywasm.GetPluginConfiguration()
	if err != nil && err != types.ErrorStatusNotFound {
		proxywasm.LogErrorf("reading plugin configuration: %v", err)
		return types.OnPluginStartStatusFailed
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &cfg); err != nil {
			proxywasm.LogErrorf("bad plugin configuration: %v", err)
			return types.OnPluginStartStatusFailed
		}
	}
	if cfg.Fail != "" {
		proxywasm.LogError(cfg.Fail)
		return types.OnPluginStartStatusFailed
	}
	requests = proxywasm.DefineCounterMetric("probe_requests")
	ticks = proxywasm.DefineCounterMetric("probe_ticks")
	paused = proxywasm.DefineGaugeMetric("probe_paused")
	replySize = proxywasm.DefineHistogramMetric("probe_reply_bytes")
	proxywasm.DefineCounterMetric("probe_configured").Increment(1) // once per VM, canary included
	if cfg.RedisCluster != "" {
		if st := redisInit(cfg.RedisCluster, cfg.RedisUser, cfg.RedisPassword, cfg.RedisTimeoutMs); st != 0 {
			proxywasm.LogErrorf("redis init %s: status %d", cfg.RedisCluster, st)
			return types.OnPluginStartStatusFailed
		}
	}
	if cfg.TickMs > 0 {
		proxywasm.SetTickPeriodMilliSeconds(cfg.TickMs)
	}
	if queueID, err = proxywasm.RegisterSharedQueue("probe_q"); err != nil {
		proxywasm.LogErrorf("register queue: %v", err)
		return types.OnPluginStartStatusFailed
	}
	return types.OnPluginStartStatusOK
}

func (*pluginContext) OnTick() { ticks.Increment(1) }

func (*pluginContext) OnPluginDone() bool {
	proxywasm.LogInfo("probe plugin done")
	return true
}

func (*pluginContext) OnQueueReady(id uint32) {
	for {
		item, err := proxywasm.DequeueSharedQueue(id)
		if err != nil {
			return
		}
		proxywasm.LogInfof("queue item: %s", item)
	}
}

func (*pluginContext) NewHttpContext(id uint32) types.HttpContext { return &httpContext{id: id} }

type httpContext struct {
	types.DefaultHttpContext
	id       uint32
	mode     string
	bodyMode string
	hold     int // x-probe-body: hold: holding, releasing (callout sent), released
	replyMod string
	extra    [][2]string // response headers to add
}

var props = []string{"source.address", "source.port", "destination.address", "request.path",
	"request.url_path", "request.host", "request.method", "request.scheme", "request.id",
	"request.protocol", "plugin_name", "plugin_root_id", "no.such"}

func (c *httpContext) OnHttpRequestHeaders(int, bool) types.Action {
	requests.Increment(1)
	c.mode, _ = proxywasm.GetHttpRequestHeader("x-probe-mode")
	c.replyMod, _ = proxywasm.GetHttpRequestHeader("x-redis-reply-mode")
	c.bodyMode, _ = proxywasm.GetHttpRequestHeader("x-probe-body")
	for _, p := range props {
		c.extra = append(c.extra, [2]string{"x-prop-" + strings.ReplaceAll(p, ".", "-"), property(p)})
	}
	// The host must give the guest real clocks and randomness (math/rand
	// is seeded by WASI random_get; crypto/rand would arm a timer, see
	// runtime.go).
	var nonce [8]byte
	binary.LittleEndian.PutUint64(nonce[:], rand.Uint64())
	if runtimeModes[c.mode] {
		c.extra = append(c.extra, [2]string{"x-probe-runtime", runtimeMode(c.mode)})
	}
	c.extra = append(c.extra,
		[2]string{"x-probe-now", strconv.FormatInt(time.Now().UnixMilli(), 10)},
		[2]string{"x-probe-nonce", hex.EncodeToString(nonce[:])})
	proxywasm.AddHttpRequestHeader("x-probe-added", "1")
	proxywasm.RemoveHttpRequestHeader("x-probe-remove")
	if v, err := proxywasm.GetHttpRequestHeader("x-probe-replace"); err == nil {
		proxywasm.ReplaceHttpRequestHeader("x-probe-replace", v+"-replaced")
	}
	path, _ := proxywasm.GetHttpRequestHeader(":path")
	proxywasm.LogInfof("probe request %s mode=%q", path, c.mode)
	if v, err := proxywasm.GetHttpRequestHeader("x-probe-decision"); err == nil {
		if err := proxywasm.SetProperty([]string{"ratelimit.decision"}, []byte(v)); err != nil {
			proxywasm.LogErrorf("set_property: %v", err)
		}
	}

	switch c.mode {
	case "local":
		proxywasm.SendHttpResponse(429, [][2]string{{"x-probe-local", "yes"}, {"retry-after", "7"}}, []byte("denied by probe"), -1)
		return types.ActionPause
	case "double-local":
		proxywasm.SendHttpResponse(403, nil, []byte("first"), -1)
		if err := proxywasm.SendHttpResponse(402, nil, []byte("second"), -1); err != nil {
			proxywasm.LogWarnf("second local reply refused: %v", err)
		} else {
			proxywasm.LogInfo("second local reply accepted")
		}
		return types.ActionPause
	case "hang", "hold-headers":
		return types.ActionPause
	case "trap":
		panic("probe trap requested")
	case "http":
		return c.httpCall()
	case "shared":
		c.extra = append(c.extra, [2]string{"x-shared-counter", incrementShared("probe_counter")})
	case "queue":
		id, err := proxywasm.ResolveSharedQueue("", "probe_q")
		if err == nil {
			err = proxywasm.EnqueueSharedQueue(id, []byte(path))
		}
		c.extra = append(c.extra, [2]string{"x-queue", errString(err)})
	}
	if cmd, err := proxywasm.GetHttpRequestHeader("x-redis"); err == nil {
		return c.redisCall(cmd)
	}
	return types.ActionContinue
}

func (c *httpContext) redisCall(cmd string) types.Action {
	sep, err := proxywasm.GetHttpRequestHeader("x-redis-sep")
	if err != nil {
		sep = " "
	}
	id, st := redisCall(cfg.RedisCluster, encodeCommand(strings.Split(cmd, sep)))
	if st != 0 {
		proxywasm.SendHttpResponse(500, [][2]string{{"x-redis-call-status", strconv.Itoa(int(st))}}, []byte("redis_call failed"), -1)
		return types.ActionPause
	}
	pending[id] = c
	paused.Add(1)
	return types.ActionPause
}

// onRedisReply runs on the root context; it switches to the stream itself.
func onRedisReply(calloutID uint32, status, size int32) {
	c := pending[calloutID]
	delete(pending, calloutID)
	if c == nil {
		proxywasm.LogWarnf("reply for unknown callout %d", calloutID)
		return
	}
	paused.Add(-1)
	if err := proxywasm.SetEffectiveContext(c.id); err != nil {
		proxywasm.LogWarnf("stream %d is gone: %v", c.id, err)
		return
	}
	if status != 0 {
		proxywasm.SendHttpResponse(503, [][2]string{{"x-redis-status", strconv.Itoa(int(status))}, {"x-redis-size", strconv.Itoa(int(size))}}, []byte("redis unavailable"), -1)
		return
	}
	reply, st := redisResponse(size)
	if st != 0 {
		proxywasm.LogErrorf("reading redis reply: status %d", st)
	}
	replySize.Record(uint64(len(reply)))
	quoted := strconv.Quote(string(reply))
	switch c.replyMod {
	case "local":
		proxywasm.SendHttpResponse(200, [][2]string{{"x-redis-reply", quoted}}, reply, -1)
	case "never":
	default:
		c.extra = append(c.extra, [2]string{"x-redis-reply", quoted})
		proxywasm.ResumeHttpRequest()
	}
}

func (c *httpContext) httpCall() types.Action {
	hdrs := [][2]string{{":method", "GET"}, {":path", "/callout?from=probe"}, {":authority", "callout.local"}}
	_, err := proxywasm.DispatchHttpCall(cfg.HTTPCluster, hdrs, nil, nil, 2000, func(n, size, _ int) {
		status := "none"
		hs, _ := proxywasm.GetHttpCallResponseHeaders()
		for _, h := range hs {
			if h[0] == ":status" {
				status = h[1]
			}
		}
		body, _ := proxywasm.GetHttpCallResponseBody(0, size)
		c.extra = append(c.extra, [2]string{"x-callout", status + " " + string(body)})
		proxywasm.ResumeHttpRequest()
	})
	if err != nil {
		c.extra = append(c.extra, [2]string{"x-callout", "dispatch: " + err.Error()})
		return types.ActionContinue
	}
	return types.ActionPause
}

func (c *httpContext) OnHttpRequestBody(size int, eos bool) types.Action {
	if c.mode == "hold-headers" {
		proxywasm.LogInfof("probe request body id=%d size=%d eos=%v", c.id, size, eos)
	}
	if c.mode == "append-body" && eos {
		proxywasm.AppendHttpRequestBody([]byte("+probe"))
	}
	return types.ActionContinue
}

func (c *httpContext) OnHttpResponseHeaders(int, bool) types.Action {
	proxywasm.AddHttpResponseHeader("x-probe-response", "1")
	if c.mode == "rewrite-body" {
		proxywasm.RemoveHttpResponseHeader("content-length")
	}
	for _, h := range c.extra {
		proxywasm.AddHttpResponseHeader(h[0], h[1])
	}
	return types.ActionContinue
}

func (c *httpContext) OnHttpStreamDone() {
	status, err := proxywasm.GetHttpResponseHeader(":status")
	details, _ := proxywasm.GetProperty([]string{"response", "code_details"})
	proxywasm.LogInfof("probe done %d status=%s err=%v details=%s", c.id, status, err, details)
}

// property renders a property for a header: strings as they are, 8-byte
// integers as decimal, errors as "error: ...".
func property(name string) string {
	b, err := proxywasm.GetProperty(strings.Split(name, "."))
	switch {
	case err != nil:
		return "error: " + err.Error()
	case name == "source.port":
		if len(b) != 8 {
			return "bad length " + strconv.Itoa(len(b))
		}
		return strconv.FormatUint(binary.LittleEndian.Uint64(b), 10)
	}
	return string(b)
}

func incrementShared(key string) string {
	for i := 0; i < 10; i++ {
		val, cas, err := proxywasm.GetSharedData(key)
		n := 0
		if err == nil {
			n, _ = strconv.Atoi(string(val))
		} else if err != types.ErrorStatusNotFound {
			return "get: " + err.Error()
		}
		next := strconv.Itoa(n + 1)
		if err := proxywasm.SetSharedData(key, []byte(next), cas); err == nil {
			return next
		} else if err != types.ErrorStatusCasMismatch {
			return "set: " + err.Error()
		}
	}
	return "cas retries exhausted"
}

func errString(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// encodeCommand encodes a command as a RESP array of bulk strings.
func encodeCommand(args []string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}
