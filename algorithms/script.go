package algorithms

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The script is the three algorithms followed by the driver that runs them.
var scriptParts = []string{"lua/funnel.lua", "lua/sliding_log.lua", "lua/sliding_counter.lua", "lua/decide.lua"}

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
	// Cost is how much the request takes; see Limit.CheckCost.
	Cost int64
}

// AppendEvalSHA appends to dst the RESP command
//
//	EVALSHA <sha> <numkeys> <blocks...> <keys...> <len(blocks)> <4 args per check>
//
// deciding checks, unless a key of blocks exists (an operator's manual
// block). It allocates nothing beyond growing dst.
func AppendEvalSHA(dst []byte, blocks []string, checks []Check) []byte {
	dst = redisproto.AppendArrayLen(dst, 4+len(blocks)+len(checks)*5)
	dst = redisproto.AppendBulkString(dst, "EVALSHA")
	dst = redisproto.AppendBulkString(dst, Script.SHA)
	return appendKeysArgs(dst, blocks, checks)
}

// AppendEval is AppendEvalSHA with the whole script, for the -NOSCRIPT
// fallback; it also loads the script into Redis's cache.
func AppendEval(dst []byte, blocks []string, checks []Check) []byte {
	dst = redisproto.AppendArrayLen(dst, 4+len(blocks)+len(checks)*5)
	dst = redisproto.AppendBulkString(dst, "EVAL")
	dst = redisproto.AppendBulkString(dst, Script.Source)
	return appendKeysArgs(dst, blocks, checks)
}

func appendKeysArgs(dst []byte, blocks []string, checks []Check) []byte {
	dst = redisproto.AppendBulkInt(dst, int64(len(blocks)+len(checks)))
	for _, b := range blocks {
		dst = redisproto.AppendBulkString(dst, b)
	}
	for i := range checks {
		dst = redisproto.AppendBulkString(dst, checks[i].Key)
	}
	dst = redisproto.AppendBulkInt(dst, int64(len(blocks)))
	for i := range checks {
		c := &checks[i]
		a, b := c.Limit.args()
		dst = redisproto.AppendBulkString(dst, c.Limit.Algorithm.code())
		dst = redisproto.AppendBulkInt(dst, a)
		dst = redisproto.AppendBulkInt(dst, b)
		dst = redisproto.AppendBulkInt(dst, c.Cost)
	}
	return dst
}
