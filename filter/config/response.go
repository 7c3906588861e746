package config

import (
	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"strconv"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
	"github.com/redisrate/envoy-redis-ratelimit/filter/usage"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// ResponseCost charges a rule's limits what the response says: a header,
// usage in a JSON body or in server-sent events, or the response status.
// At the request each limit reserves Reserve, or checks only when it is 0;
// when the response ends one more script call settles the difference.
type ResponseCost struct {
	// Header is a response header holding the cost; "" when none.
	Header string
	// Usage are the fields of a JSON body or of SSE events whose sum is
	// the cost; nil when none. Preset is the usage preset's name, "" for
	// json's own fields.
	Usage  *usage.Fields
	Preset string
	// Statuses: the cost is charged only when the response status is in
	// one of these ranges (inclusive); any other status costs 0. Empty:
	// every status. With no Header and no Usage the cost is 1.
	Statuses []StatusRange
	Reserve  Estimate
	// OnMissing is what a complete response costs when it carries no
	// usable cost; OnReset what a stream that ends without a complete
	// response costs (reset, or the client went away), whether or not
	// its response headers had come.
	OnMissing, OnReset Fallback
	// Default is the cost of the Fallback FallbackDefault.
	Default int64
	// MaxCost bounds what one response is charged: by default the
	// largest capacity of the rule's limits, so that one response cannot
	// put a key deeper in debt than one full budget.
	MaxCost int64
	// MaxBodyBytes bounds the JSON body kept to read usage from.
	MaxBodyBytes int
	// Price, when set, turns the usage's tokens into money (price.go): the
	// cost is then in Price.Unit, and Reserve counts output tokens.
	Price *price.Table
}

// StatusRange is a range of HTTP statuses, From <= status <= To.
type StatusRange struct{ From, To int }

// Estimate is what a request reserves at admission: the value of Header
// when it holds a non-negative integer, else Default. 0 checks only: the
// request is admitted while at least one unit is left, and charged nothing
// until the response.
type Estimate struct {
	Header string
	// Body is a field of the request's JSON body, such as max_tokens: the
	// decision then waits for the whole body (see Stream.OnRequestBody).
	Body    string
	Default int64
}

// Fallback is what is charged when a response gives no cost.
type Fallback uint8

const (
	FallbackReserved Fallback = iota + 1 // what was reserved: nothing to settle
	FallbackDefault                      // ResponseCost.Default
	FallbackNothing                      // 0: the reservation is refunded
	// FallbackEstimate, the default, charges what the request could
	// cost: with usage, the output tokens reserved and one input token per
	// byte of the request, priced as the reservation is; without usage,
	// the reservation.
	FallbackEstimate
)

const (
	defaultMaxBodyBytes = 1 << 20
	MaxResponseCost     = 1 << 40
)

func parseResponseCost(v jsonvalue.Value, path string) (*ResponseCost, error) {
	if !v.Exists() {
		return nil, nil
	}
	o, err := fields(v, path, "header", "usage", "json", "statuses", "reserve", "on_missing", "on_reset", "default", "max_body_bytes", "price", "max_cost")
	if err != nil {
		return nil, err
	}
	rc := &ResponseCost{}
	if rc.Header, err = str(o["header"], path+".header", ""); err != nil {
		return nil, err
	}
	if o["header"].Exists() && rc.Header == "" {
		return nil, errAt(path+".header", "must not be empty")
	}
	rc.Header = strings.ToLower(rc.Header)
	if rc.Usage, err = parseUsage(o["usage"], o["json"], path); err != nil {
		return nil, err
	}
	if o["usage"].Exists() {
		rc.Preset = o["usage"].Str
	}
	if rc.Header != "" && rc.Usage != nil {
		return nil, errAt(path, "header and usage/json are exclusive: the cost comes from one place")
	}
	if rc.Price, err = parsePrice(o["price"], path+".price"); err != nil {
		return nil, err
	}
	if rc.Price != nil && (rc.Usage == nil || !rc.Usage.HasKinds()) {
		return nil, errAt(path+".price", "needs usage: a preset, whose fields tell the kinds of tokens apart")
	}
	if rc.Statuses, err = parseStatuses(o["statuses"], path+".statuses"); err != nil {
		return nil, err
	}
	if rc.Header == "" && rc.Usage == nil && len(rc.Statuses) == 0 {
		return nil, errAt(path, "needs header, usage, json or statuses: where the response's cost comes from")
	}
	if rc.Reserve, err = parseEstimate(o["reserve"], path+".reserve"); err != nil {
		return nil, err
	}
	fallbacks := map[string]Fallback{"estimate": FallbackEstimate, "reserved": FallbackReserved, "default": FallbackDefault, "nothing": FallbackNothing}
	names := []string{"estimate", "reserved", "default", "nothing"}
	missing, err := enum(o["on_missing"], path+".on_missing", "estimate", names...)
	if err != nil {
		return nil, err
	}
	reset, err := enum(o["on_reset"], path+".on_reset", "estimate", names...)
	if err != nil {
		return nil, err
	}
	rc.OnMissing, rc.OnReset = fallbacks[missing], fallbacks[reset]
	if rc.Default, err = integer(o["default"], path+".default", 0, 0, MaxResponseCost); err != nil {
		return nil, err
	}
	if !o["default"].Exists() && (rc.OnMissing == FallbackDefault || rc.OnReset == FallbackDefault) {
		return nil, errAt(path+".default", `required when on_missing or on_reset is "default"`)
	}
	maxBody, err := integer(o["max_body_bytes"], path+".max_body_bytes", defaultMaxBodyBytes, 1, 64<<20)
	if err != nil {
		return nil, err
	}
	rc.MaxBodyBytes = int(maxBody)
	if rc.MaxCost, err = integer(o["max_cost"], path+".max_cost", 0, 1, MaxResponseCost); err != nil {
		return nil, err
	}
	return rc, nil
}

// parseUsage reads a preset name (usage) or a list of dotted paths (json).
func parseUsage(preset, paths jsonvalue.Value, path string) (*usage.Fields, error) {
	switch {
	case preset.Exists() && paths.Exists():
		return nil, errAt(path, "usage and json are exclusive: a preset, or your own fields")
	case preset.Exists():
		if preset.Type != jsonvalue.String {
			return nil, errAt(path+".usage", "must be a string")
		}
		f, ok := usage.Preset(preset.Str)
		if !ok {
			return nil, errAt(path+".usage", "unknown preset %q (want one of: %s)", preset.Str, strings.Join(usage.PresetNames(), ", "))
		}
		return f, nil
	case paths.Exists():
		list, err := strList(paths, path+".json")
		if err != nil {
			return nil, err
		}
		if len(list) == 0 || len(list) > 8 {
			return nil, errAt(path+".json", "must list 1 to 8 fields")
		}
		for i, p := range list {
			if p == "" || strings.ContainsAny(p, "#*?|@") {
				return nil, errAt(format.Sprintf("%s.json[%d]", path, i), "must be a dotted field path such as usage.total_tokens")
			}
		}
		return usage.Paths(list), nil
	}
	return nil, nil
}

// parseStatuses reads statuses such as [401, 403] or ["5xx"].
func parseStatuses(v jsonvalue.Value, path string) ([]StatusRange, error) {
	if !v.Exists() {
		return nil, nil
	}
	if !v.IsArray() || len(v.Array()) == 0 {
		return nil, errAt(path, `must be a non-empty array of statuses such as 401 or classes such as "5xx"`)
	}
	var out []StatusRange
	for i, s := range v.Array() {
		at := elem(path, i)
		switch {
		case s.Type == jsonvalue.Number:
			n, err := integer(s, at, 0, 100, 599)
			if err != nil {
				return nil, err
			}
			out = append(out, StatusRange{int(n), int(n)})
		case s.Type == jsonvalue.String && len(s.Str) == 3 && s.Str[0] >= '1' && s.Str[0] <= '5' && strings.ToLower(s.Str[1:]) == "xx":
			c := int(s.Str[0]-'0') * 100
			out = append(out, StatusRange{c, c + 99})
		default:
			return nil, errAt(at, `must be a status from 100 to 599 or a class "1xx" to "5xx"`)
		}
	}
	return out, nil
}

// parseEstimate reads reserve: a number, or {"header": ..., "default": ...}.
func parseEstimate(v jsonvalue.Value, path string) (Estimate, error) {
	e := Estimate{}
	var err error
	switch {
	case !v.Exists():
	case v.Type == jsonvalue.Number:
		e.Default, err = integer(v, path, 0, 0, MaxResponseCost)
	case v.IsObject():
		o, ferr := fields(v, path, "header", "body", "default")
		if ferr != nil {
			return e, ferr
		}
		if e.Header, err = str(o["header"], path+".header", ""); err != nil {
			return e, err
		}
		if e.Body, err = str(o["body"], path+".body", ""); err != nil {
			return e, err
		}
		switch {
		case e.Header != "" && e.Body != "":
			return e, errAt(path, "header and body are exclusive: the estimate comes from one place")
		case e.Header == "" && e.Body == "":
			return e, errAt(path, "needs header or body: where the estimate comes from")
		case e.Body != "" && strings.ContainsAny(e.Body, "#*?|@"):
			return e, errAt(path+".body", "must be a dotted field path such as max_tokens")
		}
		e.Header = strings.ToLower(e.Header)
		e.Default, err = integer(o["default"], path+".default", 0, 0, MaxResponseCost)
	default:
		err = errAt(path, "must be a number, or an object with header or body, and default")
	}
	return e, err
}

// setMaxCost makes the largest capacity of limits the ceiling of one
// response's charge, unless max_cost set one.
func (rc *ResponseCost) setMaxCost(r *Rule) {
	if rc.MaxCost > 0 {
		return
	}
	levels := []TierLimits{{Limits: r.Limits}}
	if r.Tiers != nil {
		levels = r.Tiers.Levels
	}
	for _, level := range levels {
		for _, l := range level.Limits {
			if l.Limit.Algorithm != algorithms.Concurrency {
				rc.MaxCost = max(rc.MaxCost, l.Limit.Burst)
			}
		}
	}
	if rc.MaxCost == 0 {
		rc.MaxCost = MaxResponseCost
	}
}

// DefaultReservation is what a request reserves when its estimate takes
// the default (and its size is unknown): with a price, the default's
// output tokens at the table's dearest output price.
func (rc *ResponseCost) DefaultReservation() int64 {
	if rc.Price == nil {
		return rc.Reserve.Default
	}
	return min(price.Estimate(rc.Price.Unit, &rc.Price.Bound, 0, rc.Reserve.Default), MaxResponseCost)
}

// ChargesStatus reports whether a response with this status is charged.
func (rc *ResponseCost) ChargesStatus(status int) bool {
	if len(rc.Statuses) == 0 {
		return true
	}
	for _, r := range rc.Statuses {
		if r.From <= status && status <= r.To {
			return true
		}
	}
	return false
}

// ParseCost reads a cost from a header value: a non-negative integer.
func ParseCost(v string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return min(n, MaxResponseCost), true
}
