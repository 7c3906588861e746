// Package proxyhost is the thin layer between the proxy-wasm Go SDK and the
// filter: the only package that imports the SDK. It turns SDK callbacks into
// calls on filter.Plugin and filter.Stream, and implements their host
// interfaces with SDK host calls and the Redis callout ABI.
package proxyhost

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// NewVMContext returns the filter's VM context, for proxywasm.SetVMContext.
func NewVMContext() types.VMContext { return &vmContext{} }

type vmContext struct{ types.DefaultVMContext }

func (*vmContext) NewPluginContext(id uint32) types.PluginContext {
	return &pluginContext{id: id, live: map[uint32]*httpContext{}}
}

// plugins maps root context ids to their plugins, for Redis callbacks,
// which arrive with the root context's id.
var plugins = map[uint32]*pluginContext{}

type pluginContext struct {
	types.DefaultPluginContext
	id      uint32
	plugin  *filter.Plugin
	cluster string             // the Redis cluster with its options
	redis   config.RedisConfig // for proxy_redis_init
	metrics metricBuffer
	// gone are streams whose context the proxy deleted, to release after
	// the callback that found out; live are the streams not released.
	gone []*httpContext
	live map[uint32]*httpContext
	// queueID is the VM's own shared queue, through which a stream asks
	// for a root callback (filter.RootCaller); 0 when there is none.
	queueID uint32
}

// OnPluginStart parses the configuration and initialises the Redis cluster.
// A bad configuration fails the plugin start, with the reason in the log;
// a failed proxy_redis_init does not (filter.RedisInitializer).
func (p *pluginContext) OnPluginStart(int) types.OnPluginStartStatus {
	data, err := proxywasm.GetPluginConfiguration()
	if err != nil && err != types.ErrorStatusNotFound {
		proxywasm.LogCritical("ratelimit: reading the plugin configuration: " + err.Error())
		return types.OnPluginStartStatusFailed
	}
	cfg, err := config.Parse(data)
	if err != nil {
		proxywasm.LogCritical("ratelimit: bad configuration: " + err.Error())
		return types.OnPluginStartStatusFailed
	}
	if cfg.Redis.Transport == config.TransportRedisABI {
		if !hasRedisABI {
			proxywasm.LogCritical("ratelimit: bad configuration: redis.transport: redis_abi needs the Higress build of this filter (ratelimit-higress.wasm); this module reaches Redis only through webdis")
			return types.OnPluginStartStatusFailed
		}
		p.cluster, p.redis = cfg.Redis.InitCluster(), cfg.Redis
	}
	if cfg.Redis.Transport == config.TransportWebdis {
		p.registerQueue()
	}
	p.plugin = filter.NewPlugin(cfg, p)
	plugins[p.id] = p
	p.plugin.Start()
	if err := proxywasm.SetTickPeriodMilliSeconds(1000); err != nil {
		p.metrics.flush()
		p.metrics.direct = true
		proxywasm.LogWarn("ratelimit: no tick, overdue calls rely on the host's timeout, and metrics go to the host one by one: " + err.Error())
	}
	return types.OnPluginStartStatusOK
}

// InitRedis implements filter.RedisInitializer with proxy_redis_init.
func (p *pluginContext) InitRedis() error {
	return redisInit(p.cluster, p.redis.Username, p.redis.Password, p.redis.Timeout)
}

func (p *pluginContext) OnPluginDone() bool {
	if p.plugin != nil {
		p.plugin.Done()
	}
	p.metrics.flush()
	delete(plugins, p.id)
	return true
}

// registerQueue registers a shared queue under a name no other VM uses.
func (p *pluginContext) registerQueue() {
	name := "ratelimit.root." + strconv.FormatUint(rand.Uint64(), 36)
	id, err := proxywasm.RegisterSharedQueue(name)
	if err != nil {
		proxywasm.LogWarn("ratelimit: no shared queue (" + err.Error() + "): settles through webdis are sent from the stream, and their replies may be lost")
		return
	}
	p.queueID = id
}

// RequestRootCallback implements filter.RootCaller.
func (p *pluginContext) RequestRootCallback() bool {
	return p.queueID != 0 && proxywasm.EnqueueSharedQueue(p.queueID, []byte{1}) == nil
}

func (p *pluginContext) OnQueueReady(queueID uint32) {
	if queueID != p.queueID || p.plugin == nil {
		return
	}
	for {
		if _, err := proxywasm.DequeueSharedQueue(queueID); err != nil {
			break
		}
	}
	effective = p.id
	p.plugin.OnRootCallback()
	effective = 0
	p.releaseGone()
}

func (p *pluginContext) OnTick() {
	if p.plugin != nil {
		effective = p.id
		periodic := p.plugin.OnTick()
		if p.plugin.Throttles() {
			setEffective(p.id) // a released stream's was
		}
		if periodic { // once a second, however fast the tick
			p.probeMustEnd()
		}
		p.releaseGone()
		if periodic {
			p.metrics.flush()
		}
		effective = 0
	}
}

// probeMustEnd looks, once per tick, for the streams that hold what their
// end must settle or release (filter.Stream.MustEnd) and whose context the
// proxy deleted without proxy_on_log reaching them, as HTTP/3's deferred
// logging may: they are released as gone, so their concurrency slots are
// freed now rather than at max_duration.
func (p *pluginContext) probeMustEnd() {
	probed := false
	for _, h := range p.live {
		if h.stream != nil && !h.gone && h.stream.MustEnd() {
			h.enter() // queues it in p.gone when its context is deleted
			probed = true
		}
	}
	if probed {
		setEffective(p.id) // back to the root context
	}
}

func (p *pluginContext) NewHttpContext(id uint32) types.HttpContext {
	h := &httpContext{id: id, plugin: p}
	h.stream = p.plugin.NewStream(h)
	p.live[id] = h
	return h
}

// releaseGone releases the streams found gone during a callback.
func (p *pluginContext) releaseGone() {
	for _, h := range p.gone {
		if h.stream != nil {
			h.stream.Abandon()
			h.stream = nil
			delete(p.live, h.id)
		}
	}
	clear(p.gone)
	p.gone = p.gone[:0]
}

// onRedisReply routes a Redis callback to its plugin.
func onRedisReply(rootID, calloutID uint32, ok bool, reply []byte) {
	if p := plugins[rootID]; p != nil {
		effective = rootID
		p.plugin.OnRedisReply(calloutID, ok, reply)
		effective = 0
		p.releaseGone()
	}
}

// filter.PluginHost

func (p *pluginContext) DispatchRedis(cmd []byte) (uint32, error) {
	return redisCall(p.cluster, cmd)
}

func (p *pluginContext) DispatchHTTP(cluster string, headers [][2]string, body []byte, timeout time.Duration) (uint32, error) {
	var id uint32
	id, err := proxywasm.DispatchHttpCall(cluster, headers, body, nil, uint32(timeout.Milliseconds()),
		func(numHeaders, bodySize, _ int) { p.onHTTPReply(id, numHeaders, bodySize) })
	return id, err
}

// onHTTPReply reads an HTTP callout's response; no headers means the call
// failed or timed out.
func (p *pluginContext) onHTTPReply(id uint32, numHeaders, bodySize int) {
	status := 0
	var body []byte
	if numHeaders > 0 {
		headers, _ := proxywasm.GetHttpCallResponseHeaders()
		for _, h := range headers {
			if h[0] == ":status" {
				status, _ = strconv.Atoi(h[1])
			}
		}
		if bodySize > 0 {
			body, _ = proxywasm.GetHttpCallResponseBody(0, bodySize)
		}
	}
	// The SDK made the caller's context effective, which may be a
	// stream's: tracked from the root's id, the first enter asks the host.
	effective = p.id
	p.plugin.OnHTTPReply(id, status, body)
	effective = 0
	p.releaseGone()
}

func (p *pluginContext) Log(level filter.LogLevel, msg string) {
	switch level {
	case filter.LogDebug:
		proxywasm.LogDebug(msg)
	case filter.LogInfo:
		proxywasm.LogInfo(msg)
	case filter.LogWarn:
		proxywasm.LogWarn(msg)
	case filter.LogError:
		proxywasm.LogError(msg)
	default:
		proxywasm.LogCritical(msg)
	}
}

// Now reads the monotonic clock only: the filter measures durations, and
// compares times it read itself.
func (p *pluginContext) Now() time.Time { return time.Unix(0, monotonicNanos()) }

// LiveStreams is how many streams the VM's plugins have started and not yet
// released; it returns to zero when traffic stops (for tests).
func LiveStreams() int {
	n := 0
	for _, p := range plugins {
		n += p.plugin.LiveStreams()
	}
	return n
}

// SetTickPeriod implements filter.Ticker. The tick is the root context's,
// which is made the effective one first.
func (p *pluginContext) SetTickPeriod(d time.Duration) bool {
	setEffective(p.id)
	return proxywasm.SetTickPeriodMilliSeconds(uint32(d.Milliseconds())) == nil
}
