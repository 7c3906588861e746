package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Helpers of the run-time limit tests (runtime_limits_test.go,
// runtime_tiers_test.go): ratelimitctl run as an operator types it, on the
// configuration file the filter loads, and hosts of one VM each, whose
// metrics are that VM's.

// ctlBinary is ratelimitctl, built once per test run (removeCtl, from
// TestMain, deletes it).
var ctlBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

func ctlPath(t *testing.T) string {
	t.Helper()
	ctlBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "ratelimitctl-e2e-")
		if err != nil {
			ctlBinary.err = err
			return
		}
		ctlBinary.dir, ctlBinary.path = dir, filepath.Join(dir, "ratelimitctl")
		cmd := exec.Command("go", "build", "-o", ctlBinary.path, "github.com/redisrate/envoy-redis-ratelimit/cmd/ratelimitctl")
		cmd.Dir = ".." // the workspace root: go.work names the command's module
		if out, err := cmd.CombinedOutput(); err != nil {
			ctlBinary.err = fmt.Errorf("go build ./cmd/ratelimitctl: %v\n%s", err, out)
		}
	})
	if ctlBinary.err != nil {
		t.Fatal(ctlBinary.err)
	}
	return ctlBinary.path
}

func removeCtl() {
	if ctlBinary.dir != "" {
		os.RemoveAll(ctlBinary.dir)
	}
}

// ctl runs ratelimitctl with one configuration file and Redis.
type ctl struct {
	t       *testing.T
	globals []string // --config FILE --redis ADDR [--cluster]
}

// newCtl writes config to a file, as the operator keeps the filter's
// configuration, and names Redis with redisFlags ("--redis", addr...).
func newCtl(t *testing.T, config string, redisFlags ...string) *ctl {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ratelimit.json")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return &ctl{t: t, globals: append([]string{"--config", file}, redisFlags...)}
}

// run runs one command and returns its standard output, failing the test
// on a non-zero exit.
func (c *ctl) run(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(ctlPath(c.t), append(append([]string(nil), c.globals...), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("ratelimitctl %s: %v\nstderr: %s\nstdout: %s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String()
}

// json runs one command with --json and decodes its output into v.
func (c *ctl) json(v any, args ...string) {
	c.t.Helper()
	out := c.run(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("ratelimitctl %s: %v in %s", strings.Join(args, " "), err, out)
	}
}

// ctlShown is what "show --json" prints (the fields the tests read).
type ctlShown struct {
	Key             string      `json:"key"`
	Blocked         bool        `json:"blocked"`
	Tier            string      `json:"tier"`
	OverrideApplied bool        `json:"override_applied"`
	AssignedTier    *ctlKeyInfo `json:"assigned_tier"`
	Override        *ctlKeyInfo `json:"override"`
	Limits          []struct {
		Name      string `json:"name"`
		Limit     int64  `json:"limit"`
		Used      int64  `json:"used"`
		Remaining int64  `json:"remaining"`
	} `json:"limits"`
}

type ctlKeyInfo struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	TTLms int64  `json:"ttl_ms"`
}

// ctlListed is what "list --json" prints.
type ctlListed struct {
	Keys []struct {
		Rule  string `json:"rule"`
		Parts []struct {
			Value  string `json:"value"`
			Hashed bool   `json:"hashed"`
		} `json:"parts"`
		Key       string   `json:"key"`
		State     []int    `json:"state"`
		Tier      bool     `json:"tier"`
		Override  bool     `json:"override"`
		RedisKeys []string `json:"redis_keys"`
	} `json:"keys"`
	Cursor string `json:"cursor"`
}

// startVMs starts n hosts of one VM each on the shared Redis, for kind,
// and returns them with the configuration as the filter loaded it.
// wasmhost sums a metric over a host's VMs, as Envoy does; with one VM per
// host, a host's metric is its VM's.
func startVMs(t *testing.T, kind, config string, n int) ([]*wasmTarget, string) {
	t.Helper()
	cfg, config := hostConfig(t, kind, wasmhost.Config{Workers: 1, Upstream: upstream(t).URL}, config, server.Addr)
	var hosts []*wasmTarget
	for range n {
		hosts = append(hosts, startHost(t, cfg))
	}
	return hosts, config
}

// untilAdmitted sends req until it is admitted, every answer before a 429
// (which charges nothing), and returns the admitted outcome.
func untilAdmitted(t *testing.T, tg target, req map[string]string) outcome {
	t.Helper()
	var o outcome
	waitFor(t, fmt.Sprintf("%v to be admitted", req), func() bool {
		o = tg.send(t, req)
		if o.status != 200 && o.status != 429 {
			t.Fatalf("%v: %+v, want 200 or 429", req, o)
		}
		return o.status == 200
	})
	return o
}

var remainingItem = regexp.MustCompile(`;r=(\d+)`)

// remainingOf reads r, what is left, from a RateLimit header.
func remainingOf(t *testing.T, o outcome) int64 {
	t.Helper()
	m := remainingItem.FindStringSubmatch(o.headers["ratelimit"])
	if m == nil {
		t.Fatalf("no r= in RateLimit %q (headers %v)", o.headers["ratelimit"], o.headers)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// redisTime is Redis's clock (TIME), the one the filter's script uses.
func redisTime(t *testing.T, do func(args ...any) (any, error)) time.Time {
	t.Helper()
	v, err := do("TIME")
	a, ok := v.([]any)
	if err != nil || !ok || len(a) != 2 {
		t.Fatalf("TIME: %v %v", v, err)
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(a[0]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(a[1]), 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME: %v", v)
	}
	return time.Unix(sec, usec*1000)
}

// scanKeys returns every key matching pattern, by SCAN.
func scanKeys(t *testing.T, pattern string) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for cursor := "0"; ; {
		v, err := server.Do("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
		a, ok := v.([]any)
		if err != nil || !ok || len(a) != 2 {
			t.Fatalf("SCAN: %v %v", v, err)
		}
		for _, k := range a[1].([]any) {
			keys[k.(string)] = true
		}
		if cursor = a[0].(string); cursor == "0" {
			return keys
		}
	}
}
