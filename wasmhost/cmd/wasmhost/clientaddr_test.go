package main

import (
	"net"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/dist"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The client address the filter sees (source.address, its client_ip),
// read by the probe fixture: by default the TCP peer whatever
// X-Forwarded-For says; with trusted hops, the entry they vouch for; and
// only with -use-remote-address=false whatever the client sends.
func TestClientAddressNotSpoofableByDefault(t *testing.T) {
	probe := distPath(t, dist.Probe)
	const xff = "6.6.6.6, 203.0.113.7"
	for _, tc := range []struct {
		flags   []string
		want    string // "peer" for the TCP peer
		summary string
	}{
		{nil, "peer", "X-Forwarded-For is not trusted"},
		{[]string{"-xff-num-trusted-hops", "1"}, "203.0.113.7:0", "xff_num_trusted_hops 1: that many proxies in front"},
		{[]string{"-xff-num-trusted-hops", "1", "-use-remote-address=false"}, "6.6.6.6:0", "any client can choose it"},
		{[]string{"-use-remote-address=false"}, "203.0.113.7:0", "any client can choose it"},
	} {
		r := startCmd(t, append([]string{"-wasm", probe, "-no-config"}, tc.flags...)...)
		rep := get(t, r.url+"/", "", map[string]string{"x-forwarded-for": xff})
		got := rep.header.Get("X-Prop-Source-Address")
		if tc.want == "peer" {
			if host, port, _ := net.SplitHostPort(got); host != "127.0.0.1" || port == "0" {
				t.Errorf("%v: source.address %q, want the TCP peer", tc.flags, got)
			}
		} else if got != tc.want {
			t.Errorf("%v: source.address %q, want %q", tc.flags, got, tc.want)
		}
		if !strings.Contains(r.stderr.String(), tc.summary) {
			t.Errorf("%v: summary lacks %q:\n%s", tc.flags, tc.summary, r.stderr)
		}
		if line := r.accessLines()[0]; !strings.Contains(line, " client="+got+" ") {
			t.Errorf("%v: access log %q does not name client %s", tc.flags, line, got)
		}
	}
}

// A Redis cluster name the configuration does not name, asked for at run
// time, reaches -redis and is logged once; the access log prints the
// decision property the filter set.
func TestRuntimeRedisNameAndDecisionInAccessLog(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeFile(t, "probe.json", `{"redis_cluster": "outbound|6380||cache.static", "redis_timeout_ms": 1000}`)
	r := startCmd(t, "-wasm", distPath(t, dist.Probe), "-config", cfg, "-redis", srv.Addr)
	for range 2 {
		rep := get(t, r.url+"/p", "", map[string]string{"x-redis": "PING", "x-probe-decision": "rule=api limit=per-second remaining=0 decision=denied reason=limit"})
		if got := rep.header.Get("X-Redis-Reply"); got != `"+PONG\r\n"` {
			t.Fatalf("reply %q, want PONG through -redis", got)
		}
	}
	if n := strings.Count(r.stderr.String(), `redis cluster "outbound|6380||cache.static" is not configured: its calls go to `+srv.Addr); n != 1 {
		t.Errorf("fallback logged %d times, want once:\n%s", n, r.stderr)
	}
	lines := r.accessLines()
	want := ` rl="rule=api limit=per-second remaining=0 decision=denied reason=limit"`
	if len(lines) != 2 || !strings.HasSuffix(lines[0], want) || !strings.Contains(lines[0], `"GET /p HTTP/1.1" 200 via_upstream`) {
		t.Errorf("access log:\n%s\nwant 2 lines ending %s", strings.Join(lines, "\n"), want)
	}
}
