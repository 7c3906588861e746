package filter

import (
	"errors"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/clusterslot"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Routing by slot over one Webdis per Redis Cluster node (redis.nodes).
// Every key of a call hashes to one slot (config's cluster_mode and the
// key layout "<prefix>{<rule>|<parts>}..." see to it), so a call goes to
// the Webdis of its slot's master, as the VM's slot map says. The map is
// learnt with CLUSTER NODES (cluster_load.go) and corrected by -MOVED.
// -ASK, -TRYAGAIN and -CLUSTERDOWN, answered before the command runs, put
// the callout in the retry queue (cluster_retry.go) until its redis.timeout.

// maxRedirects is how many -MOVED one callout follows.
const maxRedirects = 3

// maxRetryBackoff bounds the wait between two re-sends of a callout held
// by a migrating or down slot: its latency after the handover.
const maxRetryBackoff = 100 * time.Millisecond

// nodeDownFor is how long a node that failed is skipped by map loads.
const nodeDownFor = 5 * time.Second

// router is the VM's slot map and the state of its loads; nil without
// redis.nodes.
type router struct {
	nodes    []config.RedisNode
	addrs    []string         // nodes[i].Address
	aliases  []string         // the other form (ip:port, hostname:port) of addrs[i] in the last map load, or ""
	names    []string         // "<address> through <cluster>", for log lines
	slots    *clusterslot.Map // the map in use
	scratch  *clusterslot.Map // where a load is parsed, swapped in on success
	failedAt []time.Time
	load     slotLoad
	// told are the endpoints not in redis.nodes already logged.
	told                  []string
	toldNames             string // told joined, for a SlotError
	host                  PluginHost
	moved, loads, unknown Counter
	loadLog               quietLog
}

func newRouter(cfg *config.Config, host PluginHost) *router {
	nodes := cfg.Redis.Nodes
	if len(nodes) == 0 {
		return nil
	}
	r := &router{nodes: nodes, aliases: make([]string, len(nodes)), slots: &clusterslot.Map{}, scratch: &clusterslot.Map{}, failedAt: make([]time.Time, len(nodes)), host: host,
		moved: host.Counter("ratelimit.redis.moved"),
		loads: host.Counter("ratelimit.redis.slot_map_loads"), unknown: host.Counter("ratelimit.redis.unknown_node"),
		loadLog: quietLog{host: host, every: 10 * time.Second}}
	for _, n := range nodes {
		r.addrs = append(r.addrs, n.Address)
		r.names = append(r.names, n.Address+" through "+n.Cluster)
	}
	r.slots.Reset()
	r.load.r, r.load.refresh = r, cfg.Redis.SlotMapRefresh
	if r.load.refresh <= 0 { // config.Parse sets it; a Config built otherwise may not
		r.load.refresh = 30 * time.Second
	}
	return r
}

// routing is where a callout goes: its slot, the node it went to, and
// the redirections it followed. Without a router the node is 0 and the
// slot is not computed.
type routing struct {
	slot      uint16 // computed by a router only
	node      int
	redirects uint8
	// pinned: an -ASK named the slot's source, where the callout waits;
	// else it goes to the slot's owner as the map says.
	pinned bool
	queued bool // in the VM's retry queue
	// backoff is the wait before the next re-send from the queue: 10 ms,
	// doubling each time up to maxRetryBackoff; retryAt is when it is due.
	backoff time.Duration
	retryAt time.Time
	wait    clusterslot.Kind // the last -ASK, -TRYAGAIN or -CLUSTERDOWN
	reply   string           // its text, for the error once the deadline passes
	sentAt  time.Time        // the first send: the deadline is sentAt + redis.timeout
}

// startRouting readies rt for a callout's first send at now, keyed by key
// (its first key: every key of a callout hashes to the same slot). Only
// a router computes the slot.
func (p *Plugin) startRouting(rt *routing, key string, now time.Time) {
	rt.redirects, rt.pinned, rt.sentAt, rt.backoff = 0, false, now, 0
	if p.router != nil {
		rt.slot = clusterslot.Slot(key)
	}
}

// nodeFor picks the node rt goes to: the one an -ASK pinned, else the
// slot's owner; an owner not known yet is the first node not failed
// lately (-MOVED corrects it). A slot owned by a node not in redis.nodes
// gets a SlotError.
func (p *Plugin) nodeFor(rt *routing, now time.Time) (int, error) {
	r := p.router
	if r == nil {
		return 0, nil
	}
	if rt.pinned {
		return rt.node, nil
	}
	switch o := r.slots.Owner(rt.slot); o {
	case clusterslot.Unlisted:
		r.unknown.Increment(1)
		return 0, &redisfail.SlotError{Slot: int(rt.slot), Kind: redisfail.SlotUnlisted, Reply: r.unlistedName()}
	case clusterslot.Unknown:
		rt.node = r.healthyNode(0, now)
	default:
		rt.node = int(o)
	}
	return rt.node, nil
}

// healthyNode is the first node from start on (round robin) that did not
// fail in the last nodeDownFor; start itself when all did.
func (r *router) healthyNode(start int, now time.Time) int {
	for i := range r.nodes {
		n := (start + i) % len(r.nodes)
		if f := r.failedAt[n]; f.IsZero() || now.Sub(f) >= nodeDownFor {
			return n
		}
	}
	return start % len(r.nodes)
}

// unlistedName names the endpoints logged as missing from redis.nodes:
// the slot's owner is one of them.
func (r *router) unlistedName() string {
	if len(r.told) == 0 {
		return "(unknown)"
	}
	return r.toldNames
}

// maxTold bounds the endpoints logged as missing from redis.nodes.
const maxTold = 64

// nodeFailed notes that node did not answer (a timeout, a callout failure,
// Webdis's 503): map loads skip it for a while, and the map is reloaded
// within a second, from another node.
func (p *Plugin) nodeFailed(node int, now time.Time) {
	if r := p.router; r != nil {
		r.failedAt[node] = now
		r.load.want(now, time.Second)
	}
}

// nodeErr names the node in err for the health line, with a router.
func (p *Plugin) nodeErr(rt *routing, err error) error {
	if p.router == nil || err == nil {
		return err
	}
	var se *redisfail.SlotError
	if errors.As(err, &se) && se.Kind == redisfail.SlotUnlisted {
		return err
	}
	return &redisfail.NodeError{Node: p.router.names[rt.node], Err: err}
}

// Outcomes of a cluster error reply (onClusterError).
type clusterAction uint8

const (
	notCluster  clusterAction = iota // not a cluster error, or not followed: handled as before
	sendAgain                        // -MOVED: send again now, to the slot's new owner
	queuedRetry                      // in the retry queue: re-sent on the fast tick
	giveUp                           // the deadline passed, or too many moves: fail with the error returned, not counted by the breaker
)

// onClusterError reads err, a callout's reply, for -MOVED, -ASK, -TRYAGAIN
// and -CLUSTERDOWN. -MOVED updates the slot (and asks for a map load);
// the others queue rt's owner for a re-send, until rt's deadline. Without
// a router -MOVED and -ASK are not followed (the link explains them), but
// -TRYAGAIN and -CLUSTERDOWN are retried the same way: a cluster-aware
// proxy passes them on.
func (p *Plugin) onClusterError(rt *routing, owner retrier, err error, now time.Time) (clusterAction, error) {
	var rerr *redisproto.Error
	if !errors.As(err, &rerr) {
		return notCluster, nil
	}
	kind, slot, addr := clusterslot.ParseError(rerr.Msg)
	r := p.router
	switch {
	case kind == clusterslot.None, r == nil && (kind == clusterslot.Moved || kind == clusterslot.Ask):
		return notCluster, nil
	case kind == clusterslot.Moved:
		r.moved.Increment(1)
		r.learn(slot, addr, now)
		if rt.redirects >= maxRedirects {
			return giveUp, &redisfail.SlotError{Slot: int(slot), Kind: redisfail.SlotRedirects, Reply: rerr.Msg}
		}
		if p.deadlineLeft(rt.sentAt, now) < time.Millisecond { // no budget left to send it with
			return giveUp, &redisfail.SlotError{Slot: int(slot), Kind: redisfail.SlotMovedLate, Reply: rerr.Msg}
		}
		rt.redirects++
		rt.pinned = false
		return sendAgain, nil
	}
	rt.wait, rt.reply = kind, rerr.Msg
	if !now.Before(rt.sentAt.Add(p.cfg.Redis.Timeout)) {
		return giveUp, p.waitErr(rt)
	}
	rt.pinned = kind == clusterslot.Ask
	if kind == clusterslot.ClusterDown && r != nil {
		r.load.want(now, time.Second) // a master failed: learn its replica's promotion
	}
	rt.backoff = min(max(2*rt.backoff, config.ThrottleTick), maxRetryBackoff)
	rt.retryAt = now.Add(rt.backoff)
	p.retry.add(p, rt, owner)
	return queuedRetry, nil
}

// waitErr is the error of a callout whose slot stayed migrating or down
// until its deadline.
func (p *Plugin) waitErr(rt *routing) error {
	e := &redisfail.SlotError{Slot: -1, Kind: redisfail.SlotMigrating, Reply: redisfail.Printable(rt.reply)}
	if p.router != nil {
		e.Slot = int(rt.slot)
	}
	if rt.wait == clusterslot.ClusterDown {
		e.Kind = redisfail.SlotDown
	}
	return e
}

// learn sets slot's owner from a -MOVED to addr, and asks for a map load
// (at most one per 100 ms): one move often comes with others. A move to
// a node that failed lately (a dead master's slots, which a load leaves
// unknown, move back to it) asks for one per second, as its failure did.
func (r *router) learn(slot uint16, addr string, now time.Time) {
	gap := 100 * time.Millisecond
	node := r.index(addr)
	switch {
	case node < 0:
		r.slots.Set(slot, clusterslot.Unlisted)
		r.logUnlisted(addr)
	default:
		r.slots.Set(slot, uint8(node))
		if f := r.failedAt[node]; !f.IsZero() && now.Sub(f) < nodeDownFor {
			gap = time.Second
		}
	}
	r.load.want(now, gap)
}

// index is the node addr names, as listed or in the other form the last
// map load gave it; -1 if none.
func (r *router) index(addr string) int {
	for i, a := range r.addrs {
		if a == addr || r.aliases[i] == addr {
			return i
		}
	}
	return -1
}

// logUnlisted says, once per endpoint and for at most maxTold endpoints
// (they come from Redis's replies), that a master is not in redis.nodes.
func (r *router) logUnlisted(addr string) {
	for _, a := range r.told {
		if a == addr {
			return
		}
	}
	if len(r.told) >= maxTold {
		return
	}
	r.told = append(r.told, addr)
	r.toldNames = strings.Join(r.told, " or ")
	r.host.Log(LogError, "ratelimit: redis: node "+addr+" serves slots but is not in redis.nodes: calls to its slots get the failure mode "+
		"(ratelimit.redis.unknown_node); add it to redis.nodes, with the cluster of its Webdis")
}

// deadlineLeft is the budget left at now of a callout first sent at
// sentAt: what a re-send may wait for its reply.
func (p *Plugin) deadlineLeft(sentAt, now time.Time) time.Duration {
	return sentAt.Add(p.cfg.Redis.Timeout).Sub(now)
}
