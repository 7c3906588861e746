// Package config parses the rate-limit filter's JSON configuration into
// Config, purely and deterministically: package jsonvalue reads bytes
// package jsonbound has checked, unknown keys are refused, and every error names
// its field ("rules[1].limits[0].window: must be > 0"). testdata/invalid
// holds one configuration per error with its exact message. It also
// holds the rules' derived facts the runtime reads (Rule.Levels,
// Rule.TierLimits, Rule.ChosenInRedis, Rule.HasConcurrency ...), the
// metric-name rules (names.go) and an operator's override (ParseOverride).
// Package filter runs a Config; package keyspace builds its keys;
// ratelimitctl and the schema tests read it without the runtime.
package config

import (
	"errors"
	"math"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// Config is the filter's parsed configuration. See README.md for the JSON.
type Config struct {
	Redis RedisConfig
	// FailOpen admits requests when Redis cannot decide (default true);
	// otherwise they get FailureStatus (default 503), unless Local is set.
	FailOpen      bool
	FailureStatus int
	// Local, for failure_mode: local, has each VM decide alone instead.
	Local *LocalFallback
	// RejectStatus answers a rate-limited or blocked request (default 429).
	RejectStatus int
	Headers      HeaderStyle
	// TrustedHops is how many trusted proxies in front of this one append
	// to X-Forwarded-For, counted as Envoy's xff_num_trusted_hops with
	// use_remote_address: true (see request.clientIP). 0 (default, and
	// the recommended setting) takes the client IP from source.address,
	// which the proxy computed with its own trusted hops.
	TrustedHops int
	// Breaker skips Redis after consecutive failures.
	Breaker BreakerConfig
	// DenyCacheKeys bounds the per-VM cache of denied keys (default
	// 10000; 0 disables it).
	DenyCacheKeys int
	// NearLimitRatio is near_limit_ratio in millionths (default 800000,
	// 0.8): an admission whose limit has used more than this share of
	// its quota counts in ratelimit.rule.<name>.near_limit. With a limit
	// of 10 and 0.8, the 9th and 10th requests of a window count.
	NearLimitRatio int64
	// DecisionState: each decided request's rule, limit and outcome go to
	// the proxy's filter state wasm.ratelimit.decision, for access logs
	// (decision_filter_state, default true): one host call per request.
	DecisionState bool
	// BodyWhileHeadersPaused (body_while_headers_paused, default false)
	// says the proxy delivers the request body to a filter whose request
	// headers are paused: Envoy >= 1.35 with
	// allow_on_headers_stop_iteration, or Higress. A configuration with
	// an on_limit degrade rule and a rule that keys or matches on the body
	// needs it: the headers then wait for the body, so that the degrade
	// header is set before the proxy routes (checkDegradeBody).
	BodyWhileHeadersPaused bool
	// Rules is empty when the configuration holds only _rules_: then
	// nothing is limited unless one of MatchRules matches.
	Rules []Rule
	// Quota, when set, is the path the filter answers with the caller's
	// remaining quota (quota_endpoint, quota.go).
	Quota *QuotaEndpoint
	// MatchRules are Higress's per-route configurations (_rules_, from a
	// WasmPlugin's matchRules); see match_rules.go.
	MatchRules []MatchRule
}

// BreakerConfig is the circuit breaker: after Failures consecutive Redis
// failures, calls are not sent for Backoff and the failure mode applies at
// once; then calls go through again, and one more failure reopens it.
type BreakerConfig struct {
	Failures int           // default 5; 0 disables the breaker
	Backoff  time.Duration // default 1s
}

// Transport is how the filter reaches Redis.
type Transport uint8

const (
	// TransportRedisABI uses the Redis callout ABI of Higress's Envoy build.
	TransportRedisABI Transport = iota
	// TransportWebdis uses HTTP callouts to a Webdis gateway: any Envoy.
	TransportWebdis
)

func (t Transport) String() string {
	if t == TransportWebdis {
		return "webdis"
	}
	return "redis_abi"
}

// RedisConfig says how to reach Redis through the proxy.
type RedisConfig struct {
	Transport Transport // default TransportRedisABI
	// Cluster is the proxy's cluster for Redis (redis_abi) or for Webdis
	// (webdis); required, except with Nodes, which refuses it.
	Cluster string
	// Username and Password are sent as AUTH (redis_abi) or as HTTP basic
	// authentication to Webdis (webdis).
	Username string
	Password string
	// Authority is the Host header of calls to Webdis (default: Cluster),
	// and Path the path Webdis serves on (default "/").
	Authority string
	Path      string
	Timeout   time.Duration // default 200ms
	Database  int           // default 0
	Prefix    string        // default "rl:"
	// ClusterMode sends one call per hash tag, for Redis Cluster behind the
	// proxy; otherwise a request's limits go in one call (default false).
	ClusterMode bool
	// FlushTimeout is how long Higress's client may hold a call in its
	// write buffer (redis_abi; see InitCluster): default 0.
	FlushTimeout time.Duration
	// Command is how calls name the library's code: algorithms.FCall (the
	// default, "fcall": the operator loads the library, and the filter's
	// credential needs no EVAL), or algorithms.EvalSHA ("evalsha", with
	// EVAL after -NOSCRIPT) for a path that cannot carry FCALL, such as
	// Envoy's redis_proxy in front of Redis Cluster.
	Command algorithms.Invoke
	// Nodes are a Redis Cluster's nodes, each behind a Webdis of its own
	// (webdis with ClusterMode only): a call goes to its slot's node.
	// nil without redis.nodes.
	Nodes []RedisNode
	// SlotMapRefresh is how often a VM reloads the slot map (CLUSTER
	// NODES): 30s by default with Nodes, else 0.
	SlotMapRefresh time.Duration
}

// RedisNode is a Redis Cluster node and the Webdis in front of it.
type RedisNode struct {
	Address   string // "host:port" as the node announces itself (CLUSTER NODES, -MOVED)
	Cluster   string // the proxy's cluster (Envoy) that reaches this node's Webdis
	Authority string // :authority for that Webdis; defaults to Cluster
}

// HeaderStyle chooses the rate-limit response headers.
type HeaderStyle uint8

const (
	HeadersDraft10 HeaderStyle = iota // RateLimit-Policy and RateLimit (IETF draft 10)
	HeadersLegacy                     // X-RateLimit-Limit, -Remaining, -Reset
	HeadersBoth
	HeadersNone
)

// Parse parses and validates the plugin configuration. It rejects
// unknown fields and bad values with an error naming the field, such as
// "rules[1].limits[0].window: must be > 0".
func Parse(data []byte) (*Config, error) {
	if err := jsonbound.Check(data); err != nil {
		return nil, notJSON("configuration", err)
	}
	root := jsonvalue.ParseBytes(data)
	if !root.IsObject() {
		return nil, errors.New("configuration: must be a JSON object")
	}
	if rest, rules, err := splitFields(root, "", rulesKey); err != nil || rules[0].Exists() {
		if err != nil {
			return nil, err
		}
		return parseWithMatchRules(rest, rules[0])
	}
	return parseConfig(root)
}

// parseConfig parses one configuration object without _rules_.
func parseConfig(root jsonvalue.Value) (*Config, error) {
	o, err := fields(root, "", "redis", "rules", "failure_mode", "failure_status", "rejected_status", "headers", "xff_trusted_hops", "circuit_breaker", "deny_cache", "local_fallback", "near_limit_ratio", "decision_filter_state", "quota_endpoint", "body_while_headers_paused")
	if err != nil {
		return nil, err
	}
	c := &Config{FailOpen: true}
	if c.Redis, err = parseRedis(o["redis"], "redis"); err != nil {
		return nil, err
	}
	if o["failure_mode"].Exists() || o["local_fallback"].Exists() {
		if err := parseFailureMode(o, c); err != nil {
			return nil, err
		}
	}
	if c.FailureStatus, err = status(o["failure_status"], "failure_status", 503); err != nil {
		return nil, err
	}
	if c.RejectStatus, err = status(o["rejected_status"], "rejected_status", 429); err != nil {
		return nil, err
	}
	style, err := enum(o["headers"], "headers", "draft10", "draft10", "legacy", "both", "none")
	if err != nil {
		return nil, err
	}
	c.Headers = map[string]HeaderStyle{"draft10": HeadersDraft10, "legacy": HeadersLegacy, "both": HeadersBoth, "none": HeadersNone}[style]
	hops, err := integer(o["xff_trusted_hops"], "xff_trusted_hops", 0, 0, 16)
	if err != nil {
		return nil, err
	}
	c.TrustedHops = int(hops)
	c.Breaker = BreakerConfig{Failures: 5, Backoff: time.Second}
	if v := o["circuit_breaker"]; v.Exists() {
		if c.Breaker, err = parseBreaker(v, "circuit_breaker"); err != nil {
			return nil, err
		}
	}
	c.DenyCacheKeys = 10000
	if dc := o["deny_cache"]; dc.Exists() {
		do, err := fields(dc, "deny_cache", "max_keys")
		if err != nil {
			return nil, err
		}
		keys, err := integer(do["max_keys"], "deny_cache.max_keys", 10000, 0, 1<<20)
		if err != nil {
			return nil, err
		}
		c.DenyCacheKeys = int(keys)
	}
	if c.NearLimitRatio, err = nearLimitRatio(o["near_limit_ratio"]); err != nil {
		return nil, err
	}
	if c.DecisionState, err = boolean(o["decision_filter_state"], "decision_filter_state", true); err != nil {
		return nil, err
	}
	if c.BodyWhileHeadersPaused, err = boolean(o["body_while_headers_paused"], "body_while_headers_paused", false); err != nil {
		return nil, err
	}
	rules := o["rules"]
	if !rules.Exists() {
		return nil, errAt("rules", "required")
	}
	if !rules.IsArray() || len(rules.Array()) == 0 {
		return nil, errAt("rules", "must be a non-empty array")
	}
	seen := map[string]bool{}
	for i, r := range rules.Array() {
		path := elem("rules", i)
		rule, err := parseRule(r, path)
		if err != nil {
			return nil, err
		}
		if seen[rule.Name] {
			return nil, errAt(path+".name", "duplicate rule name %q", rule.Name)
		}
		seen[rule.Name] = true
		c.Rules = append(c.Rules, rule)
	}
	if err := checkRuleNames(c.Rules, "rules"); err != nil {
		return nil, err
	}
	if err := checkRequestLimits(c.Rules, "rules"); err != nil {
		return nil, err
	}
	if err := checkBatchStates(c.Rules, "rules"); err != nil {
		return nil, err
	}
	if c.Local != nil {
		if err := checkLocalLimits(c); err != nil {
			return nil, err
		}
	}
	if c.Redis.ClusterMode {
		if err := checkClusterThrottles(c); err != nil {
			return nil, err
		}
	}
	if err := checkDegradeBody(c); err != nil {
		return nil, err
	}
	if v := o["quota_endpoint"]; v.Exists() {
		if c.Quota, err = parseQuotaEndpoint(v, c.Rules); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// nearLimitRatio reads near_limit_ratio, a share of a limit from 0.000001
// to 0.999999, in millionths.
func nearLimitRatio(v jsonvalue.Value) (int64, error) {
	if !v.Exists() {
		return 800_000, nil
	}
	if v.Type != jsonvalue.Number || v.Num < 0.000001 || v.Num > 0.999999 {
		return 0, errAt("near_limit_ratio", "must be a number from 0.000001 to 0.999999 (the share of a limit used past which an admission counts as near_limit)")
	}
	return int64(math.Round(v.Num * shareUnit)), nil
}

func parseBreaker(v jsonvalue.Value, path string) (BreakerConfig, error) {
	b := BreakerConfig{Failures: 5, Backoff: time.Second}
	if !v.Exists() {
		return b, nil
	}
	o, err := fields(v, path, "failures", "backoff")
	if err != nil {
		return b, err
	}
	n, err := integer(o["failures"], path+".failures", 5, 0, 1000)
	if err != nil {
		return b, err
	}
	b.Failures = int(n)
	if b.Backoff, err = duration(o["backoff"], path+".backoff", time.Second); err != nil {
		return b, err
	}
	if b.Backoff <= 0 || b.Backoff > 10*time.Minute {
		return b, errAt(path+".backoff", "must be > 0 and <= 10m")
	}
	return b, nil
}
