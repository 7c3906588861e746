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
	// module is the filter compiled once for the whole test binary.
	module *host.Module
	server *redistest.Server
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
	wasm, err := buildFilter(filepath.Join(dir, "ratelimit.wasm"))
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	if module, err = host.Compile(ctx, wasm); err != nil {
		return 0, err
	}
	defer module.Close(ctx)
	if server, err = redistest.StartServer(); err != nil {
		return 0, err
	}
	defer server.Stop()
	return m.Run(), nil
}

// buildFilter compiles the repository's filter to out, as `make build` does.
func buildFilter(out string) ([]byte, error) {
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "..")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the filter: %v\n%s", err, b)
	}
	return os.ReadFile(out)
}
