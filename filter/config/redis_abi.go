package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// parseRedisABI reads the fields only the redis_abi transport has.
func parseRedisABI(r *RedisConfig, o map[string]jsonvalue.Value, path string) error {
	f := path + ".buffer_flush_timeout"
	if r.Transport != TransportRedisABI {
		if o["buffer_flush_timeout"].Exists() {
			return errAt(f, "only allowed with transport redis_abi")
		}
		return nil
	}
	d, err := duration(o["buffer_flush_timeout"], f, 0)
	if err != nil {
		return err
	}
	if d%time.Millisecond != 0 || d > time.Second {
		return errAt(f, "must be whole milliseconds, at most 1s")
	}
	r.FlushTimeout = d
	return nil
}

// InitCluster is the cluster name the redis_abi transport gives
// proxy_redis_init, with the options of Higress's client after "?":
//
//	outbound|6379||redis.static?db=2&buffer_flush_timeout=0
//
// db is SELECTed on each new connection. buffer_flush_timeout is how many
// milliseconds a call may wait in the client's write buffer (Higress's
// default is 3; 0 writes at the end of the proxy's current event-loop
// iteration); Higress before 2.1.9 ignores it. max_buffer_size_before_flush
// is left at its default, 1024 bytes.
func (r *RedisConfig) InitCluster() string {
	var b strings.Builder
	b.WriteString(r.Cluster)
	sep := "?"
	if strings.Contains(r.Cluster, "?") {
		sep = "&"
	}
	if r.Database != 0 {
		b.WriteString(sep + "db=" + strconv.Itoa(r.Database))
		sep = "&"
	}
	b.WriteString(sep + "buffer_flush_timeout=" + strconv.FormatInt(r.FlushTimeout.Milliseconds(), 10))
	return b.String()
}
