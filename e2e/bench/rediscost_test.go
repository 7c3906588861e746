package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// naiveSlidingWindow is the seed articles' pattern, kept as the anchor to
// beat: ZADD before the check (denied requests count), millisecond members
// (same-millisecond requests collide), the client's clock.
const naiveSlidingWindow = `
local now = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], now, now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - tonumber(ARGV[2]))
local n = redis.call('ZCARD', KEYS[1])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) / 1000) + 1)
return n <= tonumber(ARGV[3]) and 1 or 0`

// redisCost is what one contender costs Redis, from INFO commandstats and
// MEMORY USAGE.
type redisCost struct {
	usecPerCall float64
	bytesPerKey int64
	entries     int64 // admitted requests held by the measured key
}

var (
	costsMu sync.Mutex
	costs   = map[string]redisCost{}
)

// contender is one script under comparison. decide runs one decision on
// key; storePrefix is what the script puts before the key; fill is how many
// admitted requests the key holds when its memory is measured.
type contender struct {
	name        string
	storePrefix string
	fill        int
	decide      func(key string, i int)
}

const (
	benchKeys   = 1000
	benchRounds = 20
	benchRound  = 500 // decisions per contender per round
)

// BenchmarkRedisCost measures Redis's time per decision (commandstats
// usec of EVALSHA) for each contender, side by side: the contenders take
// turns in short rounds, so a noisy neighbour slows them all alike. Run it
// with -benchtime 1x; one iteration is the whole comparison. It compares
// this filter's script with go-redis/redis_rate (which needs go-redis's
// client) and with a naive sliding window.
func BenchmarkRedisCost(b *testing.B) {
	server := redisServer(b)
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// oursAs calls the library's decide (FCall), or the same code as a
	// script (EvalSHA, with EVAL on -NOSCRIPT).
	oursAs := func(inv algorithms.Invoke, l algorithms.Limit, blocks int) func(key string, i int) {
		checks := []algorithms.Check{{Limit: l, Cost: 1}}
		return func(key string, i int) {
			b.Helper()
			checks[0].Key = key // "<rule key>:0", a state key
			var blockKeys []string
			if blocks > 0 {
				blockKeys = []string{strings.TrimSuffix(key, ":0") + ":block"}
			}
			v, err := c.Decode(c.RoundTrip(algorithms.AppendCommand(nil, algorithms.RESP, inv, blockKeys, checks)))
			if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
				v, err = c.Decode(c.RoundTrip(algorithms.AppendCommand(nil, algorithms.RESP, algorithms.Eval, blockKeys, checks)))
			}
			var d algorithms.Decision
			if err == nil {
				err = d.Parse(v, len(blockKeys), 1)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	ours := func(l algorithms.Limit, blocks int) func(key string, i int) {
		return oursAs(algorithms.FCall, l, blocks)
	}
	log, _ := algorithms.NewSlidingLog(100, time.Minute)
	counter, _ := algorithms.NewSlidingCounter(100, time.Minute)
	funnel, _ := algorithms.NewFunnel(100, 100, time.Second)
	rdb := goredis.NewClient(&goredis.Options{Addr: server.Addr})
	defer rdb.Close()
	limiter := redis_rate.NewLimiter(rdb)
	rrLimit := redis_rate.Limit{Rate: 100, Burst: 100, Period: time.Second}
	contenders := []contender{
		{"funnel", "", 1, ours(funnel, 1)},
		{"funnel_noblock", "", 1, ours(funnel, 0)},
		{"redis_rate", "rate:", 1, func(key string, i int) {
			b.Helper()
			if _, err := limiter.Allow(ctx, key, rrLimit); err != nil {
				b.Fatal(err)
			}
		}},
		{"sliding_log", "", 100, ours(log, 1)},
		{"sliding_log_noblock", "", 100, ours(log, 0)},
		{"naive_log", "", 100, naive(b, server, c)},
		{"sliding_counter", "", 100, ours(counter, 1)},
		{"funnel_evalsha", "", 1, oursAs(algorithms.EvalSHA, funnel, 1)},
		{"sliding_log_evalsha", "", 100, oursAs(algorithms.EvalSHA, log, 1)},
	}
	for range b.N {
		prefix := redistest.Prefix(b)
		usec := make([]float64, len(contenders))
		calls := make([]int64, len(contenders))
		for round := range benchRounds {
			for ci, ct := range contenders {
				before, beforeCalls := scriptUsec(b, server)
				for i := range benchRound {
					n := round*benchRound + i
					ct.decide(fmt.Sprintf("%s%s:{k%d}:0", prefix, ct.name, n%benchKeys), n)
				}
				after, afterCalls := scriptUsec(b, server)
				usec[ci] += after - before
				calls[ci] += afterCalls - beforeCalls
			}
		}
		for ci, ct := range contenders {
			key := prefix + ct.name + ":{memory}:0"
			for i := range ct.fill {
				ct.decide(key, i)
			}
			mem, err := server.Client.Int("MEMORY", "USAGE", ct.storePrefix+key)
			if err != nil {
				b.Fatal(err)
			}
			per := usec[ci] / float64(calls[ci])
			b.ReportMetric(per, ct.name+"-us/decision")
			costsMu.Lock()
			costs[ct.name] = redisCost{usecPerCall: per, bytesPerKey: mem, entries: int64(ct.fill)}
			costsMu.Unlock()
		}
	}
}

// naive runs naiveSlidingWindow as go-redis's Script does: EVALSHA, and
// EVAL when Redis has not loaded it yet.
func naive(b *testing.B, server *redistest.Server, c *redistest.Conn) func(key string, i int) {
	b.Helper()
	sha, err := server.Client.Text("SCRIPT", "LOAD", naiveSlidingWindow)
	if err != nil {
		b.Fatal(err)
	}
	return func(key string, i int) {
		b.Helper()
		// Distinct milliseconds, so the naive members do not collide here.
		now := time.Now().UnixMilli()*1000 + int64(i)
		_, err := c.Do("EVALSHA", sha, 1, key, now, 60_000_000, 100)
		var rerr *redisproto.Error
		if errors.As(err, &rerr) && rerr.Prefix() == "NOSCRIPT" {
			_, err = c.Do("EVAL", naiveSlidingWindow, 1, key, now, 60_000_000, 100)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// scriptUsec reads the total usec and calls so far of the commands that
// run Lua: FCALL (the library), EVALSHA and EVAL (the anchors' scripts).
func scriptUsec(b *testing.B, server *redistest.Server) (float64, int64) {
	b.Helper()
	var usec, calls int64
	for _, cmd := range []string{"fcall", "evalsha", "eval"} {
		c, u, err := server.CommandUsec(cmd)
		if err != nil {
			b.Fatal(err)
		}
		usec, calls = usec+u, calls+c
	}
	return float64(usec), calls
}

// printRedisCosts prints the side-by-side ratios of BenchmarkRedisCost, if
// it ran.
func printRedisCosts(w io.Writer) {
	costsMu.Lock()
	defer costsMu.Unlock()
	if len(costs) == 0 {
		return
	}
	names := make([]string, 0, len(costs))
	for n := range costs {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("\nRedis cost per decision, one run, side by side:\n")
	fmt.Fprintf(&sb, "%-16s %12s %12s %10s\n", "script", "us/decision", "bytes/key", "entries")
	for _, n := range names {
		c := costs[n]
		fmt.Fprintf(&sb, "%-16s %12.2f %12d %10d\n", n, c.usecPerCall, c.bytesPerKey, c.entries)
	}
	ratio := func(a, b string) {
		x, okx := costs[a]
		y, oky := costs[b]
		if okx && oky {
			fmt.Fprintf(&sb, "%s / %s: %.2fx Redis CPU, %.2fx memory\n", a, b,
				x.usecPerCall/y.usecPerCall, float64(x.bytesPerKey)/float64(y.bytesPerKey))
		}
	}
	ratio("funnel", "redis_rate")
	ratio("funnel_noblock", "redis_rate")
	ratio("sliding_log", "naive_log")
	ratio("sliding_log_noblock", "naive_log")
	ratio("sliding_counter", "sliding_log")
	ratio("funnel", "funnel_evalsha")
	ratio("sliding_log", "sliding_log_evalsha")
	io.WriteString(w, sb.String())
}
