package config

import (
	"slices"
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// maxNodes bounds redis.nodes: a node's index fits a slot map's byte, below
// its Unlisted and Unknown marks.
const maxNodes = 64

// parseNodes reads redis.nodes and redis.slot_map_refresh, after the
// transport, cluster_mode and cluster.
func parseNodes(r *RedisConfig, o map[string]jsonvalue.Value, path string) error {
	nodes, refresh := o["nodes"], o["slot_map_refresh"]
	f := path + ".nodes"
	if !nodes.Exists() {
		if refresh.Exists() {
			return errAt(path+".slot_map_refresh", "only allowed with redis.nodes")
		}
		return nil
	}
	switch {
	case r.Transport != TransportWebdis:
		return errAt(f, "only allowed with transport webdis: redis_abi reaches a Redis Cluster through a cluster-aware proxy (docs/redis.md)")
	case !r.ClusterMode:
		return errAt(f, "requires cluster_mode: true: each call must stay in one slot")
	case o["cluster"].Exists():
		return errAt(path+".cluster", "not with redis.nodes: each call goes to the Webdis of its slot's node")
	case o["authority"].Exists():
		return errAt(path+".authority", "not with redis.nodes: set each node's authority")
	case !nodes.IsArray():
		return errAt(f, "must be an array")
	}
	list := nodes.Array()
	if len(list) == 0 || len(list) > maxNodes {
		return errAt(f, "must have 1 to 64 entries")
	}
	r.Nodes = make([]RedisNode, len(list))
	for i, v := range list {
		if err := parseNode(r.Nodes, i, v, elem(f, i)); err != nil {
			return err
		}
	}
	d, err := duration(refresh, path+".slot_map_refresh", 30*time.Second)
	if err != nil {
		return err
	}
	if d < time.Second || d > 10*time.Minute {
		return errAt(path+".slot_map_refresh", "must be >= 1s and <= 10m")
	}
	r.SlotMapRefresh = d
	return nil
}

// parseNode reads nodes[i] into nodes[i], refusing an address or a
// cluster that an earlier entry has.
func parseNode(nodes []RedisNode, i int, v jsonvalue.Value, path string) error {
	o, err := fields(v, path, "address", "cluster", "authority")
	if err != nil {
		return err
	}
	n := &nodes[i]
	if n.Address, err = str(o["address"], path+".address", ""); err != nil {
		return err
	}
	if !o["address"].Exists() {
		return errAt(path+".address", "required")
	}
	if !hostPort(n.Address) {
		return errAt(path+".address", "must be host:port, as the node announces itself (CLUSTER NODES, -MOVED)")
	}
	if n.Cluster, err = str(o["cluster"], path+".cluster", ""); err != nil {
		return err
	}
	if n.Cluster == "" {
		return errAt(path+".cluster", "required")
	}
	if n.Authority, err = str(o["authority"], path+".authority", n.Cluster); err != nil {
		return err
	}
	if n.Authority == "" {
		return errAt(path+".authority", "must not be empty")
	}
	for j := 0; j < i; j++ {
		if nodes[j].Address == n.Address {
			return errAt(path+".address", "duplicates nodes[%d]", j)
		}
		if nodes[j].Cluster == n.Cluster {
			return errAt(path+".cluster", "duplicates nodes[%d].cluster: one Webdis per node", j)
		}
	}
	return nil
}

// hostPort reports whether s is "host:port" as Redis prints a node's
// endpoint: a host name or an IP (IPv6 unbracketed, as Redis writes it),
// then a port from 1 to 65535.
func hostPort(s string) bool {
	c := -1
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			c = i
			break
		}
	}
	if c <= 0 || c > 255 || c == len(s)-1 || len(s)-c-1 > 5 || s[c+1] == '0' {
		return false
	}
	for i := 0; i < c; i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '-' || b == '_' || b == ':') {
			return false
		}
	}
	port := s[c+1:]
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 1 && p <= 65535
}

// Equal reports whether r and o reach Redis alike, nodes included.
// TestRedisEqualFields fails when RedisConfig gains a field this misses.
func (r *RedisConfig) Equal(o *RedisConfig) bool {
	return r.Transport == o.Transport && r.Cluster == o.Cluster && r.Username == o.Username &&
		r.Password == o.Password && r.Authority == o.Authority && r.Path == o.Path &&
		r.Timeout == o.Timeout && r.Database == o.Database && r.Prefix == o.Prefix &&
		r.ClusterMode == o.ClusterMode && r.FlushTimeout == o.FlushTimeout && r.Command == o.Command &&
		slices.Equal(r.Nodes, o.Nodes) && r.SlotMapRefresh == o.SlotMapRefresh
}
