package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// The retry queue: callouts that Redis Cluster answered -ASK, -TRYAGAIN or
// -CLUSTERDOWN, all before the command ran, wait here and are sent again
// on the tick, the tick kept at config.ThrottleTick (10 ms) meanwhile,
// after 10 ms, then 20, 40, 80 and 100 ms (routing.backoff), until
// answered otherwise or until their redis.timeout passes. Re-sends
// go from the root context (the tick), whose replies always arrive; a
// stream that ends meanwhile takes its callouts out (Stream.OnDone,
// endQuota). A timeout, a Webdis 503 or a failed callout may have run
// the command, so those are never sent again: Webdis answers the same
// bodiless 503 with no connection to Redis and with one lost after the
// command went out.

// retrier is a callout owner that can wait in the retry queue: a script
// call, a settle, a quota read, the epoch read.
type retrier interface {
	// resend sends the callout again at now, or fails it once its
	// deadline has passed.
	resend(vm *Plugin, now time.Time)
}

// retryQueue holds the callouts waiting to be sent again.
type retryQueue struct {
	waiting []retryEntry
	// retried is ratelimit.redis.retried, registered at the first
	// retry: a callout waited once, and Throttles is true from then on.
	retried Counter
}

type retryEntry struct {
	rt    *routing
	owner retrier
}

// add queues owner, and makes the tick fast.
func (q *retryQueue) add(vm *Plugin, rt *routing, owner retrier) {
	rt.queued = true
	if q.retried == nil {
		q.retried = vm.host.Counter("ratelimit.redis.retried")
	}
	q.waiting = append(q.waiting, retryEntry{rt, owner})
	vm.speedUp()
}

// drop takes rt's callout out of the queue: its stream ended.
func (q *retryQueue) drop(rt *routing) {
	if !rt.queued {
		return
	}
	rt.queued = false
	for i, e := range q.waiting {
		if e.rt == rt {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return
		}
	}
}

// runRetries sends again every callout waiting whose backoff has passed,
// counted in ratelimit.redis.retried, then fails those whose deadline
// passed; the others wait on. The failures go last: one resumes or
// answers its stream, whose context the proxy then holds effective, and a
// callout sent after it would be that stream's, its reply lost if the
// stream ends.
func (p *Plugin) runRetries(now time.Time) {
	q := &p.retry
	if len(q.waiting) == 0 {
		return
	}
	due := q.waiting
	q.waiting = q.waiting[len(due):]
	for pass := range 2 {
		for i, e := range due {
			if e.owner == nil {
				continue
			}
			expired := !now.Before(e.rt.sentAt.Add(p.cfg.Redis.Timeout))
			if expired != (pass == 1) || !expired && now.Before(e.rt.retryAt) {
				continue
			}
			due[i] = retryEntry{}
			if !e.rt.queued { // dropped: its stream ended
				continue
			}
			e.rt.queued = false
			if !expired {
				q.retried.Increment(1)
			}
			e.owner.resend(p, now)
		}
	}
	for i, e := range due { // those still waiting for their backoff
		if e.owner != nil && e.rt.queued {
			q.waiting = append(q.waiting, e)
		}
		due[i] = retryEntry{}
	}
	if len(q.waiting) == 0 {
		q.waiting = due[:0]
	}
}

// tickState is the VM's tick period: slowTick, or config.ThrottleTick
// while the throttle holds a request, a callout waits in the retry queue,
// or a slot map load is wanted soon.
type tickState struct {
	ticker Ticker // nil: the host cannot change the period
	fast   bool
	// refused: the host refused the fast tick once; the throttle then
	// holds nothing more (a held request would wait for the slow tick),
	// and retries go on the slow tick.
	refused bool
}

// wantsFast reports whether the tick should be fast now.
func (p *Plugin) wantsFast() bool {
	return p.throttle != nil && len(p.throttle.queue) > 0 || len(p.retry.waiting) > 0 ||
		p.router != nil && p.router.load.wanted()
}

// speedUp makes the tick fast, unless the host refused it once.
func (p *Plugin) speedUp() {
	t := &p.tick
	if t.fast || t.refused || t.ticker == nil {
		return
	}
	if t.fast = t.ticker.SetTickPeriod(config.ThrottleTick); !t.fast {
		t.refused = true
		p.host.Log(LogWarn, "ratelimit: the host refused a 10ms tick: throttled rules deny from now on instead of holding, and Redis Cluster retries wait for the 1s tick")
	}
}

// slowDown makes the tick slow again once nothing wants it fast.
func (p *Plugin) slowDown() {
	t := &p.tick
	if t.fast && !p.wantsFast() && t.ticker.SetTickPeriod(slowTick) {
		t.fast = false
	}
}
