package wasmhost

import (
	"errors"
	"maps"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file models the Redis client of Higress's Envoy build, the one
// behind proxy_redis_init and proxy_redis_call (higress-group/envoy,
// source/common/redis/async_client_impl.cc and
// source/extensions/filters/network/common/redis/raw_client_impl.cc):
//   - one client per cluster per worker, created empty (defaults below) the
//     first time the cluster is used, and lost when the cluster entry is
//     rebuilt (Host.RebuildRedisCluster);
//   - proxy_redis_init replaces its configuration and closes its
//     connections, unless the configuration is the one in place (then it
//     does nothing, as since higress #4086);
//   - one pipelined connection per host (redis_pipe.go), which sends AUTH
//     and SELECT first and throws their replies away.

// Defaults of a client no proxy_redis_init configured (Envoy's ConfigImpl),
// and of the options a cluster name may carry.
const (
	defaultRedisTimeout = time.Second
	defaultFlushTimeout = 3 * time.Millisecond
	defaultMaxBuffer    = 1024
	// redisConnectTimeout is the cluster's connect_timeout (Envoy's
	// default), which bounds a connection until it is established.
	redisConnectTimeout = 5 * time.Second
)

// respMaxReply caps one reply; a bigger one closes the connection.
const respMaxReply = 64 << 20

// redisConfig is what proxy_redis_init sets for one cluster on one worker.
type redisConfig struct {
	username, password string
	// params is the query of the cluster name, "db=1&..." (Envoy's
	// parseQueryString: not decoded, the first of a repeated name wins).
	params       map[string]string
	timeout      time.Duration // per pipelined connection; see pipeConn
	flushTimeout time.Duration // buffer_flush_timeout
	maxBuffer    int           // max_buffer_size_before_flush
}

// uninitializedRedis is the configuration of a client no init configured.
func uninitializedRedis() redisConfig {
	return redisConfig{timeout: defaultRedisTimeout, flushTimeout: defaultFlushTimeout, maxBuffer: defaultMaxBuffer}
}

// parseRedisCluster splits "name?db=N&buffer_flush_timeout=..." as
// Higress does: the name before "?", and the options after it.
// buffer_flush_timeout and max_buffer_size_before_flush are read as
// std::stoul reads them (leading digits; otherwise the default); db is
// sent as written, in SELECT.
func parseRedisCluster(s string) (name string, cfg redisConfig) {
	name, query, _ := strings.Cut(s, "?")
	cfg = uninitializedRedis()
	cfg.params = map[string]string{}
	for _, kv := range strings.Split(query, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if _, seen := cfg.params[k]; !seen {
			cfg.params[k] = v
		}
	}
	cfg.flushTimeout = time.Duration(paramUint32(cfg.params, "buffer_flush_timeout", 3)) * time.Millisecond
	cfg.maxBuffer = int(paramUint32(cfg.params, "max_buffer_size_before_flush", defaultMaxBuffer))
	return name, cfg
}

func paramUint32(params map[string]string, key string, def uint64) uint64 {
	v := strings.TrimLeft(params[key], " \t")
	v = strings.TrimPrefix(v, "+")
	n, digits := uint64(0), 0
	for ; digits < len(v) && '0' <= v[digits] && v[digits] <= '9'; digits++ {
		n = n*10 + uint64(v[digits]-'0')
		if n > math.MaxUint32 {
			return def
		}
	}
	if digits == 0 {
		return def
	}
	return n
}

func (c redisConfig) equal(o redisConfig) bool {
	return c.username == o.username && c.password == o.password && maps.Equal(c.params, o.params) &&
		c.timeout == o.timeout && c.flushTimeout == o.flushTimeout && c.maxBuffer == o.maxBuffer
}

// redisClient is one worker's client for one cluster name. It lives on
// its VM's loop, as Envoy's lives on the worker's dispatcher.
type redisClient struct {
	v           *vm
	name        string
	cfg         redisConfig
	initialized bool
	conn        *pipeConn // nil until a call needs it, and after it closed
	stats       *clientCounters
}

func (v *vm) newRedisClient(name string) *redisClient {
	return &redisClient{v: v, name: name, cfg: uninitializedRedis(), stats: v.h.clientCounters(name)}
}

// init applies proxy_redis_init: a new configuration closes the
// connections (their pending calls fail); the one in place changes nothing.
func (c *redisClient) init(cfg redisConfig) {
	if c.initialized && c.cfg.equal(cfg) {
		c.stats.unchangedInits.Add(1)
		return
	}
	c.stats.inits.Add(1)
	if c.conn != nil {
		c.conn.close(errors.New("proxy_redis_init replaced the configuration"))
	}
	c.cfg, c.initialized = cfg, true
}

// send queues one query on the cluster's connection, opening one (with
// AUTH and SELECT first) when there is none. done runs on the VM's loop.
func (c *redisClient) send(query []byte, done func(reply []byte, err error)) {
	if c.conn == nil {
		c.conn = newPipeConn(c, c.v.h.redisAddr(c.name))
	}
	c.conn.makeRequest(query, done)
}

// destroy closes the connections, failing their calls, as Envoy's
// destructor does when the cluster entry is rebuilt.
func (c *redisClient) destroy(err error) {
	if c.conn != nil {
		c.conn.close(err)
	}
}

// close closes the connections without calling back: the VM is closing,
// and Envoy cancels the calls of a context it tears down.
func (c *redisClient) close() {
	if c.conn != nil {
		c.conn.shut()
		c.conn = nil
	}
}

// RedisClientStats is what the host's model of Higress's Redis client
// counted for one cluster name, over all VMs.
type RedisClientStats struct {
	// Connections counts connections opened; each sends AUTH and SELECT
	// (when configured) before the first call.
	Connections int64
	// Timeouts counts connections closed because the oldest pending call
	// (or the connect) took longer than the timeout, and FailedByTimeout
	// the guest's calls those closes failed.
	Timeouts, FailedByTimeout int64
	// Writes counts flushes of the write buffer to Redis.
	Writes int64
	// Inits counts proxy_redis_init calls that replaced the configuration,
	// UnchangedInits those that found it in place and did nothing.
	Inits, UnchangedInits int64
	// Discarded counts replies to AUTH and SELECT, which nobody reads;
	// DiscardedErrors those that were error replies.
	Discarded, DiscardedErrors int64
}

type clientCounters struct {
	connections, timeouts, failedByTimeout, writes    atomic.Int64
	inits, unchangedInits, discarded, discardedErrors atomic.Int64
}

// RedisClientStats returns the counts for a Redis cluster name.
func (h *Host) RedisClientStats(name string) RedisClientStats {
	c := h.clientCounters(name)
	return RedisClientStats{
		Connections: c.connections.Load(), Timeouts: c.timeouts.Load(), FailedByTimeout: c.failedByTimeout.Load(),
		Writes: c.writes.Load(), Inits: c.inits.Load(), UnchangedInits: c.unchangedInits.Load(),
		Discarded: c.discarded.Load(), DiscardedErrors: c.discardedErrors.Load(),
	}
}

// redisRegistry is the Host's Redis state beyond Config: clusters added
// later, and counters.
type redisRegistry struct {
	mu       sync.Mutex
	added    map[string]string // AddRedisCluster
	counters map[string]*clientCounters
	proxies  map[string]*clusterProxy // Config.RedisClusterProxy, while serving
}

func (h *Host) clientCounters(name string) *clientCounters {
	r := &h.rs
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counters == nil {
		r.counters = map[string]*clientCounters{}
	}
	c := r.counters[name]
	if c == nil {
		c = &clientCounters{}
		r.counters[name] = c
	}
	return c
}

// redisAddr is where a cluster name's connections go: its Redis, or the
// loopback cluster proxy in front of its Redis Cluster.
func (h *Host) redisAddr(name string) string {
	r := &h.rs
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.proxies[name]; p != nil {
		return p.addr()
	}
	if addr, ok := r.added[name]; ok {
		return addr
	}
	return h.cfg.RedisClusters[name]
}

// knowsRedis reports whether name is a Redis cluster the proxy has: in the
// configuration, or added since. With Config.RedisFallback, an unknown
// name is added, at that address, and logged once.
func (h *Host) knowsRedis(name string) bool {
	_, single := h.cfg.RedisClusters[name]
	_, cluster := h.cfg.RedisClusterProxy[name]
	if single || cluster {
		return true
	}
	h.rs.mu.Lock()
	_, added := h.rs.added[name]
	fallback := !added && h.cfg.RedisFallback != ""
	if fallback {
		if h.rs.added == nil {
			h.rs.added = map[string]string{}
		}
		h.rs.added[name] = h.cfg.RedisFallback
	}
	h.rs.mu.Unlock()
	if fallback {
		h.hostLog(-1, LogWarn, "redis cluster %q is not configured: its calls go to %s (the fallback Redis)", name, h.cfg.RedisFallback)
	}
	return added || fallback
}

// AddRedisCluster makes a Redis cluster known from now on, on every VM, as
// when Envoy receives a new cluster: before, proxy_redis_init and
// proxy_redis_call for that name return BadArgument.
func (h *Host) AddRedisCluster(name, addr string) {
	h.rs.mu.Lock()
	defer h.rs.mu.Unlock()
	if h.rs.added == nil {
		h.rs.added = map[string]string{}
	}
	h.rs.added[name] = addr
}

// RebuildRedisCluster replaces every VM's client for a cluster name with a
// new one that no proxy_redis_init configured, as when Envoy rebuilds the
// cluster's entry (a cluster update): the old connections close, failing
// their pending calls, and the new client uses no credentials, no database
// and the defaults until the guest calls proxy_redis_init again.
func (h *Host) RebuildRedisCluster(name string) {
	for _, v := range h.vms {
		v.run(func() error {
			if c := v.redis[name]; c != nil {
				delete(v.redis, name)
				c.destroy(errors.New("the cluster was rebuilt"))
			}
			return nil
		})
	}
}
