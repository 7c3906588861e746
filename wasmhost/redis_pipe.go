package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// pipeConn models Higress's raw Redis client (raw_client_impl.cc): one
// pipelined connection to one host, its pending calls in order, a write
// buffer and one timer.
//   - Writes wait in a buffer until it holds max_buffer_size_before_flush
//     bytes (then it is written at once) or until buffer_flush_timeout has
//     passed since the first call went into the empty buffer.
//   - The timer bounds the connect by the connect timeout. Once connected,
//     it is armed with the op timeout when the first call is pending, and
//     re-armed at each reply while calls remain: it measures the oldest
//     pending call, not each call. When it fires the connection is closed,
//     and every pending call fails at once.
//   - Replies go to the pending calls in order; those of AUTH and SELECT
//     are thrown away, so a refused password shows only in later replies
//     (-NOAUTH ...).
//
// All fields but the goroutines' own are owned by the VM's loop: the
// dialer, writer and reader goroutines post their events to it.
type pipeConn struct {
	v      *vm
	client *redisClient
	addr   string
	cfg    redisConfig // the client's configuration when it connected
	stats  *clientCounters

	pending   []pendingCall
	buf       []byte // the write buffer, not yet flushed
	nc        net.Conn
	connected bool
	closed    bool
	opGen     uint64 // a timer event of an older generation is stale
	flushGen  uint64
	opTimer   *time.Timer
	flushT    *time.Timer
	out       *writeQueue
	cancel    context.CancelFunc // stops a dial in progress
}

// pendingCall is a call awaiting its reply; done is nil for AUTH and
// SELECT, whose replies are dropped.
type pendingCall struct {
	done func(reply []byte, err error)
	what string // for discarded replies: "AUTH" or "SELECT"
}

var errRedisTimeout = errors.New("redis: timeout")

// newPipeConn starts connecting and queues AUTH and SELECT, as
// RawClientImpl::create and initialize do.
func newPipeConn(c *redisClient, addr string) *pipeConn {
	v := c.v
	p := &pipeConn{v: v, client: c, addr: addr, cfg: c.cfg, stats: c.stats, out: newWriteQueue()}
	p.stats.connections.Add(1)
	ctx, cancel := context.WithCancel(v.ctx)
	p.cancel = cancel
	v.callouts.Add(1)
	go p.dialAndWrite(ctx)
	p.armOp(redisConnectTimeout)
	switch cfg := p.cfg; {
	case cfg.username != "":
		p.makeDiscarded(respCommand("AUTH", cfg.username, cfg.password), "AUTH")
	case cfg.password != "":
		p.makeDiscarded(respCommand("AUTH", cfg.password), "AUTH")
	}
	if db, ok := p.cfg.params["db"]; ok {
		p.makeDiscarded(respCommand("SELECT", db), "SELECT")
	}
	return p
}

func (p *pipeConn) makeDiscarded(query []byte, what string) {
	p.makeRequest(query, nil)
	p.pending[len(p.pending)-1].what = what
}

// makeRequest queues a call (RawClientImpl::makeRawRequest). On a closed
// connection that is still failing its calls, the call joins them.
func (p *pipeConn) makeRequest(query []byte, done func([]byte, error)) {
	p.pending = append(p.pending, pendingCall{done: done})
	if p.closed {
		return
	}
	empty := len(p.buf) == 0
	p.buf = append(p.buf, query...)
	if len(p.buf) >= p.cfg.maxBuffer {
		p.flush()
	} else if empty {
		p.armFlush(p.cfg.flushTimeout)
	}
	if p.connected && len(p.pending) == 1 {
		p.armOp(p.cfg.timeout)
	}
}

func (p *pipeConn) flush() {
	p.flushGen++
	if p.flushT != nil {
		p.flushT.Stop()
	}
	if len(p.buf) == 0 {
		return
	}
	p.out.push(append([]byte(nil), p.buf...))
	p.buf = p.buf[:0]
	p.stats.writes.Add(1)
}

func (p *pipeConn) armFlush(d time.Duration) {
	p.flushGen++
	gen := p.flushGen
	p.flushT = time.AfterFunc(d, func() {
		p.v.post(func() {
			if gen == p.flushGen && !p.closed {
				p.flush()
			}
		})
	})
}

func (p *pipeConn) armOp(d time.Duration) {
	p.disarmOp()
	gen := p.opGen
	p.opTimer = time.AfterFunc(d, func() {
		p.v.post(func() {
			if gen == p.opGen && !p.closed {
				p.onTimeout()
			}
		})
	})
}

func (p *pipeConn) disarmOp() {
	p.opGen++
	if p.opTimer != nil {
		p.opTimer.Stop()
	}
}

func (p *pipeConn) onConnected(nc net.Conn) {
	if p.closed {
		nc.Close()
		return
	}
	p.nc, p.connected = nc, true
	p.armOp(p.cfg.timeout)
}

func (p *pipeConn) onReply(reply []byte) {
	if p.closed {
		return
	}
	if len(p.pending) == 0 {
		p.close(fmt.Errorf("redis: a reply with no call pending (%d bytes)", len(reply)))
		return
	}
	call := p.pending[0]
	p.pending = p.pending[1:]
	if call.done == nil {
		p.stats.discarded.Add(1)
		if len(reply) > 0 && reply[0] == '-' {
			p.stats.discardedErrors.Add(1)
			p.v.h.hostLog(p.v.index, LogDebug, "redis %s: the reply to %s is thrown away: %q", p.client.name, call.what, reply)
		}
	} else {
		call.done(reply, nil)
	}
	if p.closed {
		return
	}
	if len(p.pending) == 0 {
		p.disarmOp()
	} else {
		p.armOp(p.cfg.timeout)
	}
}

func (p *pipeConn) onTimeout() {
	failed := 0
	for _, c := range p.pending {
		if c.done != nil {
			failed++
		}
	}
	p.stats.timeouts.Add(1)
	p.stats.failedByTimeout.Add(int64(failed))
	what := "no reply within " + p.cfg.timeout.String()
	if !p.connected {
		what = "not connected within " + redisConnectTimeout.String()
	}
	p.v.h.hostLog(p.v.index, LogWarn, "redis %s: %s: closing the connection, failing its %d pending calls", p.client.name, what, failed)
	p.close(errRedisTimeout)
}

// close closes the connection and fails every pending call, in order. A
// call made meanwhile (from a failure callback) fails too, as in Envoy.
func (p *pipeConn) close(err error) {
	if p.closed {
		return
	}
	p.shut()
	for len(p.pending) > 0 {
		call := p.pending[0]
		p.pending = p.pending[1:]
		if call.done != nil {
			call.done(nil, err)
		}
	}
	if p.client.conn == p {
		p.client.conn = nil
	}
}

// shut closes the connection without calling back: the VM is closing.
func (p *pipeConn) shut() {
	p.closed = true
	p.disarmOp()
	p.flushGen++
	if p.flushT != nil {
		p.flushT.Stop()
	}
	p.cancel()
	p.out.close()
	if p.nc != nil {
		p.nc.Close()
	}
}

// dialAndWrite connects, starts the reader, then writes what the loop
// flushes, in order. Its events go to the loop.
func (p *pipeConn) dialAndWrite(ctx context.Context) {
	defer p.v.callouts.Done()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		p.v.post(func() { p.close(fmt.Errorf("redis: connect to %s: %w", p.addr, err)) })
		return
	}
	p.v.callouts.Add(1)
	go p.read(nc)
	p.v.post(func() { p.onConnected(nc) })
	for {
		data, ok := p.out.next()
		if !ok {
			nc.Close()
			return
		}
		if _, err := nc.Write(data); err != nil {
			p.v.post(func() { p.close(fmt.Errorf("redis: write: %w", err)) })
			return
		}
	}
}

// read frames replies and posts each to the loop.
func (p *pipeConn) read(nc net.Conn) {
	defer p.v.callouts.Done()
	var buf []byte
	chunk := make([]byte, 16<<10)
	for {
		n, err := nc.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			end, ferr := respFrameLen(buf)
			if errors.Is(ferr, errIncomplete) {
				if len(buf) > respMaxReply {
					ferr = errors.New("reply larger than " + strconv.Itoa(respMaxReply) + " bytes")
				} else {
					break
				}
			}
			if ferr != nil {
				p.v.post(func() { p.close(fmt.Errorf("redis: protocol error: %w", ferr)) })
				return
			}
			reply := append([]byte(nil), buf[:end]...)
			buf = buf[end:]
			p.v.post(func() { p.onReply(reply) })
		}
		if err != nil {
			p.v.post(func() { p.close(fmt.Errorf("redis: connection closed: %w", err)) })
			return
		}
	}
}

// writeQueue hands flushed buffers to the writer goroutine; push never
// blocks the loop.
type writeQueue struct {
	mu     sync.Mutex
	bufs   [][]byte
	closed bool
	wake   chan struct{}
}

func newWriteQueue() *writeQueue { return &writeQueue{wake: make(chan struct{}, 1)} }

func (q *writeQueue) push(b []byte) {
	q.mu.Lock()
	q.bufs = append(q.bufs, b)
	q.mu.Unlock()
	q.signal()
}

func (q *writeQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *writeQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next returns the next buffer, or false once the queue is closed.
func (q *writeQueue) next() ([]byte, bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		if len(q.bufs) > 0 {
			b := q.bufs[0]
			q.bufs = q.bufs[1:]
			q.mu.Unlock()
			return b, true
		}
		q.mu.Unlock()
		<-q.wake
	}
}
