package bench

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// BenchmarkRedisCostMemory measures what a limit's key costs Redis in all,
// for sizing maxmemory (docs/redis.md): used_memory (INFO memory) before
// and after the library's decide has written memKeys keys of one
// algorithm, each key name as the filter writes it, divided by the keys.
// Unlike MEMORY USAGE (BenchmarkRedisCost), it includes the keyspace's
// own entries: the key's dict entry and its TTL's. Every limit is an hour,
// so no key expires meanwhile. It runs on its own server, flushed
// (synchronously) between algorithms. Run it with -benchtime 1x.
func BenchmarkRedisCostMemory(b *testing.B) {
	server := redistest.Start(b)
	c, err := redistest.Dial(server.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	log, _ := algorithms.NewSlidingLog(1000, time.Hour)
	counter, _ := algorithms.NewSlidingCounter(1000, time.Hour)
	funnel, _ := algorithms.NewFunnel(1000, 1000, time.Hour)
	slots, _ := algorithms.NewConcurrency(1000, time.Hour)
	const memKeys = 10_000
	for range b.N {
		for _, tc := range []struct {
			name  string
			limit algorithms.Limit
			keys  int
			per   int // admitted requests per key
		}{
			{"funnel", funnel, memKeys, 1},
			{"sliding_counter", counter, memKeys, 1},
			{"sliding_log_1", log, memKeys, 1},
			{"sliding_log_100", log, memKeys / 100, 100},
			{"concurrency_1", slots, memKeys, 1},
		} {
			if _, err := server.Do("FLUSHALL", "SYNC"); err != nil {
				b.Fatal(err)
			}
			before := usedMemory(b, server)
			for k := range tc.keys {
				rule := fmt.Sprintf("rl:{api|user%07d}", k)
				checks := []algorithms.Check{{Key: rule + ":0", Limit: tc.limit, Cost: 1}}
				for i := range tc.per {
					if tc.limit.Algorithm == algorithms.Concurrency {
						checks[0].Cost = int64(i + 1) // the slot id
					}
					v, err := c.Decode(c.RoundTrip(algorithms.AppendFCall(nil, []string{rule + ":block"}, checks)))
					var d algorithms.Decision
					if err == nil {
						err = d.Parse(v, 1, 1)
					}
					if err == nil && !d.Allowed() {
						err = fmt.Errorf("denied")
					}
					if err != nil {
						b.Fatalf("%s: %v", tc.name, err)
					}
				}
			}
			per := float64(usedMemory(b, server)-before) / float64(tc.keys)
			b.ReportMetric(per, tc.name+"-bytes/key")
		}
	}
}

// usedMemory is INFO memory's used_memory.
func usedMemory(b *testing.B, s *redistest.Server) int64 {
	b.Helper()
	info, err := s.Client.Text("INFO", "memory")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("INFO memory has no used_memory")
	return 0
}
