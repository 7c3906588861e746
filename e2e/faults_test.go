package e2e

// Faults: Redis misbehaves while requests flow through the Higress build in
// the wasm host. For every request sent during a fault, the client must get
// either a real decision or the configured failure mode; no stream may be
// left paused and no VM may trap; and once Redis is back, decisions must be
// exact again. Each fault waits for the events it needs (a failure-mode
// answer, a -NOSCRIPT, a decision), never for a stretch of time that
// must be long enough.
//
// faults_redis_test.go holds the faults of the server (killed, paused,
// script cache flushed, refused, breaker); faults_replies_test.go those of
// the replies (wrong shapes, another script under our SHA).

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

const (
	// faultTimeout is redis.timeout in the fault runs whose calls must not
	// time out, long enough however busy the machine; pauseTimeout is the
	// one of the run that pauses Redis, whose calls must.
	faultTimeout = 2 * time.Second
	pauseTimeout = time.Second
	// faultClients is how many clients send at once during a fault.
	faultClients = 8
	// faultLimit is the rule's limit, checked exactly after each fault.
	faultLimit = 3
)

// faultRules: one sliding log per user, the user taken from the query.
const faultRules = `[{"name":"f","key":[{"source":"query","name":"u"}],
	"limits":[{"algorithm":"sliding_log","limit":3,"window":"1m"}]}]`

// faultConfig is the fault runs' configuration. The circuit breaker is off
// (failures: 0) so that every request probes the fault, except where the
// breaker itself is under test.
func faultConfig(t *testing.T, mode, breaker string, timeout time.Duration) string {
	if breaker == "" {
		breaker = `{"failures":0}`
	}
	s := scenario{rules: faultRules,
		top: fmt.Sprintf(`"failure_mode":%q,"circuit_breaker":%s,`, mode, breaker)}
	return configFor(s, redistest.Prefix(t), timeout.String())
}

// faultLoad sends requests through a host from several clients and checks
// every answer.
type faultLoad struct {
	t       *testing.T
	tg      *wasmTarget
	mode    string        // failure_mode: "allow" or "deny"
	timeout time.Duration // redis.timeout

	seq       atomic.Int64 // makes every user fresh
	requests  atomic.Int64 // answers checked
	decisions atomic.Int64 // answers decided by Redis
	failures  atomic.Int64 // answers by the failure mode
	problems  problems
}

// newFaultLoad starts the Higress build with faultConfig against redisAddr.
func newFaultLoad(t *testing.T, mode, breaker, redisAddr string, timeout time.Duration) *faultLoad {
	t.Helper()
	tg := startBuild(t, "higress", wasmhost.Config{}, faultConfig(t, mode, breaker, timeout), redisAddr)
	return &faultLoad{t: t, tg: tg, mode: mode, timeout: timeout}
}

// run sends requests from faultClients clients until during returns.
func (l *faultLoad) run(during func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: faultClients}}
	defer client.CloseIdleConnections()
	for range faultClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					l.one(client)
				}
			}
		}()
	}
	// Stop the clients and report their findings even when during fails
	// the test; stop the test if they found anything.
	returned := false
	defer func() {
		close(stop)
		wg.Wait()
		l.problems.report(l.t)
		if returned && l.t.Failed() {
			l.t.FailNow()
		}
	}()
	during()
	returned = true
}

// one sends a request for a fresh user and checks the answer: a decision
// (rate-limit headers, 200: a fresh user is under its limit) or the failure
// mode. A stream the filter left waiting would get the host's 504 after
// its pause guard, neither of the two.
func (l *faultLoad) one(client *http.Client) {
	user := fmt.Sprintf("u%d", l.seq.Add(1))
	resp, err := client.Get(l.tg.h.URL() + "/f?u=" + user)
	if err != nil {
		l.problems.add("transport error: %v", err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	l.requests.Add(1)
	switch {
	case err != nil:
		l.problems.add("reading the body: %v", err)
	case resp.Header.Get("ratelimit") != "":
		if resp.StatusCode != 200 || string(body) != "upstream /f" {
			l.problems.add("decision for a fresh user: %d %q", resp.StatusCode, body)
		}
		l.decisions.Add(1)
	case l.mode == "allow" && resp.StatusCode == 200 && string(body) == "upstream /f",
		l.mode == "deny" && resp.StatusCode == 503 && string(body) == `{"error":"ratelimit_unavailable"}`+"\n":
		l.failures.Add(1)
	default:
		l.problems.add("neither a decision nor failure mode %s: %d %q", l.mode, resp.StatusCode, body)
	}
}

// metric reads one of the filter's metrics.
func (l *faultLoad) metric(name string) int64 { return l.tg.metric(name) }

// waitMore waits until counter has grown past its value now.
func (l *faultLoad) waitMore(what string, counter *atomic.Int64) {
	l.t.Helper()
	before := counter.Load()
	waitFor(l.t, what, func() bool { return counter.Load() > before })
}

// timeouts is how many calls the host's Redis client failed by its
// timeout: however long the timeout, a busy enough machine may take
// longer, which the failure mode answers as configured.
func (l *faultLoad) timeouts() int64 {
	return l.tg.h.RedisClientStats("redis").FailedByTimeout
}

// finish checks what every fault run must leave behind: no stream paused,
// no trap, no call pending; then that decisions are exact again for a fresh
// user (faultLimit admitted, the next one 429 with Retry-After 60). Those
// checks assume the four requests are decided within a second of each
// other, and no call timed out, so they are timed. It returns the number
// of requests checked.
func (l *faultLoad) finish() int64 {
	t := l.t
	t.Helper()
	waitFor(t, "ratelimit.redis.pending back to 0", func() bool { return l.metric("ratelimit.redis.pending") == 0 })
	if n := l.tg.h.StuckStreams(); n != 0 {
		t.Fatalf("%d streams left paused", n)
	}
	if n := l.tg.h.Traps(); n != 0 {
		t.Fatalf("%d guest traps", n)
	}
	timed(t, min(time.Second, l.timeout), func(t *attempt) {
		path := fmt.Sprintf("/f?u=after-%d", l.seq.Add(1))
		for r := faultLimit - 1; r >= 0; r-- {
			expect(t, l.tg.send(t, map[string]string{":path": path}), 200, "ratelimit", fmt.Sprintf(`"f";r=%d;t=60`, r))
		}
		expect(t, l.tg.send(t, map[string]string{":path": path}), 429, "retry-after", "60")
	})
	n := l.requests.Load() + faultLimit + 1
	t.Logf("%d requests checked: during the fault %d decided by Redis, %d answered by failure mode %s; after it %d decided exactly",
		n, l.decisions.Load(), l.failures.Load(), l.mode, faultLimit+1)
	return n
}

// TestFaults runs every fault in both failure modes.
func TestFaults(t *testing.T) {
	faults := []struct {
		name string
		run  func(t *testing.T, mode string) int64
	}{
		{"redis killed, restarted on the same port", faultKillRestart},
		{"CLIENT PAUSE longer than the timeout", faultClientPause},
		{"SCRIPT FLUSH mid-traffic, with redis.command evalsha", faultScriptFlush},
		{"the library deleted, then loaded again", faultLibraryDeleted},
		{"connection refused from the start", faultRefusedThenUp},
		{"replies of the wrong shape", faultWrongShape},
		{"other functions answer under our names", faultForeignScript},
		{"circuit breaker", faultBreaker},
	}
	var runs, requests int64
	for _, f := range faults {
		for _, mode := range []string{"allow", "deny"} {
			t.Run(f.name+"/"+mode, func(t *testing.T) {
				requests += f.run(t, mode)
				runs++
			})
		}
	}
	t.Logf("faults survived: %d kinds x 2 failure modes = %d runs; requests checked: %d", len(faults), runs, requests)
}
