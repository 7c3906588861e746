package config

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// A rule may read fields of the request's JSON body: a key part
// {"source": "body", "path": "model"} and match.body entries. Its decision
// then waits for the body's end (see filter/request_body.go).

// DefaultMaxRequestBodyBytes is max_request_body_bytes when unset: Envoy's
// default per_connection_buffer_limit_bytes, past which it answers 413 to a
// body held whole.
const DefaultMaxRequestBodyBytes = 1 << 20

// ReadsBody reports whether the rule's key or match reads the request
// body, as a jsonrpc rule's calls do.
func (r *Rule) ReadsBody() bool {
	if len(r.Match.Body) > 0 || r.JSONRPC != nil {
		return true
	}
	for _, p := range r.Key {
		if p.Source == SourceBody {
			return true
		}
	}
	return false
}

// ReadsModel reports whether the rule prices by model
// (response_cost.price): it reads the request body's "model", beside its
// model_header, to refuse or price every model the request names.
func (r *Rule) ReadsModel() bool { return r.Response != nil && r.Response.Price != nil }

// AsksUsage reports whether the rule asks OpenAI chat streams for their
// usage (the openai_chat preset): it reads the request body, and sets
// stream_options.include_usage in a streamed request that lacks it.
func (r *Rule) AsksUsage() bool { return r.Response != nil && r.Response.Preset == "openai_chat" }

// bodyPath reads a body field's path: dotted names, no operators.
func bodyPath(v jsonvalue.Value, at string) (string, error) {
	return dottedPath(v, at, `must be a dotted field path such as model or metadata.team: at most 16 names, without # * ? | @ \ or NUL`)
}

// dottedPath reads a path of dotted names, without operators; want is the
// error's text.
func dottedPath(v jsonvalue.Value, at, want string) (string, error) {
	if !v.Exists() {
		return "", errAt(at, "required")
	}
	p, err := str(v, at, "")
	if err != nil {
		return "", err
	}
	if p == "" || strings.ContainsAny(p, "#*?|@\\\x00") || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") || strings.Count(p, ".") >= maxPropertySegments {
		return "", errAt(at, want)
	}
	return p, nil
}

// parseBodyMatches reads match.body: fields of the request's JSON body
// that must all hold, in the shape of match.headers with path for name.
func parseBodyMatches(v jsonvalue.Value, path string) ([]HeaderMatch, error) {
	return parseValueMatches(v, path, "body", "path", bodyPath)
}

// UnreadableBody is what a rule that reads the body does with a body the
// filter refuses to read (on_unreadable_body): one over
// max_request_body_bytes, or one jsonbound.ReadBody or Lookup refuses.
type UnreadableBody uint8

const (
	// UnreadableDeny answers 413 (over max_request_body_bytes) or 400.
	UnreadableDeny UnreadableBody = iota
	// UnreadableMissing reads none of its fields: on_missing_key applies.
	UnreadableMissing
)

// parseUnreadableBody reads a rule's on_unreadable_body, which only a
// rule that reads the body takes.
func parseUnreadableBody(v jsonvalue.Value, path string, r *Rule) (UnreadableBody, error) {
	if v.Exists() && !r.ReadsRequestBody() {
		return 0, errAt(path, onlyBodyRules)
	}
	s, err := enum(v, path, "deny", "deny", "missing")
	return map[string]UnreadableBody{"deny": UnreadableDeny, "missing": UnreadableMissing}[s], err
}

const onlyBodyRules = "only for a rule that reads the request body (a body key part, match.body, jsonrpc, response_cost.reserve.body, response_cost.price or the usage openai_chat)"

// ReadsRequestBody reports whether the rule reads fields of the request
// body: its key or match, its reservation, its price table's model, or a
// chat stream's stream_options.
func (r *Rule) ReadsRequestBody() bool {
	return r.ReadsBody() || r.ReadsModel() || r.AsksUsage() || r.Response != nil && r.Response.Reserve.Body != ""
}

// parseMaxRequestBody reads a rule's max_request_body_bytes, which only a
// rule that reads the body takes.
func parseMaxRequestBody(v jsonvalue.Value, path string, r *Rule) (int, error) {
	if v.Exists() && !r.ReadsRequestBody() {
		return 0, errAt(path, onlyBodyRules)
	}
	n, err := integer(v, path, DefaultMaxRequestBodyBytes, 1, 64<<20)
	if err == nil && r.JSONRPC != nil && n < int64(len(smallestCall)) {
		err = errAt(path, "must be >= %d in a jsonrpc rule: no call is shorter than %s", len(smallestCall), smallestCall)
	}
	return int(n), err
}

// smallestCall is the shortest JSON-RPC call a jsonrpc rule charges.
const smallestCall = `{"jsonrpc":"2.0","method":""}`
