package filter

import (
	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// metrics are the plugin's proxy-wasm metrics; Envoy exports them with the
// prefix "wasmcustom.".
type metrics struct {
	rules       []ruleMetrics
	redisErrors Counter   // ratelimit.redis.errors: failed, timed-out or unexpected calls
	noscript    Counter   // ratelimit.redis.noscript: EVALSHA fallbacks to EVAL
	latency     Histogram // ratelimit.redis.latency_ms: callout round trip, sampled (sampleLatency)
	failOpen    Counter   // ratelimit.failure_mode.allowed
	failClosed  Counter   // ratelimit.failure_mode.denied
	pending     Gauge     // ratelimit.redis.pending: calls awaiting a reply
	opened      Counter   // ratelimit.circuit_breaker.opened
	skipped     Counter   // ratelimit.circuit_breaker.skipped: calls not sent while open
	cacheHits   Counter   // ratelimit.deny_cache.hits: denials answered without Redis
	abandoned   Counter   // ratelimit.streams.abandoned: released after the proxy deleted them
	// unreadableBody: ratelimit.request_body.unreadable, requests whose
	// body a rule that reads it could not read (on_unreadable_body).
	unreadableBody Counter
	// jsonrpc counts the JSON-RPC calls read; nil without a jsonrpc rule.
	jsonrpc *jsonrpcMetrics
	// replies counts decision replies, for sampleLatency.
	replies uint32
}

// latencyEvery: one decision reply in latencyEvery has its round trip
// recorded in ratelimit.redis.latency_ms, as are all failed calls. Reading
// the clock at the reply is a host call, and recording a value is another;
// a sample of 1 in 16 keeps the histogram's shape at, say, 1,000 decisions
// a second per worker (62 values a second).
const latencyEvery = 16

// sampleLatency reports whether this reply's round trip is recorded: the
// first, then one in latencyEvery.
func (m *metrics) sampleLatency() bool {
	m.replies++
	return m.replies%latencyEvery == 1
}

// jsonrpcMetrics are ratelimit.jsonrpc.calls, the calls read from
// request bodies, and ratelimit.jsonrpc.batches, the bodies that were
// arrays.
type jsonrpcMetrics struct {
	calls, batches Counter
}

// ruleMetrics count each request a rule decided, by outcome:
// ratelimit.rule.<name>.allowed|denied|would_deny|blocked (see
// config.RuleMetricName), and the admissions near a limit (near_limit).
type ruleMetrics struct {
	allowed, denied, shadowDenied, blocked, nearLimit Counter
	// degraded counts an on_limit degrade rule's spent requests; nil for
	// other rules.
	degraded Counter
	// response counts a response_cost rule's settling; nil for others.
	response *responseMetrics
	// slots count a rule's concurrency releases; nil without concurrency
	// limits.
	slots *slotMetrics
}

// responseMetrics are ratelimit.rule.<name>.<event> of a response_cost
// rule: units charged and refunded at settle, units charged beyond
// capacity, the responses that fell back to on_missing or on_reset, and
// those a priced rule charged at its table's dearest prices (a model not
// listed, under refuse).
type responseMetrics struct {
	charged, refunded, overdrawn, usageMissing, streamReset, modelUnlisted Counter
}

// slotMetrics are ratelimit.rule.<name>.<event> of a rule with concurrency
// limits: releases that failed (their slots expire after max_duration),
// and releases that found their slot gone (held past max_duration, or
// lost by Redis).
type slotMetrics struct {
	releasesFailed, expired Counter
}

func newMetrics(cfg *config.Config, h PluginHost) metrics {
	m := metrics{
		redisErrors: h.Counter("ratelimit.redis.errors"),
		noscript:    h.Counter("ratelimit.redis.noscript"),
		latency:     h.Histogram("ratelimit.redis.latency_ms"),
		failOpen:    h.Counter("ratelimit.failure_mode.allowed"),
		failClosed:  h.Counter("ratelimit.failure_mode.denied"),
		pending:     h.Gauge("ratelimit.redis.pending"),
		opened:      h.Counter("ratelimit.circuit_breaker.opened"),
		skipped:     h.Counter("ratelimit.circuit_breaker.skipped"),
		cacheHits:   h.Counter("ratelimit.deny_cache.hits"),
		abandoned:   h.Counter("ratelimit.streams.abandoned"),

		unreadableBody: h.Counter("ratelimit.request_body.unreadable"),
	}
	for _, r := range cfg.Rules {
		if r.JSONRPC != nil && m.jsonrpc == nil {
			m.jsonrpc = &jsonrpcMetrics{calls: h.Counter("ratelimit.jsonrpc.calls"), batches: h.Counter("ratelimit.jsonrpc.batches")}
		}
		m.rules = append(m.rules, ruleMetrics{
			allowed:      h.Counter(config.RuleMetricName(r.Name, config.OutcomeAllowed)),
			denied:       h.Counter(config.RuleMetricName(r.Name, config.OutcomeDenied)),
			shadowDenied: h.Counter(config.RuleMetricName(r.Name, config.OutcomeWouldDeny)),
			blocked:      h.Counter(config.RuleMetricName(r.Name, config.OutcomeBlocked)),
			nearLimit:    h.Counter(config.RuleMetricName(r.Name, config.EventNearLimit)),
		})
		if r.OnLimit.Degrade {
			m.rules[len(m.rules)-1].degraded = h.Counter(config.RuleMetricName(r.Name, config.OutcomeDegraded))
		}
		if r.Response != nil {
			m.rules[len(m.rules)-1].response = &responseMetrics{
				charged:      h.Counter(config.RuleMetricName(r.Name, config.EventCharged)),
				refunded:     h.Counter(config.RuleMetricName(r.Name, config.EventRefunded)),
				overdrawn:    h.Counter(config.RuleMetricName(r.Name, config.EventOverdrawn)),
				usageMissing: h.Counter(config.RuleMetricName(r.Name, config.EventUsageMissing)),
				streamReset:  h.Counter(config.RuleMetricName(r.Name, config.EventStreamReset)),
			}
			if r.Response.Price != nil {
				m.rules[len(m.rules)-1].response.modelUnlisted = h.Counter(config.RuleMetricName(r.Name, config.EventModelUnlisted))
			}
		}
		if r.HasConcurrency() {
			m.rules[len(m.rules)-1].slots = &slotMetrics{
				releasesFailed: h.Counter(config.RuleMetricName(r.Name, config.EventReleasesFailed)),
				expired:        h.Counter(config.RuleMetricName(r.Name, config.EventSlotsExpired)),
			}
		}
	}
	return m
}

// count counts what one settle applied: a charge (and how much of it
// overdrew the limit) or a refund.
func (m *responseMetrics) count(r algorithms.Settled) {
	switch {
	case r.Applied > 0:
		m.charged.Increment(uint64(r.Applied))
		if r.Remaining < 0 {
			m.overdrawn.Increment(uint64(min(r.Applied, -r.Remaining)))
		}
	case r.Applied < 0:
		m.refunded.Increment(uint64(-r.Applied))
	}
}
