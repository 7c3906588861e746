package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// webdisTap sits in front of one node's Webdis and records every command
// posted to it, its arguments unescaped.
type webdisTap struct {
	node string // the node's address
	mu   sync.Mutex
	cmds [][]string
}

// tapWebdis puts a webdisTap in front of each Webdis of w and returns a
// clusterWebdis whose Webdis are the taps.
func tapWebdis(t *testing.T, w *clusterWebdis) (*clusterWebdis, []*webdisTap) {
	t.Helper()
	tapped := &clusterWebdis{c: w.c, webdis: map[string]string{}}
	var taps []*webdisTap
	for node, addr := range w.webdis {
		tap := &webdisTap{node: node}
		proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			var args []string
			for _, a := range strings.Split(strings.Trim(string(b), "/"), "/") {
				u, err := url.PathUnescape(a)
				if err != nil {
					u = a
				}
				args = append(args, u)
			}
			tap.mu.Lock()
			tap.cmds = append(tap.cmds, args)
			tap.mu.Unlock()
			proxy.ServeHTTP(rw, r)
		}))
		t.Cleanup(srv.Close)
		tapped.webdis[node] = strings.TrimPrefix(srv.URL, "http://")
		taps = append(taps, tap)
	}
	return tapped, taps
}

// decides is the decide calls the tap saw (epoch reads and slot map
// loads aside), from the from-th command on.
func (tap *webdisTap) decides(from int) [][]string {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	var out [][]string
	for _, c := range tap.cmds[min(from, len(tap.cmds)):] {
		if len(c) < 4 || !strings.EqualFold(c[0], "FCALL") || len(c) == 5 && c[2] == "1" && c[4] == "e" {
			continue
		}
		out = append(out, c)
	}
	return out
}

func (tap *webdisTap) seen() int {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return len(tap.cmds)
}

// On a Redis Cluster of three masters behind a Webdis per node, in both
// builds: a batch over 20 tools, keyed per user and tool, is one FCALL
// to the one node whose slot the user's hash tag names, with its 20 keys
// (and their block keys), and the batch is admitted.
func TestJSONRPCBatchOneSlot(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3})
	w, taps := tapWebdis(t, startClusterWebdis(t, c, "FCALL", "CLUSTER"))
	rules := `[{"name":"tools","match":{"path":"/mcp"},"key":[{"source":"header","name":"x-user"},{"source":"call","path":"params.name"}],
		"jsonrpc":{"protocol":"mcp","max_keys":32},"limits":[{"algorithm":"sliding_log","limit":10,"window":"1h"}]}]`
	var calls []string
	for i := range 40 {
		calls = append(calls, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool-%d"}}`, i, i%20))
	}
	batch := "[" + strings.Join(calls, ",") + "]"
	for _, b := range []struct {
		name string
		mod  **wasmhost.Module
	}{{"stock", &stockModule}, {"higress", &module}} {
		t.Run(b.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			epochOwner, err := c.MasterFor(prefix + "epoch")
			if err != nil {
				t.Fatal(err)
			}
			nodes, clusters := w.nodes(t, epochOwner.Addr)
			tg := startNodesVMs(t, *b.mod, nodesConfig(prefix, "deny", nodes, "", rules), clusters, 1)[0]
			owner, err := c.MasterFor(prefix + "{tools|erin}")
			if err != nil {
				t.Fatal(err)
			}
			from := map[*webdisTap]int{}
			for _, tap := range taps {
				from[tap] = tap.seen()
			}
			if resp, body := postRPC(t, tg.h.URL()+"/mcp", "erin", batch); resp.StatusCode != 200 || body != "upstream /mcp" {
				t.Fatalf("%d %s; want the upstream's 200", resp.StatusCode, body)
			}
			var got []string
			for _, tap := range taps {
				for _, d := range tap.decides(from[tap]) {
					got = append(got, tap.node)
					if d[2] != "40" {
						t.Errorf("the FCALL to %s has %s keys; want 40 (20 keys and their block keys): %q", tap.node, d[2], d)
					}
				}
			}
			if len(got) != 1 || got[0] != owner.Addr {
				t.Fatalf("decide calls went to %q; want one, to %s, the owner of {tools|erin}", got, owner.Addr)
			}
		})
	}
}
