package algorithms

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The script runs top to bottom on every call: the funnel, then the driver's
// start (block keys, and a call of one funnel limit decided at once), then
// the other algorithms, the settle (only a settle defines its functions)
// and the driver for every other call. Functions cost Redis CPU per call,
// so the commonest call never defines the others'.
var scriptParts = []string{"lua/funnel.lua", "lua/decide.lua", "lua/sliding_log.lua", "lua/sliding_counter.lua",
	"lua/concurrency.lua", "lua/settle.lua", "lua/choice.lua", "lua/decide_all.lua"}

// Script is the one Lua program that decides every limit of a request.
// It is built once; SHA is its SHA1 as EVALSHA wants it.
var Script = newScript()

type script struct {
	Source string
	SHA    string
}

func newScript() script {
	var b strings.Builder
	for _, name := range scriptParts {
		src, err := luaFiles.ReadFile(name)
		if err != nil {
			panic("algorithms: missing embedded " + name) // a build defect, not a runtime condition
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	sum := sha1.Sum([]byte(b.String()))
	return script{Source: b.String(), SHA: hex.EncodeToString(sum[:])}
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

// AppendEvalSHA appends to dst the RESP command AppendCommand describes.
func AppendEvalSHA(dst []byte, blocks []string, checks []Check) []byte {
	return AppendCommand(dst, RESP, false, blocks, checks)
}

// AppendEval is AppendEvalSHA with the whole script, for the -NOSCRIPT
// fallback; it also loads the script into Redis's cache.
func AppendEval(dst []byte, blocks []string, checks []Check) []byte {
	return AppendCommand(dst, RESP, true, blocks, checks)
}
