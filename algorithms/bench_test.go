package algorithms

import (
	"context"
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

const benchKeys = 1000

// benchRedisCost resets Redis's statistics, runs b.N decisions spread over
// benchKeys keys, and records usec per call of command and the memory of a
// key that has admitted fill requests (stored under storePrefix+key).
func benchRedisCost(b *testing.B, name, storePrefix string, fill int, decide func(key string, i int)) {
	ctx := context.Background()
	prefix := redistest.Prefix(b)
	if err := server.Client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		decide(fmt.Sprintf("%s{k%d}", prefix, i%benchKeys), i)
	}
	b.StopTimer()
	_, usec, err := server.CommandStat("evalsha")
	if err != nil || usec == 0 {
		b.Fatalf("commandstats for evalsha: %v, %v", usec, err)
	}
	key := prefix + "{memory}"
	for i := range fill {
		decide(key, i)
	}
	mem, err := server.Client.MemoryUsage(ctx, storePrefix+key).Result()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(usec, "redis-us/decision")
	b.ReportMetric(float64(mem), "bytes/key")
	costsMu.Lock()
	costs[name] = redisCost{usecPerCall: usec, bytesPerKey: mem, entries: int64(fill)}
	costsMu.Unlock()
}

func BenchmarkRedisCost(b *testing.B) {
	c := dial(b)
	ctx := context.Background()
	ours := func(l Limit) func(key string, i int) {
		checks := []Check{{Limit: l, Cost: 1}}
		return func(key string, i int) {
			checks[0].Key = key
			if _, err := c.tryDecide(key+":block", checks); err != nil {
				b.Fatal(err)
			}
		}
	}
	log, _ := NewSlidingLog(100, time.Minute)
	counter, _ := NewSlidingCounter(100, time.Minute)
	funnel, _ := NewFunnel(100, 100, time.Second)
	b.Run("funnel", func(b *testing.B) { benchRedisCost(b, "funnel", "", 1, ours(funnel)) })
	b.Run("redis_rate", func(b *testing.B) {
		limiter := redis_rate.NewLimiter(server.Client)
		limit := redis_rate.Limit{Rate: 100, Burst: 100, Period: time.Second}
		benchRedisCost(b, "redis_rate", "rate:", 1, func(key string, i int) {
			if _, err := limiter.Allow(ctx, key, limit); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("sliding_log", func(b *testing.B) { benchRedisCost(b, "sliding_log", "", 100, ours(log)) })
	b.Run("naive_log", func(b *testing.B) {
		benchRedisCost(b, "naive_log", "", 100, func(key string, i int) {
			// Distinct milliseconds, so the naive members do not collide here.
			now := time.Now().UnixMilli()*1000 + int64(i)
			if err := naiveSlidingWindow.Run(ctx, server.Client, []string{key}, now, 60_000_000, 100).Err(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("sliding_counter", func(b *testing.B) { benchRedisCost(b, "sliding_counter", "", 100, ours(counter)) })
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
	ratio("sliding_log", "naive_log")
	ratio("sliding_counter", "sliding_log")
	os.Stdout.WriteString(sb.String())
}
