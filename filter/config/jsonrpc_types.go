package config

import "strings"

// JSONRPC is a rule's jsonrpc object: its request body is read as
// JSON-RPC 2.0 calls (one, or a batch), and each call is charged to its
// own key.
type JSONRPC struct {
	Protocol RPCProtocol
	// MaxCalls bounds the calls of a body (max_calls, 1..MaxCalls, default
	// DefaultMaxCalls): more is unreadable (413).
	MaxCalls int
	// MaxKeys bounds this rule's distinct keys in one body (max_keys,
	// 1..MaxCallKeys, default DefaultMaxCallKeys): more is refused
	// (too_many_keys).
	MaxKeys int
	// Free are method names, or prefixes ending in '*', whose calls add no
	// key and are never charged (free; for mcp by default initialize, ping
	// and notifications/*).
	Free []string
	// Refusal is how a refusal is answered: RefusalHTTP (the rule's
	// statuses), or RefusalJSONRPC (HTTP 200 with an error object per
	// call id). Default RefusalHTTP, and RefusalJSONRPC for mcp.
	Refusal RPCRefusal
	// ErrorCode is the code of a rate_limited or blocked error object
	// (error_code, default -32005, EIP-1474's "Limit exceeded").
	ErrorCode int
}

// RPCProtocol is a jsonrpc rule's protocol.
type RPCProtocol uint8

const (
	ProtocolJSONRPC RPCProtocol = iota // plain JSON-RPC 2.0
	// ProtocolMCP: tools/call is priced by params.name in cost.tools, and
	// free and refusal take MCP's defaults.
	ProtocolMCP
)

// RPCRefusal is the form of a jsonrpc rule's refusals.
type RPCRefusal uint8

const (
	RefusalHTTP    RPCRefusal = iota // the status and JSON body of any rule
	RefusalJSONRPC                   // HTTP 200, JSON-RPC error objects
)

// Bounds and defaults of jsonrpc.
const (
	MaxCalls           = 1000
	DefaultMaxCalls    = 100
	MaxCallKeys        = 64
	DefaultMaxCallKeys = 16
	// MaxBatchStates bounds the limit states (a limit's key, a block,
	// tier or override key) a request's batch may carry over every
	// rule: each costs Redis about 10us.
	MaxBatchStates = 64
	// DefaultErrorCode is EIP-1474's "Limit exceeded".
	DefaultErrorCode = -32005
)

// MCPFree is what protocol mcp leaves free unless free is set.
var MCPFree = []string{"initialize", "ping", "notifications/*"}

// IsFree reports whether a call of method is free: listed, or under a
// listed prefix ending in '*'.
func (j *JSONRPC) IsFree(method string) bool {
	for _, f := range j.Free {
		if p, ok := strings.CutSuffix(f, "*"); ok && strings.HasPrefix(method, p) || f == method {
			return true
		}
	}
	return false
}
