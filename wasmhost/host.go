package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Host.
type Config struct {
	// Module is the compiled filter. Required.
	Module *Module
	// PluginConfig is the plugin configuration (Envoy's
	// config.configuration), read by the guest in proxy_on_configure.
	PluginConfig []byte
	// VMConfig is the VM configuration (vm_config.configuration).
	VMConfig []byte
	// PluginName, RootID and VMID are the plugin_name, plugin_root_id and
	// plugin_vm_id properties. PluginName defaults to "wasmhost".
	PluginName, RootID, VMID string
	// Workers is the number of VMs, as Envoy runs one per worker. Default 2.
	Workers int
	// Upstream is the URL ("http://host:port") allowed requests are
	// forwarded to, with the request's own path and query. Required.
	Upstream string
	// UpstreamTimeout bounds the wait for an upstream's response headers.
	// Default 15 s; when it expires the stream gets 504. It does not bound
	// the body, which may stream for longer (see the package doc: Envoy's
	// route timeout would, unless set to 0 as Istio does).
	UpstreamTimeout time.Duration
	// Listen is the address to serve HTTP on. Default "127.0.0.1:0".
	Listen string
	// UseRemoteAddress, XffNumTrustedHops and SkipXffAppend are the HTTP
	// connection manager's use_remote_address, xff_num_trusted_hops and
	// skip_xff_append, with Envoy's defaults (false, 0, false). They decide
	// the source.address property and the x-forwarded-for header the guest
	// sees, as Envoy does before any filter runs (clientaddr.go):
	//   - false: the address is the N-th entry from the right of
	//     x-forwarded-for (N = XffNumTrustedHops + 1), port 0, else the
	//     TCP peer. A client chooses it by sending x-forwarded-for.
	//   - true: the peer's IP is appended to x-forwarded-for (unless
	//     SkipXffAppend), and the address is the peer; with N > 0 trusted
	//     hops, the N-th entry from the right as it arrived, port 0, else
	//     the peer.
	UseRemoteAddress  bool
	XffNumTrustedHops int
	SkipXffAppend     bool
	// LocalAddress is the IP appended to x-forwarded-for instead of a
	// loopback peer's (exactly 127.0.0.1 or ::1), as Envoy appends its
	// local_info address. Default: as Envoy picks that address, the first
	// IPv4 interface address other than 127.0.0.1, else 127.0.0.1.
	LocalAddress string
	localAddr    netip.Addr
	// NormalizePath, MergeSlashes and EscapedSlashes are the connection
	// manager's normalize_path, merge_slashes and
	// path_with_escaped_slashes_action, applied to :path before any
	// filter runs (pathnorm.go). Envoy's defaults: false, false,
	// KeepUnchanged.
	NormalizePath  bool
	MergeSlashes   bool
	EscapedSlashes EscapedSlashesAction
	// AllowOnHeadersStopIteration is the wasm filter's
	// allow_on_headers_stop_iteration (Envoy >= 1.35): Pause from
	// proxy_on_request_headers is then StopIteration, and the request
	// body and trailers reach the guest while the headers wait (without
	// it, StopAllIterationAndWatermark: nothing until continue_stream).
	AllowOnHeadersStopIteration bool
	// RedisClusters maps Envoy cluster names, as the guest passes them to
	// proxy_redis_init and proxy_redis_call (without "?db=N"), to Redis
	// addresses ("host:port"), reached by the model of Higress's Redis
	// client (redis.go). A node of a Redis Cluster here is Higress in front
	// of a raw cluster: -MOVED and -ASK come back to the guest as replies.
	// Host.AddRedisCluster adds names later.
	RedisClusters map[string]string
	// RedisClusterProxy maps Envoy cluster names to seed nodes
	// ("host:port") of a Redis Cluster with a cluster-aware proxy in
	// between, such as Envoy's redis_proxy on loopback: the host serves
	// one on a loopback port (redis_proxy.go), which routes each command
	// to the node that owns its first key's slot and follows -MOVED and
	// -ASK itself (see RedisClusterStats). A name may not be in both
	// RedisClusters and RedisClusterProxy.
	RedisClusterProxy map[string][]string
	// RedisProxyFaithful makes the RedisClusterProxy model refuse what the
	// real redis_proxy does not support, FCALL among them, with its error
	// reply ("unsupported command 'fcall'"), so a guest behind it must use
	// EVALSHA. Off, the model forwards every command (the default, which
	// older tests rely on).
	RedisProxyFaithful bool
	// RedisClusterRefresh is how often the RedisClusterProxy model reloads
	// its slot map besides after -MOVED and a node's failure, as
	// envoy.clusters.redis's cluster_refresh_rate; 0 means 5 s.
	RedisClusterRefresh time.Duration
	// RedisFallback, if set, is the Redis address ("host:port") of any
	// cluster name the guest passes to proxy_redis_init or
	// proxy_redis_call that the names above do not know: the name is
	// added then, and logged once. Envoy has no such thing (an unknown
	// name is BadArgument, as here without it); a local run uses it so
	// that a configuration's names need not be listed.
	RedisFallback string
	// HTTPClusters maps cluster names for proxy_http_call to "host:port".
	HTTPClusters map[string]string
	// Routes stand for Envoy's route table: they give each stream its
	// route_name and cluster_name properties and its upstream, picked
	// when the request headers go on (see Route).
	Routes []Route
	// StreamInfo, if set, stands for the filters that run before the
	// guest's (jwt_authn, say) and for the TLS handshake: called once per
	// request before the guest sees it, it may change r's headers (as
	// jwt_authn removes a token it verified unless forward is set), and
	// returns the dynamic metadata and TLS connection the stream's
	// metadata.* and connection.* properties show (see StreamInfo).
	StreamInfo func(r *http.Request) StreamInfo
	// LogWriter, if set, receives every log line, formatted, as it is
	// logged. Host.Logs keeps them anyway. Writes are serialized.
	LogWriter io.Writer
	// AccessLog, if set, receives one line per request as it ends, in
	// the format of accesslog.go. Writes are serialized.
	AccessLog io.Writer
	// Stdout, if set, receives what the guest writes to stdout and stderr
	// (which Host.Logs also keeps, line by line). Writes are serialized.
	Stdout io.Writer
	// PauseTimeout is how long a stream may stay paused before the host
	// answers 504 "host: stream left paused" and counts it in StuckStreams.
	// Default 30 s.
	PauseTimeout time.Duration
	// MaxBodyBytes bounds a request body, and the response body a guest
	// buffers (Envoy's buffer limit, 1 MiB by default). Default 1 MiB.
	MaxBodyBytes int64
	// Env is the guest's environment (vm_config.environment_variables),
	// e.g. {"GOGC": "10"} for a Go guest.
	Env map[string]string
	// CppHost is the proxy-wasm-cpp-host modelled: its WASI functions and
	// poll_oneoff, and what _initialize and the allocator may call
	// (wasi.go, restricted.go). Default CppHostBefore94091cd, as in
	// Envoy 1.33 to 1.38.
	CppHost CppHost
	// FilterState, if set, is called once per stream the guest saw, as it
	// finishes (after proxy_on_log), with the properties the guest set on
	// it with proxy_set_property, keyed as Envoy keeps them in the
	// stream's filter state for access logs: "wasm." + the path, whose
	// segments stay NUL-separated (Envoy's Context::setProperty). It runs
	// on the VM's goroutine; the map is the callee's.
	FilterState func(state map[string][]byte)
	// DeferredLog calls proxy_on_log after proxy_on_delete, as Envoy can
	// with HTTP/3's deferred access logging: a guest then never sees the
	// end of its streams through proxy_on_log (the Go SDK drops it).
	DeferredLog bool
}

func (c *Config) setDefaults() error {
	if c.Module == nil {
		return errors.New("host: Config.Module is required")
	}
	if err := c.setServeDefaults(); err != nil {
		return err
	}
	if err := c.checkRedisClusterProxy(); err != nil {
		return err
	}
	if c.PluginName == "" {
		c.PluginName = "wasmhost"
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.PauseTimeout <= 0 {
		c.PauseTimeout = 30 * time.Second
	}
	if c.CppHost != CppHostBefore94091cd && c.CppHost != CppHost94091cd {
		return fmt.Errorf("host: unknown Config.CppHost %d", c.CppHost)
	}
	return nil
}

// setServeDefaults fills what serving HTTP needs, with or without a VM.
func (c *Config) setServeDefaults() error {
	if c.Upstream == "" {
		return errors.New("host: Config.Upstream is required")
	}
	if c.UpstreamTimeout <= 0 {
		c.UpstreamTimeout = 15 * time.Second
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.EscapedSlashes < KeepUnchanged || c.EscapedSlashes > UnescapeAndForward {
		return fmt.Errorf("host: unknown Config.EscapedSlashes %d", c.EscapedSlashes)
	}
	return c.setAddressDefaults()
}

// newListeningHost makes a Host with its upstream client and listener, not
// yet serving.
func newListeningHost(cfg Config) (*Host, error) {
	up, err := url.Parse(cfg.Upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return nil, fmt.Errorf("host: bad Config.Upstream %q: want http://host:port", cfg.Upstream)
	}
	routeUps, err := parseRouteUpstreams(cfg.Routes)
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, upstream: up, routeUps: routeUps, metrics: newMetricStore(), redisCnt: map[string]int64{}}
	h.client = &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if h.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("host: listen: %w", err)
	}
	return h, nil
}

// Host runs a filter in several VMs behind a real HTTP server.
type Host struct {
	cfg      Config
	upstream *url.URL
	routeUps []*url.URL // per Config.Routes entry, its Upstream parsed; nil for Config.Upstream
	client   *http.Client
	vms      []*vm
	ln       net.Listener
	srv      *http.Server

	next       atomic.Uint64 // round robin over VMs
	connSeq    atomic.Uint64
	metrics    *metricStore
	shared     sharedData
	queues     sharedQueues
	stuck      atomic.Int64
	traps      atomic.Int64
	wasiStats  wasiStats
	logMu      sync.Mutex
	logs       []LogEntry
	logDropped int
	stdoutMu   sync.Mutex
	accessMu   sync.Mutex
	redisMu    sync.Mutex
	redisCnt   map[string]int64
	clusterCnt map[string]*clusterCounters // by cluster name, under redisMu
	rs         redisRegistry

	closeOnce sync.Once
	closeErr  error
}

// Start runs the plugin's start callbacks on a throwaway canary VM, as
// Envoy does (canary.go), then starts cfg.Workers VMs, runs the start
// callbacks in each and serves HTTP. ctx bounds the start only; the Host runs until Close. If a VM or the plugin fails to start, Start returns an
// error that includes the guest's error log lines, e.g.
// "host: vm 0: plugin start failed: <message>".
func Start(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	h, err := newListeningHost(cfg)
	if err != nil {
		return nil, err
	}
	if err := h.startClusterProxies(); err != nil {
		h.ln.Close()
		return nil, err
	}
	mark := h.logCount()
	if err := h.runCanary(ctx); err != nil {
		h.Close()
		return nil, h.startError(CanaryVM, err, mark)
	}
	errs := make([]error, cfg.Workers)
	var wg sync.WaitGroup
	for i := 0; i < cfg.Workers; i++ {
		v := newVM(h, i)
		h.vms = append(h.vms, v)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = v.run(func() error { return v.start(ctx) })
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			h.Close()
			return nil, h.startError(i, err, mark)
		}
	}
	h.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connIDKey{}, h.connSeq.Add(1))
		},
	}
	go h.srv.Serve(h.ln)
	return h, nil
}

// startError explains why VM i did not start, with the guest's own error
// lines when it logged any.
func (h *Host) startError(i int, err error, mark int) error {
	var lines []string
	for _, e := range h.logsSince(mark) {
		if e.VM == i && e.Level >= LogError && e.Source != SourceHost {
			lines = append(lines, e.Message)
		}
	}
	detail := err.Error()
	if len(lines) > 0 {
		prefix := "plugin start failed"
		if errors.Is(err, errVMStart) {
			prefix = "vm start failed"
		} else if !errors.Is(err, errPluginStart) {
			prefix = detail
		}
		detail = prefix + ": " + strings.Join(lines, "; ")
	}
	if i == CanaryVM {
		return fmt.Errorf("host: canary vm: %s", detail)
	}
	return fmt.Errorf("host: vm %d: %s", i, detail)
}

// URL returns the base URL the host serves, e.g. "http://127.0.0.1:41234".
func (h *Host) URL() string { return "http://" + h.ln.Addr().String() }

// Close stops serving, then shuts the VMs down (calling the root context's
// proxy_on_done, the last guest call: a callout answered later is dropped)
// and closes their connections. It is safe to call twice.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		if h.srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			h.srv.Shutdown(ctx)
			cancel()
			h.srv.Close()
		} else {
			h.ln.Close()
		}
		for _, v := range h.vms {
			if err := v.shutdown(true); err != nil && h.closeErr == nil {
				h.closeErr = err
			}
		}
		h.stopClusterProxies()
		h.client.CloseIdleConnections()
	})
	return h.closeErr
}

type connIDKey struct{}
