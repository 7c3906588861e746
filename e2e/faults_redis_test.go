package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// faultKillRestart kills redis-server (SIGKILL) mid-traffic and starts a
// new one on the same port, with the library (as its persistence would
// keep it): the host must reconnect while traffic flows.
func faultKillRestart(t *testing.T, mode string) int64 {
	r := redistest.NewProc(t)
	r.Start()
	l := newFaultLoad(t, mode, "", r.Addr, faultTimeout)
	l.run(func() {
		l.waitMore("decisions before the kill", &l.decisions)
		r.Kill()
		l.waitMore("a failure-mode answer while Redis is down", &l.failures)
		r.Start()
		l.waitMore("decisions after the restart", &l.decisions)
	})
	return l.finish()
}

// faultLibraryDeleted deletes the library mid-traffic, then loads it
// again: meanwhile every call fails, counted as library_missing, and
// requests get the failure mode; then decisions resume.
func faultLibraryDeleted(t *testing.T, mode string) int64 {
	r := redistest.Start(t)
	l := newFaultLoad(t, mode, "", r.Addr, faultTimeout)
	l.run(func() {
		l.waitMore("decisions before the delete", &l.decisions)
		if _, err := r.Do("FUNCTION", "DELETE", algorithms.Library.Name); err != nil {
			t.Fatal(err)
		}
		l.waitMore("a failure-mode answer without the library", &l.failures)
		if err := redistest.LoadLibrary(r.Client); err != nil {
			t.Fatal(err)
		}
		l.waitMore("decisions after the library is back", &l.decisions)
	})
	if n := l.metric("ratelimit.redis.library_missing"); n < 1 || n > l.failures.Load() {
		t.Fatalf("library_missing %d, failure-mode answers %d", n, l.failures.Load())
	}
	return l.finish()
}

// faultClientPause pauses every Redis client for three times the timeout,
// again until a call has met the failure mode (a pause also holds back
// CLIENT UNPAUSE, so it cannot be ended on an event).
func faultClientPause(t *testing.T, mode string) int64 {
	const pause = 3 * pauseTimeout
	r := redistest.Start(t)
	l := newFaultLoad(t, mode, "", r.Addr, pauseTimeout)
	l.run(func() {
		l.waitMore("decisions before the pause", &l.decisions)
		before := l.failures.Load()
		for n := 0; l.failures.Load() == before; n++ {
			if n == maxAttempts {
				t.Fatalf("%d pauses of %v and no failure-mode answer", n, pause)
			}
			if _, err := r.Do("CLIENT", "PAUSE", pause.Milliseconds(), "ALL"); err != nil {
				t.Fatal(err)
			}
			l.waitMore("decisions after the pause", &l.decisions)
		}
	})
	return l.finish()
}

// faultScriptFlush, with redis.command evalsha, empties Redis's script
// cache repeatedly: each time the next EVALSHA meets -NOSCRIPT and EVAL
// reloads the script, with no client-visible error. Only a call that
// outlived the timeout may be answered by the failure mode.
func faultScriptFlush(t *testing.T, mode string) int64 {
	const flushes = 10
	r := redistest.Start(t)
	cfg := strings.Replace(faultConfig(t, mode, "", faultTimeout), `"redis":{`, `"redis":{"command":"evalsha",`, 1)
	l := &faultLoad{t: t, tg: startBuild(t, "higress", wasmhost.Config{}, cfg, r.Addr), mode: mode, timeout: faultTimeout}
	l.run(func() {
		for range flushes {
			l.waitMore("decisions before a flush", &l.decisions)
			for before := l.metric("ratelimit.redis.noscript"); l.metric("ratelimit.redis.noscript") == before; {
				// At most faultClients requests are in flight, each with one
				// call: more decisions than that after the flush without a
				// -NOSCRIPT mean an EVAL sent on an earlier -NOSCRIPT ran
				// after the flush and loaded the script again. Flush again.
				decided := l.decisions.Load()
				if _, err := r.Do("SCRIPT", "FLUSH"); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "a -NOSCRIPT after SCRIPT FLUSH", func() bool {
					return l.metric("ratelimit.redis.noscript") > before || l.decisions.Load() > decided+faultClients
				})
			}
		}
		l.waitMore("decisions after the last flush", &l.decisions)
	})
	// Failed epoch reads are errors too, and time out like the calls.
	if f, e, timeouts := l.failures.Load(), decisionErrors(l.tg), l.timeouts(); f != e || l.metric("ratelimit.redis.errors") != timeouts {
		t.Fatalf("SCRIPT FLUSH was visible: %d failure-mode answers, %d Redis errors, of which %d calls timed out", f, e, timeouts)
	}
	if n := l.metric("ratelimit.redis.noscript"); n < flushes+1 {
		t.Fatalf("noscript %d, want at least %d (first load and each flush)", n, flushes+1)
	}
	return l.finish()
}

// faultRefusedThenUp starts with nothing listening on Redis's port, then
// starts Redis there.
func faultRefusedThenUp(t *testing.T, mode string) int64 {
	r := redistest.NewProc(t)
	l := newFaultLoad(t, mode, "", r.Addr, faultTimeout)
	l.run(func() {
		l.waitMore("a failure-mode answer while refused", &l.failures)
		l.waitMore("another failure-mode answer while refused", &l.failures)
		if n := l.decisions.Load(); n != 0 {
			t.Errorf("%d decisions with nothing listening", n)
		}
		r.Start()
		l.waitMore("decisions once Redis is up", &l.decisions)
	})
	return l.finish()
}

// faultBreaker: with "failures": 3 and Redis refused, each VM sends three
// calls, then answers at once without a call until the backoff passes; once
// Redis is back and the backoff has passed, decisions are exact again.
func faultBreaker(t *testing.T, mode string) int64 {
	const workers, failures, backoff, sequential = 2, 3, time.Second, 10
	r := redistest.NewProc(t)
	l := newFaultLoad(t, mode, `{"failures":3,"backoff":"1s"}`, r.Addr, faultTimeout)
	// Each VM's first request also sends ACL WHOAMI, and each tick an
	// epoch read while the breaker is closed, which fail and count toward
	// nothing.
	calls := func() int64 {
		return l.tg.h.RedisCalls()["redis"] - workers - l.metric("ratelimit.epoch.polls")
	}
	// Requests alternate between the two VMs: each VM fails three calls,
	// opening its breaker, and skips the rest.
	client := &http.Client{}
	began := time.Now() // no breaker opened before this
	for range sequential {
		l.one(client)
	}
	l.problems.check(t)
	// Once a backoff has passed, each VM may probe Redis (and fail, and
	// open again) once per backoff: probes bounds those, whatever the
	// speed. These ten requests normally take a few milliseconds, so
	// probes is 0 and the counts are exact.
	probes := workers * int64(time.Since(began)/backoff)
	if c, o, s := calls(), l.metric("ratelimit.circuit_breaker.opened"), l.metric("ratelimit.circuit_breaker.skipped"); c < workers*failures || c > workers*failures+probes || o != workers+c-workers*failures || s != sequential-c {
		t.Fatalf("after %d requests: %d calls, %d opened, %d skipped; want %d, %d, %d (+%d probes)",
			sequential, c, o, s, workers*failures, workers, sequential-workers*failures, probes)
	}
	skippedBefore := l.metric("ratelimit.circuit_breaker.skipped")
	requestsBefore := l.requests.Load()
	l.run(func() {
		for range 20 {
			l.waitMore("failure-mode answers with the breakers open", &l.failures)
		}
	})
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
	// backoff from here (a lower bound, which a slow machine only
	// lengthens), every breaker lets calls through again.
	r.Start()
	time.Sleep(backoff + 100*time.Millisecond)
	return l.finish()
}
