package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// blackhole accepts connections and never answers, like a hung Redis.
func blackhole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l.Addr().String()
}

// refused is an address where nothing listens until the test ends.
func refused(t *testing.T) string {
	t.Helper()
	return redistest.HoldPort(t).Addr()
}

// With Redis down, every request gets the failure mode; a hung Redis
// after the timeout.
func TestRedisDownFailureModes(t *testing.T) {
	const timeout = 150 * time.Millisecond
	for _, name := range kinds {
		for _, down := range []struct {
			name string
			addr func(*testing.T) string
		}{{"refused", refused}, {"hung", blackhole}} {
			for _, mode := range []string{"allow", "deny"} {
				t.Run(name+"/"+down.name+"/"+mode, func(t *testing.T) {
					s := scenario{top: fmt.Sprintf(`"failure_mode":%q,`, mode),
						rules: `[{"name":"api","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]`}
					tg := startTarget(t, name, configFor(s, redistest.Prefix(t), timeout.String()), down.addr(t))
					for range 3 {
						began := time.Now()
						o := tg.send(t, nil)
						took := time.Since(began)
						if mode == "allow" {
							expect(t, o, 200)
						} else {
							expect(t, o, 503)
							if o.body != `{"error":"ratelimit_unavailable"}`+"\n" {
								t.Fatalf("body %q", o.body)
							}
						}
						// A hung Redis is given up on at the timeout, not before: a
						// bound that holds at any speed. (A stream never answered
						// would get the host's 504 after its pause guard.)
						if down.name == "hung" && took < timeout {
							t.Fatalf("answered after %v, before the %v timeout", took, timeout)
						}
						if o.headers["ratelimit"] != "" {
							t.Fatal("rate-limit headers without a decision")
						}
					}
					if decisionErrors(tg) != 3 || tg.metric("ratelimit.failure_mode."+map[string]string{"allow": "allowed", "deny": "denied"}[mode]) != 3 {
						t.Fatalf("failure metrics: errors %d", decisionErrors(tg))
					}
				})
			}
		}
	}
}

// Each invalid configuration fails the plugin start in the host with its
// exact message.
func TestConfigErrorsFailPluginStart(t *testing.T) {
	files, _ := filepath.Glob("../filter/config/testdata/invalid/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			config, _ := os.ReadFile(f)
			want, _ := os.ReadFile(strings.TrimSuffix(f, ".json") + ".error")
			h, err := wasmhost.Start(context.Background(), wasmhost.Config{Module: module, PluginConfig: config,
				Workers: 1, Upstream: "http://127.0.0.1:1", RedisClusters: map[string]string{"redis": server.Addr}})
			if err == nil {
				h.Close()
				t.Fatal("plugin started")
			}
			msg := "ratelimit: bad configuration: " + strings.TrimSpace(string(want))
			if !strings.Contains(err.Error(), msg) {
				t.Fatalf("got  %v\nwant %s", err, msg)
			}
		})
	}
}

// The host authenticates and selects the configured database.
func TestPasswordAndDatabase(t *testing.T) {
	secured := redistest.Start(t, "--requirepass", "s3cret")
	rules := `[{"name":"api","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]`
	config := func(password string) string {
		return fmt.Sprintf(`{"redis":{"cluster":"redis","password":%q,"database":3,"timeout":"5s"},"rules":%s}`, password, rules)
	}
	tg := startBuild(t, "higress", wasmhost.Config{}, config("s3cret"), secured.Addr)
	expect(t, tg.send(t, nil), 200, "ratelimit", `"api";r=0;t=60`)
	expect(t, tg.send(t, nil), 429)
	db3 := redistest.NewClient(secured.Addr, redistest.Options{Password: "s3cret", DB: 3})
	defer db3.Close()
	if n, err := db3.Int("EXISTS", "rl:{api|all}:0"); err != nil || n != 1 {
		t.Fatalf("key in database 3: %d, %v", n, err)
	}

	wrong := startBuild(t, "higress", wasmhost.Config{}, config("wrong"), secured.Addr)
	expect(t, wrong.send(t, nil), 200) // fails open, by default
	if decisionErrors(wrong) != 1 {
		t.Fatal("a wrong password was not counted as a Redis error")
	}
}

// With the Webdis gateway itself down or refusing the credentials, the
// stock build applies the failure mode.
func TestWebdisGatewayDown(t *testing.T) {
	rules := `[{"name":"api","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":5,"window":"1s"}]}]`
	wrongPassword := func(t *testing.T) string { return redistest.StartWebdis(t, server.Addr) }
	for _, down := range []struct {
		name  string
		addr  func(*testing.T) string
		wrong bool
	}{{"refused", refused, false}, {"hung", blackhole, false}, {"forbidden", wrongPassword, true}} {
		for _, mode := range []string{"allow", "deny"} {
			t.Run(down.name+"/"+mode, func(t *testing.T) {
				// Only a hung gateway waits for the timeout; the others must
				// answer (refused, 403) within it, however busy the machine.
				timeout := "5s"
				if down.name == "hung" {
					timeout = "150ms"
				}
				config := fmt.Sprintf(`{"failure_mode":%q,"redis":{"cluster":"redis","timeout":%q},"rules":%s}`, mode, timeout, rules)
				if down.wrong {
					config = strings.Replace(config, `"redis":{"cluster":"redis",`,
						`"redis":{"transport":"webdis","cluster":"webdis","username":"ratelimit","password":"wrong",`, 1)
				}
				tg := startBuild(t, "webdis", wasmhost.Config{}, config, down.addr(t))
				want := map[string]int{"allow": 200, "deny": 503}[mode]
				for range 2 {
					expect(t, tg.send(t, nil), want)
				}
				if decisionErrors(tg) != 2 {
					t.Fatalf("redis errors %d, want 2", decisionErrors(tg))
				}
				if down.wrong && !strings.Contains(strings.Join(tg.h.GuestLogs(wasmhost.LogWarn), "\n"), "webdis answered HTTP 403") {
					t.Fatalf("no clear log line for the refused credentials: %q", tg.h.GuestLogs(wasmhost.LogWarn))
				}
			})
		}
	}
}

// A configuration asking for a transport the module lacks fails the start.
func TestStockModuleRejectsRedisABI(t *testing.T) {
	config := `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1s"}]}]}`
	h, err := wasmhost.Start(context.Background(), wasmhost.Config{Module: stockModule, PluginConfig: []byte(config),
		Workers: 1, Upstream: "http://127.0.0.1:1"})
	if err == nil {
		h.Close()
		t.Fatal("the stock module started with transport redis_abi")
	}
	if want := "redis.transport: redis_abi needs the Higress build of this filter (ratelimit-higress.wasm)"; !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v", err)
	}
}
