package wasmhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"
)

// This file routes Redis calls over a Redis Cluster, as a cluster-aware
// proxy in front of the cluster does (Envoy's redis_proxy, with an
// envoy.clusters.redis cluster and enable_redirection): clusterProxy
// (redis_proxy.go) hands it each command. It learns the slot map with
// CLUSTER SLOTS on the first call, sends each command to the owner of its
// first key's slot (see routingKey), and follows one -MOVED (after
// reloading the map) or -ASK (with ASKING) itself, so a stable or
// resharding cluster never shows a redirection to the guest. Everything
// else, -CROSSSLOT included, is passed on as the node replied; the host
// counts both. Higress's own client does none of this: a cluster name in
// RedisClusters that points at a node of a Redis Cluster gets -MOVED and
// -ASK back as replies.

// RedisClusterStats is what the cluster proxy in front of a Redis Cluster
// (Config.RedisClusterProxy) counted for one cluster name.
type RedisClusterStats struct {
	// NodeCalls counts the commands sent to each node, by address. A
	// redirected command counts on both nodes; CLUSTER SLOTS is not
	// counted here.
	NodeCalls map[string]int64
	// Redirections counts -MOVED and -ASK replies the host followed by
	// sending the command again to the node named.
	Redirections int64
	// RedirectionsToGuest counts redirections that reached the guest,
	// because the command was redirected again after the one retry.
	RedirectionsToGuest int64
	// CrossSlot counts -CROSSSLOT replies, passed on to the guest: the
	// keys of one command were in different slots.
	CrossSlot int64
	// SlotMapLoads counts slot maps loaded: one at the first call, and one
	// after each -MOVED.
	SlotMapLoads int64
	// SlotMapRefreshes counts the other loads: after a node's call failed,
	// and every Config.RedisClusterRefresh (redis_cluster_refresh.go).
	SlotMapRefreshes int64
}

// RedisClusterStats returns the counts for a name of
// Config.RedisClusterProxy (zero before its first call).
func (h *Host) RedisClusterStats(name string) RedisClusterStats {
	h.redisMu.Lock()
	c := h.clusterCnt[name]
	h.redisMu.Unlock()
	if c == nil {
		return RedisClusterStats{NodeCalls: map[string]int64{}}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.s
	s.NodeCalls = maps.Clone(c.s.NodeCalls)
	return s
}

// clusterCounters are one cluster's RedisClusterStats while they grow.
type clusterCounters struct {
	mu sync.Mutex
	s  RedisClusterStats
}

func (c *clusterCounters) add(f func(*RedisClusterStats)) {
	c.mu.Lock()
	f(&c.s)
	c.mu.Unlock()
}

func (h *Host) clusterCounters(name string) *clusterCounters {
	h.redisMu.Lock()
	defer h.redisMu.Unlock()
	if h.clusterCnt == nil {
		h.clusterCnt = map[string]*clusterCounters{}
	}
	c := h.clusterCnt[name]
	if c == nil {
		c = &clusterCounters{s: RedisClusterStats{NodeCalls: map[string]int64{}}}
		h.clusterCnt[name] = c
	}
	return c
}

// checkRedisClusterProxy rejects a name in both Redis maps, and a cluster
// without seed nodes.
func (c *Config) checkRedisClusterProxy() error {
	for name, seeds := range c.RedisClusterProxy {
		if _, dup := c.RedisClusters[name]; dup {
			return fmt.Errorf("host: Redis cluster %q is in both RedisClusters and RedisClusterProxy", name)
		}
		if len(seeds) == 0 {
			return fmt.Errorf("host: RedisClusterProxy[%q] has no seed nodes", name)
		}
	}
	return nil
}

// slotRange is a range of slots and the address of the master serving it.
type slotRange struct {
	first, last uint16 // inclusive
	addr        string
}

// redisCluster routes over one Redis Cluster: a slot map and a pool per
// node.
type redisCluster struct {
	name    string
	seeds   []string
	timeout time.Duration
	stats   *clusterCounters
	logf    func(format string, args ...any)

	loadMu sync.Mutex // one slot map load at a time

	mu     sync.Mutex
	slots  []slotRange       // sorted by first; nil until loaded
	hosts  map[string]string // announced hostname -> IP, from CLUSTER SLOTS
	pools  map[string]*redisPool
	closed bool

	bg refresher // loads in the background
}

func newRedisCluster(h *Host, name string, seeds []string, timeout time.Duration) *redisCluster {
	c := &redisCluster{
		name: name, seeds: seeds, timeout: timeout, stats: h.clusterCounters(name),
		logf:  func(format string, args ...any) { h.hostLog(-1, LogWarn, format, args...) },
		pools: map[string]*redisPool{},
	}
	c.bg.ctx, c.bg.cancel = context.WithCancel(context.Background())
	return c
}

// do routes one command and returns the reply, after following at most
// one redirection. The whole call, map loading and retry included, has the
// router's timeout.
func (c *redisCluster) do(ctx context.Context, query []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	args, err := respArgs(query)
	if err != nil {
		return nil, fmt.Errorf("redis cluster %s: cannot route the command: %w", c.name, err)
	}
	addr, err := c.route(ctx, args)
	if err != nil {
		return nil, err
	}
	reply, err := c.send(ctx, addr, query, false)
	if err != nil {
		return nil, err
	}
	if r, ok := parseRedirection(reply, addr); ok {
		c.stats.add(func(s *RedisClusterStats) { s.Redirections++ })
		r.addr = c.resolve(r.addr)
		if !r.ask {
			if err := c.load(ctx, true, countLoad); err != nil {
				c.logf("redis cluster %s: reloading the slot map after -MOVED: %v", c.name, err)
			}
		}
		if reply, err = c.send(ctx, r.addr, query, r.ask); err != nil {
			return nil, err
		}
		if _, again := parseRedirection(reply, r.addr); again {
			c.stats.add(func(s *RedisClusterStats) { s.RedirectionsToGuest++ })
		}
	}
	if bytes.HasPrefix(reply, []byte("-CROSSSLOT ")) {
		c.stats.add(func(s *RedisClusterStats) { s.CrossSlot++ })
	}
	return reply, nil
}

// route returns the address of the master for a command: the owner of its
// routing key's slot, or, for a keyless command or a slot no master
// serves, the owner of the lowest slots (which then answers for itself).
func (c *redisCluster) route(ctx context.Context, args [][]byte) (string, error) {
	c.mu.Lock()
	loaded := c.slots != nil
	c.mu.Unlock()
	if !loaded {
		if err := c.load(ctx, false, countLoad); err != nil {
			return "", fmt.Errorf("redis cluster %s: no slot map: %w", c.name, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key, ok := routingKey(args)
	if !ok {
		return c.slots[0].addr, nil
	}
	slot := keySlot(key)
	i := sort.Search(len(c.slots), func(i int) bool { return c.slots[i].last >= slot })
	if i == len(c.slots) || c.slots[i].first > slot {
		return c.slots[0].addr, nil
	}
	return c.slots[i].addr, nil
}

// send sends a command to one node, counting it. A call that failed
// (no reply: the node is unreachable or timed out) starts a slot map
// reload in the background.
func (c *redisCluster) send(ctx context.Context, addr string, query []byte, asking bool) ([]byte, error) {
	p, err := c.pool(addr)
	if err != nil {
		return nil, err
	}
	c.stats.add(func(s *RedisClusterStats) { s.NodeCalls[addr]++ })
	reply, err := p.do(ctx, query, asking)
	if err != nil {
		c.refreshSoon()
	}
	return reply, err
}

func (c *redisCluster) pool(addr string) (*redisPool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("redis client closed")
	}
	p := c.pools[addr]
	if p == nil {
		p = newRedisPool(addr, c.timeout)
		c.pools[addr] = p
	}
	return p, nil
}

// load loads the slot map with CLUSTER SLOTS, asking the known masters
// and then the seeds until one answers, and counts the load with count.
// Without force it does nothing once a map is loaded.
func (c *redisCluster) load(ctx context.Context, force bool, count func(*RedisClusterStats)) error {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	c.mu.Lock()
	loaded, candidates := c.slots != nil, make([]string, 0, len(c.slots)+len(c.seeds))
	for _, r := range c.slots {
		candidates = append(candidates, r.addr)
	}
	c.mu.Unlock()
	if loaded && !force {
		return nil
	}
	var errs []error
	for _, addr := range append(candidates, c.seeds...) {
		p, err := c.pool(addr)
		if err != nil {
			return err
		}
		reply, err := p.do(ctx, respCommand("CLUSTER", "SLOTS"), false)
		var slots []slotRange
		var hosts map[string]string
		if err == nil {
			slots, hosts, err = parseClusterSlots(reply, addr)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		c.mu.Lock()
		c.slots, c.hosts = slots, hosts
		c.mu.Unlock()
		c.stats.add(count)
		return nil
	}
	return errors.Join(errs...)
}

func countLoad(s *RedisClusterStats) { s.SlotMapLoads++ }

// close stops the background loads and closes every node's idle
// connections.
func (c *redisCluster) close() {
	c.bg.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, p := range c.pools {
		p.close()
	}
}

// parseClusterSlots reads a CLUSTER SLOTS reply: an array of [first slot,
// last slot, [ip, port, id, metadata] of the master, replicas...]. An
// empty ip means the host of the node that answered (from). A node that
// announces a hostname (cluster-preferred-endpoint-type hostname) puts it
// first and its IP in the metadata: the address is the IP, and hosts maps
// the name to it, standing in for the DNS lookup Envoy would make.
func parseClusterSlots(reply []byte, from string) (slots []slotRange, hosts map[string]string, err error) {
	v, err := respDecode(reply)
	if err != nil {
		return nil, nil, err
	}
	if e, ok := v.(respError); ok {
		return nil, nil, fmt.Errorf("CLUSTER SLOTS: %s", e)
	}
	entries, ok := v.([]any)
	if !ok || len(entries) == 0 {
		return nil, nil, errors.New("CLUSTER SLOTS: no slot is served")
	}
	fromHost, _, _ := net.SplitHostPort(from)
	for i, e := range entries {
		f, _ := e.([]any)
		var first, last, port int64
		var master []any
		var ip []byte
		if len(f) >= 3 {
			first, _ = f[0].(int64)
			last, _ = f[1].(int64)
			master, _ = f[2].([]any)
		}
		if len(master) >= 2 {
			ip, _ = master[0].([]byte)
			port, _ = master[1].(int64)
		}
		if len(master) < 2 || first < 0 || last < first || last >= numSlots || port <= 0 || string(ip) == "?" {
			return nil, nil, fmt.Errorf("CLUSTER SLOTS: bad entry %d", i)
		}
		host := string(ip)
		if host == "" {
			host = fromHost
		}
		if realIP := metadataIP(master); realIP != "" && net.ParseIP(host) == nil {
			if hosts == nil {
				hosts = map[string]string{}
			}
			hosts[host], host = realIP, realIP
		}
		slots = append(slots, slotRange{uint16(first), uint16(last), net.JoinHostPort(host, strconv.FormatInt(port, 10))})
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i].first < slots[j].first })
	return slots, hosts, nil
}

// metadataIP is the "ip" of a CLUSTER SLOTS node entry's metadata (its
// fourth element, pairs of name and value), or "".
func metadataIP(node []any) string {
	if len(node) < 4 {
		return ""
	}
	meta, _ := node[3].([]any)
	for i := 0; i+1 < len(meta); i += 2 {
		if k, _ := meta[i].([]byte); string(k) == "ip" {
			v, _ := meta[i+1].([]byte)
			return string(v)
		}
	}
	return ""
}

// redirection is a -MOVED or -ASK reply: retry on addr.
type redirection struct {
	ask  bool
	addr string
}

// parseRedirection recognizes "-MOVED <slot> <host:port>" and
// "-ASK <slot> <host:port>"; an empty host means from's host.
func parseRedirection(reply []byte, from string) (redirection, bool) {
	var r redirection
	var rest []byte
	switch {
	case bytes.HasPrefix(reply, []byte("-MOVED ")):
		rest = reply[len("-MOVED "):]
	case bytes.HasPrefix(reply, []byte("-ASK ")):
		r.ask, rest = true, reply[len("-ASK "):]
	default:
		return r, false
	}
	fields := bytes.Fields(rest)
	if len(fields) != 2 {
		return r, false
	}
	host, port, err := net.SplitHostPort(string(fields[1]))
	if err != nil {
		return r, false
	}
	if host == "" {
		host, _, _ = net.SplitHostPort(from)
	}
	r.addr = net.JoinHostPort(host, port)
	return r, true
}
