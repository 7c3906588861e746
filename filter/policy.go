package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headerparts"
)

// policy is one configuration in one VM: the top-level configuration, or
// a Higress _rules_ entry's, each with its own state as if it were the
// only one (rule metrics, rendered headers, deny cache, circuit breaker,
// local limiter, leases). What every configuration shares (the Redis
// side, the streams, the throttle) is the VM's, vm.
type policy struct {
	vm  *Plugin
	cfg *config.Config
	// route is the _rules_ entry whose configuration this is; nil for
	// the top level.
	route   *config.MatchRule
	metrics metrics
	errLog  quietLog
	// modelLog says a priced response named a model not listed (money.go).
	modelLog quietLog
	// failureMode is what requests get while Redis cannot decide, as the
	// health lines say it (failureModeText).
	failureMode string
	// nearLimit is near_limit_ratio in millionths (see countNear).
	nearLimit int64
	// breakers are one circuit breaker per Redis node (redis.nodes),
	// one without: a dead master opens only its own slots'.
	breakers []breaker
	// denyCache answers keys Redis denied until their Retry-After; nil
	// when disabled.
	denyCache *denyCache
	// fallback decides while Redis cannot (failure_mode: local); else nil.
	fallback *localLimiter
	// bodyRules: a rule reads the request body (its key, match or
	// reservation; its model or stream_options unless headDecides).
	bodyRules bool
	// headDecides: a degrade rule's header routes the request and the
	// proxy does not deliver the body while the headers wait
	// (body_while_headers_paused), so the decision must not wait for the
	// body to read a model or set include_usage (money.go,
	// include_usage.go).
	headDecides bool
	// usageRules: a rule counts the response's usage (encoding.go).
	usageRules bool
	// degradeHeaders are the degrade rules' headers (degrade.go).
	degradeHeaders []string
	// headers are the header pieces of each rule, rendered once.
	headers []headerparts.Rule
	// leases are each rule's leases (nil for a rule without, or all nil).
	leases       []*leaseTable
	leaseMetrics leaseMetrics
	// steps are the steps a request under this policy may visit, the
	// union of each rule's, ruleSteps (steps.go).
	steps     steps
	ruleSteps []steps
}

// breaker counts consecutive failures; see BreakerConfig.
type breaker struct {
	failures  int
	openUntil time.Time
	// epoch counts the failures counted so far. A call remembers it when
	// sent, and its failure counts only if no other failure was counted
	// since: the calls one Redis timeout fails at once (Higress's client
	// fails every pending call of a connection together) count once.
	epoch uint64
}

func newPolicy(vm *Plugin, cfg *config.Config, route *config.MatchRule) *policy {
	host := vm.host
	p := &policy{vm: vm, cfg: cfg, route: route}
	p.metrics = newMetrics(cfg, host)
	p.errLog = quietLog{host: host, every: 10 * time.Second}
	p.modelLog = quietLog{host: host, every: time.Minute}
	p.failureMode, p.nearLimit = failureModeText(cfg), cfg.NearLimitRatio
	p.breakers = make([]breaker, max(1, len(vm.cfg.Redis.Nodes)))
	p.denyCache = newDenyCache(cfg.DenyCacheKeys)
	p.fallback = newLocalLimiter(cfg, host)
	p.leases = newLeaseTables(cfg)
	p.degradeHeaders = degradeHeaders(cfg)
	p.headDecides = len(p.degradeHeaders) > 0 && !cfg.BodyWhileHeadersPaused
	if p.leases != nil {
		p.leaseMetrics = newLeaseMetrics(host)
	}
	for _, r := range cfg.Rules {
		p.bodyRules = p.bodyRules || p.holdsBody(&r) || r.Response != nil && r.Response.Reserve.Body != ""
		p.usageRules = p.usageRules || r.Response != nil && r.Response.Usage != nil
		p.headers = append(p.headers, headerparts.New(&r))
	}
	p.compileSteps()
	return p
}

// sweep, on each slow tick, forgets the local states that no longer
// matter, ends or forgets leases, and drops expired deny cache entries.
func (p *policy) sweep(now time.Time) {
	if p.fallback != nil {
		p.fallback.sweep(now)
	}
	p.sweepLeases(now)
	p.denyCache.sweep(now)
}

// forget drops what an operator's change may have made stale: the deny
// cache, and every lease and hold.
func (p *policy) forget() {
	p.denyCache.clear()
	p.endLeases()
}

// holdsBody reports whether rule r reads the request body while its
// headers go on: its key or match, or, unless headDecides, its price
// table's model or the stream_options it sets.
func (p *policy) holdsBody(r *config.Rule) bool {
	return r.ReadsBody() || !p.headDecides && (r.ReadsModel() || r.AsksUsage())
}
