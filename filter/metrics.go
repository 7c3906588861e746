package filter

// metrics are the plugin's proxy-wasm metrics; Envoy exports them with the
// prefix "wasmcustom.".
type metrics struct {
	rules       []ruleMetrics
	redisErrors Counter   // ratelimit.redis.errors: failed, timed-out or unexpected calls
	noscript    Counter   // ratelimit.redis.noscript: EVALSHA fallbacks to EVAL
	latency     Histogram // ratelimit.redis.latency_ms: callout round trip
	failOpen    Counter   // ratelimit.failure_mode.allowed
	failClosed  Counter   // ratelimit.failure_mode.denied
	pending     Gauge     // ratelimit.redis.pending: calls awaiting a reply
	opened      Counter   // ratelimit.circuit_breaker.opened
	skipped     Counter   // ratelimit.circuit_breaker.skipped: calls not sent while open
	cacheHits   Counter   // ratelimit.deny_cache.hits: denials answered without Redis
}

// ruleMetrics count each request a rule decided, by outcome:
// ratelimit.rule.<name>.allowed|denied|shadow_denied|blocked.
type ruleMetrics struct {
	allowed, denied, shadowDenied, blocked Counter
}

func newMetrics(cfg *Config, h PluginHost) metrics {
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
	}
	for _, r := range cfg.Rules {
		prefix := "ratelimit.rule." + r.Name + "."
		m.rules = append(m.rules, ruleMetrics{
			allowed:      h.Counter(prefix + "allowed"),
			denied:       h.Counter(prefix + "denied"),
			shadowDenied: h.Counter(prefix + "shadow_denied"),
			blocked:      h.Counter(prefix + "blocked"),
		})
	}
	return m
}
