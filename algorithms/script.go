package algorithms

import "github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"

// Op is one operation of the library: each is its own Redis function.
type Op uint8

const (
	OpDecide Op = iota // decide a request's limits: AppendCall
	OpSettle           // settle admitted requests' real costs: AppendSettle
	OpEpoch            // read the epoch: AppendEpoch
	OpPeek             // decide checking only, writing nothing (no-writes), for ratelimitctl and the quota endpoint: AppendCall
)

// Invoke is how a command names the code it runs.
type Invoke uint8

const (
	// FCall calls the library's function for the operation: the default,
	// so that the filter's credential needs no EVAL (see Library).
	FCall Invoke = iota
	// EvalSHA calls Script by its SHA, for a path that cannot carry FCALL
	// (Envoy's redis_proxy in front of Redis Cluster).
	EvalSHA
	// Eval sends Script's source: EvalSHA's fallback after -NOSCRIPT.
	Eval
)

// Library is the Redis Functions library an operator loads once
// (ratelimitctl install); see package lua.
var Library = lua.Library

// Script is the same code as one script, for EVALSHA.
var Script = lua.Script

// function is the name of op's function in Library.
func function(op Op) string {
	switch op {
	case OpSettle:
		return Library.Settle
	case OpEpoch:
		return Library.Epoch
	case OpPeek:
		return Library.Peek
	}
	return Library.Decide
}

// Check is one limit to decide for one request.
type Check struct {
	// Key is the Redis key holding the limit's state. Every key of one call
	// must be distinct and, for Redis Cluster, share one {hash tag}.
	Key   string
	Limit Limit
	// Cost is how much the request takes; see Limit.CheckCost. Ignored
	// when CheckOnly.
	//
	// A Concurrency limit takes one slot whatever the request's cost, and
	// Cost names it instead: a slot id, > 0 and below 2^53, which no other
	// request holding a slot of Key uses (the filter takes a per-VM random
	// base times 2^20 plus a counter). The slot is released by a Settle
	// (see Release). Cost 0 peeks at the slots free, and CheckOnly checks
	// that one is, as for any limit.
	Cost int64
	// CheckOnly decides as a cost of 1 would and charges nothing: when that
	// fits, the Result reports what a peek (cost 0) would; otherwise it
	// denies with cost 1's RetryAfter. It takes part in the all-or-nothing
	// verdict like any limit. A Settle charges the real cost later.
	CheckOnly bool
}

// AppendFCall appends to dst the RESP command AppendCommand describes,
// calling the library's decide.
func AppendFCall(dst []byte, blocks []string, checks []Check) []byte {
	return AppendCommand(dst, RESP, FCall, blocks, checks)
}
