package filter

import (
	"errors"
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
)

// redisHealth is whether Redis decides the VM's requests: the one place
// that says, at error level, that limits are off (requests get the
// failure mode) because Redis cannot decide, and why; and that says again,
// once, when it decides again. A failed call, a call not sent (no
// proxy_redis_init yet, the connection runs as the wrong user), a failed
// init and a refused AUTH make it failing; a decision Redis made, or an
// epoch read it answered, makes it healthy. With redis.nodes this holds
// per node: the VM is failing while any node is down (down), so that one
// dead master of three keeps the gauge at 0 whatever the others answer.
//
// While failing, one line names the cluster, what failed and the failure
// mode in force, at most once per healthLogEvery per VM, with the count of
// the failures since the last line:
//
//	ratelimit: redis cluster "outbound|6379||redis.static" unreachable (redis call failed or timed out): failure_mode allow: requests pass unlimited
//
// The gauge ratelimit.redis.healthy is what the VM adds: 1 while healthy,
// 0 while failing, and 0 until Redis first answered it (a decision, or
// the epoch read each tick sends: epoch.go), so that a VM that never
// reached Redis is not counted. Envoy sums a gauge over the VMs that
// define it, one per worker and one on its main thread, so it is the
// number of those VMs whose Redis answers. A configuration's canary VM, which neither ticks, decides nor
// ends, adds nothing; Plugin.Done takes back what a VM added.
type redisHealth struct {
	host PluginHost
	// subject is `ratelimit: redis cluster "<cluster>"`, rendered once.
	subject string
	failing bool // down != 0
	// down has a bit per node (redis.nodes; bit 0 without) whose last
	// call failed: the VM is failing while any is set, so an answer from
	// one node does not hide another that is down.
	down uint64
	// answered: Redis answered the VM once; until then it adds 0.
	answered bool
	// writesRefused: the spell saw Redis refuse writes
	// (redisfail.WritesRefused), which only a decision can see end.
	writesRefused bool
	told          bool      // this spell of failures was logged: its end is too
	since         time.Time // when the spell began
	failed        int       // failures in the spell
	log           quietLog
	gauge         Gauge // ratelimit.redis.healthy
	shown         int64 // what the VM adds to the gauge now
}

// healthLogEvery bounds the error lines: one per period per VM.
const healthLogEvery = 10 * time.Second

func newRedisHealth(r *config.RedisConfig, host PluginHost) redisHealth {
	subject := `ratelimit: redis cluster "` + r.Cluster + `"`
	switch {
	case len(r.Nodes) > 0: // the failure names the node
		subject = "ratelimit: redis cluster through webdis (redis.nodes)"
	case r.Transport == config.TransportWebdis:
		subject = `ratelimit: redis through webdis cluster "` + r.Cluster + `"`
	}
	return redisHealth{host: host, subject: subject, log: quietLog{host: host, every: healthLogEvery},
		gauge: host.Gauge("ratelimit.redis.healthy")}
}

// fail records a failure at now of node 0 (the only one without
// redis.nodes): err says what failed, mode (a policy's failureModeText)
// what requests get meanwhile.
func (h *redisHealth) fail(now time.Time, err error, mode string) { h.failNode(0, now, err, mode) }

// failNode records a failure at now of a call to node (redis.nodes). A
// slot that stayed migrating, kept moving or has a node not listed
// (redisfail.SlotError, but -CLUSTERDOWN) is no node's failure: it is
// logged, and changes no state.
func (h *redisHealth) failNode(node int, now time.Time, err error, mode string) {
	if se := (*redisfail.SlotError)(nil); errors.As(err, &se) && se.Kind != redisfail.SlotDown {
		h.logFailure(now, err, mode)
		return
	}
	h.failed++
	h.writesRefused = h.writesRefused || redisfail.WritesRefused(err)
	h.down |= 1 << uint(node)
	if !h.failing {
		h.failing, h.since, h.failed = true, now, 1
		h.show()
	}
	h.logFailure(now, err, mode)
}

func (h *redisHealth) logFailure(now time.Time, err error, mode string) {
	if h.log.dueAt(now) {
		h.told = h.told || h.failing
		h.log.emit(LogError, h.subject+" "+redisfail.Describe(err)+": "+mode)
	}
}

// ok records an answer Redis gave (node 0's without redis.nodes): a
// decision, or the epoch read. It costs a branch while healthy and shown;
// the first one adds the VM's 1.
func (h *redisHealth) ok() { h.okNode(0) }

// okNode records an answer from node: the VM is healthy again once no
// node is down.
func (h *redisHealth) okNode(node int) {
	if h.shown == 1 {
		return
	}
	h.answered = true
	if !h.failing {
		h.show()
		return
	}
	if h.down &^= 1 << uint(node); h.down != 0 {
		return
	}
	h.recovered()
}

// forget clears the nodes in gone (a bit per node) that serve no slot
// now (a map load): a master replaced by its replica is not down for the
// VM any more.
func (h *redisHealth) forget(gone uint64) {
	if !h.failing || h.down&gone == 0 {
		return
	}
	if h.down &^= gone; h.down == 0 {
		h.recovered()
	}
}

// recovered ends a spell of failures.
func (h *redisHealth) recovered() {
	h.failing, h.writesRefused = false, false
	h.show()
	if h.told {
		h.told = false
		d := h.host.Now().Sub(h.since).Round(time.Millisecond)
		h.host.Log(LogInfo, h.subject+" decides again, after "+d.String()+" and "+strconv.Itoa(h.failed)+" failures: limits apply again")
	}
}

// okRead records an answer to the epoch read: as ok, unless the spell
// saw Redis refuse writes, which a read cannot see end.
func (h *redisHealth) okRead(node int) {
	if !h.writesRefused {
		h.okNode(node)
	}
}

// show brings the gauge to what the VM adds now.
func (h *redisHealth) show() {
	want := int64(0)
	if h.answered && !h.failing {
		want = 1
	}
	if want != h.shown {
		h.gauge.Add(want - h.shown)
		h.shown = want
	}
}

// done takes back what the VM added to the gauge.
func (h *redisHealth) done() {
	if h.shown != 0 {
		h.gauge.Add(-h.shown)
		h.shown = 0
	}
}

// failureModeText is what a configuration's requests get while Redis
// cannot decide, as the health lines say it.
func failureModeText(cfg *config.Config) string {
	switch {
	case cfg.FailOpen:
		return "failure_mode allow: requests pass unlimited"
	case cfg.Local != nil:
		return "failure_mode local: each worker limits alone, with local_fallback.share of every limit"
	}
	return "failure_mode deny: requests get " + strconv.Itoa(cfg.FailureStatus)
}
