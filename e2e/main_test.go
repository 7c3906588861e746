// Package e2e proves the filter end to end: the compiled .wasm runs in the
// wazero proxy-wasm host of wasmhost, which serves real HTTP and sends the
// filter's Redis calls to a real redis-server. The same scenarios also run
// natively, against filter.Plugin directly, so a failure points at the layer
// that broke.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

var (
	// module (the Higress build, with the Redis callout ABI) and
	// stockModule (the stock-Envoy build, Webdis only) are compiled once
	// for the whole test binary.
	module, stockModule    *wasmhost.Module
	stockWasm, higressWasm []byte
	server                 *redistest.Server
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if higressWasm, err = dist.Read(dist.Higress); err != nil {
		return 0, err
	}
	if stockWasm, err = dist.Read(dist.Stock); err != nil {
		return 0, err
	}
	cache, err := dist.CacheDir()
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	if module, err = wasmhost.Compile(ctx, higressWasm, wasmhost.WithCacheDir(cache)); err != nil {
		return 0, err
	}
	defer module.Close(ctx)
	if stockModule, err = wasmhost.Compile(ctx, stockWasm, wasmhost.WithCacheDir(cache)); err != nil {
		return 0, err
	}
	defer stockModule.Close(ctx)
	if server, err = redistest.StartServer(); err != nil {
		return 0, err
	}
	defer server.Stop()
	defer removeCtl()
	return m.Run(), nil
}
