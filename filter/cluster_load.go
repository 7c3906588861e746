package filter

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// slotLoad is the slot map's load: CLUSTER NODES through one node's
// Webdis, a callout owner of the VM's table. A load goes from the tick
// (the root context) at the first tick, within 100 ms of a -MOVED, within
// a second of a node's failure, and every redis.slot_map_refresh (±10%),
// to the nodes in turn, skipping those that failed in the last 5 s. While
// a node is down for the VM's health, a load probes it every 5 s.
type slotLoad struct {
	r        *router
	refresh  time.Duration
	inFlight bool
	id       uint32
	node     int
	sentAt   time.Time // of the last load sent; zero before the first
	wantAt   time.Time // a load is due from then on; zero: only the refresh
	next     time.Time // the next periodic load
	rr       int       // the node the next load tries first
	// probeAt: while a node is down (redisHealth.down), a load goes to
	// it from then on, at most once per nodeDownFor: its answer clears it
	// though no request reaches its slots.
	probeAt time.Time
	// noPerm: CLUSTER NODES was refused (HTTP 403, -NOPERM): the map is
	// learnt from -MOVED, and a load is tried again only each refresh,
	// until one succeeds.
	noPerm bool
}

// clusterNodes is CLUSTER NODES as Webdis reads a command.
var clusterNodes = []byte("CLUSTER/NODES")

// want asks for a load at now, no sooner than gap after the last one.
func (l *slotLoad) want(now time.Time, gap time.Duration) {
	if l.noPerm {
		return
	}
	at := now
	if !l.sentAt.IsZero() && l.sentAt.Add(gap).After(at) {
		at = l.sentAt.Add(gap)
	}
	if l.wantAt.IsZero() || at.Before(l.wantAt) {
		l.wantAt = at
	}
}

// wanted reports whether a load waits for a tick soon: the tick is kept
// fast meanwhile.
func (l *slotLoad) wanted() bool { return !l.wantAt.IsZero() && !l.inFlight }

// onTick sends a load when one is due.
func (l *slotLoad) onTick(vm *Plugin, now time.Time) {
	due := l.sentAt.IsZero() || !l.wantAt.IsZero() && !now.Before(l.wantAt) || !now.Before(l.next)
	if l.inFlight {
		return
	}
	r := l.r
	probe := -1
	if vm.health.down != 0 && !now.Before(l.probeAt) && !l.noPerm {
		probe = r.downNode(l.rr, vm.health.down, now)
	}
	switch {
	case probe >= 0:
		l.probeAt = now.Add(nodeDownFor)
		l.node = probe
	case due:
		l.node = r.healthyNode(l.rr, now)
	default:
		return
	}
	l.rr = l.node + 1
	l.sentAt, l.wantAt = now, time.Time{}
	l.next = now.Add(jittered(l.refresh))
	id, err := vm.tr.send(l.node, clusterNodes, 0)
	if err != nil {
		r.loadLog.log(LogWarn, "ratelimit: redis: slot map load from node "+r.names[l.node]+": "+err.Error())
		vm.nodeFailed(l.node, now)
		return
	}
	l.id, l.inFlight = id, true
	vm.callouts.add(id, l)
}

// downNode is the first node from start on (round robin) whose bit is
// set in down and that last failed nodeDownFor ago or more; -1 if none.
func (r *router) downNode(start int, down uint64, now time.Time) int {
	for i := range r.nodes {
		n := (start + i) % len(r.nodes)
		if down&(1<<uint(n)) != 0 && now.Sub(r.failedAt[n]) >= nodeDownFor {
			return n
		}
	}
	return -1
}

// jittered is d ± 10%.
func jittered(d time.Duration) time.Duration {
	return d - d/10 + time.Duration(rand.Int64N(int64(d/5)+1))
}

// onReply is never called: OnHTTPReply hands the load its response
// (onHTTP).
func (l *slotLoad) onReply(vm *Plugin, r scriptReply) {
	l.onHTTP(vm, 0, nil)
}

// overdue gives up on a load overdue at now: its node failed.
func (l *slotLoad) overdue(vm *Plugin, now time.Time) {
	if l.inFlight && vm.late(l.sentAt, now) {
		vm.callouts.remove(l.id)
		l.inFlight = false
		vm.nodeFailed(l.node, now)
	}
}

// onHTTP reads the load's response: {"CLUSTER":"<CLUSTER NODES text>"}.
func (l *slotLoad) onHTTP(vm *Plugin, status int, body []byte) {
	vm.callouts.remove(l.id)
	l.inFlight = false
	r, now := l.r, vm.host.Now()
	switch {
	case status == 401 || status == 403:
		l.refused(redisfail.WebdisStatus(status).Error())
		return
	case status != 200:
		vm.nodeFailed(l.node, now)
		r.loadLog.log(LogWarn, "ratelimit: redis: slot map load from node "+r.names[l.node]+": "+redisfail.WebdisFailure(status, body).Error())
		return
	}
	text, refusal, err := clusterNodesText(body)
	switch {
	case refusal != "":
		l.refused(refusal)
		return
	case err != nil: // not sent again before the refresh: a reply's shape does not change
		r.loadLog.log(LogWarn, "ratelimit: redis: slot map load from node "+r.names[l.node]+": "+err.Error())
		return
	}
	unlisted, err := clusterslot.ParseNodesFrom(r.scratch, text, r.addrs, l.node)
	if err != nil {
		r.loadLog.log(LogWarn, "ratelimit: redis: slot map load from node "+r.names[l.node]+": "+err.Error())
		return
	}
	r.slots, r.scratch = r.scratch, r.slots
	r.loads.Increment(1)
	if vm.health.down&(1<<uint(l.node)) != 0 {
		vm.health.okNode(l.node) // it answers again
	}
	clusterslot.Aliases(text, r.addrs, r.aliases)
	for i, a := range r.aliases { // not to hold the whole text
		r.aliases[i] = strings.Clone(a)
	}
	vm.health.forget(r.slotless())
	l.noPerm = false // granted since
	if unlisted != "" {
		r.logUnlisted(unlisted)
	}
}

// slotless has a bit per node that serves no slot in the map: a master
// replaced by its replica, or a replica. None while a slot is served by
// no node (its master flagged fail, no replica promoted yet): the node
// that failed may be its master.
func (r *router) slotless() uint64 {
	var serving uint64
	for slot := range clusterslot.Slots {
		o := r.slots.Owner(uint16(slot))
		if o == clusterslot.Unknown {
			return 0
		}
		if int(o) < len(r.nodes) {
			serving |= 1 << o
		}
	}
	return ^serving
}

// refused logs, once, that CLUSTER NODES is refused and how to grant it.
func (l *slotLoad) refused(why string) {
	if l.noPerm {
		return
	}
	l.noPerm, l.wantAt = true, time.Time{}
	l.r.host.Log(LogWarn, "ratelimit: redis: CLUSTER NODES refused by node "+l.r.names[l.node]+" ("+why+
		"): grant +cluster|nodes to the filter's Redis user and enable CLUSTER in Webdis's acl; until then the slot map is learnt from -MOVED only")
}

// maxClusterNodes bounds the response read: CLUSTER NODES of a cluster of
// a thousand nodes is far below it.
const maxClusterNodes = 1 << 20

// clusterNodesText reads Webdis's response to CLUSTER NODES: the text, or
// Redis's refusal (-NOPERM), or why it is neither.
func clusterNodesText(body []byte) (text, refusal string, err error) {
	if len(body) > maxClusterNodes+1024 {
		return "", "", format.Errorf("webdis: CLUSTER NODES reply of %d bytes", len(body))
	}
	if !jsonbound.Valid(body) {
		return "", "", format.Errorf("webdis: CLUSTER NODES reply is not JSON")
	}
	v := jsonvalue.ParseBytes(body).Get("CLUSTER")
	if arr := v.Array(); v.IsArray() && len(arr) == 2 && arr[1].Type == jsonvalue.String {
		msg := redisfail.Printable(arr[1].Str)
		if len(msg) >= 6 && msg[:6] == "NOPERM" {
			return "", msg, nil
		}
		return "", "", format.Errorf("webdis: CLUSTER NODES: %s", msg)
	}
	if v.Type != jsonvalue.String {
		return "", "", format.Errorf("webdis: CLUSTER NODES reply is not {\"CLUSTER\":\"...\"}")
	}
	return v.Str, "", nil
}
