package filter

import (
	"strconv"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// A request's script calls: which rules share one, and the keys and checks
// each rule puts in it.

// call is one script call: the limits of one or more rules that share it.
type call struct {
	stream   *Stream
	rule     int // the rule that opened it
	shadow   bool
	degrade  bool // the limits of on_limit: degrade rules (degrade.go)
	blocks   []string
	checks   []algorithms.Check
	origins  []origin // per result: its rule and limit
	blockers []origin // per block key: its rule
	// choices are the rule keys whose limits Redis picks; their positions'
	// origins follow the checks' in origins once sealed.
	choices       []algorithms.Choice
	choiceOrigins []origin
	choiceAt      []choiceAt
	choiceKeys    []string
	leases        []leaseAsk // the choices that ask for a batch
	keys          []byte     // every key of the call, back to back
	eval          bool       // -NOSCRIPT was seen; send the whole script
	inVM          bool       // decided in the VM (failure_mode: local), not by Redis
	buf           []byte

	calloutID uint32
	inFlight  bool
	rt        routing // where it went (cluster_route.go)
	replied   bool    // decision holds Redis's reply
	sentAt    time.Time
	epoch     uint64 // its node's breaker's epoch when sent
	decision  algorithms.Decision
	err       error

	// slot is the slot id the call's concurrency limits take (0: none);
	// acquired is set once Redis admitted it, released once their
	// releases are sent. detached is the policy of a call whose stream
	// ended while it was out (see policy.detach).
	slot               int64
	acquired, released bool
	detached           *policy
}

// origin ties a check or block key to its rule. Until the call is sent,
// the key and the rule's key are offsets into call.keys; then the key is
// in call.checks or call.blocks, and ruleKey is set.
type origin struct {
	rule, limit          int
	tier                 int              // the tier, tierOverride, or tierAny until Redis picks
	choice               int              // for a choice's position: the index of its choice
	picked               algorithms.Limit // for a choice's position: the limit that decided
	cost                 int64
	keyAt, ruleKeyAt, at int // key = keys[keyAt:at], rule's key = keys[ruleKeyAt:ruleKeyAt+ruleKeyLen]
	ruleKeyLen           int
	ruleKey              string // the rule's key, "<prefix>{<rule>|<parts>}": the deny cache's key
	// call is 1 + the index of the first JSON-RPC call charged to the
	// key, 0 for none (jsonrpc_calls.go); verdict.call takes it.
	call int
}

func (c *call) reset(s *Stream, shadow, degrade bool) {
	c.stream, c.shadow, c.degrade, c.eval, c.err, c.inFlight = s, shadow, degrade, false, nil, false
	c.blocks, c.checks, c.origins, c.blockers, c.keys = c.blocks[:0], c.checks[:0], c.origins[:0], c.blockers[:0], c.keys[:0]
	c.choices, c.choiceOrigins, c.choiceAt, c.leases = c.choices[:0], c.choiceOrigins[:0], c.choiceAt[:0], c.leases[:0]
	c.slot, c.acquired, c.released, c.replied = 0, false, false, false
	c.decision.Granted = c.decision.Granted[:0]
}

// seal turns the key offsets into strings: one allocation for the call.
func (c *call) seal() {
	all := string(c.keys)
	for i := range c.blockers {
		o := &c.blockers[i]
		o.ruleKey = all[o.ruleKeyAt : o.ruleKeyAt+o.ruleKeyLen]
		c.blocks = append(c.blocks, all[o.keyAt:o.at])
	}
	for i := range c.origins {
		o := &c.origins[i]
		o.ruleKey = all[o.ruleKeyAt : o.ruleKeyAt+o.ruleKeyLen]
		c.checks[i].Key = all[o.keyAt:o.at]
	}
	c.sealChoices(all)
}

func (c *call) command(f algorithms.Framing, inv algorithms.Invoke) []byte {
	c.buf = algorithms.AppendCall(c.buf[:0], f, inv, algorithms.OpDecide, c.blocks, c.checks, c.choices)
	return c.buf
}

// add puts a rule's limits, keyed by s.ruleKey, into the call they share,
// with its block key unless the rule has manual_block off.
func (s *Stream) add(ri, tier int, cost int64, checkOnly bool) {
	s.addFrom(ri, tier, cost, checkOnly, 0)
}

// addFrom is add for a key first charged by JSON-RPC call call-1 (0:
// none). A rule's keys, on Redis Cluster, share its one call.
func (s *Stream) addFrom(ri, tier int, cost int64, checkOnly bool, call int) {
	rule := &s.pol.cfg.Rules[ri]
	if s.pol.ruleSteps[ri].has(stepSettle) {
		s.charge()
	}
	c := s.callFor(ri)
	ruleKeyAt := s.addBlockKey(c, ri, cost, call)
	if rule.ChosenInRedis() {
		s.addChoice(c, ri, tier, cost, checkOnly)
		return
	}
	if rule.Throttle != nil && cost > 0 && s.vm.throttling() {
		s.addChoice(c, ri, tier, cost, false)
		c.choices[len(c.choices)-1].Throttle = rule.Throttle.MaxDelay
		return
	}
	for li, l := range rule.TierLimits(tier) {
		keyAt := len(c.keys)
		c.keys = append(c.keys, s.ruleKey...)
		c.keys = append(c.keys, ':')
		c.keys = strconv.AppendInt(c.keys, int64(li), 10)
		chk := algorithms.Check{Limit: l.Limit, Cost: cost, CheckOnly: checkOnly}
		if l.Limit.Algorithm == algorithms.Concurrency { // one slot, whatever the cost
			chk.Cost, chk.CheckOnly, c.slot = s.slotID(), false, s.slotID()
		}
		c.checks = append(c.checks, chk)
		c.origins = append(c.origins, origin{rule: ri, limit: li, tier: tier, cost: cost, keyAt: keyAt, at: len(c.keys), ruleKeyAt: ruleKeyAt, ruleKeyLen: len(s.ruleKey), call: call})
	}
}

// callFor returns the call rule ri's limits join: the request's call of
// enforced, of shadow or of degrade rules, or one per rule on Redis
// Cluster (a jsonrpc rule's keys share its tag's slot).
func (s *Stream) callFor(ri int) *call {
	var c *call
	rule := &s.pol.cfg.Rules[ri]
	degrade := rule.OnLimit.Degrade
	if !s.pol.cfg.Redis.ClusterMode {
		for _, existing := range s.calls {
			if existing.shadow == rule.Shadow && existing.degrade == degrade {
				c = existing
			}
		}
	} else if n := len(s.calls); n > 0 && s.calls[n-1].rule == ri && rule.JSONRPC != nil {
		c = s.calls[n-1]
	}
	if c == nil {
		if n := len(s.spare); n > 0 {
			c, s.spare = s.spare[n-1], s.spare[:n-1]
		} else {
			c = &call{}
		}
		c.reset(s, rule.Shadow, degrade)
		c.rule = ri
		s.calls = append(s.calls, c)
	}
	return c
}

// addBlockKey adds the rule's block key to c, unless the rule has
// manual_block off, and returns where the rule's key starts in c.keys
// (the block key starts with it), or will start.
func (s *Stream) addBlockKey(c *call, ri int, cost int64, call int) int {
	ruleKeyAt := len(c.keys)
	if s.pol.cfg.Rules[ri].ManualBlock {
		c.keys = append(c.keys, s.ruleKey...)
		c.keys = append(c.keys, ":block"...)
		c.blockers = append(c.blockers, origin{rule: ri, limit: -1, cost: cost, keyAt: ruleKeyAt, at: len(c.keys), ruleKeyAt: ruleKeyAt, ruleKeyLen: len(s.ruleKey), call: call})
	}
	return ruleKeyAt
}
