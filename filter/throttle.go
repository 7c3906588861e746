package filter

import (
	"container/heap"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// Ticker is what a PluginHost offers when the plugin may change how often
// OnTick runs (proxy_set_tick_period_milliseconds). Without it no request
// is held: a throttled rule denies as if it had no throttle.
type Ticker interface {
	SetTickPeriod(d time.Duration) bool
}

// slowTick is the tick period while no request is held: the periodic
// work (sweeps, epoch polls) runs once per slowTick whatever the period.
const slowTick = time.Second

// throttleState holds the requests a throttle delays, on the VM
// (Plugin.throttle): a heap by release time, and the tick kept fast while
// any waits.
type throttleState struct {
	queue      delayQueue
	delayed    Counter   // ratelimit.throttle.delayed: requests held
	delayedNow Gauge     // ratelimit.throttle.held: requests held now
	delayMS    Histogram // ratelimit.throttle.delay_ms: each hold's delay
}

// newThrottleState returns nil when the host has no tick it can set.
func newThrottleState(host PluginHost) *throttleState {
	t, ok := host.(Ticker)
	if !ok || !t.SetTickPeriod(slowTick) {
		return nil
	}
	return &throttleState{delayed: host.Counter("ratelimit.throttle.delayed"),
		delayedNow: host.Gauge("ratelimit.throttle.held"), delayMS: host.Histogram("ratelimit.throttle.delay_ms")}
}

// delayState is the throttle step's state: a delayed request's place
// among the requests the throttle holds (1 + its index in the queue, 0
// when not delayed), and when it goes on.
type delayState struct {
	at        int
	releaseAt time.Time
}

// delayedAt is 1 + the stream's place in the throttle's queue, 0 when it
// is not delayed.
func (s *Stream) delayedAt() int {
	if s.delayed == nil {
		return 0
	}
	return s.delayed.at
}

// releaseAt is when a delayed stream goes on.
func (s *Stream) releaseAt() time.Time {
	if s.delayed == nil {
		return time.Time{}
	}
	return s.delayed.releaseAt
}

// delay keeps an admitted request paused until delay has passed, counted
// from now: Redis charged it as of then. It goes on at the first tick
// after that, never before.
func (s *Stream) delay(delay time.Duration) {
	t := s.vm.throttle
	if s.delayed == nil {
		s.delayed = &delayState{}
	}
	s.delayed.releaseAt = s.vm.host.Now().Add(delay)
	heap.Push(&t.queue, s)
	t.delayed.Increment(1)
	t.delayedNow.Add(1)
	t.delayMS.Record(uint64(delay.Milliseconds()))
	s.vm.speedUp()
}

// throttling reports whether a throttle may be sent to Redis.
func (p *Plugin) throttling() bool { return p.throttle != nil && !p.tick.refused }

// undelay drops a stream that ends while delayed (the client went away): its
// charge stays, as for any admitted request.
func (s *Stream) undelay() {
	t := s.vm.throttle
	heap.Remove(&t.queue, s.delayed.at-1)
	t.delayedNow.Add(-1)
}

// releaseDelayed lets through the delayed requests whose time has come, and
// slows the tick again once nothing wants it fast.
func (p *Plugin) releaseDelayed(now time.Time) {
	if t := p.throttle; t != nil {
		for len(t.queue) > 0 && !t.queue[0].delayed.releaseAt.After(now) {
			s := heap.Pop(&t.queue).(*Stream)
			t.delayedNow.Add(-1)
			s.resume()
		}
	}
	p.slowDown()
}

// workDue reports whether OnTick's periodic work is due: on every tick,
// but at most once per slowTick while the tick is fast.
func (p *Plugin) workDue(now time.Time) bool {
	if !p.tick.fast && (p.throttle == nil || now.Sub(p.lastWork) >= slowTick/2) {
		p.lastWork = now
		return true
	}
	if now.Sub(p.lastWork) < slowTick-config.ThrottleTick {
		return false
	}
	p.lastWork = now
	return true
}

// Throttles reports whether the plugin may hold requests, or resume them
// from the tick (the retry queue): the proxy then makes the root context
// effective again after each tick.
func (p *Plugin) Throttles() bool {
	return p.throttle != nil || p.router != nil || p.retry.retried != nil
}

// Delayed is how many requests a throttle delays: it returns to zero when
// traffic stops.
func (p *Plugin) Delayed() int {
	if p.throttle == nil {
		return 0
	}
	return len(p.throttle.queue)
}

// delayQueue is a min-heap of streams by release time; each stream knows
// its place (delayState.at: 1 + its index, 0 when not queued).
type delayQueue []*Stream

func (h delayQueue) Len() int           { return len(h) }
func (h delayQueue) Less(i, j int) bool { return h[i].delayed.releaseAt.Before(h[j].delayed.releaseAt) }
func (h delayQueue) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].delayed.at, h[j].delayed.at = i+1, j+1
}
func (h *delayQueue) Push(x any) {
	s := x.(*Stream)
	*h = append(*h, s)
	s.delayed.at = len(*h)
}
func (h *delayQueue) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	s.delayed.at = 0
	return s
}
