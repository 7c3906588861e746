package filter

import "strconv"

// Near-limit warnings: a rule's near_limit.header on an admitted response,
// one item per limit of the rule past its near_limit share, in the
// RateLimit header's syntax: "<limit>";r=<remaining>, ", " between (rules
// that name one header share it). countNear (decision.go) finds them.

// nearState is the near_limit header step's state: the warnings of one
// request.
type nearState struct {
	warnings []nearWarning
}

// nearWarnings is the stream's near-header state, made on first use.
func (s *Stream) nearWarnings() *nearState {
	if s.near == nil {
		s.near = &nearState{}
	}
	return s.near
}

// nearWarning is a limit past its share, as the request left it.
type nearWarning struct {
	rule, limit, tier int
	remaining         int64
}

// note adds w, or lowers the remaining of the warning of w's limit: a
// jsonrpc rule's keys share their rule's limits, and the header names
// each limit once, by its key with the least left.
func (n *nearState) note(w nearWarning) {
	for i := range n.warnings {
		if x := &n.warnings[i]; x.rule == w.rule && x.limit == w.limit && x.tier == w.tier {
			x.remaining = min(x.remaining, w.remaining)
			return
		}
	}
	n.warnings = append(n.warnings, w)
}

// addNearWarnings adds the warning headers to an admitted response.
func (s *Stream) addNearWarnings() {
	if s.near == nil || len(s.near.warnings) == 0 {
		return
	}
	rules, warnings := s.pol.cfg.Rules, s.near.warnings
	for i, w := range warnings {
		h := rules[w.rule].NearLimit.Header
		if s.warnedBefore(i, h) {
			continue
		}
		var b []byte
		for _, x := range warnings[i:] {
			if rules[x.rule].NearLimit.Header != h {
				continue
			}
			if len(b) > 0 {
				b = append(b, ", "...)
			}
			b = append(b, s.pol.limitName(&verdict{rule: x.rule, limit: x.limit, tier: x.tier})...)
			b = append(b, ";r="...)
			b = strconv.AppendInt(b, max(x.remaining, 0), 10)
		}
		s.host.AddResponseHeader(h, string(b))
	}
}

// warnedBefore reports whether a warning before the i-th names header h.
func (s *Stream) warnedBefore(i int, h string) bool {
	for _, x := range s.near.warnings[:i] {
		if s.pol.cfg.Rules[x.rule].NearLimit.Header == h {
			return true
		}
	}
	return false
}
