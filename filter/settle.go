package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// RootCaller is what a PluginHost offers when it can call the plugin back
// from the root context soon (a shared queue of the VM's own): settles
// through Webdis are sent from there, since the SDK drops the reply to an
// HTTP callout made by a stream whose context has gone, and a settle is
// sent as the stream ends.
type RootCaller interface {
	// RequestRootCallback asks for one Plugin.OnRootCallback; false when
	// the host cannot.
	RequestRootCallback() bool
}

// settleCall is one settle script call: the limits of an admission call
// whose real cost differs from what was reserved. It outlives its stream.
type settleCall struct {
	p       *policy // the configuration whose rules these are
	settles []algorithms.Settle
	rules   []int // per settle, its rule
	eval    bool
	lease   bool // gives back a lease's unspent units
	buf     []byte
	id      uint32
	sentAt  time.Time
	rt      routing
	result  algorithms.Settlement
}

// settleState is the VM's settles: those waiting for a root callback,
// and the recycled ones. Each in flight is in the callout table.
type settleState struct {
	queue    []*settleCall // waiting for a root callback
	wakeSent bool
	free     []*settleCall
	errors   Counter // ratelimit.settle.errors
}

func (p *policy) newSettleCall() *settleCall {
	st := &p.vm.settles
	var sc *settleCall
	if n := len(st.free); n > 0 {
		sc, st.free = st.free[n-1], st.free[:n-1]
	} else {
		sc = &settleCall{}
	}
	sc.p, sc.eval, sc.lease = p, false, false
	sc.settles, sc.rules = sc.settles[:0], sc.rules[:0]
	return sc
}

func (p *policy) freeSettle(sc *settleCall) {
	sc.p = nil
	p.vm.settles.free = append(p.vm.settles.free, sc)
}

// settle sends sc: at once over the Redis ABI, whose replies reach the
// root context whatever the stream; through Webdis from a root callback
// when the host offers one.
func (p *Plugin) settle(sc *settleCall) {
	st := &p.settles
	if rc, ok := p.host.(RootCaller); ok && p.tr.streamBound() {
		st.queue = append(st.queue, sc)
		if st.wakeSent || rc.RequestRootCallback() {
			st.wakeSent = true
			return
		}
		st.queue = st.queue[:len(st.queue)-1]
	}
	sc.p.dispatchSettle(sc)
}

// OnRootCallback sends the settles waiting for the root context.
func (p *Plugin) OnRootCallback() {
	st := &p.settles
	st.wakeSent = false
	q := st.queue
	st.queue = st.queue[len(q):]
	for i, sc := range q {
		q[i] = nil
		sc.p.dispatchSettle(sc)
	}
	if len(st.queue) == 0 {
		st.queue = q[:0]
	}
}

func (p *policy) dispatchSettle(sc *settleCall) {
	now, key := p.vm.host.Now(), ""
	if len(sc.settles) > 0 {
		key = sc.settles[0].Key
	}
	p.vm.startRouting(&sc.rt, key, now)
	p.sendSettle(sc, now, 0)
}

// sendSettle sends sc at now to its node, to be answered within timeout
// (0: redis.timeout).
func (p *policy) sendSettle(sc *settleCall, now time.Time, timeout time.Duration) {
	node, err := p.vm.nodeFor(&sc.rt, now)
	if err != nil {
		p.settleFailed(sc, err)
		return
	}
	if now.Before(p.breakers[node].openUntil) || !p.vm.link.usable(now) {
		p.settleFailed(sc, errBreakerOpen)
		return
	}
	sc.buf = algorithms.AppendSettle(sc.buf[:0], p.vm.tr.framing(), p.vm.invoke(sc.eval), sc.settles)
	id, err := p.vm.tr.send(node, sc.buf, timeout)
	if err != nil {
		p.settleFailed(sc, format.Errorf("dispatch: %w", err))
		return
	}
	sc.id, sc.sentAt = id, now
	p.vm.callouts.add(id, sc)
}

// onReply takes a settle's reply.
func (sc *settleCall) onReply(_ *Plugin, r scriptReply) { sc.p.onSettleReply(sc, r) }

// resend sends the settle again from the retry queue, with what is left
// of its deadline; past it, the settle fails.
func (sc *settleCall) resend(vm *Plugin, now time.Time) {
	left := vm.deadlineLeft(sc.rt.sentAt, now)
	if left <= 0 {
		sc.p.settleFailed(sc, vm.waitErr(&sc.rt))
		return
	}
	sc.p.sendSettle(sc, now, left)
}

// overdue drops a settle overdue at now.
func (sc *settleCall) overdue(vm *Plugin, now time.Time) {
	if vm.late(sc.sentAt, now) {
		vm.callouts.remove(sc.id)
		sc.p.settleFailed(sc, errNoReply)
	}
}

// onSettleReply reads a settle's reply and counts what it charged.
func (p *policy) onSettleReply(sc *settleCall, r scriptReply) {
	p.vm.callouts.remove(sc.id)
	now := p.vm.host.Now()
	if !r.ok {
		p.vm.nodeFailed(sc.rt.node, now)
		p.settleFailed(sc, errCallFailed)
		return
	}
	ints, err := r.values(&p.vm.callouts)
	if err == nil {
		err = sc.result.FromInts(ints, len(sc.settles))
	}
	if err != nil && noScript(&sc.eval, err) {
		p.metrics.noscript.Increment(1)
		p.dispatchSettle(sc)
		return
	}
	if err != nil {
		switch act, ferr := p.vm.onClusterError(&sc.rt, sc, err, now); act {
		case sendAgain:
			p.sendSettle(sc, now, max(p.vm.deadlineLeft(sc.rt.sentAt, now), time.Millisecond))
			return
		case queuedRetry:
			return
		case giveUp:
			err = ferr
		}
		p.settleFailed(sc, err)
		return
	}
	results := sc.result.Results
	if sc.lease {
		results = nil // counted as sent: ratelimit.lease.returned
	}
	for i, r := range results {
		if sc.settles[i].Limit.Algorithm == algorithms.Concurrency {
			if r.Applied == 0 { // the slot was gone already
				p.metrics.rules[sc.rules[i]].slots.expired.Increment(1)
			}
			continue
		}
		p.metrics.rules[sc.rules[i]].response.count(r)
	}
	p.freeSettle(sc)
}

// settleFailed counts a settle that charged nothing, and each release it
// carried: those slots expire after their max_duration. The response is
// not touched: it has gone on, or gone.
func (p *policy) settleFailed(sc *settleCall, err error) {
	p.vm.settles.errors.Increment(1)
	for i := range sc.settles {
		if sc.settles[i].Limit.Algorithm == algorithms.Concurrency {
			p.metrics.rules[sc.rules[i]].slots.releasesFailed.Increment(1)
		}
	}
	p.errLog.log(LogWarn, "ratelimit: redis: settle: "+p.vm.nodeErr(&sc.rt, err).Error())
	p.freeSettle(sc)
}

// sendQueuedSettles sends any settle still waiting for a root callback.
func (p *Plugin) sendQueuedSettles() {
	if len(p.settles.queue) > 0 {
		p.OnRootCallback()
	}
}
