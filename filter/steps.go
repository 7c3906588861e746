package filter

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// The request path as steps. At configure time each policy compiles, from
// its rules, the steps a request under it visits: a set per rule
// (policy.ruleSteps) and their union (policy.steps). Each phase of a
// stream runs a step only when its policy or rule has it, and a step with
// per-request state keeps it in a struct of its own, made for the streams
// of a policy that has the step and recycled with them (Stream's optional
// states). A rule with one limit keyed on a header compiles to match, key,
// deny cache, call, verdict, near limit and headers.

// step is one piece of the request path.
type step uint8

const (
	stepQuota       step = iota // answer the quota endpoint (quota.go)
	stepUsageAsk                // narrow Accept-Encoding, ask a chat stream for its usage (encoding.go, include_usage.go)
	stepBodyWait                // wait for the request body (request_body.go)
	stepMatch                   // the rules' match (request.go)
	stepJSONRPC                 // a jsonrpc rule's calls, each keyed and costed (jsonrpc_calls.go)
	stepKey                     // a rule's key (keys.go)
	stepReserve                 // a response_cost rule's reservation and estimate, priced (money.go)
	stepCost                    // read a request's cost from a header or body field
	stepDenyCache               // answer from the deny cache (denycache.go)
	stepCapacity                // deny a cost above a limit's capacity
	stepLease                   // spend from leases (lease.go)
	stepCall                    // the Redis calls (call.go)
	stepFallback                // decide in the VM while Redis cannot (local.go)
	stepVerdict                 // decide (decide.go)
	stepNearLimit               // count admissions near a limit (decision.go)
	stepDegrade                 // degrade instead of deny (degrade.go)
	stepThrottle                // hold a throttled request (throttle.go)
	stepHeaders                 // the rate-limit response headers (headers.go)
	stepNearHeader              // the near-limit warning header (near.go)
	stepSettle                  // follow the response and settle its cost (response.go, settle.go)
	stepConcurrency             // a concurrency slot, released at the end (concurrency.go)
	numSteps
)

var stepNames = [numSteps]string{
	stepMatch: "match", stepBodyWait: "body wait", stepUsageAsk: "usage ask", stepKey: "key", stepJSONRPC: "calls",
	stepCost: "cost", stepReserve: "reserve", stepCapacity: "capacity", stepDenyCache: "deny cache",
	stepLease: "lease", stepCall: "call", stepVerdict: "verdict", stepFallback: "fallback",
	stepDegrade: "degrade", stepNearLimit: "near limit", stepNearHeader: "near header",
	stepThrottle: "throttle", stepHeaders: "headers", stepSettle: "settle",
	stepConcurrency: "concurrency", stepQuota: "quota",
}

// steps is a set of steps.
type steps uint32

func (ss steps) has(x step) bool { return ss&(1<<x) != 0 }

func (ss *steps) add(x step) { *ss |= 1 << x }

// String lists the steps in request order, ", " between.
func (ss steps) String() string {
	var b strings.Builder
	for x := range numSteps {
		if !ss.has(x) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(stepNames[x])
	}
	return b.String()
}

// compileSteps sets the policy's steps from its configuration; newPolicy
// calls it once the policy's own state is made.
func (p *policy) compileSteps() {
	cfg := p.cfg
	p.ruleSteps = make([]steps, len(cfg.Rules))
	for ri := range cfg.Rules {
		p.ruleSteps[ri] = p.ruleStepsOf(ri)
		p.steps |= p.ruleSteps[ri]
	}
	if len(cfg.Rules) > 0 {
		p.steps.add(stepVerdict)
		if cfg.Headers != config.HeadersNone {
			p.steps.add(stepHeaders)
		}
		if p.fallback != nil {
			p.steps.add(stepFallback)
		}
	}
	if p.bodyRules {
		p.steps.add(stepBodyWait)
	}
	if p.usageRules {
		p.steps.add(stepUsageAsk)
	}
	if cfg.Quota != nil {
		p.steps.add(stepQuota)
	}
}

// ruleStepsOf is what rule ri needs of a request.
func (p *policy) ruleStepsOf(ri int) steps {
	r := &p.cfg.Rules[ri]
	ss := steps(1<<stepMatch | 1<<stepKey | 1<<stepCall | 1<<stepNearLimit)
	if r.Cost.Header != "" || r.Response != nil {
		ss.add(stepCost)
	}
	if r.Response != nil {
		ss.add(stepReserve)
		ss.add(stepSettle)
	}
	if r.JSONRPC != nil {
		ss.add(stepJSONRPC)
		ss.add(stepCapacity) // a key's summed cost may pass a capacity
	}
	if ss.has(stepCost) || overCapacityAny(r, r.Cost.Default) {
		ss.add(stepCapacity)
	}
	if p.denyCache != nil && !r.Shadow {
		ss.add(stepDenyCache)
	}
	if ri < len(p.leases) && p.leases[ri] != nil {
		ss.add(stepLease)
	}
	if r.OnLimit.Degrade {
		ss.add(stepDegrade)
	}
	if r.NearLimit.Header != "" {
		ss.add(stepNearHeader)
	}
	if r.Throttle != nil {
		ss.add(stepThrottle)
	}
	if r.HasConcurrency() {
		ss.add(stepConcurrency)
		ss.add(stepSettle)
	}
	return ss
}

// overCapacityAny reports whether a fixed cost exceeds a limit of any of
// the rule's tiers: its capacity check cannot be skipped.
func overCapacityAny(r *config.Rule, cost int64) bool {
	_, li := overCapacity(r, -1, cost)
	return li >= 0
}
