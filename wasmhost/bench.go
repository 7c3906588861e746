package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// This file holds what the benchmarks of e2e/bench need from the host:
// a VM driven synchronously (BenchVM), a count of the calls that cross the
// host/guest boundary (CompileCounting), and a host with no filter at all
// (StartPassThrough), the baseline of the throughput comparison.

// BenchVM is one VM of a filter, with this package's ABI, driven on the
// caller's goroutine: no event loop, no HTTP, no TCP, no Redis. Request
// runs one stream's callbacks from context creation to proxy_on_delete,
// answering each Redis call at once with a canned reply through the real
// proxy_on_redis_call_response and buffer path, so that a benchmark
// measures what the guest and the ABI cost per request and nothing else.
//
// A BenchVM is not safe for concurrent use.
type BenchVM struct {
	h       *Host
	v       *vm
	pending []benchCall
	// RemoteAddr and LocalAddr are the source.address and
	// destination.address of every stream.
	RemoteAddr, LocalAddr string
	// UpstreamHeaders is the response the upstream gives allowed requests
	// (with :status); by default 200 with an empty body.
	UpstreamHeaders [][2]string
}

type benchCall struct {
	id      uint32
	cluster string
}

// BenchOption configures NewBenchVM.
type BenchOption func(*benchOptions)

type benchOptions struct{ watchdog bool }

// WithWatchdog calls the guest as a Host's VMs do: with a context wazero
// watches, so that closing the VM aborts a running guest (Compile sets
// WithCloseOnContextDone), for which wazero starts a goroutine on every
// guest call. By default a BenchVM calls the guest with a context that
// has no Done channel, which skips that goroutine; the guest, the ABI and
// every host function are the same either way.
func WithWatchdog() BenchOption { return func(o *benchOptions) { o.watchdog = true } }

// NewBenchVM instantiates one VM of cfg.Module and starts the plugin with
// cfg.PluginConfig and cfg.VMConfig, as Start does for each worker.
// Workers, Listen, Upstream and the Redis addresses are not used (cluster
// names must still be in RedisClusters, as the guest's proxy_redis_init
// checks them). The VM delivers no ticks.
func NewBenchVM(ctx context.Context, cfg Config, opts ...BenchOption) (*BenchVM, error) {
	var o benchOptions
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.Upstream == "" {
		cfg.Upstream = "http://127.0.0.1:1"
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, metrics: newMetricStore(), redisCnt: map[string]int64{}}
	b := &BenchVM{h: h, RemoteAddr: "10.0.0.1:5555", LocalAddr: "127.0.0.1:10000",
		UpstreamHeaders: [][2]string{{":status", "200"}, {"content-length", "0"}}}
	v := newIdleVM(h, 0)
	v.benchRedis = func(id uint32, cluster string, _ []byte) {
		b.pending = append(b.pending, benchCall{id, cluster})
	}
	b.v = v
	if !o.watchdog {
		v.ctx = context.WithValue(context.Background(), vmKey{}, v)
	}
	mark := h.logCount()
	if err := v.start(ctx); err != nil {
		b.Close()
		return nil, h.startError(0, err, mark)
	}
	return b, nil
}

// Request runs one HTTP stream with these request headers (pseudo-headers
// included, no body): proxy_on_context_create, proxy_on_request_headers,
// each Redis call answered with redisReply (raw RESP), the upstream's
// response (UpstreamHeaders) through proxy_on_response_headers, then
// proxy_on_log, proxy_on_done and proxy_on_delete. It returns the status
// the client would get. A stream the guest leaves paused with no Redis
// call to answer is an error.
func (b *BenchVM) Request(headers [][2]string, redisReply []byte) (int, error) {
	v := b.v
	s := &stream{
		vm:             v,
		reqCtx:         context.Background(),
		start:          time.Now(),
		remote:         b.RemoteAddr,
		local:          b.LocalAddr,
		connID:         1,
		protocol:       "HTTP/1.1",
		reqHeaders:     newHeaderMap(headers),
		reqHeadersLive: true,
		toHandler:      make(chan handlerMsg, 4),
		finished:       make(chan struct{}),
	}
	v.begin(s)
	status := 0
	for {
		if len(b.pending) > 0 {
			c := b.pending[0]
			b.pending = append(b.pending[:0], b.pending[1:]...)
			v.redisCallDone(c.id, c.cluster, redisReply, nil)
			continue
		}
		select {
		case m := <-s.toHandler:
			switch {
			case m.forward != nil:
				res := &upstreamResult{headers: append([][2]string(nil), b.UpstreamHeaders...), addr: "127.0.0.1:1", details: "via_upstream"}
				v.upstreamHeaders(s, m.forward.seq, res)
			case m.end:
				if m.headers != nil {
					status = m.headers.status
				}
				return b.done(s, status)
			case m.headers != nil:
				status = m.headers.status
			case m.data != nil:
				v.written(s)
			case m.reply != nil:
				return b.done(s, m.reply.status)
			case m.reset:
				v.finish(s, false)
				return 0, errors.New("host: bench stream reset by the guest")
			}
		default:
			v.finish(s, false)
			if v.failed != nil {
				return 0, v.failed
			}
			return 0, fmt.Errorf("host: bench stream left paused in %s with no Redis call to answer", s.phase)
		}
	}
}

// done finishes a stream answered with status.
func (b *BenchVM) done(s *stream, status int) (int, error) {
	b.v.finish(s, false)
	return status, b.v.failed
}

// RedisCalls returns how many proxy_redis_call calls the VM made.
func (b *BenchVM) RedisCalls() int64 {
	var n int64
	for _, c := range b.h.RedisCalls() {
		n += c
	}
	return n
}

// Metric returns one counter or gauge the guest defined.
func (b *BenchVM) Metric(name string) (int64, bool) {
	b.v.flushMetrics()
	return b.h.Metric(name)
}

// Logs returns the VM's log lines so far.
func (b *BenchVM) Logs() []LogEntry { return b.h.Logs() }

// Close calls the root context's proxy_on_done and releases the instance.
func (b *BenchVM) Close() error {
	v := b.v
	v.close()
	v.cancel()
	if v.mod != nil {
		return v.mod.Close(context.Background())
	}
	return nil
}

// CallCounter counts, per function, the calls that cross the boundary
// between host and guest: the guest's calls of imported functions ("env."
// and "wasi_snapshot_preview1." names) and the host's calls of the guest's
// exports ("export." names, proxy_on_memory_allocate included); and the
// calls of chosen functions inside the guest ("guest." names). It is a
// wazero function listener, so a module compiled with it runs slower:
// count with it, time without it.
type CallCounter struct {
	guest  map[string]bool
	mu     sync.Mutex
	names  []string
	counts []*atomic.Int64
}

// CompileCounting is Compile with every import and export call counted
// by the returned CallCounter, for any Host or BenchVM of the module, and
// the calls of the guest's own functions named in guestFuncs (as in the
// module's name section, e.g. "runtime.mallocgc").
func CompileCounting(ctx context.Context, wasm []byte, guestFuncs ...string) (*Module, *CallCounter, error) {
	c := &CallCounter{guest: map[string]bool{}}
	for _, f := range guestFuncs {
		c.guest[f] = true
	}
	m, err := Compile(experimental.WithFunctionListenerFactory(ctx, c), wasm)
	if err != nil {
		return nil, nil, err
	}
	return m, c, nil
}

// NewFunctionListener implements experimental.FunctionListenerFactory.
func (c *CallCounter) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	var name string
	switch exports := def.ExportNames(); {
	case def.GoFunction() != nil: // a host function
		name = def.ModuleName() + "." + def.Name()
		if len(exports) > 0 {
			name = def.ModuleName() + "." + exports[0]
		}
	case len(exports) > 0:
		name = "export." + exports[0]
	case c.guest[def.Name()]:
		name = "guest." + def.Name()
	default:
		return nil // the guest's own functions
	}
	n := &atomic.Int64{}
	c.mu.Lock()
	c.names = append(c.names, name)
	c.counts = append(c.counts, n)
	c.mu.Unlock()
	return callCount{n}
}

// Reset sets every count to zero.
func (c *CallCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.counts {
		n.Store(0)
	}
}

// Counts returns the non-zero counts by function name.
func (c *CallCounter) Counts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for i, n := range c.counts {
		if v := n.Load(); v > 0 {
			out[c.names[i]] += v
		}
	}
	return out
}

// Table formats counts divided by per (e.g. the number of requests), the
// most frequent first.
func (c *CallCounter) Table(per int64) string {
	counts := c.Counts()
	names := make([]string, 0, len(counts))
	var imports, exports int64
	for name, n := range counts {
		names = append(names, name)
		switch {
		case strings.HasPrefix(name, "export."):
			exports += n
		case !strings.HasPrefix(name, "guest."):
			imports += n
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	out := fmt.Sprintf("%-50s %8.2f\n%-50s %8.2f\n", "guest -> host (imports), total", float64(imports)/float64(per),
		"host -> guest (exports), total", float64(exports)/float64(per))
	for _, name := range names {
		out += fmt.Sprintf("  %-48s %8.2f\n", name, float64(counts[name])/float64(per))
	}
	return out
}

type callCount struct{ n *atomic.Int64 }

func (l callCount) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	l.n.Add(1)
}
func (callCount) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}
func (callCount) Abort(context.Context, api.Module, api.FunctionDefinition, error)    {}

// StartPassThrough serves HTTP like Start, with no filter and no VM: each
// request's headers are built as for a filter (pseudo-headers, sorted,
// x-request-id added), and the request is forwarded and answered by the
// same code Start's streams use. It is the "no filter" baseline of the
// throughput benchmarks. cfg.Module may be nil; Upstream, Listen,
// UpstreamTimeout and MaxBodyBytes are used.
func StartPassThrough(cfg Config) (*Host, error) {
	if err := cfg.setServeDefaults(); err != nil {
		return nil, err
	}
	h, err := newListeningHost(cfg)
	if err != nil {
		return nil, err
	}
	h.srv = &http.Server{Handler: http.HandlerFunc(h.servePassThrough), ReadHeaderTimeout: 10 * time.Second}
	go h.srv.Serve(h.ln)
	return h, nil
}

func (h *Host) servePassThrough(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		http.Error(w, "host: reading request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	s := h.newStream(r, r.RequestURI, body)
	req := &upstreamRequest{ctx: r.Context(), body: body}
	req.headers = append(req.headers, s.reqHeaders.pairs...)
	if s.reqTrailers != nil {
		req.trailers = append(req.trailers, s.reqTrailers.pairs...)
	}
	res := h.forward(req)
	status, _ := strconv.Atoi(firstValue(&headerMap{pairs: res.headers}, ":status"))
	out := newClientWriter(w, r, func(string, ...any) {})
	out.start(&finalResponse{status: status, headers: res.headers})
	if res.body == nil {
		out.end(res.data, nil)
		return
	}
	defer res.body.close()
	out.flush()
	for {
		c := res.body.next()
		switch {
		case c.err != nil:
			out.write(c.data)
			out.flush()
			panic(http.ErrAbortHandler)
		case c.end:
			out.end(c.data, c.trailers)
			return
		}
		out.write(c.data)
		out.flush()
	}
}

// MemoryBytes is the size of the guest's linear memory.
func (b *BenchVM) MemoryBytes() uint32 { return b.v.mod.Memory().Size() }
