package filter

import "github.com/redisrate/envoy-redis-ratelimit/filter/jsonrpc"

// The JSON-RPC step: a jsonrpc rule reads the request body as calls and
// charges each to its own key.

// rpcState is the JSON-RPC step's state: the calls of the request's body,
// read once for every jsonrpc rule.
type rpcState struct {
	// read: calls and batch hold this request's body.
	read  bool
	calls []jsonrpc.Call
	batch bool // the body is an array, answered with an array
}

// reset readies r for a new request, keeping its buffers.
func (r *rpcState) reset() {
	r.read, r.batch, r.calls = false, false, r.calls[:0]
}
