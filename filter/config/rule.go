package config

import (
	"slices"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/pathnorm"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

func parseRule(v jsonvalue.Value, path string) (Rule, error) {
	r := Rule{}
	o, err := fields(v, path, "name", "match", "key", "on_missing_key", "limits", "tiers", "overrides", "cost", "response_cost", "shadow", "manual_block", "lease", "throttle", "on_limit", "near_limit", "max_request_body_bytes", "on_unreadable_body", "refusal_status", "jsonrpc")
	if err != nil {
		return r, err
	}
	if r.Name, err = str(o["name"], path+".name", ""); err != nil {
		return r, err
	}
	if !validName(r.Name) {
		return r, errAt(path+".name", "must be 1-64 characters of A-Z a-z 0-9 _ . -")
	}
	// jsonrpc first: match.call, the call source and cost tables need it.
	if v := o["jsonrpc"]; v.Exists() {
		if r.JSONRPC, err = parseJSONRPC(v, path+".jsonrpc"); err != nil {
			return r, err
		}
	}
	// A feature's parser runs only for a field that is set: V8 compiles a
	// function when it first runs, at the first VM's configure.
	if v := o["match"]; v.Exists() {
		if r.Match, err = parseMatch(v, path+".match", r.JSONRPC != nil); err != nil {
			return r, err
		}
	}
	if r.Key, err = parseKey(o["key"], path+".key", r.JSONRPC != nil); err != nil {
		return r, err
	}
	missing, err := enum(o["on_missing_key"], path+".on_missing_key", "skip", "skip", "deny", "shared")
	if err != nil {
		return r, err
	}
	r.OnMissing = map[string]MissingKey{"skip": MissingSkip, "deny": MissingDeny, "shared": MissingShared}[missing]
	switch {
	case o["limits"].Exists() && o["tiers"].Exists():
		return r, errAt(path+".tiers", "limits and tiers are exclusive: each tier has its limits")
	case o["tiers"].Exists():
		if r.Tiers, err = parseTiers(o["tiers"], path+".tiers", r.Name, len(r.Key)); err != nil {
			return r, err
		}
		r.Limits = r.Tiers.Levels[0].Limits
	default:
		if r.Limits, err = parseLimits(o["limits"], path+".limits", r.Name); err != nil {
			return r, err
		}
	}
	if r.Overrides, err = boolean(o["overrides"], path+".overrides", false); err != nil {
		return r, err
	}
	if r.JSONRPC != nil {
		if err := notWithJSONRPC(o, path, &r); err != nil {
			return r, err
		}
	}
	r.Cost = Cost{Default: 1}
	if v := o["cost"]; v.Exists() {
		r.Cost, err = parseCost(v, path+".cost", &r)
	} else {
		err = checkCosts(path+".cost", 1, r.Limits)
	}
	if err == nil && r.JSONRPC != nil {
		err = checkCallMatches(&r, path)
	}
	if err != nil {
		return r, err
	}
	if v := o["response_cost"]; v.Exists() {
		if r.Response, err = parseResponseCost(v, path+".response_cost"); err != nil {
			return r, err
		}
	}
	if r.Response != nil || r.Tiers != nil {
		if err := checkShares(o, path, &r); err != nil {
			return r, err
		}
	}
	if r.Shadow, err = boolean(o["shadow"], path+".shadow", false); err != nil {
		return r, err
	}
	if r.ManualBlock, err = boolean(o["manual_block"], path+".manual_block", true); err != nil {
		return r, err
	}
	if err := parseRuleOptions(o, path, &r); err != nil {
		return r, err
	}
	return r, nil
}

// parseRuleOptions reads a rule's optional features, each only when its
// field is set (else its zero value or default).
func parseRuleOptions(o map[string]jsonvalue.Value, path string, r *Rule) (err error) {
	r.MaxRequestBodyBytes, r.RefusalStatus = DefaultMaxRequestBodyBytes, DefaultRefusalStatus
	if v := o["lease"]; v.Exists() {
		if r.Lease, err = parseLease(v, path+".lease", r); err != nil {
			return err
		}
	}
	if v := o["throttle"]; v.Exists() {
		if r.Throttle, err = parseThrottle(v, path+".throttle", r); err != nil {
			return err
		}
	}
	if v := o["on_limit"]; v.Exists() {
		if r.OnLimit, err = parseOnLimit(v, path+".on_limit", r); err != nil {
			return err
		}
	}
	if v := o["near_limit"]; v.Exists() {
		if r.NearLimit, err = parseNearLimit(v, path+".near_limit"); err != nil {
			return err
		}
	}
	if v := o["max_request_body_bytes"]; v.Exists() {
		if r.MaxRequestBodyBytes, err = parseMaxRequestBody(v, path+".max_request_body_bytes", r); err != nil {
			return err
		}
	}
	if v := o["on_unreadable_body"]; v.Exists() {
		if r.OnUnreadableBody, err = parseUnreadableBody(v, path+".on_unreadable_body", r); err != nil {
			return err
		}
	}
	if v := o["refusal_status"]; v.Exists() {
		if r.RefusalStatus, err = parseRefusalStatus(v, path+".refusal_status", r); err != nil {
			return err
		}
	}
	return nil
}

// checkShares checks, for a rule with response_cost or tiers, that each
// limit (of every tier) can take the request's share: the reservation or
// the cost.
func checkShares(o map[string]jsonvalue.Value, path string, r *Rule) error {
	if r.Response != nil {
		if o["cost"].Exists() {
			return errAt(path+".cost", "cost and response_cost are exclusive: the request's share is response_cost.reserve")
		}
		at := path + ".response_cost.reserve"
		if o["response_cost"].Get("reserve").IsObject() {
			at += ".default"
		}
		for i, l := range r.Limits {
			if err := l.Limit.CheckCost(r.Response.DefaultReservation()); err != nil {
				return costError(at, i, err)
			}
		}
	}
	if r.Tiers != nil {
		def, at := r.Cost.Default, path+".cost"
		if o["cost"].IsObject() {
			at += ".default"
		}
		if r.Response != nil {
			def, at = r.Response.DefaultReservation(), path+".response_cost.reserve"
			if o["response_cost"].Get("reserve").IsObject() {
				at += ".default"
			}
		}
		for _, level := range r.Tiers.Levels[1:] {
			for i, l := range level.Limits {
				if err := l.Limit.CheckCost(def); err != nil {
					return costError(at, i, err)
				}
			}
		}
	}
	if r.Response != nil {
		r.Response.setMaxCost(r)
	}
	return nil
}

// DefaultRefusalStatus is a rule's refusal_status when unset: 400 Bad
// Request, as a body the filter cannot read gets (but for its size or
// lateness: 413, 408).
const DefaultRefusalStatus = 400

// parseRefusalStatus reads a rule's refusal_status, a client error (400 to
// 499), which only a rule that can refuse a request for its content takes.
func parseRefusalStatus(v jsonvalue.Value, path string, r *Rule) (int, error) {
	if v.Exists() && !r.RefusesContent() {
		return 0, errAt(path, "only for a rule that can refuse a request for its content (on_missing_key: deny, a cost header, response_cost, or jsonrpc), not a shadow rule")
	}
	n, err := integer(v, path, DefaultRefusalStatus, 400, 499)
	return int(n), err
}

// RefusesContent reports whether the rule can refuse a request for what it
// holds, with RefusalStatus: a key part missing under on_missing_key:
// deny, a cost header above a limit's capacity, or a response_cost
// reservation above it, or a model its price table refuses; for a
// jsonrpc rule, also a batch's cost above a capacity, more keys than
// max_keys, or a name its cost table refuses.
func (r *Rule) RefusesContent() bool {
	return !r.Shadow && (r.OnMissing == MissingDeny || r.Cost.Header != "" || r.Response != nil || r.JSONRPC != nil)
}

// parseMatch reads a rule's match; rpc says the rule has jsonrpc, which
// match.call needs.
func parseMatch(v jsonvalue.Value, path string, rpc bool) (Match, error) {
	m := Match{}
	if !v.Exists() {
		return m, nil
	}
	o, err := fields(v, path, "path", "path_prefix", "methods", "hosts", "headers", "body", "call")
	if err != nil {
		return m, err
	}
	if m.Path, err = str(o["path"], path+".path", ""); err != nil {
		return m, err
	}
	if m.PathPrefix, err = str(o["path_prefix"], path+".path_prefix", ""); err != nil {
		return m, err
	}
	for _, p := range [][2]string{{"path", m.Path}, {"path_prefix", m.PathPrefix}} {
		if p[1] != "" && !strings.HasPrefix(p[1], "/") {
			return m, errAt(path+"."+p[0], "must start with /")
		}
		if n := pathnorm.Normalize(p[1]); n != p[1] {
			return m, errAt(path+"."+p[0], "must be a normalized path, as requests are matched on theirs: %q", n)
		}
	}
	if m.Path != "" && m.PathPrefix != "" {
		return m, errAt(path, "path and path_prefix are exclusive")
	}
	if m.Methods, err = strList(o["methods"], path+".methods"); err != nil {
		return m, err
	}
	for i, meth := range m.Methods {
		if meth == "" || strings.ToUpper(meth) != meth {
			return m, errAt(format.Sprintf("%s.methods[%d]", path, i), "must be an upper-case method such as GET")
		}
	}
	if m.Hosts, err = strList(o["hosts"], path+".hosts"); err != nil {
		return m, err
	}
	for i, h := range m.Hosts {
		if h == "" {
			return m, errAt(format.Sprintf("%s.hosts[%d]", path, i), "must not be empty")
		}
		m.Hosts[i] = strings.ToLower(h)
	}
	if m.Headers, err = parseHeaderMatches(o["headers"], path+".headers"); err != nil {
		return m, err
	}
	if rpc && o["body"].Exists() {
		return m, errAt(path+".body", "not with jsonrpc: a batch's body is an array, which a body path misses, so the batch would skip the rule; use match.call")
	}
	if m.Body, err = parseBodyMatches(o["body"], path+".body"); err != nil {
		return m, err
	}
	if c := o["call"]; c.Exists() {
		if !rpc {
			return m, errAt(path+".call", "only for a rule with jsonrpc")
		}
		if m.Call, err = parseCallMatches(c, path+".call"); err != nil {
			return m, err
		}
	}
	return m, nil
}

const maxKeyParts = 8

// parseKey reads a rule's key; rpc says the rule has jsonrpc, which the
// call source needs.
func parseKey(v jsonvalue.Value, path string, rpc bool) ([]KeyPart, error) {
	if !v.Exists() {
		return nil, errAt(path, "required")
	}
	if !v.IsArray() || len(v.Array()) == 0 || len(v.Array()) > maxKeyParts {
		return nil, errAt(path, "must be an array of 1 to %d key parts", maxKeyParts)
	}
	var parts []KeyPart
	for i, p := range v.Array() {
		at := elem(path, i)
		o, err := fields(p, at, "source", "name", "value", "path", "payload_in_metadata", "ipv4_prefix_len", "ipv6_prefix_len")
		if err != nil {
			return nil, err
		}
		src, err := enum(o["source"], at+".source", "", sourceNames[1:]...)
		if err != nil {
			return nil, err
		}
		if src == "" {
			return nil, errAt(at+".source", "required")
		}
		if src == "call" && !rpc {
			return nil, errAt(at+".source", "call is only for a rule with jsonrpc")
		}
		if src == "body" && rpc {
			return nil, errAt(at+".source", "body is not for a jsonrpc rule: a batch's body is an array, which a body path misses, so the batch would skip the rule; use source call")
		}
		part, err := parseKeyPart(o, at, KeySource(slices.Index(sourceNames, src)))
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// paramFields names the fields behind a limit's parameters, for error
// messages: a funnel's ParamBurst is "capacity".
type paramFields struct{ rate, burst, period, zone, weekStart string }

// of is the field behind p, if any.
func (f paramFields) of(p algorithms.Param) (string, bool) {
	var s string
	switch p {
	case algorithms.ParamRate:
		s = f.rate
	case algorithms.ParamBurst:
		s = f.burst
	case algorithms.ParamPeriod:
		s = f.period
	case algorithms.ParamZone:
		s = f.zone
	case algorithms.ParamWeekStart:
		s = f.weekStart
	}
	return s, s != ""
}

// limitFields are, per configured algorithm, the fields behind its
// parameters: static data, not a map that every VM would build at start.
var limitFields = [...]struct {
	algo string
	paramFields
}{
	{"sliding_log", paramFields{rate: "limit", burst: "limit", period: "window"}},
	{"sliding_counter", paramFields{rate: "limit", burst: "limit", period: "window"}},
	{"funnel", paramFields{rate: "rate", burst: "capacity", period: "period"}},
	{"token_bucket", paramFields{rate: "refill", burst: "capacity", period: "period"}},
	{"concurrency", paramFields{rate: "limit", burst: "limit", period: "max_duration"}},
	{"calendar", paramFields{rate: "limit", burst: "limit", period: "period", zone: "time_zone", weekStart: "week_starts"}},
}

// fieldsOf is algo's paramFields (none for an unknown algorithm).
func fieldsOf(algo string) paramFields {
	for _, f := range limitFields {
		if f.algo == algo {
			return f.paramFields
		}
	}
	return paramFields{}
}

const maxLimitsPerRule = MaxRequestLimits
