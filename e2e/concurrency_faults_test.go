package e2e

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// heldCall is a request in flight from a client that can drop it.
type heldCall struct {
	cancel context.CancelFunc
	done   chan int // its status, 0 when it failed
}

// hold sends a request through h that waits at the upstream's gate.
func hold(h *wasmhost.Host, gate string, headers ...string) *heldCall {
	ctx, cancel := context.WithCancel(context.Background())
	c := &heldCall{cancel: cancel, done: make(chan int, 1)}
	req, _ := http.NewRequestWithContext(ctx, "GET", h.URL()+"/", nil)
	req.Header.Set("x-gate", gate)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.done <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.done <- resp.StatusCode
	}()
	return c
}

// status sends one request through h that the upstream answers at once.
func status(t *testing.T, h *wasmhost.Host, headers ...string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", h.URL()+"/", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// zcard reads the slots a key holds from Redis; -1 when the call fails
// (a server restarting).
func zcard(c *redistest.Client, key string) int64 {
	n, err := c.Int("ZCARD", key)
	if err != nil {
		return -1
	}
	return n
}

// A VM that dies holding slots sends no release (here its path to Redis
// is cut for good first, then its host closed): the slots stay, each
// expiring at its acquisition's Redis time plus max_duration, and once
// they have the key admits again. Every wait is on Redis's own clock (its
// PTTL, TIME) or on an event.
func TestConcurrencySlotsOutliveADeadVM(t *testing.T) {
	const limit = 3
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			// The dead VM's fourth request must be decided while its three
			// slots are held: on a machine too busy for that within
			// max_duration, by Redis's clock, the run proves nothing and
			// is repeated with max_duration doubled.
			for d := 2 * time.Second; !slotsOutliveADeadVM(t, kind, limit, d); d *= 2 {
				if d == 32*time.Second {
					t.Fatalf("with max_duration %v, a fourth request still came after the first slot's expiry", d)
				}
				t.Logf("with max_duration %v, the fourth request came after the first slot's expiry on Redis's clock: again with %v", d, 2*d)
			}
		})
	}
}

// slotsOutliveADeadVM is one run of TestConcurrencySlotsOutliveADeadVM
// with max_duration d. It returns false, having checked nothing, when the
// machine was too slow to decide a fourth request within d of the first
// slot's acquisition.
func slotsOutliveADeadVM(t *testing.T, kind string, limit int, d time.Duration) bool {
	t.Helper()
	prefix := redistest.Prefix(t)
	key := slotsKey(prefix)
	rec := newSlotRecord(key)
	deadPath := redistest.StartProxy(t, server.Addr)
	deadPath.SetObserve(rec.observe)
	up := newSlotUpstream(t)
	dead := startBuild(t, kind, up.host(), slotsConfig(prefix, limit, d.String()), deadPath.Addr).h
	for range limit {
		hold(dead, "dead")
	}
	waitFor(t, "every slot taken", func() bool { return up.inFlight.Load() == int64(limit) })
	s := status(t, dead)
	decidedBy := redisNow(t)
	first, last := rec.span(d)
	if decidedBy >= first {
		dead.Close()
		return false
	}
	if s != 429 {
		t.Fatalf("with every slot taken: %d, want 429 (decided by Redis time %d, the first slot expires at %d)\n%s", s, decidedBy, first, rec)
	}
	// Each slot expires at its acquisition's Redis time plus
	// max_duration; the key goes with the last.
	scores, err := server.Do("ZRANGE", key, "0", "-1", "WITHSCORES")
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	kv := scores.([]any)
	for i := 0; i+1 < len(kv); i += 2 {
		at, ok := rec.acquired[kv[i].(string)]
		if expiry, _ := strconv.ParseInt(kv[i+1].(string), 10, 64); !ok || expiry != at+d.Microseconds() {
			t.Errorf("slot %s expires at %d: want its acquisition at %d + %v", kv[i], expiry, at, d)
		}
	}
	rec.mu.Unlock()
	// Cut for good: a release the dying VM sends can reach the proxy after
	// Close returns (Webdis relays it on its own time; a socket holds it),
	// and must still not reach Redis.
	deadPath.SetCanned([]byte("-ERR the VM is gone\r\n"))
	dead.Close()
	if acquired, released := rec.counts(); acquired != limit || released != 0 {
		t.Fatalf("%d slots acquired, %d released in Redis: want %d, none released\n%s", acquired, released, limit, rec)
	}
	if ms, err := server.Client.Int("PTTL", key); err == nil && ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond) // Redis's clock says how long
	}
	waitFor(t, "the slots to expire on Redis's clock", func() bool {
		ttl, err := server.Client.Int("PTTL", key)
		return err == nil && ttl == -2
	})
	if now := redisNow(t); now < last {
		t.Fatalf("the key went at %d, before its last slot's expiry at %d, with no release\n%s", now, last, rec)
	}
	// A new VM, on a path of its own, with slots that cannot expire while
	// the test waits on them.
	alive := startBuild(t, kind, up.host(), slotsConfig(prefix, limit, "1m"), server.Addr).h
	var calls []*heldCall
	for range limit {
		calls = append(calls, hold(alive, "alive"))
	}
	waitFor(t, "a new VM to take every slot again", func() bool { return zcard(server.Client, key) == int64(limit) })
	up.release("alive")
	for _, c := range calls {
		if s := <-c.done; s != 200 {
			t.Errorf("a request after the expiry: %d", s)
		}
	}
	waitFor(t, "every slot released", func() bool { return zcard(server.Client, key) == 0 })
	return true
}

// Redis restarting loses every slot: requests are admitted by the failure
// mode while it is down and by the new server's empty set after, which
// may put more than the limit in flight until the old ones end; their
// releases then free nothing (counted in slots_expired), and nothing is
// left held or paused.
func TestConcurrencyRedisRestarts(t *testing.T) {
	const limit = 2
	for _, kind := range moduleKinds {
		t.Run(kind, func(t *testing.T) {
			r := redistest.NewProc(t)
			r.Start()
			rdb := redistest.NewClient(r.Addr, redistest.Options{})
			t.Cleanup(func() { rdb.Close() })
			prefix := redistest.Prefix(t)
			key := slotsKey(prefix)
			up := newSlotUpstream(t)
			h := startBuild(t, kind, up.host(), slotsConfig(prefix, limit, "1m"), r.Addr).h
			metric := func(name string) int64 { v, _ := h.Metric(name); return v }
			before := []*heldCall{hold(h, "before"), hold(h, "before")}
			waitFor(t, "both slots taken", func() bool { return zcard(rdb, key) == limit })
			if s := status(t, h); s != 429 {
				t.Fatalf("with both slots taken: %d", s)
			}
			r.Kill()
			if s := status(t, h); s != 200 || metric("ratelimit.failure_mode.allowed") == 0 {
				t.Fatalf("Redis down: %d, failure_mode.allowed %d", s, metric("ratelimit.failure_mode.allowed"))
			}
			r.Start()
			// Every connection to Redis must be back: Webdis's pool (2
			// threads of 10 connections) finds a connection down only when it
			// uses it, answering that call 503, which the failure mode admits,
			// taking no slot. Rounds of concurrent calls reach every one.
			waitFor(t, "a round of 64 concurrent decisions, all by the new server", func() bool {
				failed, decided := metric("ratelimit.failure_mode.allowed"), metric("ratelimit.rule.slots.allowed")
				denied := metric("ratelimit.rule.slots.denied")
				var wg sync.WaitGroup
				for range 64 {
					wg.Go(func() { status(t, h) }) // 200 or 429: more than 2 at once
				}
				wg.Wait()
				return metric("ratelimit.failure_mode.allowed") == failed &&
					metric("ratelimit.rule.slots.allowed")-decided+metric("ratelimit.rule.slots.denied")-denied == 64
			})
			// Held one at a time until the new server holds both slots: a
			// call that meets a Webdis connection still down is admitted by
			// the failure mode and takes none, so another is held.
			// A call may also be denied: the round's last releases can still
			// be on their way when it arrives. It has then ended, and
			// another is held.
			var after []*heldCall
			for held, tries := int64(0), 0; held < limit; tries++ {
				if tries == 50 {
					t.Fatalf("50 calls held, %d slots taken on the new server", held)
				}
				failed := metric("ratelimit.failure_mode.allowed")
				c := hold(h, "after")
				ended := 0
				waitFor(t, "the held call decided", func() bool {
					select {
					case ended = <-c.done:
						return true
					default:
					}
					return zcard(rdb, key) > held || metric("ratelimit.failure_mode.allowed") > failed
				})
				if ended == 0 {
					after = append(after, c)
				} else if ended != 429 {
					t.Fatalf("a held call ended with %d before its gate opened", ended)
				}
				held = zcard(rdb, key)
			}
			denied := false
			for i := 0; i < 20 && !denied; i++ { // likewise: a 200 here must be the failure mode's
				failed := metric("ratelimit.failure_mode.allowed")
				s := status(t, h)
				denied = s == 429
				if !denied && (s != 200 || metric("ratelimit.failure_mode.allowed") == failed) {
					t.Fatalf("with the new server's slots taken: %d", s)
				}
			}
			if !denied {
				t.Fatal("with the new server's slots taken, 20 calls all met a Webdis connection down")
			}
			up.release("before")
			waitFor(t, "the lost slots' releases", func() bool { return metric("ratelimit.rule.slots.slots_expired") == limit })
			if n := zcard(rdb, key); n != limit {
				t.Fatalf("%d slots after releasing those Redis lost, want the new %d", n, limit)
			}
			up.release("after")
			waitFor(t, "every slot released", func() bool { return zcard(rdb, key) == 0 })
			for _, c := range append(before, after...) {
				if s := <-c.done; s != 200 {
					t.Errorf("a held request ended with %d", s)
				}
			}
			if n := metric("ratelimit.rule.slots.releases_failed"); n != 0 {
				t.Errorf("%d releases failed", n)
			}
		})
	}
}

// Streams that end by an upstream reset, a client reset (with proxy_on_log
// on time, or deferred past proxy_on_delete as HTTP/3's logging may), or
// a local reply after admission release their slots.
func TestConcurrencyResetsRelease(t *testing.T) {
	for _, kind := range moduleKinds {
		for _, deferred := range []bool{false, true} {
			t.Run(kind+map[bool]string{false: "", true: "/deferred-log"}[deferred], func(t *testing.T) {
				prefix := redistest.Prefix(t)
				key := slotsKey(prefix)
				up := newSlotUpstream(t)
				config := slotsConfig(prefix, 2, "1m")
				h := startBuild(t, kind, wasmhost.Config{Workers: 1, Upstream: up.URL, DeferredLog: deferred}, config, server.Addr).h
				status(t, h, "x-reset", "1") // a 200 cut short, or an error
				waitFor(t, "the upstream reset's release", func() bool { return zcard(server.Client, key) == 0 })
				c := hold(h, "never")
				waitFor(t, "the held request at the upstream", func() bool { return up.inFlight.Load() == 1 })
				c.cancel()
				waitFor(t, "the client reset's release", func() bool { return zcard(server.Client, key) == 0 })
				gone := startBuild(t, kind, wasmhost.Config{Workers: 1, Upstream: refusedURL(t), DeferredLog: deferred}, config, server.Addr).h
				if s := status(t, gone); s != 503 {
					t.Fatalf("with the upstream refusing: %d, want the proxy's 503", s)
				}
				waitFor(t, "the local reply's release", func() bool { return zcard(server.Client, key) == 0 })
			})
		}
	}
	t.Run("native", func(t *testing.T) {
		prefix := redistest.Prefix(t)
		nt := startNative(t, slotsConfig(prefix, 2, "1m"), server.Addr).(*nativeTarget)
		o := newOpenStream(nt, [][2]string{{":method", "GET"}, {":path", "/"}, {":authority", "a"}})
		if n := zcard(server.Client, slotsKey(prefix)); !o.admitted || n != 1 {
			t.Fatalf("admitted %t, %d slots", o.admitted, n)
		}
		o.respond(&filtertest.Response{Headers: map[string]string{":status": "200"}, Chunks: []string{"par"}, Reset: true})
		if n := zcard(server.Client, slotsKey(prefix)); n != 0 {
			t.Fatalf("%d slots after the reset", n)
		}
	})
}

func refusedURL(t *testing.T) string { return "http://" + refused(t) }

// redisNow is the shared Redis's clock, in microseconds.
func redisNow(t *testing.T) int64 {
	t.Helper()
	v, err := server.Do("TIME")
	if err != nil {
		t.Fatal(err)
	}
	parts := v.([]any)
	s, _ := strconv.ParseInt(parts[0].(string), 10, 64)
	us, _ := strconv.ParseInt(parts[1].(string), 10, 64)
	return s*1_000_000 + us
}
