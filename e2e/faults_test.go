package e2e

// Faults: Redis misbehaves while requests flow through the Higress build in
// the wasm host. For every request sent during a fault, the client must get
// either a real decision or the configured failure mode, within a bound
// derived from the configured timeout; no stream may be left paused and no
// VM may trap; and once Redis is back, decisions must be exact again.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

const (
	// faultTimeout is redis.timeout in every fault run.
	faultTimeout = 200 * time.Millisecond
	// faultBound bounds each answer: the filter makes at most two calls in
	// a row for a request (EVALSHA, then EVAL after -NOSCRIPT), each
	// bounded by the timeout, and a second of margin covers the host, the
	// HTTP round trip and a machine loaded by -race. It is a correctness
	// bound (a stream waiting on a lost reply would exceed it), not a
	// performance target.
	faultBound = 2*faultTimeout + time.Second
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
func faultConfig(t *testing.T, mode, breaker string) string {
	if breaker == "" {
		breaker = `{"failures":0}`
	}
	s := scenario{rules: faultRules,
		top: fmt.Sprintf(`"failure_mode":%q,"circuit_breaker":%s,`, mode, breaker)}
	return configFor(s, redistest.Prefix(t), faultTimeout.String())
}

// faultLoad sends requests through a host from several clients and checks
// every answer.
type faultLoad struct {
	t    *testing.T
	tg   *wasmTarget
	mode string // failure_mode: "allow" or "deny"

	seq       atomic.Int64 // makes every user fresh
	requests  atomic.Int64 // answers checked
	decisions atomic.Int64 // answers decided by Redis
	failures  atomic.Int64 // answers by the failure mode
	problems  problems
}

// newFaultLoad starts the Higress build with faultConfig against redisAddr.
func newFaultLoad(t *testing.T, mode, breaker, redisAddr string) *faultLoad {
	tg := startWasm(t, faultConfig(t, mode, breaker), redisAddr).(*wasmTarget)
	return &faultLoad{t: t, tg: tg, mode: mode}
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
// mode, within faultBound.
func (l *faultLoad) one(client *http.Client) {
	user := fmt.Sprintf("u%d", l.seq.Add(1))
	began := time.Now()
	resp, err := client.Get(l.tg.h.URL() + "/f?u=" + user)
	if err != nil {
		l.problems.add("transport error: %v", err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(began)
	l.requests.Add(1)
	switch {
	case err != nil:
		l.problems.add("reading the body: %v", err)
	case took > faultBound:
		l.problems.add("answered after %v, over the bound %v", took, faultBound)
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

// settle lets traffic flow for d.
func settle(d time.Duration) { time.Sleep(d) }

// metric reads one of the filter's metrics.
func (l *faultLoad) metric(name string) int64 { return l.tg.metric(name) }

// waitFor polls cond until it holds or 10 s pass. It waits for an event, so
// its deadline is a guard against hanging, not a timing assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
	}
}

// finish checks what every fault run must leave behind: no stream paused,
// no trap, no call pending; then that decisions are exact again for a fresh
// user (faultLimit admitted, the next one 429). It returns the number of
// requests checked.
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
	path := fmt.Sprintf("/f?u=after-%d", l.seq.Add(1))
	for r := faultLimit - 1; r >= 0; r-- {
		expect(t, l.tg.send(t, map[string]string{":path": path}), 200, "ratelimit", fmt.Sprintf(`"f";r=%d;t=60`, r))
	}
	expect(t, l.tg.send(t, map[string]string{":path": path}), 429, "retry-after", "60")
	n := l.requests.Load() + faultLimit + 1
	t.Logf("%d requests checked: during the fault %d decided by Redis, %d answered by failure mode %s; after it %d decided exactly",
		n, l.decisions.Load(), l.failures.Load(), l.mode, faultLimit+1)
	return n
}

// problems collects what went wrong in client goroutines; the first few
// are reported.
type problems struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (p *problems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if len(p.first) < 5 {
		p.first = append(p.first, fmt.Sprintf(format, args...))
	}
}

// report marks the test failed if anything went wrong. It does not stop
// the test (Errorf), so it is safe in a deferred call.
func (p *problems) report(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 {
		t.Errorf("%d bad answers; first ones:\n%s", p.n, strings.Join(p.first, "\n"))
	}
}

// check reports, and stops the test if anything went wrong.
func (p *problems) check(t *testing.T) {
	t.Helper()
	p.report(t)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 {
		t.FailNow()
	}
}

// TestFaults runs every fault in both failure modes.
func TestFaults(t *testing.T) {
	faults := []struct {
		name string
		run  func(t *testing.T, mode string) int64
	}{
		{"redis killed, restarted on the same port", faultKillRestart},
		{"CLIENT PAUSE longer than the timeout", faultClientPause},
		{"SCRIPT FLUSH mid-traffic", faultScriptFlush},
		{"connection refused from the start", faultRefusedThenUp},
		{"replies of the wrong shape", faultWrongShape},
		{"another script answers under our SHA", faultForeignScript},
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

// faultKillRestart kills redis-server (SIGKILL) mid-traffic and starts a
// new one on the same port: the host must reconnect, and the filter must
// recover from -NOSCRIPT with EVAL, while traffic flows.
func faultKillRestart(t *testing.T, mode string) int64 {
	r := newRedisProc(t)
	r.start()
	l := newFaultLoad(t, mode, "", r.addr)
	var noscriptBefore, decisionsBefore, failuresDuring int64
	l.run(func() {
		settle(150 * time.Millisecond)
		r.kill()
		settle(300 * time.Millisecond)
		noscriptBefore, decisionsBefore = l.metric("ratelimit.redis.noscript"), l.decisions.Load()
		failuresDuring = l.failures.Load()
		r.start()
		waitFor(t, "decisions after the restart", func() bool { return l.decisions.Load() > decisionsBefore })
		settle(200 * time.Millisecond)
	})
	if failuresDuring == 0 {
		t.Fatal("no request met the failure mode while Redis was down")
	}
	if n := l.metric("ratelimit.redis.noscript"); n <= noscriptBefore {
		t.Fatalf("no -NOSCRIPT recovery after the restart (noscript %d, before %d)", n, noscriptBefore)
	}
	return l.finish()
}

// faultClientPause pauses every Redis client for longer than the timeout.
func faultClientPause(t *testing.T, mode string) int64 {
	r := redistest.Start(t)
	l := newFaultLoad(t, mode, "", r.Addr)
	l.run(func() {
		settle(150 * time.Millisecond)
		if _, err := r.Do("CLIENT", "PAUSE", "800", "ALL"); err != nil {
			t.Error(err)
		}
		settle(1000 * time.Millisecond)
		before := l.decisions.Load()
		waitFor(t, "decisions after the pause", func() bool { return l.decisions.Load() > before })
	})
	if l.failures.Load() == 0 {
		t.Fatal("no request met the failure mode during the pause")
	}
	return l.finish()
}

// faultScriptFlush empties Redis's script cache repeatedly: each time the
// next EVALSHA meets -NOSCRIPT and EVAL reloads the script, with no
// client-visible error.
func faultScriptFlush(t *testing.T, mode string) int64 {
	const flushes = 10
	r := redistest.Start(t)
	l := newFaultLoad(t, mode, "", r.Addr)
	l.run(func() {
		for range flushes {
			settle(50 * time.Millisecond)
			before := l.metric("ratelimit.redis.noscript")
			if _, err := r.Do("SCRIPT", "FLUSH"); err != nil {
				t.Error(err)
			}
			waitFor(t, "a -NOSCRIPT after SCRIPT FLUSH", func() bool { return l.metric("ratelimit.redis.noscript") > before })
		}
		settle(100 * time.Millisecond)
	})
	if f, e := l.failures.Load(), l.metric("ratelimit.redis.errors"); f != 0 || e != 0 {
		t.Fatalf("SCRIPT FLUSH was visible: %d failure-mode answers, %d Redis errors", f, e)
	}
	if n := l.metric("ratelimit.redis.noscript"); n < flushes+1 {
		t.Fatalf("noscript %d, want at least %d (first load and each flush)", n, flushes+1)
	}
	return l.finish()
}

// faultRefusedThenUp starts with nothing listening on Redis's port, then
// starts Redis there.
func faultRefusedThenUp(t *testing.T, mode string) int64 {
	r := newRedisProc(t)
	l := newFaultLoad(t, mode, "", r.addr)
	l.run(func() {
		settle(300 * time.Millisecond)
		if n := l.decisions.Load(); n != 0 {
			t.Errorf("%d decisions with nothing listening", n)
		}
		r.start()
		waitFor(t, "decisions once Redis is up", func() bool { return l.decisions.Load() > 0 })
		settle(200 * time.Millisecond)
	})
	if l.failures.Load() == 0 {
		t.Fatal("no request met the failure mode while Redis was refused")
	}
	return l.finish()
}

// wrongShapes are valid RESP replies (and one invalid one) that the script
// never returns.
var wrongShapes = []struct{ name, reply string }{
	{"integer", ":1\r\n"},
	{"two strings", "*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n"},
	{"error", "-ERR not the rate-limit script\r\n"},
	{"status", "+OK\r\n"},
	{"null bulk", "$-1\r\n"},
	{"null array", "*-1\r\n"},
	{"empty array", "*0\r\n"},
	{"header without results", "*2\r\n:1700000000000000\r\n:-2\r\n"},
	{"nested array", "*7\r\n*1\r\n:1\r\n:-2\r\n:1\r\n:3\r\n:2\r\n:-1\r\n:0\r\n"},
	{"RESP3 map", "%1\r\n+now\r\n:1\r\n"},
	{"70 KiB bulk string", "$71680\r\n" + strings.Repeat("x", 71680) + "\r\n"},
	{"not RESP", "hello\r\n"},
}

// faultWrongShape puts a fake Redis between host and Redis that answers
// every command with a reply of the wrong shape, one shape after another,
// then lets commands through to the real Redis again.
func faultWrongShape(t *testing.T, mode string) int64 {
	p := newRESPProxy(t, server.Addr)
	l := newFaultLoad(t, mode, "", p.addr)
	l.run(func() {
		settle(100 * time.Millisecond)
		for _, w := range wrongShapes {
			before := p.canned.Load()
			p.setCanned([]byte(w.reply))
			waitFor(t, "a "+w.name+" reply served", func() bool { return p.canned.Load() > before })
		}
		p.setCanned(nil)
		before := l.decisions.Load()
		waitFor(t, "decisions through to Redis again", func() bool { return l.decisions.Load() > before })
	})
	canned, errs := p.canned.Load(), l.metric("ratelimit.redis.errors")
	if errs < canned || l.failures.Load() != errs {
		t.Fatalf("%d wrong replies served, %d Redis errors, %d failure-mode answers: every wrong reply must be an error answered by the failure mode",
			canned, errs, l.failures.Load())
	}
	return l.finish()
}

// foreignScripts return what our script never does; none of them is a
// well-formed decision.
var foreignScripts = []string{
	"return 1",
	"return redis.call('TIME')",
	"return {tonumber(redis.call('TIME')[1]), -2}",
	"return redis.error_reply('ERR not the rate-limit script')",
	"return {1, -2, 7, 5, 4, -1, 0}",
	"return {1, -2, 1, 5, 9, -1, 0}",
	"return {1, -2, 0, 5, 0, -1, 0}",
	"return 'a string'",
}

// faultForeignScript makes a different script answer under our script's
// SHA. SHA1 cannot be forged, so the proxy between host and Redis rewrites
// the SHA argument of each EVALSHA to the SHA of another script, loaded
// with SCRIPT LOAD (and the body of an EVAL to that script's body): to the
// filter, Redis seems to hold another script under our SHA.
func faultForeignScript(t *testing.T, mode string) int64 {
	p := newRESPProxy(t, server.Addr)
	l := newFaultLoad(t, mode, "", p.addr)
	l.run(func() {
		settle(100 * time.Millisecond)
		for _, src := range foreignScripts {
			sha, err := server.Client.ScriptLoad(context.Background(), src).Result()
			if err != nil {
				t.Error(err)
				return
			}
			before := p.rewritten.Load()
			p.setForeign(&foreignScript{sha: sha, source: src})
			waitFor(t, "a call answered by "+src, func() bool { return p.rewritten.Load() > before })
		}
		p.setForeign(nil)
		before := l.decisions.Load()
		waitFor(t, "decisions by our script again", func() bool { return l.decisions.Load() > before })
	})
	rewritten, errs := p.rewritten.Load(), l.metric("ratelimit.redis.errors")
	if errs < rewritten || l.failures.Load() != errs {
		t.Fatalf("%d calls answered by another script, %d Redis errors, %d failure-mode answers", rewritten, errs, l.failures.Load())
	}
	return l.finish()
}

// faultBreaker: with "failures": 3 and Redis refused, each VM sends three
// calls, then answers at once without a call until the backoff passes; once
// Redis is back and the backoff has passed, decisions are exact again.
func faultBreaker(t *testing.T, mode string) int64 {
	const workers, failures, backoff, sequential = 2, 3, time.Second, 10
	r := newRedisProc(t)
	l := newFaultLoad(t, mode, `{"failures":3,"backoff":"1s"}`, r.addr)
	calls := func() int64 { return l.tg.h.RedisCalls()["redis"] }
	// Requests alternate between the two VMs: each VM fails three calls,
	// opening its breaker, and skips the rest.
	client := &http.Client{}
	began := time.Now() // no breaker opened before this
	for range sequential {
		l.one(client)
	}
	l.problems.check(t)
	// Once a backoff has passed, each VM may probe Redis (and fail, and
	// open again) once per backoff. These ten requests normally take a few
	// milliseconds, so probes is 0 and the counts are exact.
	probes := workers * int64(time.Since(began)/backoff)
	if c, o, s := calls(), l.metric("ratelimit.circuit_breaker.opened"), l.metric("ratelimit.circuit_breaker.skipped"); c < workers*failures || c > workers*failures+probes || o != workers+c-workers*failures || s != sequential-c {
		t.Fatalf("after %d requests: %d calls, %d opened, %d skipped; want %d, %d, %d (+%d probes)",
			sequential, c, o, s, workers*failures, workers, sequential-workers*failures, probes)
	}
	skippedBefore := l.metric("ratelimit.circuit_breaker.skipped")
	requestsBefore := l.requests.Load()
	l.run(func() { settle(300 * time.Millisecond) })
	probes = workers * int64(time.Since(began)/backoff)
	sent := l.requests.Load() - requestsBefore
	if c := calls(); c > workers*failures+probes {
		t.Fatalf("open breaker: %d calls, want %d (+%d probes)", c, workers*failures, probes)
	}
	if s := l.metric("ratelimit.circuit_breaker.skipped") - skippedBefore; s < sent-probes {
		t.Fatalf("open breaker: %d of %d requests skipped Redis", s, sent)
	}
	if l.decisions.Load() != 0 || l.failures.Load() != l.requests.Load() {
		t.Fatal("requests were decided while Redis was down")
	}
	// Any probe from now on succeeds, so no breaker opens after this: one
	// backoff from here, every breaker lets calls through again.
	r.start()
	time.Sleep(backoff + 100*time.Millisecond)
	return l.finish()
}

// redisProc is a redis-server on a fixed port that a test can kill and
// start again on the same port (redistest picks a new port per server).
type redisProc struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
	dir  string
}

// newRedisProc reserves a free port without starting anything there:
// until start, connections to addr are refused.
func newRedisProc(t *testing.T) *redisProc {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	r := &redisProc{t: t, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: t.TempDir()}
	t.Cleanup(r.kill)
	return r
}

// start runs redis-server on the reserved port, with an empty dataset and
// script cache, and waits until it answers PING.
func (r *redisProc) start() {
	r.t.Helper()
	_, port, _ := net.SplitHostPort(r.addr)
	r.cmd = exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--daemonize", "no")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	ping := redisproto.AppendCommand(nil, "PING")
	waitFor(r.t, "redis-server on "+r.addr, func() bool {
		c, err := net.DialTimeout("tcp", r.addr, 100*time.Millisecond)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		reply := make([]byte, 7)
		_, err = c.Write(ping)
		if err == nil {
			_, err = io.ReadFull(c, reply)
		}
		return err == nil && string(reply) == "+PONG\r\n"
	})
}

// kill stops redis-server with SIGKILL, as a crash would.
func (r *redisProc) kill() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// respProxy is a TCP "Redis" in front of a real one. It reads each command,
// then either answers it with a canned reply of its own, or forwards it
// (rewritten to run a foreign script, if one is set) and relays exactly one
// reply. Tests switch modes while traffic flows; pooled connections see the
// change at their next command. With record set it keeps the arguments of
// every EVALSHA and EVAL it forwards.
type respProxy struct {
	t        *testing.T
	addr     string
	upstream string

	mu      sync.Mutex
	reply   []byte         // canned reply; nil forwards
	foreign *foreignScript // run instead of ours; nil runs ours
	record  bool
	scripts [][]string // recorded EVALSHA/EVAL commands

	canned    atomic.Int64 // commands answered with the canned reply
	rewritten atomic.Int64 // commands rewritten to the foreign script
}

type foreignScript struct{ sha, source string }

func newRESPProxy(t *testing.T, upstream string) *respProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &respProxy{t: t, addr: ln.Addr().String(), upstream: upstream}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { defer conns.Done(); p.serve(c) }()
		}
	}()
	return p
}

func (p *respProxy) setCanned(reply []byte) { p.mu.Lock(); p.reply = reply; p.mu.Unlock() }

func (p *respProxy) setForeign(s *foreignScript) { p.mu.Lock(); p.foreign = s; p.mu.Unlock() }

// recordScripts makes the proxy keep every EVALSHA and EVAL it forwards.
func (p *respProxy) recordScripts() { p.mu.Lock(); p.record = true; p.mu.Unlock() }

// recorded returns the EVALSHA and EVAL commands forwarded so far.
func (p *respProxy) recorded() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]string(nil), p.scripts...)
}

// serve handles one client connection until either side closes or errs.
func (p *respProxy) serve(c net.Conn) {
	defer c.Close()
	var up net.Conn
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	var in, out []byte
	buf := make([]byte, 64<<10)
	for {
		cmd, n, err := readRESP(c, &in, buf)
		if err != nil {
			return
		}
		args := make([]string, len(cmd.Elems))
		for i, e := range cmd.Elems {
			args[i] = string(e.Str)
		}
		in = in[n:]
		p.mu.Lock()
		reply, foreign := p.reply, p.foreign
		isScript := len(args) > 1 && (strings.EqualFold(args[0], "EVALSHA") || strings.EqualFold(args[0], "EVAL"))
		if p.record && isScript && reply == nil {
			p.scripts = append(p.scripts, args)
		}
		p.mu.Unlock()
		if reply != nil {
			p.canned.Add(1)
			if _, err := c.Write(reply); err != nil {
				return
			}
			continue
		}
		if foreign != nil && isScript {
			switch {
			case strings.EqualFold(args[0], "EVALSHA") && args[1] == algorithms.Script.SHA:
				args[1] = foreign.sha
			case strings.EqualFold(args[0], "EVAL") && args[1] == algorithms.Script.Source:
				args[1] = foreign.source
			}
			p.rewritten.Add(1)
		}
		if up == nil {
			if up, err = net.Dial("tcp", p.upstream); err != nil {
				return
			}
		}
		if _, err := up.Write(redisproto.AppendCommand(nil, args...)); err != nil {
			return
		}
		out = out[:0]
		if _, n, err = readRESP(up, &out, buf); err != nil {
			return
		}
		if _, err := c.Write(out[:n]); err != nil {
			return
		}
	}
}

// readRESP reads from c into *acc until it holds one whole RESP value, and
// returns it with its length; the value aliases *acc.
func readRESP(c net.Conn, acc *[]byte, buf []byte) (redisproto.Value, int, error) {
	for {
		if len(*acc) > 0 {
			v, n, err := redisproto.Decode(*acc)
			if !errors.Is(err, redisproto.ErrIncomplete) {
				return v, n, err
			}
		}
		m, err := c.Read(buf)
		*acc = append(*acc, buf[:m]...)
		if err != nil && m == 0 {
			return redisproto.Value{}, 0, err
		}
	}
}
