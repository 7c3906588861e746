package e2e

// The client address (issue 9, point 1): client_ip keys follow the address
// Envoy's connection manager computes, and a client cannot choose its key
// by sending X-Forwarded-For under the shipped envoy.yaml.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/deploy"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// shippedConnManager reads the settings that decide the client address
// (UseRemoteAddress, XffNumTrustedHops, SkipXffAppend) of the one HTTP
// connection manager in the repository's envoy.yaml (deploy/envoy_test.go
// checks that file against Envoy's own API). Fields the host does not
// model fail the test.
func shippedConnManager(t *testing.T) wasmhost.Config {
	t.Helper()
	doc, err := deploy.ReadYAMLOne("../" + deploy.EnvoyBootstrap)
	if err != nil {
		t.Fatal(err)
	}
	var root any
	if err := json.Unmarshal(doc.JSON, &root); err != nil {
		t.Fatal(err)
	}
	const hcmType = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	var found []map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["@type"] == hcmType {
				found = append(found, v)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(root)
	if len(found) != 1 {
		t.Fatalf("envoy.yaml: %d HTTP connection managers, want 1", len(found))
	}
	hcm := found[0]
	field := func(snake, camel string) any {
		if v, ok := hcm[snake]; ok {
			return v
		}
		return hcm[camel]
	}
	for _, f := range []string{"original_ip_detection_extensions", "originalIpDetectionExtensions"} {
		if _, ok := hcm[f]; ok {
			t.Fatalf("envoy.yaml sets %s, which wasmhost does not model", f)
		}
	}
	var c wasmhost.Config
	c.UseRemoteAddress, _ = field("use_remote_address", "useRemoteAddress").(bool)
	c.SkipXffAppend, _ = field("skip_xff_append", "skipXffAppend").(bool)
	if n, ok := field("xff_num_trusted_hops", "xffNumTrustedHops").(float64); ok {
		c.XffNumTrustedHops = int(n)
	}
	return c
}

// clientIPRule limits each client IP to 2 requests a minute.
func clientIPConfig(prefix string, filterHops int) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"xff_trusted_hops":%d,
		"rules":[{"name":"per-ip","key":[{"source":"client_ip"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]}]}`,
		prefix, filterHops)
}

// xffUpstream answers 200 with the X-Forwarded-For it received.
func xffUpstream(t *testing.T) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-seen-xff", strings.Join(r.Header.Values("X-Forwarded-For"), "|"))
	}))
	t.Cleanup(up.Close)
	return up.URL
}

// clientFrom returns an HTTP client whose connections come from ip (any
// 127.0.0.0/8 address works on Linux). Envoy appends its own address, not
// the peer's, for the peer 127.0.0.1 only; 127.0.0.2 is an ordinary peer.
func clientFrom(t *testing.T, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// get sends GET / with the given X-Forwarded-For lines and returns the
// status and the X-Forwarded-For the upstream received.
func get(t *testing.T, c *http.Client, h *wasmhost.Host, xff ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", h.URL()+"/", nil)
	for _, v := range xff {
		req.Header.Add("X-Forwarded-For", v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("x-seen-xff")
}

// clientIPKeys returns the client_ip parts of the keys under prefix.
func clientIPKeys(t *testing.T, prefix string) []string {
	t.Helper()
	keys, err := server.Client.Strings("KEYS", prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, k := range keys {
		m := keyShape.FindStringSubmatch(k)
		if m == nil || !strings.HasPrefix(m[2], "per-ip|") {
			t.Fatalf("unexpected key %q", k)
		}
		ips = append(ips, strings.TrimPrefix(m[2], "per-ip|"))
	}
	slices.Sort(ips)
	return slices.Compact(ips)
}

// Under the shipped envoy.yaml, requests from one peer share one key
// whatever X-Forwarded-For they carry. With use_remote_address unset (the
// envoy.yaml before issue 9), Envoy takes the last entry, and each spoofed
// value is a fresh key: 200 every time.
func TestSpoofedXFFCannotChooseTheKey(t *testing.T) {
	cm := shippedConnManager(t)
	t.Logf("envoy.yaml: use_remote_address %v, xff_num_trusted_hops %d, skip_xff_append %v",
		cm.UseRemoteAddress, cm.XffNumTrustedHops, cm.SkipXffAppend)
	for _, build := range moduleKinds {
		t.Run(build, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			cfg := cm
			cfg.Upstream = xffUpstream(t)
			h := startBuild(t, build, cfg, clientIPConfig(prefix, 0), server.Addr).h
			c := clientFrom(t, "127.0.0.2")
			for i, xff := range [][]string{
				nil, {"203.0.113.7"}, {"198.51.100.1"}, {"6.6.6.6, 127.0.0.3"}, {"::1"},
				{"203.0.113.8", "203.0.113.9"}, {"127.0.0.2"}, {""},
			} {
				want := 200
				if i >= 2 {
					want = 429
				}
				status, seen := get(t, c, h, xff...)
				if status != want {
					t.Fatalf("request %d (x-forwarded-for %q): status %d, want %d", i, xff, status, want)
				}
				if i == 1 && cm.UseRemoteAddress && !cm.SkipXffAppend && seen != "203.0.113.7,127.0.0.2" {
					t.Errorf("upstream got x-forwarded-for %q, want the peer appended", seen)
				}
			}
			if ips := clientIPKeys(t, prefix); !slices.Equal(ips, []string{"127.0.0.2"}) {
				t.Fatalf("client_ip keys %q, want only the peer's", ips)
			}
		})
	}
}

// Behind one trusted load balancer (the test, from 127.0.0.2), each client
// it names in X-Forwarded-For gets its own key, and what a client put in
// front of that entry does not matter. The proxy's own trusted hops
// (xff_num_trusted_hops: 1) are the recommended setting; the filter's
// xff_trusted_hops: 1 counts the same way, and the two together agree.
// Before issue 9, the host had no use_remote_address, and the filter's
// xff_trusted_hops: 1 took the entry Envoy appends, the load balancer's own
// address: every client shared one key.
func TestClientIPBehindOneTrustedProxy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		proxyHops  int
		filterHops int
	}{
		{"proxy trusts one hop", 1, 0},
		{"filter trusts one hop", 0, 1},
		{"both trust one hop", 1, 1},
	} {
		for _, build := range moduleKinds {
			t.Run(tc.name+"/"+build, func(t *testing.T) {
				prefix := redistest.Prefix(t)
				h := startBuild(t, build, wasmhost.Config{Upstream: xffUpstream(t), UseRemoteAddress: true, XffNumTrustedHops: tc.proxyHops},
					clientIPConfig(prefix, tc.filterHops), server.Addr).h
				lb := clientFrom(t, "127.0.0.2")
				for i, step := range []struct {
					xff  string
					want int
				}{
					{"198.51.100.1", 200},
					{"6.6.6.6, 198.51.100.1", 200}, // the client sent 6.6.6.6
					{"198.51.100.2", 200},
					{"198.51.100.1", 429},
					{"198.51.100.2", 200},
					{"7.7.7.7, 198.51.100.2", 429},
				} {
					status, seen := get(t, lb, h, step.xff)
					if status != step.want {
						t.Fatalf("step %d (x-forwarded-for %q): status %d, want %d", i, step.xff, status, step.want)
					}
					if want := step.xff + ",127.0.0.2"; status == 200 && seen != want {
						t.Errorf("upstream got x-forwarded-for %q, want %q", seen, want)
					}
				}
				if ips := clientIPKeys(t, prefix); !slices.Equal(ips, []string{"198.51.100.1", "198.51.100.2"}) {
					t.Fatalf("client_ip keys %q, want one per client", ips)
				}
			})
		}
	}
}
