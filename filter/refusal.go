package filter

import (
	"strconv"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
)

// Refusals for a request's own content: what it holds (or lacks) means no
// retry of it can pass, so it is answered with its rule's refusal_status
// (400 unless set), not rejected_status's 429, and with no Retry-After or
// rate-limit headers. Its body names what is wrong:
//
//	{"error":"missing_key","rule":"api","part":"header x-api-key"}
//	{"error":"unknown_model","rule":"llm","model":"gpt-9"}
//	{"error":"cost_exceeds_capacity","rule":"uploads","limit":"burst"}
//	{"error":"unknown_tool","rule":"tools","tool":"deep_research","call":2}
//	{"error":"too_many_keys","rule":"tools","max_keys":16,"call":40}
//	{"error":"missing_key","rule":"tools","part":"call params.name","call":0}
//
// ("call": the index in the batch of the JSON-RPC call that decided.) A
// body the filter cannot read has its own statuses (413, 408, 400:
// request_body.go).

// refusal reports whether v refuses the request for its content. A cost
// above a limit's local share (failure_mode: local, local.go) is not: it
// may pass once Redis decides again, so it keeps rejected_status.
func (s *Stream) refusal(v *verdict) bool {
	switch v.reason {
	case reasonMissingKey, reasonUnknownModel, reasonUnknownMethod, reasonUnknownTool, reasonTooManyKeys:
		return v.rule >= 0
	case reasonCostExceedsCapacity:
		return v.rule >= 0 && !s.local
	}
	return false
}

// refusalStatus is the status of rule's refusals.
func refusalStatus(rule *config.Rule) int {
	if rule.RefusalStatus == 0 { // a Rule built without Parse
		return config.DefaultRefusalStatus
	}
	return rule.RefusalStatus
}

// maxModelShown bounds the model, method or tool a refusal's body repeats.
const maxModelShown = 128

// appendRefusal appends what is wrong with the request v refuses, read
// again from the request (only a refusal pays for it): the first key part
// it lacks (of the call that decided, for a JSON-RPC call's), or the first
// model it names that the rule's price table refuses, or the method or
// tool a cost table refuses, each when printable ASCII of at most
// maxModelShown bytes (else left out: the body repeats no bytes a client
// could not read back), or the limit whose capacity the cost exceeds, or
// the max_keys a batch spans more keys than.
func (s *Stream) appendRefusal(b []byte, v *verdict) []byte {
	rule := &s.pol.cfg.Rules[v.rule]
	switch v.reason {
	case reasonUnknownMethod, reasonUnknownTool:
		return s.appendCallRefusal(b, v, rule)
	case reasonTooManyKeys:
		if rule.JSONRPC != nil {
			n := rule.JSONRPC.MaxKeys
			if n == 0 { // a Rule built without Parse
				n = config.DefaultMaxCallKeys
			}
			b = strconv.AppendInt(append(b, `,"max_keys":`...), int64(n), 10)
		}
	case reasonMissingKey:
		if v.call > 0 {
			return s.appendCallRefusal(b, v, rule)
		}
		for i := range rule.Key {
			if rule.Key[i].Source == config.SourceCall {
				continue
			}
			if _, ok := s.req.keyPartValue(rule.Key[i], s.pol.cfg.TrustedHops); !ok {
				b = append(b, `,"part":`...)
				return keyspace.AppendJSONString(b, rule.Key[i].Describe())
			}
		}
	case reasonUnknownModel:
		if rule.Response == nil || rule.Response.Price == nil {
			return b
		}
		header, body := s.requestModel(rule.Response.Price)
		for _, m := range [2]string{header, body} {
			if _, refused := rule.Response.Price.Price(m); refused {
				if printable(m) {
					b = append(b, `,"model":`...)
					b = keyspace.AppendJSONString(b, m)
				}
				return b
			}
		}
	case reasonCostExceedsCapacity:
		if v.limit >= 0 {
			b = append(b, `,"limit":`...)
			b = append(b, s.pol.limitName(v)...)
		}
	}
	return b
}

// printable reports whether m is 1 to maxModelShown bytes of printable
// ASCII.
func printable(m string) bool {
	if m == "" || len(m) > maxModelShown {
		return false
	}
	for i := 0; i < len(m); i++ {
		if m[i] < 0x20 || m[i] > 0x7e {
			return false
		}
	}
	return true
}
