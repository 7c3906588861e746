package v8

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
)

// The modules' paths, in dist/ as `make build fixtures` writes them.
var higressWasm, stockWasm, sleeperWasm string

func TestMain(m *testing.M) {
	dir, err := dist.Dir()
	for _, b := range []struct {
		dst  *string
		name string
	}{{&higressWasm, dist.Higress}, {&stockWasm, dist.Stock}, {&sleeperWasm, dist.Sleeper}} {
		if err == nil {
			_, err = dist.Read(b.name) // says how to build a missing one
			*b.dst = filepath.Join(dir, b.name)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/v8:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// v8Flags are the flags proxy-wasm-cpp-host gives V8 (src/v8/v8.cc):
// TurboFan only, 1 GiB of linear memory (16384 pages of 64 KiB), 20 stack
// frames. --allow-natives-syntax only lets host.mjs check that no
// function was compiled by Liftoff.
var v8Flags = []string{"--no-liftoff", "--wasm-max-mem-pages=16384", "--stack-trace-limit=20", "--allow-natives-syntax"}

// hostTimeout bounds one run of the node host; it guards against a hang,
// it does not measure speed.
const hostTimeout = 3 * time.Minute

// spec is host.mjs's input (see its header comment).
type spec struct {
	Wasm          string            `json:"wasm"`
	PluginConfig  string            `json:"plugin_config"`
	RedisABI      bool              `json:"redis_abi"`
	RedisClusters map[string]string `json:"redis_clusters,omitempty"`
	HTTPClusters  map[string]string `json:"http_clusters,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Concurrency   int               `json:"concurrency,omitempty"`
	Requests      []request         `json:"requests"`
}

type request struct {
	Headers  [][2]string `json:"headers"`
	Body     *string     `json:"body,omitempty"` // in one proxy_on_request_body call
	Response *response   `json:"response,omitempty"`
}

// response is what the upstream answers an admitted request: its headers,
// then its body in chunks, each in a proxy_on_response_body call.
type response struct {
	Headers [][2]string `json:"headers"`
	Chunks  []string    `json:"chunks"`
}

// event is one line of host.mjs's output.
type event struct {
	Event     string  `json:"event"`
	OK        bool    `json:"ok"`
	V8        string  `json:"v8"`
	CompileMs float64 `json:"compile_ms"`
	StartMs   float64 `json:"start_ms"`

	Index   int         `json:"index"`
	Status  int         `json:"status"`
	Local   bool        `json:"local"`
	Headers [][2]string `json:"headers"`
	Body    string      `json:"body"` // a local reply's
	// Decision is the filter state wasm.ratelimit.decision the module
	// set on the stream; "" when none.
	Decision string `json:"decision"`

	Requests        int                `json:"requests"`
	RequestsMs      float64            `json:"requests_ms"`
	GCCycles        int                `json:"gc_cycles"`
	PollOneoffCalls int                `json:"poll_oneoff_calls"`
	MemoryBytes     int                `json:"memory_bytes"`
	Liftoff         *bool              `json:"liftoff"`
	Metrics         map[string]float64 `json:"metrics"`
}

func (e event) header(name string) string {
	for _, h := range e.Headers {
		if h[0] == name {
			return h[1]
		}
	}
	return ""
}

// run is the outcome of one node process.
type run struct {
	start     event
	responses []event
	end       *event
	stderr    string
	err       error // the process's exit error, if any
}

// runNode runs script in node with Envoy's V8 flags, its one argument a
// file holding spec as JSON, and returns its standard output and error and
// its exit error (which says so when the run passed timeout).
func runNode(t testing.TB, script string, spec any, timeout time.Duration) (stdout, stderr string, err error) {
	t.Helper()
	return runNodeFlags(t, v8Flags, script, spec, timeout)
}

// runNodeFlags is runNode with node's flags given.
func runNodeFlags(t testing.TB, flags []string, script string, spec any, timeout time.Duration) (stdout, stderr string, err error) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found on PATH: install nodejs (apt-get install -y nodejs; .ci/run does): %v", err)
	}
	file := filepath.Join(t.TempDir(), "spec.json")
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append(slices.Clip(flags), script, file)...)
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err = cmd.Run(); ctx.Err() != nil {
		err = fmt.Errorf("node %s did not finish within %v: %w", script, timeout, err)
	}
	return out.String(), errOut.String(), err
}

// runHost runs host.mjs on s.
func runHost(t *testing.T, s spec) run {
	t.Helper()
	stdout, stderr, err := runNode(t, "host.mjs", s, hostTimeout)
	r := run{err: err, stderr: stderr}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("host output %q: %v", line, err)
		}
		switch e.Event {
		case "start":
			r.start = e
		case "response":
			r.responses = append(r.responses, e)
		case "end":
			r.end = &e
		}
	}
	return r
}

// runtimeThrows returns the module's output lines that show a Go runtime
// throw or panic, its logs at error level and above, and the host's
// failure lines.
func runtimeThrows(stderr string) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "wasm log error:") || strings.HasPrefix(line, "wasm log critical:") {
			out = append(out, line)
			continue
		}
		guest, isGuest := strings.CutPrefix(line, "wasm fd2: ")
		if !isGuest {
			guest, isGuest = strings.CutPrefix(line, "wasm fd1: ")
		}
		switch {
		case isGuest && (strings.HasPrefix(guest, "fatal error") || strings.HasPrefix(guest, "runtime:") ||
			strings.HasPrefix(guest, "panic:") || strings.Contains(guest, "poll_oneoff failed")):
			out = append(out, line)
		case strings.HasPrefix(line, "v8host: FAIL"):
			out = append(out, line)
		}
	}
	return out
}

// mustSucceed fails the test unless the run exited 0, started the plugin,
// finished, showed no throw and logged no error, and ran without Liftoff.
func mustSucceed(t *testing.T, r run) {
	t.Helper()
	if throws := runtimeThrows(r.stderr); len(throws) > 0 || r.err != nil {
		t.Fatalf("node host: %v; failures:\n%s\nstderr:\n%s", r.err, strings.Join(throws, "\n"), tail(r.stderr, 60))
	}
	if !r.start.OK || r.end == nil {
		t.Fatalf("plugin start %v, end event %v; stderr:\n%s", r.start.OK, r.end != nil, tail(r.stderr, 60))
	}
	if r.end.Liftoff == nil || *r.end.Liftoff {
		t.Fatalf("proxy_on_request_headers compiled by Liftoff: %v; want TurboFan only, as with --no-liftoff", r.end.Liftoff)
	}
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = append([]string{fmt.Sprintf("... %d lines before", len(l)-lines)}, l[len(l)-lines:]...)
	}
	return strings.Join(l, "\n")
}

var errExit *exec.ExitError

// failedWith fails the test unless the run exited non-zero with want in
// its stderr.
func failedWith(t *testing.T, r run, want string) {
	t.Helper()
	if !errors.As(r.err, &errExit) || !strings.Contains(r.stderr, want) {
		t.Fatalf("node host: %v; want a non-zero exit with %q in stderr:\n%s", r.err, want, tail(r.stderr, 40))
	}
}
