package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// aclServer starts a redis-server whose default user is off, so that only
// AUTH as one of its ACL users gets anywhere: "ratelimit" may do anything,
// "noscript" anything but scripting (no FCALL, no EVAL). Both have the
// password "pw". "ratelimit" loads the library.
func aclServer(t *testing.T) *redistest.Server {
	srv := redistest.StartUsers(t, redistest.Options{Username: "ratelimit", Password: "pw"},
		"--user", "default", "off",
		"--user", "ratelimit", "on", ">pw", "~*", "+@all",
		"--user", "noscript", "on", ">pw", "~*", "+@all", "-@scripting")
	if err := redistest.LoadLibrary(srv.Client); err != nil {
		t.Fatal(err)
	}
	return srv
}

func authConfig(prefix, failureMode, username, password string) string {
	return fmt.Sprintf(`{"failure_mode":%q,"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q,"username":%q,"password":%q},
		"rules":[{"name":"api","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]}]}`,
		failureMode, prefix, username, password)
}

// The host sends AUTH <username> <password> on each new connection; with
// the right ACL user the filter decides as usual.
func TestACLUser(t *testing.T) {
	t.Parallel()
	srv := aclServer(t)
	// Retry-After 60 holds exactly when the three are decided within a
	// second: timed.
	timed(t, time.Second, func(t *attempt) {
		prefix := redistest.Prefix(t)
		tg := startBuild(t.T, "higress", wasmhost.Config{}, authConfig(prefix, "deny", "ratelimit", "pw"), srv.Addr)
		expect(t, tg.send(t, nil), 200, "ratelimit", `"api";r=1;t=60`)
		expect(t, tg.send(t, nil), 200, "ratelimit", `"api";r=0;t=60`)
		expect(t, tg.send(t, nil), 429, "retry-after", "60")
		if e := tg.metric("ratelimit.redis.errors"); e != 0 {
			t.Fatalf("%d redis errors", e)
		}
		admin := redistest.NewClient(srv.Addr, redistest.Options{Username: "ratelimit", Password: "pw"})
		defer admin.Close()
		if n, err := admin.Int("ZCARD", prefix+"{api|all}:0"); err != nil || n != 2 {
			t.Fatalf("the sliding log holds %d entries (%v); want 2", n, err)
		}
	})
}

// Credentials Redis refuses, or a user without the right to run scripts,
// fail every call: the filter applies its failure mode, counts the error,
// and goes on running.
func TestACLFailures(t *testing.T) {
	t.Parallel()
	srv := aclServer(t)
	for _, tc := range []struct {
		name, username, password string
		guestLog                 string // in the filter's log: Redis's error reply
	}{
		// Higress throws the AUTH reply (-WRONGPASS) away; the calls get
		// -NOAUTH.
		{"wrong password", "ratelimit", "wrong", "NOAUTH Authentication required."},
		{"no FCALL permission", "noscript", "pw", "NOPERM this user has no permissions to run the 'fcall' command"},
		{"no credentials", "", "", "NOAUTH Authentication required."},
	} {
		for _, mode := range []string{"allow", "deny"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				tg := startBuild(t, "higress", wasmhost.Config{}, authConfig(redistest.Prefix(t), mode, tc.username, tc.password), srv.Addr)
				const n = 3 // below the circuit breaker's default of 5
				want := map[string]int{"allow": 200, "deny": 503}[mode]
				for range n {
					o := tg.send(t, nil)
					expect(t, o, want)
					if o.headers["ratelimit"] != "" {
						t.Fatal("rate-limit headers without a decision")
					}
				}
				counted := "ratelimit.failure_mode." + map[string]string{"allow": "allowed", "deny": "denied"}[mode]
				if e, f := decisionErrors(tg), tg.metric(counted); e != n || f != n {
					t.Fatalf("%d redis errors, %d %s; want %d each", e, f, counted, n)
				}
				if logs := strings.Join(tg.h.GuestLogs(wasmhost.LogWarn), "\n"); !strings.Contains(logs, tc.guestLog) {
					t.Fatalf("the filter did not log %q: %q", tc.guestLog, logs)
				}
				if tg.h.Traps() != 0 {
					t.Fatalf("%d guest traps", tg.h.Traps())
				}
			})
		}
	}
}
