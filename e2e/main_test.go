// Package e2e proves the filter end to end: the compiled .wasm runs in the
// wazero proxy-wasm host of e2e/host, which serves real HTTP and sends the
// filter's Redis calls to a real redis-server. The same scenarios also run
// natively, against filter.Plugin directly, so a failure points at the layer
// that broke.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/e2e/host"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

var (
	// module (the Higress build, with the Redis callout ABI) and
	// stockModule (the stock-Envoy build, Webdis only) are compiled once
	// for the whole test binary.
	module, stockModule    *host.Module
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
	dir, err := os.MkdirTemp("", "e2e-wasm")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if higressWasm, err = buildFilter(filepath.Join(dir, "ratelimit-higress.wasm"), "higress"); err != nil {
		return 0, err
	}
	if stockWasm, err = buildFilter(filepath.Join(dir, "ratelimit.wasm"), ""); err != nil {
		return 0, err
	}
	ctx := context.Background()
	if module, err = host.Compile(ctx, higressWasm); err != nil {
		return 0, err
	}
	defer module.Close(ctx)
	if stockModule, err = host.Compile(ctx, stockWasm); err != nil {
		return 0, err
	}
	defer stockModule.Close(ctx)
	if server, err = redistest.StartServer(); err != nil {
		return 0, err
	}
	defer server.Stop()
	return m.Run(), nil
}

// buildFilter compiles the repository's filter to out, as `make build` does.
func buildFilter(out, tags string) ([]byte, error) {
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-tags", tags, "-o", out, "..")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the filter: %v\n%s", err, b)
	}
	return os.ReadFile(out)
}
