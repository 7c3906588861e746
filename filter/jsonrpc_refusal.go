package filter

import (
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// The JSON-RPC form of a refusal, for a rule with jsonrpc.refusal:
// jsonrpc. The headers are those of any refusal; the body is one error
// object per request of the body, in order, with its id as written, and
// HTTP 200; a body without requests (only notifications or responses) or
// an unreadable one gets one object with id null, and the status of any
// refusal. Every object is the same but for its id:
//
//	{"jsonrpc":"2.0","id":7,"error":{"code":-32005,"message":"Rate limited",
//	 "data":{"reason":"rate_limited","rule":"tools","limit":"per-hour","retry_after":42,"retry_after_ms":41250,"call":3}}}
//
// A Redis failure (reasonUnavailable) keeps the HTTP form: an outage, not
// the rule's refusal.

// rpcForm reports whether v is answered in the JSON-RPC form.
func (s *Stream) rpcForm(v *verdict) bool {
	if v.rule < 0 || v.reason == reasonUnavailable {
		return false
	}
	j := s.pol.cfg.Rules[v.rule].JSONRPC
	return j != nil && j.Refusal == config.RefusalJSONRPC
}

// rpcReply is v's status and body in the JSON-RPC form: status is the
// HTTP form's, and retry the Retry-After it shows (<= 0: none). The body
// takes one allocation, and a content refusal one more for its detail.
func (s *Stream) rpcReply(v *verdict, status int, retry time.Duration) (int, []byte) {
	rule := &s.pol.cfg.Rules[v.rule]
	e := jsonrpc.Error{Reason: v.reason.String(), Rule: rule.Name, Call: v.call - 1}
	e.Code, e.Message = s.rpcCode(v, rule)
	if v.reason == reasonUnreadableBody {
		e.Reason = v.body.String()
	}
	if v.limit >= 0 && v.reason == reasonRateLimited {
		name := s.pol.limitName(v) // quoted, as the headers show it
		e.Limit = name[1 : len(name)-1]
	}
	if s.refusal(v) {
		e.Detail = bytesString(s.appendRefusal(nil, v))
	}
	if retry > 0 {
		e.RetryAfter = ceilDiv(retry, time.Second)
		e.RetryAfterMs = ceilDiv(retry, time.Millisecond)
	}
	var calls []jsonrpc.Call
	batch := false
	if s.rpc != nil && s.rpc.read && v.reason != reasonUnreadableBody {
		calls, batch = s.rpc.calls, s.rpc.batch
	}
	if answersIDs(calls, batch) {
		status = 200
	}
	return status, jsonrpc.AppendErrors(nil, calls, batch, &e)
}

// rpcCode is the code and message of v's error objects.
func (s *Stream) rpcCode(v *verdict, rule *config.Rule) (int, string) {
	switch v.reason {
	case reasonRateLimited:
		return errorCode(rule), "Rate limited"
	case reasonBlocked:
		return errorCode(rule), "Blocked"
	case reasonUnknownMethod:
		return jsonrpc.CodeMethodNotFound, "Method not found"
	case reasonUnknownTool:
		return jsonrpc.CodeInvalidParams, "Unknown tool"
	case reasonUnreadableBody:
		if parseError(v.body) {
			return jsonrpc.CodeParseError, "Parse error"
		}
	case reasonCostExceedsCapacity:
		if !s.refusal(v) { // over a limit's local share: it may pass later
			return errorCode(rule), "Rate limited"
		}
	}
	return jsonrpc.CodeInvalidRequest, "Invalid Request"
}

// parseError reports whether a body refused for why is no JSON text at
// all (JSON-RPC's -32700 "Parse error"): bad syntax, or not UTF-8. Any
// other refusal reads JSON that is no acceptable request (-32600).
func parseError(why jsonbound.Refusal) bool {
	return why == jsonbound.RefuseSyntax || why == jsonbound.RefuseEncoding || why == jsonbound.RefuseUTF8
}

// errorCode is the code of rule's rate_limited and blocked objects.
func errorCode(rule *config.Rule) int {
	if rule.JSONRPC == nil || rule.JSONRPC.ErrorCode == 0 { // a Rule built without Parse
		return config.DefaultErrorCode
	}
	return rule.JSONRPC.ErrorCode
}

// answersIDs reports whether the answer to calls lists their ids, as
// jsonrpc.AppendErrors writes it: a single request, or a batch with one.
func answersIDs(calls []jsonrpc.Call, batch bool) bool {
	if !batch {
		return len(calls) == 1 && calls[0].Kind == jsonrpc.Request
	}
	for k := range calls {
		if calls[k].Kind == jsonrpc.Request {
			return true
		}
	}
	return false
}

// ceilDiv is d in units, rounded up.
func ceilDiv(d, unit time.Duration) int64 {
	return int64((d + unit - 1) / unit)
}

// rpcCall is the call (in s.rpc) that decided v, and its text in the
// body; nil when none did.
func (s *Stream) rpcCall(v *verdict) (*jsonrpc.Call, string) {
	if v.call <= 0 || s.rpc == nil || v.call > len(s.rpc.calls) {
		return nil, ""
	}
	c := &s.rpc.calls[v.call-1]
	body := bytesString(s.req.body)
	if c.At < 0 || c.At > c.End || c.End > len(body) {
		return nil, ""
	}
	return c, c.Text(body)
}

// appendCallRefusal appends what a refusal of the call that decided v
// names (for appendRefusal): the method or tool a cost table refuses,
// when printable, or the first call part the call lacks.
func (s *Stream) appendCallRefusal(b []byte, v *verdict, rule *config.Rule) []byte {
	c, text := s.rpcCall(v)
	if c == nil {
		return b
	}
	switch v.reason {
	case reasonUnknownMethod:
		if printable(c.Method) {
			b = keyspace.AppendJSONString(append(b, `,"method":`...), c.Method)
		}
	case reasonUnknownTool:
		raw, _ := jsonbound.Lookup(text, "params.name")
		if name, ok := jsonString(raw); ok && printable(name) {
			b = keyspace.AppendJSONString(append(b, `,"tool":`...), name)
		}
	case reasonMissingKey:
		for i := range rule.Key {
			p := &rule.Key[i]
			if p.Source != config.SourceCall {
				continue
			}
			if raw, why := jsonbound.Lookup(text, p.BodyPath); why != 0 || raw == "" || raw[0] == 'n' || raw[0] == '{' || raw[0] == '[' {
				return keyspace.AppendJSONString(append(b, `,"part":`...), p.Describe())
			}
		}
	}
	return b
}

// jsonString is the text of raw, a JSON string; ok is false for any other
// value.
func jsonString(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	return jsonvalue.Parse(raw).Str, true
}
