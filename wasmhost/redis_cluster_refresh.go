package wasmhost

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// defaultClusterRefresh is Config.RedisClusterRefresh's default, as
// envoy.clusters.redis's cluster_refresh_rate.
const defaultClusterRefresh = 5 * time.Second

// refresher runs a redisCluster's background slot map loads: one at a
// time, stopped by close.
type refresher struct {
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	running atomic.Bool
}

func (r *refresher) stop() {
	r.cancel()
	r.wg.Wait()
}

func countRefresh(s *RedisClusterStats) { s.SlotMapRefreshes++ }

// refreshSoon reloads the slot map in the background, unless a reload is
// running, after a node's call failed: the node may be gone and a replica
// promoted in its place, which no -MOVED would tell. redis_proxy does so
// after failure_refresh_threshold failures (off by default in Envoy: the
// operator sets it); this model after each.
func (c *redisCluster) refreshSoon() {
	if c.bg.ctx.Err() != nil || !c.bg.running.CompareAndSwap(false, true) {
		return
	}
	c.bg.wg.Add(1)
	go func() {
		defer c.bg.wg.Done()
		defer c.bg.running.Store(false)
		c.refresh()
	}()
}

// refresh reloads a slot map already loaded, within the router's timeout.
func (c *redisCluster) refresh() {
	c.mu.Lock()
	loaded := c.slots != nil
	c.mu.Unlock()
	if !loaded { // the first call loads it
		return
	}
	ctx, cancel := context.WithTimeout(c.bg.ctx, c.timeout)
	defer cancel()
	if err := c.load(ctx, true, countRefresh); err != nil && c.bg.ctx.Err() == nil {
		c.logf("redis cluster %s: reloading the slot map: %v", c.name, err)
	}
}

// refreshEvery reloads the slot map every period once it is loaded, as
// envoy.clusters.redis does every cluster_refresh_rate, until close.
func (c *redisCluster) refreshEvery(period time.Duration) {
	if period <= 0 {
		period = defaultClusterRefresh
	}
	c.bg.wg.Add(1)
	go func() {
		defer c.bg.wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-c.bg.ctx.Done():
				return
			case <-tick.C:
				if c.bg.running.CompareAndSwap(false, true) {
					c.refresh()
					c.bg.running.Store(false)
				}
			}
		}
	}()
}

// resolve maps a redirection's "hostname:port" to "ip:port" when the slot
// map named that host (see parseClusterSlots), and returns other
// addresses as they are.
func (c *redisCluster) resolve(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	c.mu.Lock()
	ip, ok := c.hosts[host]
	c.mu.Unlock()
	if !ok {
		return addr
	}
	return net.JoinHostPort(ip, port)
}
