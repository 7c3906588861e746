package filter

import (
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
)

// Stream is the filter's state for one HTTP request.
type Stream struct {
	p    *Plugin
	host StreamHost
	req  request

	calls       []*call
	outstanding int
	decided     bool
	inHeaders   bool // inside OnRequestHeaders: answer by return value
	allowed     bool
	// verdict is the tightest enforced result, for the response headers.
	verdict  *verdict
	policies []string
}

// call is one script call: the limits of one or more rules that share it.
type call struct {
	stream   *Stream
	shadow   bool
	blocks   []string
	checks   []algorithms.Check
	owners   []owner // per check: its rule and limit
	blockers []owner // per block key: its rule
	eval     bool    // -NOSCRIPT was seen; send the whole script
	failure  string  // why the transport failed, when it says
	buf      []byte

	calloutID uint32
	inFlight  bool
	sentAt    time.Time
	decision  algorithms.Decision
	err       error
}

type owner struct {
	rule, limit int
	tag         string // the rule's key, "<prefix>{<rule>|<parts>}"
	cost        int64
}

func (c *call) command() []byte {
	if c.eval {
		c.buf = algorithms.AppendEval(c.buf[:0], c.blocks, c.checks)
	} else {
		c.buf = algorithms.AppendEvalSHA(c.buf[:0], c.blocks, c.checks)
	}
	return c.buf
}

// verdict is what the response headers report.
type verdict struct {
	rule, limit int
	result      algorithms.Result
	blocked     bool
	blockedFor  time.Duration
	reason      string // for denials: "rate_limited", "blocked", ...
}

// NewStream starts a stream.
func (p *Plugin) NewStream(host StreamHost) *Stream {
	return &Stream{p: p, host: host, req: request{source: host.SourceAddress}}
}

// OnRequestHeaders matches the rules, builds the keys and sends the calls.
// It pauses the stream until every call has answered.
func (s *Stream) OnRequestHeaders(headers [][2]string) Action {
	s.req.headers = headers
	cfg := s.p.cfg
	var tag []byte
	for ri := range cfg.Rules {
		rule := &cfg.Rules[ri]
		if !rule.Match.matches(&s.req) {
			continue
		}
		var ok bool
		tag, ok = appendRuleTag(tag[:0], cfg.Redis.Prefix, rule, &s.req, cfg.TrustedHops)
		if !ok {
			if rule.OnMissing == MissingDeny && !rule.Shadow {
				s.p.metrics.rules[ri].denied.Increment(1)
				return s.reject(&verdict{rule: ri, limit: -1, reason: "missing_key"})
			}
			continue
		}
		cost := s.cost(rule)
		if !rule.Shadow {
			if v, ok := s.p.denied.lookup(tag, cost, s.p.host.Now()); ok {
				s.p.metrics.cacheHits.Increment(1)
				s.countDenial(v)
				return s.reject(&v)
			}
		}
		for li := range rule.Limits {
			if rule.Limits[li].Limit.CheckCost(cost) != nil {
				if rule.Shadow {
					s.p.metrics.rules[ri].shadowDenied.Increment(1)
					goto nextRule
				}
				s.p.metrics.rules[ri].denied.Increment(1)
				return s.reject(&verdict{rule: ri, limit: li, reason: "cost_exceeds_capacity"})
			}
		}
		s.add(ri, string(tag), cost)
	nextRule:
	}
	if len(s.calls) == 0 {
		s.decided, s.allowed = true, true
		return Continue
	}
	s.outstanding = len(s.calls)
	s.inHeaders = true
	for _, c := range s.calls {
		s.p.dispatch(c) // a failed dispatch completes its call at once
	}
	s.inHeaders = false
	if s.decided && s.allowed {
		return Continue
	}
	return Pause
}

// add puts a rule's limits into the call they share.
func (s *Stream) add(ri int, tag string, cost int64) {
	rule := &s.p.cfg.Rules[ri]
	var c *call
	if !s.p.cfg.Redis.ClusterMode {
		for _, existing := range s.calls {
			if existing.shadow == rule.Shadow {
				c = existing
			}
		}
	}
	if c == nil {
		c = &call{stream: s, shadow: rule.Shadow}
		s.calls = append(s.calls, c)
	}
	c.blocks = append(c.blocks, tag+":block")
	c.blockers = append(c.blockers, owner{rule: ri, limit: -1, tag: tag, cost: cost})
	for li, l := range rule.Limits {
		c.checks = append(c.checks, algorithms.Check{Key: tag + ":" + strconv.Itoa(li), Limit: l.Limit, Cost: cost})
		c.owners = append(c.owners, owner{rule: ri, limit: li, tag: tag, cost: cost})
	}
}

// cost reads the request's cost: the configured header when it holds a
// non-negative integer, the default otherwise.
func (s *Stream) cost(rule *Rule) int64 {
	if rule.Cost.Header != "" {
		if v, ok := s.req.header(rule.Cost.Header); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
				return n
			}
		}
	}
	return rule.Cost.Default
}

func (m *Match) matches(r *request) bool {
	if m.Path != "" && r.path() != m.Path {
		return false
	}
	if m.PathPrefix != "" && !strings.HasPrefix(r.path(), m.PathPrefix) {
		return false
	}
	if len(m.Methods) > 0 && !contains(m.Methods, r.method()) {
		return false
	}
	if len(m.Hosts) > 0 && !contains(m.Hosts, r.host()) {
		return false
	}
	return true
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// callDone records one call's outcome; the last one decides the stream.
func (s *Stream) callDone(c *call, err error) {
	c.err = err
	s.outstanding--
	if s.outstanding > 0 || s.decided {
		return
	}
	s.decide()
}
