package config

import (
	"strconv"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"
)

// Rule limits the requests it matches, per key.
type Rule struct {
	Name      string
	Match     Match
	Key       []KeyPart
	OnMissing MissingKey
	// Limits are the rule's limits; with Tiers, those of the default tier.
	Limits []NamedLimit
	// Tiers, when set, give the rule's limits per tier.
	Tiers *Tiers
	// Overrides: Redis may hold a key's own limits, which an operator
	// sets (OverrideKey), read in the call that decides.
	Overrides bool
	Cost      Cost
	// Response, when set, charges what the response says; Cost is then
	// unused (see ResponseCost).
	Response *ResponseCost
	// Shadow rules decide and count, but never deny.
	Shadow bool
	// ManualBlock: the rule's calls carry its block key, so an operator
	// can block a key (manual_block, true unless set false).
	ManualBlock bool
	// Lease, when set, lets each VM spend batches of a hot key's units.
	Lease *Lease
	// Throttle, when set, holds a request its funnels deny now until it
	// conforms, up to a max delay, instead of denying it.
	Throttle *Throttle
	// OnLimit: deny, or degrade (admit, naming the spent limits in a
	// request header); NearLimit: the rule's near-limit share and warning.
	OnLimit   OnLimit
	NearLimit NearLimit
	// MaxRequestBodyBytes bounds the request body the rule reads (its body
	// key parts, match.body, response_cost.reserve.body); OnUnreadableBody
	// says what a larger body, or one the filter cannot read as the
	// upstream will, does: deny (413 or 400), or have none of its fields.
	MaxRequestBodyBytes int
	OnUnreadableBody    UnreadableBody
	// RefusalStatus answers a request the rule refuses for its content
	// (missing_key, unknown_model, cost_exceeds_capacity): a 4xx that is
	// not over a limit, 400 unless set (refusal_status).
	RefusalStatus int
	// JSONRPC, when set, reads the request body as JSON-RPC calls and
	// charges each call to its own key (jsonrpc).
	JSONRPC *JSONRPC
}

// NamedLimit is a limit with the policy name the headers show.
type NamedLimit struct {
	Name  string
	Limit algorithms.Limit
}

// Match selects requests; empty fields match everything.
type Match struct {
	Path       string // exact path, without query
	PathPrefix string
	Methods    []string
	Hosts      []string // exact :authority, without port
	// Headers must all hold (match.headers).
	Headers []HeaderMatch
	// Body must all hold (match.body): each entry's Name is a dotted
	// field path of the request's JSON body, read as a body key part is.
	Body []HeaderMatch
	// Call must all hold for a JSON-RPC call to be charged by the rule
	// (match.call): each entry's Name is a dotted path in the call's
	// object ("method", "params.name"). Only in a jsonrpc rule.
	Call []HeaderMatch
}

// HeaderMatch tests one request header, by its values joined with ", "
// when it repeats (as a header key part reads it).
type HeaderMatch struct {
	Name  string // lower case
	Op    HeaderOp
	Value string // for HeaderExact and HeaderPrefix
}

// HeaderOp is how a HeaderMatch tests its header.
type HeaderOp uint8

const (
	HeaderExact   HeaderOp = iota + 1 // the value is Value ({"exact": ""} wants an empty one)
	HeaderPrefix                      // the value starts with Value
	HeaderPresent                     // the header is there, whatever its value
	HeaderAbsent                      // the header is not there
)

// KeySource names where a key part comes from.
type KeySource uint8

const (
	SourceHeader KeySource = iota + 1
	SourceQuery
	SourceCookie
	SourceClientIP
	SourcePath
	SourceMethod
	SourceHost
	SourceConstant
	// SourceJWTClaim is a claim of the request's JWT: from the payload
	// Envoy's jwt_authn verified, in the stream's dynamic metadata, else
	// from the bearer token's payload, which is not verified here.
	SourceJWTClaim
	// SourceProperty is any stream property the proxy serves, such as
	// connection.uri_san_peer_certificate.
	SourceProperty
	// SourceBody is a field of the request's JSON body, such as model.
	SourceBody
	// SourceCall is a field of one JSON-RPC call (its BodyPath is a path
	// in the call's object: "method", "params.name"). Only in a jsonrpc
	// rule: each call is keyed on its own.
	SourceCall
)

// String is the source's name in the configuration ("header", "client_ip" ...).
func (s KeySource) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "KeySource(" + strconv.Itoa(int(s)) + ")"
}

var sourceNames = []string{SourceHeader: "header", SourceQuery: "query", SourceCookie: "cookie",
	SourceClientIP: "client_ip", SourcePath: "path", SourceMethod: "method", SourceHost: "host", SourceConstant: "constant",
	SourceJWTClaim: "jwt_claim", SourceProperty: "property", SourceBody: "body", SourceCall: "call"}

// KeyPart is one dimension of a rule's key.
type KeyPart struct {
	Source KeySource
	// Name is the header (lower case), query parameter or cookie name, or
	// the JWT claim, dotted for a nested one ("org.id").
	Name  string
	Value string // for SourceConstant
	// Path is the property read for SourceProperty, and for
	// SourceJWTClaim the claim's path in the dynamic metadata:
	// metadata, filter_metadata, envoy.filters.http.jwt_authn, the
	// provider's payload_in_metadata, then the claim's segments.
	Path []string
	// IPv4Prefix and IPv6Prefix group a client_ip by network
	// (ipv4_prefix_len, ipv6_prefix_len): with IPv4Prefix {24, true},
	// 203.0.113.7 is "203.0.113.0/24". Unset keeps the whole address.
	IPv4Prefix, IPv6Prefix PrefixLen

	ClaimPath string // SourceJWTClaim: Name as a jsonvalue path, each segment escaped
	BodyPath  string // SourceBody, SourceCall: the field's dotted path ("metadata.team", "params.name")
}

// PrefixLen is a CIDR prefix length; the zero value is none.
type PrefixLen struct {
	Bits int // 0-32 for IPv4, 0-128 for IPv6
	Set  bool
}

// MissingKey says what happens when a key part is absent from a request.
type MissingKey uint8

const (
	MissingSkip   MissingKey = iota // the rule does not apply (default)
	MissingDeny                     // the request is rejected
	MissingShared                   // requests without it share one key
)

// Cost is what one request takes from each limit of a rule.
type Cost struct {
	Default int64  // default 1
	Header  string // when set, the cost is read from this header
	// Min is the least a request pays through Header (default 1): a
	// smaller value is raised to Min, so a request cannot pick a cost
	// that passes a limit a cost-1 request would fail. With Min 0 a
	// header value of 0 peeks: it is answered, charges nothing and is
	// admitted even when the limit is spent. Default >= Min.
	Min int64
	// Methods and Tools are a jsonrpc rule's cost tables (cost.methods,
	// cost.tools), nil without one. When either is set both are, sealed,
	// and share cost.default (units, or refuse): a table not configured
	// lists no name. Tools is read for MCP's tools/call, by params.name;
	// Methods for every other call, by method. Without tables a call
	// costs Default.
	Methods, Tools *jsonrpc.Table
}
