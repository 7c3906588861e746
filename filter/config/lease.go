package config

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// Lease lets a VM take a batch of a hot key's units in one call and spend
// them alone for a while (see package filter, lease.go). Every field has a default, so
// "lease": {} turns it on.
type Lease struct {
	// MaxHold is the longest a VM spends a batch (lease.max_hold, default
	// 1s); what is left then goes back to Redis.
	MaxHold time.Duration
	// MaxBatch is the most units one batch takes (lease.max_batch;
	// default 1/50 of the smallest capacity of the rule's limits, at
	// least 1). With V VMs, leases admit at most V × MaxBatch beyond a
	// limit per window.
	MaxBatch int64
	// HotRate is the requests per second on one key, in one VM, from
	// which the key is leased (lease.hot_rate; default: 2 per max_hold,
	// at least 1 per second). Colder keys take one call per request.
	HotRate int64
	// MaxKeys bounds the keys each VM leases at once (lease.max_keys,
	// default 1000), the oldest returned first.
	MaxKeys int
}

// leaseShare is the default batch: 1/leaseShare of the smallest capacity.
const leaseShare = 50

// parseLease reads a rule's lease, which needs limits that a batch can
// take from: plain rate limits of a cost known at the request, in limits
// the VM knows.
func parseLease(v jsonvalue.Value, path string, r *Rule) (*Lease, error) {
	if !v.Exists() {
		return nil, nil
	}
	o, err := fields(v, path, "max_hold", "max_batch", "hot_rate", "max_keys")
	if err != nil {
		return nil, err
	}
	switch {
	case r.Response != nil:
		return nil, errAt(path, "not with response_cost: a batch is taken before any response says what it cost")
	case r.HasConcurrency():
		return nil, errAt(path, "not with a concurrency limit: a slot is held per request")
	case r.HasCalendar():
		return nil, errAt(path, "not with a calendar limit: a batch could outlive its period")
	case r.ChosenInRedis():
		return nil, errAt(path, "not with overrides or tiers from redis: the VM must know the key's limits")
	case r.Shadow:
		return nil, errAt(path, "not on a shadow rule")
	}
	l := &Lease{}
	if l.MaxHold, err = duration(o["max_hold"], path+".max_hold", time.Second); err != nil {
		return nil, err
	}
	if l.MaxHold <= 0 || l.MaxHold > time.Hour {
		return nil, errAt(path+".max_hold", "must be > 0 and at most 1h")
	}
	smallest := int64(-1)
	for _, level := range r.Levels() {
		for _, nl := range level.Limits {
			if c := Capacity(nl.Limit); smallest < 0 || c < smallest {
				smallest = c
			}
		}
	}
	if l.MaxBatch, err = integer(o["max_batch"], path+".max_batch", max(1, smallest/leaseShare), 1, smallest); err != nil {
		return nil, err
	}
	hot := max(1, int64((2*time.Second+l.MaxHold-1)/l.MaxHold))
	if l.HotRate, err = integer(o["hot_rate"], path+".hot_rate", hot, 1, 1<<16-1); err != nil {
		return nil, err
	}
	keys, err := integer(o["max_keys"], path+".max_keys", 1000, 1, 1<<20)
	if err != nil {
		return nil, err
	}
	l.MaxKeys = int(keys)
	return l, nil
}

// capacity is the most one admission of a limit may cost.
func Capacity(l algorithms.Limit) int64 {
	if l.Algorithm == algorithms.Funnel {
		return l.Burst
	}
	return l.Rate
}
