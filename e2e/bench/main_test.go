package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The modules and the redis-server are made on first use, so that
// `go test ./...`, which runs no benchmark, builds nothing.
var (
	modsOnce sync.Once
	mods     *Modules
	modsErr  error

	redisOnce sync.Once
	redis     *redistest.Server
	redisErr  error
)

func modules(b *testing.B) *Modules {
	b.Helper()
	modsOnce.Do(func() { mods, modsErr = BuildModules(context.Background()) })
	if modsErr != nil {
		b.Fatal(modsErr)
	}
	return mods
}

func redisServer(b *testing.B) *redistest.Server {
	b.Helper()
	redisOnce.Do(func() { redis, redisErr = redistest.StartServer() })
	if redisErr != nil {
		b.Fatal(redisErr)
	}
	return redis
}

func TestMain(m *testing.M) {
	code := m.Run()
	printRedisCosts(os.Stdout)
	printSettleCosts(os.Stdout)
	printRequestSummary(os.Stdout)
	printThroughputSummary(os.Stdout)
	printLeaseSummary(os.Stdout)
	if mods != nil {
		mods.Close(context.Background())
	}
	if redis != nil {
		redis.Stop()
	}
	os.Exit(code)
}

// median of a non-empty list.
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func us(ns float64) string { return fmt.Sprintf("%.2f µs", ns/1000) }
