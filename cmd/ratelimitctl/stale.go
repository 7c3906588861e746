package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// staleFor says how long proxies may keep denying a key of rule from
// their deny caches when a change's epoch bump fails. A VM caches a
// denial until the Retry-After Redis gave it, so at most the longest
// window of the key's limits: the rule's, and override's when it is set
// (its value; a calendar limit's period up to its longest, a month of 31
// days; a concurrency limit's denial is not cached).
func staleFor(rule *config.Rule, override string) string {
	var longest time.Duration
	add := func(l algorithms.Limit) {
		_, w := l.Policy()
		if l.Algorithm == algorithms.CalendarWindow {
			w = map[algorithms.CalendarUnit]time.Duration{algorithms.Hour: time.Hour, algorithms.Day: 25 * time.Hour,
				algorithms.Week: 169 * time.Hour, algorithms.Month: 31*24*time.Hour + time.Hour}[l.Calendar.Unit]
		}
		longest = max(longest, w)
	}
	for _, level := range rule.Levels() {
		for _, l := range level.Limits {
			add(l.Limit)
		}
	}
	ls, _ := algorithms.DecodeOverride(override)
	for _, l := range ls {
		add(l)
	}
	if longest == 0 {
		return "No proxy holds a stale denial: rule " + rule.Name + " has only concurrency limits, whose denials are not cached."
	}
	return fmt.Sprintf("Proxies that cached a denial of this key may keep denying it for up to %s (a denial is cached until "+
		"its Retry-After, at most the longest window of the key's limits), instead of within a second.", fmtDuration(longest))
}

// staleBlock is staleFor of an unblock: a VM caches a block with a TTL
// until it expires, and never one without.
func staleBlock(ttl time.Duration) string {
	if ttl <= 0 {
		return "No proxy holds a stale denial: a block without a TTL is never cached, so the unblock holds at once."
	}
	ttl = (ttl + time.Second - 1).Truncate(time.Second)
	return fmt.Sprintf("Proxies that cached the block may keep denying this key for up to %s, until the block would have "+
		"expired, instead of within a second.", fmtDuration(ttl))
}

// current reads key's value and TTL before a change (nil when absent), for
// what the change's message says; a read works on a full Redis.
func (s *session) current(ctx context.Context, key string) (*keyInfo, error) {
	v, err := s.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", key, err)
	}
	ttl, err := s.rdb.PTTL(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("PTTL %s: %w", key, err)
	}
	return &keyInfo{Key: key, Value: v, TTLms: msOrNone(ttl)}, nil
}

// overrideOf is the override key's value of base, "" when absent or not
// read.
func (s *session) overrideOf(ctx context.Context, rule *config.Rule, base string) string {
	if !rule.OverridesEnabled() {
		return ""
	}
	k, err := s.current(ctx, keyspace.OverrideKey(base))
	if err != nil || k == nil {
		return ""
	}
	return k.Value
}

// overrideLimits renders an override key's value as the JSON array of
// limits an operator gives override set, equivalent to what was given: a
// funnel as capacity and one unit per interval, windows as durations.
// A value it cannot read is shown as it is.
func overrideLimits(value string) string {
	ls, err := algorithms.DecodeOverride(value)
	if err != nil {
		return value
	}
	items := make([]string, len(ls))
	for i, l := range ls {
		switch l.Algorithm {
		case algorithms.Funnel:
			_, fill := l.Policy()
			items[i] = fmt.Sprintf(`{"algorithm":"funnel","capacity":%d,"rate":1,"period":%q}`, l.Burst, fmtDuration(fill/time.Duration(l.Burst)))
		case algorithms.Concurrency:
			items[i] = fmt.Sprintf(`{"algorithm":"concurrency","limit":%d,"max_duration":%q}`, l.Rate, fmtDuration(l.Period))
		case algorithms.CalendarWindow:
			items[i] = fmt.Sprintf(`{"algorithm":"calendar","limit":%d,"period":%q}`, l.Rate, l.Calendar.Unit)
		default:
			items[i] = fmt.Sprintf(`{"algorithm":%q,"limit":%d,"window":%q}`, l.Algorithm, l.Rate, fmtDuration(l.Period))
		}
	}
	return "[" + strings.Join(items, ",") + "]"
}

// fmtDuration writes d as config.ParseDuration reads it, in its largest
// whole units: 1m, 90s, 1d, 2w, 1d12h, 250ms.
func fmtDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	units := []struct {
		name string
		d    time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
		{"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", 1}}
	var b strings.Builder
	for _, u := range units {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

// compactJSON is the JSON an operator gave, without its insignificant
// spaces (it parsed already).
func compactJSON(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}
