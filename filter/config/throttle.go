package config

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// Throttle holds a request the rule's funnels deny now, for as long as it
// takes to conform, instead of answering 429, as nginx's limit_req with a
// burst does (see package filter, throttle.go). "throttle": {} turns it on.
type Throttle struct {
	// MaxDelay is the longest a request waits (throttle.max_delay, default
	// 1s): one that would wait longer is denied, charging nothing.
	MaxDelay time.Duration
}

// ThrottleTick is how often a VM looks for held requests due: a request
// goes on no earlier than its time, and at most this much later.
const ThrottleTick = 10 * time.Millisecond

// parseThrottle reads a rule's throttle, which needs funnels only, of a
// cost known at the request, decided in Redis.
func parseThrottle(v jsonvalue.Value, path string, r *Rule) (*Throttle, error) {
	if !v.Exists() {
		return nil, nil
	}
	o, err := fields(v, path, "max_delay")
	if err != nil {
		return nil, err
	}
	switch {
	case r.Response != nil:
		return nil, errAt(path, "not with response_cost: the request's cost must be known when it is held")
	case r.Lease != nil:
		return nil, errAt(path, "not with lease: a VM spends a batch at once")
	case r.ChosenInRedis():
		return nil, errAt(path, "not with overrides or tiers from redis: the VM must know the key's limits are funnels")
	case r.Shadow:
		return nil, errAt(path, "not on a shadow rule: a shadow rule never delays")
	}
	for _, level := range r.Levels() {
		for _, l := range level.Limits {
			if l.Limit.Algorithm != algorithms.Funnel {
				return nil, errAt(path, "needs funnel or token_bucket limits only: limit %q is a %s", l.Name, l.Limit.Algorithm)
			}
		}
	}
	t := &Throttle{}
	if t.MaxDelay, err = duration(o["max_delay"], path+".max_delay", time.Second); err != nil {
		return nil, err
	}
	if t.MaxDelay < ThrottleTick || t.MaxDelay > time.Minute {
		return nil, errAt(path+".max_delay", "must be at least 10ms and at most 1m")
	}
	return t, nil
}

// checkClusterThrottles refuses a second throttled rule under
// redis.cluster_mode: each rule's call goes to its own shard and decides
// its own release time, so a request held for another rule would go on
// after its own funnels' time, charged as of the wrong one.
func checkClusterThrottles(c *Config) error {
	if !c.Redis.ClusterMode {
		return nil
	}
	first := -1
	for i, r := range c.Rules {
		if r.Throttle == nil {
			continue
		}
		if first >= 0 {
			return errAt(format.Sprintf("rules[%d].throttle", i), "with redis.cluster_mode only one rule may have a throttle, and rules[%d] has one: each rule's call goes to its own shard and would time the request alone", first)
		}
		first = i
	}
	return nil
}
