package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// failure_mode: local, end to end: several VMs, each deciding alone with
// its share while Redis is down. With V VMs, share s and a limit of L per
// window, the VMs together admit at most V × ceil(s × L) per window; with
// s = 1/V that is L, rounded up per VM. The window Redis fails in also
// holds what Redis admitted before. Every count is of answers, per VM,
// never of time: the windows (1h) outlast the test.

const (
	localVMs   = 4
	localShare = "0.25"
)

// localRules: one rule per algorithm (and a limit 4 does not divide),
// chosen by path, keyed on the query's k.
const localRules = `[
	{"name":"log","match":{"path":"/log"},"key":[{"source":"query","name":"k"}],
	 "limits":[{"algorithm":"sliding_log","limit":20,"window":"1h"}]},
	{"name":"log10","match":{"path":"/log10"},"key":[{"source":"query","name":"k"}],
	 "limits":[{"algorithm":"sliding_log","limit":10,"window":"1h"}]},
	{"name":"counter","match":{"path":"/counter"},"key":[{"source":"query","name":"k"}],
	 "limits":[{"algorithm":"sliding_counter","limit":20,"window":"1h"}]},
	{"name":"funnel","match":{"path":"/funnel"},"key":[{"source":"query","name":"k"}],
	 "limits":[{"algorithm":"funnel","capacity":20,"rate":20,"period":"1h"}]}]`

// localHost sends requests one at a time and tells which VM took each.
type localHost struct {
	t *testing.T
	h *wasmhost.Host
	w *wasmTarget
}

// send sends one request and returns its outcome and the VM that took it.
func (l *localHost) send(path string) (outcome, int) {
	l.t.Helper()
	before := l.h.StreamsPerVM()
	o := l.w.send(l.t, map[string]string{":path": path})
	after := l.h.StreamsPerVM()
	for vm := range after {
		if after[vm] == before[vm]+1 {
			return o, vm
		}
	}
	l.t.Fatalf("no VM took %s: %v then %v", path, before, after)
	return o, -1
}

// next is the VM the host's round robin gives the next request.
func (l *localHost) next() int {
	var n int64
	for _, s := range l.h.StreamsPerVM() {
		n += s
	}
	return int(n % localVMs)
}

func (l *localHost) local() int64 {
	return l.w.metric("ratelimit.failure_mode.local_allowed") + l.w.metric("ratelimit.failure_mode.local_denied")
}

// flood sends n requests on path, each to the VM the round robin gives it
// when that VM is in vms, and a request no rule matches otherwise. Every
// answer must be the VM's own: 200, or 429 with Retry-After. It returns
// the admissions per VM.
func (l *localHost) flood(path string, n int, vms []int) []int {
	l.t.Helper()
	admitted := make([]int, localVMs)
	for sent := 0; sent < n; {
		if !slices.Contains(vms, l.next()) {
			l.send("/unlimited")
			continue
		}
		want, before := l.next(), l.local()
		o, vm := l.send(path)
		switch {
		case vm != want:
			l.t.Fatalf("the host's round robin gave VM %d, not %d", vm, want)
		case l.local() != before+1:
			l.t.Fatalf("%s: not decided by the VM (local decisions %d, then %d): %+v", path, before, l.local(), o)
		case o.status == 200 && o.headers["ratelimit"] != "":
			admitted[vm]++
		case o.status == 429 && o.headers["retry-after"] != "":
		default:
			l.t.Fatalf("%s: %+v", path, o)
		}
		sent++
	}
	return admitted
}

// count sends n requests on path, as the round robin spreads them, and
// returns the admissions per VM.
func (l *localHost) count(path string, n int) []int {
	l.t.Helper()
	admitted := make([]int, localVMs)
	for range n {
		switch o, vm := l.send(path); {
		case o.status == 200:
			admitted[vm]++
		case o.status != 429:
			l.t.Fatalf("%s: %+v", path, o)
		}
	}
	return admitted
}

func sum(xs []int) (n int) {
	for _, x := range xs {
		n += x
	}
	return n
}

// With Redis down, the VMs together admit at most V × ceil(s × L) per
// window; with an even load and s = 1/V exactly that, and with the load on
// half the VMs, half of it. Once Redis is back, it decides again.
func TestLocalFallbackBound(t *testing.T) {
	r := redistest.NewProc(t)
	r.Start()
	config := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},"failure_mode":"local",
		"local_fallback":{"share":%s},"circuit_breaker":{"failures":0},"rules":%s}`, redistest.Prefix(t), localShare, localRules)
	h := startBuild(t, "higress", wasmhost.Config{Workers: localVMs}, config, r.Addr).h
	l := &localHost{t: t, h: h, w: &wasmTarget{h: h}}
	if o, _ := l.send("/log?k=up"); o.status != 200 || o.headers["ratelimit"] != `"log";r=19;t=3600` || l.local() != 0 {
		t.Fatalf("Redis up decides: %+v, local decisions %d", o, l.local())
	}

	// Before the outage: one key Redis has denied on every VM, one it
	// has half used. The window Redis fails in holds both Redis's
	// admissions and the VMs'.
	if admitted := l.count("/log?k=full", 20+localVMs); sum(admitted) != 20 {
		t.Fatalf("Redis admitted %v of k=full", admitted)
	}
	if admitted := l.count("/log?k=half", 10); sum(admitted) != 10 {
		t.Fatalf("Redis admitted %v of k=half", admitted)
	}

	r.Kill()
	all := []int{0, 1, 2, 3}
	hits := l.w.metric("ratelimit.deny_cache.hits")
	if admitted := l.count("/log?k=full", 60); sum(admitted) != 0 || l.w.metric("ratelimit.deny_cache.hits") != hits+60 {
		t.Errorf("k=full: admitted %v; each VM keeps Redis's denial until its Retry-After", admitted)
	}
	half := l.flood("/log?k=half", 60, all)
	if sum(half) != 20 {
		t.Errorf("k=half: the VMs admitted %v, want 20 beside Redis's 10", half)
	}
	t.Logf("/log?k=half: Redis admitted 10, then the VMs %d: %d in the window Redis failed in", sum(half), 10+sum(half))
	for _, c := range []struct {
		path         string
		limit, bound int // bound: V × ceil(s × L)
	}{{"/log?k=even", 20, 20}, {"/counter?k=even", 20, 20}, {"/funnel?k=even", 20, 20}, {"/log10?k=even", 10, 12}} {
		admitted := l.flood(c.path, 3*c.limit, all)
		perVM := (c.bound + localVMs - 1) / localVMs
		for vm, n := range admitted {
			if n > perVM {
				t.Errorf("%s: VM %d admitted %d, above its share of %d", c.path, vm, n, perVM)
			}
		}
		// Even load, a window the test never leaves: the bound is reached.
		if sum(admitted) != c.bound {
			t.Errorf("%s: admitted %d in all (%v), want the bound %d", c.path, sum(admitted), admitted, c.bound)
		}
		t.Logf("%s: %d VMs × share %s, limit %d: admitted %d in all %v (bound %d)",
			c.path, localVMs, localShare, c.limit, sum(admitted), admitted, c.bound)
	}
	uneven := l.flood("/log?k=uneven", 60, []int{0, 1})
	if uneven[2]+uneven[3] != 0 || uneven[0] != 5 || uneven[1] != 5 {
		t.Errorf("load on VMs 0 and 1 only: admitted %v, want 5 each there", uneven)
	}
	t.Logf("/log?k=uneven: load on 2 of %d VMs: admitted %d of the limit 20 %v", localVMs, sum(uneven), uneven)

	r.Start() // empty: Redis decides afresh
	waitFor(t, "a decision by Redis once it is back", func() bool {
		o, _ := l.send("/log?k=even")
		return o.status == 200 && o.headers["ratelimit"] == `"log";r=19;t=3600`
	})
	local := l.local()
	if o, _ := l.send("/log?k=even"); o.headers["ratelimit"] != `"log";r=18;t=3600` || l.local() != local {
		t.Fatalf("Redis decides again: %+v (local decisions %d, then %d)", o, local, l.local())
	}
}

// The stock build, its Webdis gateway unreachable, decides the same way.
func TestLocalFallbackStockBuild(t *testing.T) {
	config := fmt.Sprintf(`{"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q},"failure_mode":"local",
		"local_fallback":{"share":0.5},"rules":%s}`, redistest.Prefix(t), localRules)
	tg := startBuild(t, "webdis", wasmhost.Config{}, config, refused(t))
	admitted := 0
	for range 40 {
		switch o := tg.send(t, map[string]string{":path": "/log?k=s"}); o.status {
		case 200:
			admitted++
		case 429:
		default:
			t.Fatalf("%+v", o)
		}
	}
	// 2 VMs × ceil(0.5 × 20); the breaker opens on the way, which changes
	// nothing.
	if admitted != 20 || tg.metric("ratelimit.failure_mode.local_allowed") != 20 || tg.metric("ratelimit.failure_mode.local_denied") != 20 {
		t.Fatalf("admitted %d of 40, metrics %v", admitted, tg.h.Metrics())
	}
}
