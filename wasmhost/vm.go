package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// vm is one Wasm VM, as Envoy runs one per worker thread. All guest code
// runs on its loop goroutine; other goroutines talk to it with post.
type vm struct {
	h     *Host
	index int

	ctx    context.Context // carries vmKey; cancelled when the VM closes
	cancel context.CancelFunc
	mod    api.Module
	fn     guestExports

	tasks    taskQueue
	loopDone chan struct{}

	// State below is owned by the loop goroutine.
	rootID    uint32
	lastID    uint32
	streams   map[uint32]*stream
	current   uint32 // context of the guest call in progress
	effective uint32 // set by proxy_set_effective_context; 0 = none
	depth     int
	touched   []*stream // streams whose pending actions must be applied
	failed    error
	closed    bool // shutdown's last task has run; the loop runs no more

	pluginConfigVisible bool
	stdout, stderr      io.Writer       // the guest's fds 1 and 2, into the logs
	allowed             map[string]bool // host calls allowed now; nil = any (restricted.go)
	restrictedPhase     string
	httpCallSeq         uint32
	redisCallSeq        uint32
	httpResp            *calloutResponse // during proxy_on_http_call_response
	redisResp           []byte           // during proxy_on_redis_call_response
	redis               map[string]*redisClient
	tickStop            chan struct{}
	tickQueued          atomic.Bool
	warnedNoRedisExport bool
	// benchRedis, when set (BenchVM), takes each accepted proxy_redis_call
	// instead of sending it to Redis.
	benchRedis func(id uint32, cluster string, query []byte)

	callouts sync.WaitGroup
	served   atomic.Int64
}

// guestExports are the functions the host calls. A missing callback is
// skipped (as in proxy-wasm-cpp-host); malloc is required.
type guestExports struct {
	malloc, contextCreate, vmStart, configure       api.Function
	requestHeaders, requestBody, requestTrailers    api.Function
	responseHeaders, responseBody, responseTrailers api.Function
	log, done, delete, tick, queueReady             api.Function
	httpCallResponse, redisCallResponse             api.Function
	// flushMetrics is the filter's ratelimit_flush_metrics, or nil: the
	// guest buffers counters and histograms until its tick, and hands
	// them over at once when called (Host.Metrics).
	flushMetrics api.Function
}

func lookupExports(m api.Module) guestExports {
	f := m.ExportedFunction
	g := guestExports{
		malloc:            f("proxy_on_memory_allocate"),
		contextCreate:     f("proxy_on_context_create"),
		vmStart:           f("proxy_on_vm_start"),
		configure:         f("proxy_on_configure"),
		requestHeaders:    f("proxy_on_request_headers"),
		requestBody:       f("proxy_on_request_body"),
		requestTrailers:   f("proxy_on_request_trailers"),
		responseHeaders:   f("proxy_on_response_headers"),
		responseBody:      f("proxy_on_response_body"),
		responseTrailers:  f("proxy_on_response_trailers"),
		log:               f("proxy_on_log"),
		done:              f("proxy_on_done"),
		delete:            f("proxy_on_delete"),
		tick:              f("proxy_on_tick"),
		queueReady:        f("proxy_on_queue_ready"),
		httpCallResponse:  f("proxy_on_http_call_response"),
		redisCallResponse: f("proxy_on_redis_call_response"),
		flushMetrics:      f("ratelimit_flush_metrics"),
	}
	if g.malloc == nil {
		g.malloc = f("malloc")
	}
	return g
}

func newVM(h *Host, index int) *vm {
	v := newIdleVM(h, index)
	go v.loop()
	return v
}

// newIdleVM is newVM without the loop goroutine, for a caller that runs the
// guest on its own goroutine (BenchVM).
func newIdleVM(h *Host, index int) *vm {
	v := &vm{
		h:            h,
		index:        index,
		loopDone:     make(chan struct{}),
		streams:      map[uint32]*stream{},
		redis:        map[string]*redisClient{},
		redisCallSeq: 3, // Envoy tags callout ids by type in the two low bits
	}
	v.tasks.wake = make(chan struct{}, 1)
	v.ctx, v.cancel = context.WithCancel(context.WithValue(context.Background(), vmKey{}, v))
	return v
}

// post queues fn to run on the VM's loop. It never blocks, and reports false
// once the VM has shut down.
func (v *vm) post(fn func()) bool { return v.tasks.push(fn) }

// run posts fn and waits until it has run.
func (v *vm) run(fn func() error) error {
	errc := make(chan error, 1)
	if !v.post(func() { errc <- fn() }) {
		return errors.New("vm closed")
	}
	select {
	case err := <-errc:
		return err
	case <-v.loopDone:
		return errors.New("vm closed")
	}
}

func (v *vm) loop() {
	defer close(v.loopDone)
	for {
		select {
		case <-v.tasks.wake:
		case <-v.ctx.Done():
			return
		}
		for _, fn := range v.tasks.take() {
			fn()
			if v.closed || v.ctx.Err() != nil {
				return
			}
		}
	}
}

// start instantiates the module and starts the plugin: _initialize (then
// main or __main_void if exported) under proxy-wasm-cpp-host's restriction,
// proxy_on_context_create(root, 0), proxy_on_vm_start, proxy_on_configure.
// Cancelling ctx meanwhile aborts the VM (and so a guest that never returns).
func (v *vm) start(ctx context.Context) error {
	stop := context.AfterFunc(ctx, v.cancel)
	defer stop()
	if err := v.h.cfg.Module.link(v.h.cfg.CppHost); err != nil {
		return err
	}
	v.stdout = v.h.newLineWriter(v.index, LogInfo, SourceStdout)
	v.stderr = v.h.newLineWriter(v.index, LogError, SourceStderr)
	// WASI is this package's (wasi.go), so wazero's clocks, randomness and
	// stdio settings do not apply.
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions() // _initialize is called below, with error handling
	mod, err := v.h.cfg.Module.runtime.InstantiateModule(v.ctx, v.h.cfg.Module.compiled, cfg)
	if err != nil {
		return fmt.Errorf("instantiate: %w", err)
	}
	if ctx.Err() != nil {
		mod.Close(context.Background())
		return ctx.Err()
	}
	v.mod = mod
	v.fn = lookupExports(mod)
	if v.fn.malloc == nil {
		return errors.New("module exports neither proxy_on_memory_allocate nor malloc")
	}
	if err := v.initialize(); err != nil {
		return err
	}
	v.lastID++
	v.rootID = v.lastID
	if _, ok := v.call("proxy_on_context_create", v.fn.contextCreate, v.rootID, uint64(v.rootID), 0); !ok {
		return v.failed
	}
	res, ok := v.callOr(1, "proxy_on_vm_start", v.fn.vmStart, v.rootID, uint64(v.rootID), uint64(len(v.h.cfg.VMConfig)))
	if !ok {
		return v.failed
	}
	if res == 0 {
		return errVMStart
	}
	v.pluginConfigVisible = true
	res, ok = v.callOr(1, "proxy_on_configure", v.fn.configure, v.rootID, uint64(v.rootID), uint64(len(v.h.cfg.PluginConfig)))
	v.pluginConfigVisible = false
	if !ok {
		return v.failed
	}
	if res == 0 {
		return errPluginStart
	}
	return nil
}

var (
	errVMStart     = errors.New("vm start failed: proxy_on_vm_start returned false")
	errPluginStart = errors.New("plugin start failed: proxy_on_configure returned false")
)

// call runs a guest export with ctxID as the current context. It returns the
// export's first result, and false if the guest trapped, in which case the
// VM has failed. After the outermost call returns, the actions the guest
// requested on streams (continue, local reply, reset) are applied, as
// proxy-wasm-cpp-host defers them until the VM call returns.
func (v *vm) call(name string, fn api.Function, ctxID uint32, params ...uint64) (uint64, bool) {
	return v.callOr(0, name, fn, ctxID, params...)
}

// callOr is call with the result to assume when the export is missing.
func (v *vm) callOr(missing uint64, name string, fn api.Function, ctxID uint32, params ...uint64) (uint64, bool) {
	if v.failed != nil {
		return 0, false
	}
	if fn == nil {
		return missing, true
	}
	savedCur, savedEff := v.current, v.effective
	v.current, v.effective = ctxID, 0
	v.depth++
	res, err := fn.Call(v.ctx, params...)
	v.depth--
	v.current, v.effective = savedCur, savedEff
	if err != nil {
		v.fail(fmt.Errorf("%s: %w", name, err))
		return 0, false
	}
	if v.failed != nil { // a trap in a nested call (the allocator's, say)
		return 0, false
	}
	if v.depth == 0 {
		v.settle()
	}
	if len(res) == 0 {
		return 0, true
	}
	return res[0], true
}

// settle applies the actions guest code requested on streams other than the
// one whose callback is running (that one is advanced by its caller).
func (v *vm) settle() {
	for len(v.touched) > 0 {
		s := v.touched[0]
		v.touched = v.touched[1:]
		if !s.advancing {
			v.advance(s)
		}
	}
}

func (v *vm) touch(s *stream) { v.touched = append(v.touched, s) }

// fail marks the VM failed after a guest trap. The guest's state cannot be
// trusted any more (a Go panic even exits the module), so every stream it
// serves, now or later, is answered with 500.
func (v *vm) fail(err error) {
	if v.failed != nil {
		return
	}
	v.failed = err
	v.h.traps.Add(1)
	v.h.hostLog(v.index, LogCritical, "guest trapped, vm failed: %v", err)
	for _, s := range v.streams {
		v.replyDirect(s, 500, "host: wasm vm failed: "+err.Error(), "host")
	}
}

// activeID is the context host calls act on: the effective context if one
// was set and still exists, else the context of the running callback.
func (v *vm) activeID() uint32 {
	if e := v.effective; e != 0 && (e == v.rootID || v.streams[e] != nil) {
		return e
	}
	return v.current
}

// activeStream is the stream of activeID, or nil for the root context.
func (v *vm) activeStream() *stream { return v.streams[v.activeID()] }

// close stops the plugin and the VM. It runs on the loop.
func (v *vm) close() {
	v.discard()
	if v.mod != nil && v.failed == nil && v.rootID != 0 {
		v.call("proxy_on_done", v.fn.done, v.rootID, uint64(v.rootID))
	}
}

// discard stops the VM's ticks and Redis clients, without telling the
// guest. It runs on the loop.
func (v *vm) discard() {
	if v.tickStop != nil {
		close(v.tickStop)
		v.tickStop = nil
	}
	for _, c := range v.redis {
		c.close()
	}
}

// taskQueue is an unbounded FIFO of functions; pushing never blocks, so the
// loop can post to itself and timers can post at any time.
type taskQueue struct {
	mu     sync.Mutex
	fns    []func()
	closed bool
	wake   chan struct{}
}

func (q *taskQueue) push(fn func()) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.fns = append(q.fns, fn)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

func (q *taskQueue) take() []func() {
	q.mu.Lock()
	defer q.mu.Unlock()
	fns := q.fns
	q.fns = nil
	return fns
}

func (q *taskQueue) shut() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// flushMetrics has the guest hand over the metrics it buffers, if it
// exports ratelimit_flush_metrics. Call it on the VM's loop.
func (v *vm) flushMetrics() {
	v.call("ratelimit_flush_metrics", v.fn.flushMetrics, v.rootID)
}

// setTick starts, changes or (with d <= 0) stops proxy_on_tick calls.
func (v *vm) setTick(d time.Duration) {
	if v.tickStop != nil {
		close(v.tickStop)
		v.tickStop = nil
	}
	if d <= 0 {
		return
	}
	stop := make(chan struct{})
	v.tickStop = stop
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if !v.tickQueued.CompareAndSwap(false, true) {
					continue // the previous tick has not run yet
				}
				v.post(func() {
					v.tickQueued.Store(false)
					if v.tickStop == stop {
						v.call("proxy_on_tick", v.fn.tick, v.rootID, uint64(v.rootID))
					}
				})
			case <-stop:
				return
			case <-v.ctx.Done():
				return
			}
		}
	}()
}
