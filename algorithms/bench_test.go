package algorithms

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// naiveSlidingWindow is the seed articles' pattern, kept as the anchor to
// beat: ZADD before the check (denied requests count), millisecond members
// (same-millisecond requests collide), the client's clock.
var naiveSlidingWindow = redis.NewScript(`
local now = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], now, now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - tonumber(ARGV[2]))
local n = redis.call('ZCARD', KEYS[1])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) / 1000) + 1)
return n <= tonumber(ARGV[3]) and 1 or 0`)

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
// with -benchtime 1x; one iteration is the whole comparison.
func BenchmarkRedisCost(b *testing.B) {
	c := dial(b)
	ctx := context.Background()
	ours := func(l Limit, blocks int) func(key string, i int) {
		checks := []Check{{Limit: l, Cost: 1}}
		return func(key string, i int) {
			checks[0].Key = key
			var blockKeys []string
			if blocks > 0 {
				blockKeys = []string{key + ":block"}
			}
			v := c.roundTrip(AppendEvalSHA(nil, blockKeys, checks))
			var rerr *redisproto.Error
			if errors.As(v.Err(), &rerr) && rerr.Prefix() == "NOSCRIPT" {
				v = c.roundTrip(AppendEval(nil, blockKeys, checks))
			}
			var d Decision
			if err := d.Parse(v, len(blockKeys), 1); err != nil {
				b.Fatal(err)
			}
		}
	}
	log, _ := NewSlidingLog(100, time.Minute)
	counter, _ := NewSlidingCounter(100, time.Minute)
	funnel, _ := NewFunnel(100, 100, time.Second)
	limiter := redis_rate.NewLimiter(server.Client)
	rrLimit := redis_rate.Limit{Rate: 100, Burst: 100, Period: time.Second}
	contenders := []contender{
		{"funnel", "", 1, ours(funnel, 1)},
		{"funnel_noblock", "", 1, ours(funnel, 0)},
		{"redis_rate", "rate:", 1, func(key string, i int) {
			if _, err := limiter.Allow(ctx, key, rrLimit); err != nil {
				b.Fatal(err)
			}
		}},
		{"sliding_log", "", 100, ours(log, 1)},
		{"sliding_log_noblock", "", 100, ours(log, 0)},
		{"naive_log", "", 100, func(key string, i int) {
			// Distinct milliseconds, so the naive members do not collide here.
			now := time.Now().UnixMilli()*1000 + int64(i)
			if err := naiveSlidingWindow.Run(ctx, server.Client, []string{key}, now, 60_000_000, 100).Err(); err != nil {
				b.Fatal(err)
			}
		}},
		{"sliding_counter", "", 100, ours(counter, 1)},
	}
	for range b.N {
		prefix := redistest.Prefix(b)
		usec := make([]float64, len(contenders))
		calls := make([]int64, len(contenders))
		for round := range benchRounds {
			for ci, ct := range contenders {
				before, beforeCalls := evalshaUsec(b)
				for i := range benchRound {
					n := round*benchRound + i
					ct.decide(fmt.Sprintf("%s%s:{k%d}", prefix, ct.name, n%benchKeys), n)
				}
				after, afterCalls := evalshaUsec(b)
				usec[ci] += after - before
				calls[ci] += afterCalls - beforeCalls
			}
		}
		for ci, ct := range contenders {
			key := prefix + ct.name + ":{memory}"
			for i := range ct.fill {
				ct.decide(key, i)
			}
			mem, err := server.Client.MemoryUsage(ctx, ct.storePrefix+key).Result()
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

// evalshaUsec reads the total usec and calls of EVALSHA so far.
func evalshaUsec(b *testing.B) (float64, int64) {
	calls, usec, err := server.CommandUsec("evalsha")
	if err != nil {
		b.Fatal(err)
	}
	return float64(usec), calls
}

// printRatios runs after the benchmarks and prints the side-by-side ratios.
func printRatios() {
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
	os.Stdout.WriteString(sb.String())
}
