package e2e

// Helpers of the Redis Cluster tests (cluster_*_test.go): the filter in
// front of a real cluster through a real Webdis per node (redis.nodes), a
// load of many senders that records every answer, and checks read back on
// the slot's owner.

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// clusterWebdis is a cluster with a Webdis in front of each node.
type clusterWebdis struct {
	c      *redistest.Cluster
	webdis map[string]string // node address -> its Webdis
}

// startClusterWebdis starts a Webdis per node of c, replicas included, with
// only the commands in enabled allowed (FCALL and CLUSTER for the filter).
func startClusterWebdis(t *testing.T, c *redistest.Cluster, enabled ...string) *clusterWebdis {
	t.Helper()
	return &clusterWebdis{c: c, webdis: redistest.StartWebdisPerNode(t, c, "", "", enabled)}
}

// nodes is redis.nodes for every node but those in skip (by address), in
// address order but first first (the seed of a VM that has not loaded the
// slot map yet), each node named as it announces itself, with the wasmhost
// HTTPClusters of their Webdis ("webdis-<i>").
func (w *clusterWebdis) nodes(t *testing.T, first string, skip ...string) (string, map[string]string) {
	t.Helper()
	addrs := make([]string, 0, len(w.webdis))
	for a := range w.webdis {
		if !slices.Contains(skip, a) {
			addrs = append(addrs, a)
		}
	}
	slices.SortFunc(addrs, func(a, b string) int {
		if (a == first) != (b == first) {
			if a == first {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var entries []string
	clusters := map[string]string{}
	for i, a := range addrs {
		name := "webdis-" + strconv.Itoa(i)
		entries = append(entries, fmt.Sprintf(`{"address":%q,"cluster":%q}`, w.announced(t, a), name))
		clusters[name] = w.webdis[a]
	}
	return "[" + strings.Join(entries, ",") + "]", clusters
}

// waitReachable waits until the Webdis in front of the node at addr
// reaches it: after a node's restart, each Webdis thread reconnects on its
// own time and answers 503 until then. Each probe is a new connection, so
// that the threads take turns; ten in a row must pass.
func (w *clusterWebdis) waitReachable(t *testing.T, addr string) {
	t.Helper()
	url := "http://" + w.webdis[addr] + "/CLUSTER/NODES"
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	ok := 0
	waitFor(t, "the Webdis of "+addr+" to reach it", func() bool {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(redistest.WebdisUser, redistest.WebdisPassword)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			ok = 0
			return false
		}
		ok++
		return ok >= 10
	})
}

// announced is how the node at addr names itself in CLUSTER NODES and
// -MOVED: node-<i>.test:<port> with Hostnames, else its address.
func (w *clusterWebdis) announced(t *testing.T, addr string) string {
	t.Helper()
	for _, s := range w.c.Nodes {
		if s.Addr == addr {
			if h := w.c.Hostname(s); h != "" {
				return h + addr[strings.LastIndexByte(addr, ':'):]
			}
			return addr
		}
	}
	t.Fatalf("%s is not a node of the cluster", addr)
	return ""
}

// nodesConfig is a configuration through per-node Webdis: cluster_mode,
// the test Webdis credentials, redis.timeout 2s, failure_mode as given and
// the circuit breaker's defaults; extra is more of the redis section
// (`,"slot_map_refresh":"1s"`).
func nodesConfig(prefix, failureMode, nodes, extra, rules string) string {
	return fmt.Sprintf(`{"failure_mode":%q,"headers":"both","redis":{"transport":"webdis","username":%q,"password":%q,`+
		`"timeout":"2s","key_prefix":%q,"cluster_mode":true,"nodes":%s%s},"rules":%s}`,
		failureMode, redistest.WebdisUser, redistest.WebdisPassword, prefix, nodes, extra, rules)
}

// startNodesHost starts a host of mod (module or stockModule) with config
// and the Webdis clusters of nodes.
func startNodesHost(t *testing.T, mod *wasmhost.Module, config string, clusters map[string]string) *wasmTarget {
	t.Helper()
	return startHost(t, wasmhost.Config{Module: mod, PluginConfig: []byte(config), HTTPClusters: clusters})
}

// startNodesVMs starts n hosts of one VM each, as startNodesHost, and
// waits until each has loaded the slot map (at its first tick). With one
// VM a host's count of loads is that VM's: two loads on a host of two VMs
// could be one VM's, the second after a -MOVED (its first epoch read goes
// to the seed node before the map is there).
func startNodesVMs(t *testing.T, mod *wasmhost.Module, config string, clusters map[string]string, n int) []*wasmTarget {
	t.Helper()
	var tgs []*wasmTarget
	for range n {
		tg := startHost(t, wasmhost.Config{Module: mod, PluginConfig: []byte(config), HTTPClusters: clusters, Workers: 1})
		waitFor(t, "the VM's slot map load", func() bool { return tg.metric("ratelimit.redis.slot_map_loads") >= 1 })
		tgs = append(tgs, tg)
	}
	return tgs
}

// userRequest is the request a load sends for user: GET /api/x as x-user.
func userRequest(user string) map[string]string {
	return map[string]string{":path": "/api/x", "x-user": user}
}

// answer is one request of a load, as its sender saw it.
type answer struct {
	user       string
	status     int
	sent, done time.Time
}

// load sends requests for users from several senders over keep-alive
// connections, to its targets in turn, and keeps every answer.
type load struct {
	urls   []string
	next   atomic.Int64
	client *http.Client
	mu     sync.Mutex
	all    []answer
	failed problems
}

func newLoad(t *testing.T, senders int, tgs ...*wasmTarget) *load {
	l := &load{client: &http.Client{Timeout: waitGuard, Transport: &http.Transport{MaxIdleConnsPerHost: senders}}}
	for _, tg := range tgs {
		l.urls = append(l.urls, tg.h.URL()+"/api/x")
	}
	t.Cleanup(l.client.CloseIdleConnections)
	return l
}

func (l *load) send(user string) {
	a := answer{user: user, sent: time.Now()}
	req, _ := http.NewRequest("GET", l.urls[int(l.next.Add(1))%len(l.urls)], nil)
	req.Header.Set("x-user", user)
	resp, err := l.client.Do(req)
	if err != nil {
		l.failed.add("%s: %v", user, err)
		return
	}
	resp.Body.Close()
	a.status, a.done = resp.StatusCode, time.Now()
	l.mu.Lock()
	l.all = append(l.all, a)
	l.mu.Unlock()
}

// run sends one request per entry of users from senders goroutines, and
// returns once all are answered.
func (l *load) run(t *testing.T, users []string, senders int) {
	t.Helper()
	next := make(chan string)
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				l.send(u)
			}
		}()
	}
	for _, u := range users {
		next <- u
	}
	close(next)
	wg.Wait()
	l.failed.check(t)
}

// start sends requests for users round and round from senders goroutines
// until the returned stop is called; stop waits for them.
func (l *load) start(t *testing.T, users []string, senders int) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; ; j += senders {
				select {
				case <-done:
					return
				default:
				}
				l.send(users[j%len(users)])
			}
		}()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() { close(done); wg.Wait() })
		l.failed.check(t)
	}
	t.Cleanup(func() { once.Do(func() { close(done); wg.Wait() }) })
	return stop
}

// answers returns the answers so far, in the order they came.
func (l *load) answers() []answer {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.all)
	slices.SortFunc(out, func(a, b answer) int { return a.done.Compare(b.done) })
	return out
}

// countBy is how many answers had status, per user.
func countBy(answers []answer, status int) map[string]int {
	n := map[string]int{}
	for _, a := range answers {
		if a.status == status {
			n[a.user]++
		}
	}
	return n
}

// statuses counts answers by status.
func statuses(answers []answer) map[int]int {
	n := map[int]int{}
	for _, a := range answers {
		n[a.status]++
	}
	return n
}

// ownerZcard is ZCARD of key on the master that owns its slot now.
func ownerZcard(t *testing.T, c *redistest.Cluster, key string) int {
	t.Helper()
	v, err := c.Do(key, "ZCARD", key)
	n, ok := v.(int64)
	if err != nil || !ok {
		t.Fatalf("ZCARD %s: %v %v", key, v, err)
	}
	return int(n)
}

// fcallsPerNode is how many FCALL and EVALSHA calls each node has served
// (INFO commandstats), by address.
func fcallsPerNode(t *testing.T, nodes []*redistest.Server) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, s := range nodes {
		for _, cmd := range []string{"fcall", "evalsha", "eval"} {
			calls, _, err := s.CommandUsec(cmd)
			if err != nil {
				t.Fatal(err)
			}
			out[s.Addr] += calls
		}
	}
	return out
}

// percentiles returns p50, p99 and the max of ds.
func percentiles(ds []time.Duration) (p50, p99, max time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

// clusterMetrics are the counters a cluster test reads.
var clusterMetrics = []string{"redis.errors", "redis.moved", "redis.retried", "redis.slot_map_loads", "redis.unknown_node",
	"failure_mode.allowed", "failure_mode.denied", "rule.api.allowed", "rule.api.denied"}

// metricsOf reads clusterMetrics ("ratelimit." left out of the names),
// summed over tgs.
func metricsOf(tgs ...*wasmTarget) map[string]int64 {
	out := map[string]int64{}
	for _, m := range clusterMetrics {
		for _, tg := range tgs {
			out[m] += tg.metric("ratelimit." + m)
		}
	}
	return out
}
