package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// Leases end to end: VMs of the Higress build in wasmhost take batches of
// a hot key's units from a real Redis and spend them alone. Redis's own
// record never passes the limit; what the VMs admit beyond it is what
// they held from before the window moved, at most V × max_batch.

const (
	leaseVMs   = 4
	leaseLimit = 20
	leaseBatch = 3
)

// leaseConfig leases a sliding log of leaseLimit an hour on the query's k,
// in batches of at most leaseBatch, held up to an hour, every key hot.
func leaseConfig(prefix string) string {
	return fmt.Sprintf(`{"redis":{"cluster":"redis","key_prefix":%q},"headers":"draft10","rules":[{"name":"hot",
	"key":[{"source":"query","name":"k"}],
	"limits":[{"algorithm":"sliding_log","limit":%d,"window":"1h"}],
	"lease":{"max_hold":"1h","max_batch":%d,"hot_rate":1}}]}`, prefix, leaseLimit, leaseBatch)
}

// logUnits is the units a sliding log key holds in Redis: the total its
// member "s" keeps once an entry weighs more than 1, else its entries.
func logUnits(t *testing.T, key string) int64 {
	t.Helper()
	return logUnitsBy(t, func(args ...any) (any, error) { return server.Do(args...) }, key)
}

// logUnitsBy is logUnits through do, a client's Do.
func logUnitsBy(t *testing.T, do func(args ...any) (any, error), key string) int64 {
	t.Helper()
	if s, err := do("ZSCORE", key, "s"); err != nil {
		t.Fatal(err)
	} else if s != nil {
		n, err := strconv.ParseFloat(s.(string), 64)
		if err != nil {
			t.Fatal(err)
		}
		return -int64(n)
	}
	n, err := do("ZCARD", key)
	if err != nil {
		t.Fatal(err)
	}
	return n.(int64)
}

// startLeased starts leaseVMs VMs of the Higress build on leaseConfig,
// waits for each VM's first epoch read (which ends every lease, as it
// clears the deny cache), then sends one request to each: each takes a
// batch of leaseBatch and spends 1. It returns the host, the key's state
// key and the requests admitted so far.
func startLeased(t *testing.T) (*localHost, string, int64) {
	t.Helper()
	prefix := redistest.Prefix(t)
	h := startBuild(t, "higress", wasmhost.Config{Workers: leaseVMs}, leaseConfig(prefix), server.Addr).h
	l := &localHost{t: t, h: h, w: &wasmTarget{h: h}}
	key := prefix + "{hot|k}:0"
	if admitted := l.count("/?k=k", leaseVMs); sum(admitted) != leaseVMs {
		t.Fatalf("admitted %v", admitted)
	}
	waitFor(t, "every VM's first epoch read", func() bool { return l.w.metric("ratelimit.epoch.changes") >= leaseVMs })
	waitFor(t, "the first batches given back", func() bool { return logUnits(t, key) == leaseVMs })
	if admitted := l.count("/?k=k", leaseVMs); sum(admitted) != leaseVMs || logUnits(t, key) != leaseVMs+leaseVMs*leaseBatch {
		t.Fatalf("admitted %v; Redis holds %d units", admitted, logUnits(t, key))
	}
	return l, key, 2 * leaseVMs
}

// The worst case of the overshoot bound: every VM holds what is left of a
// batch when the window moves on (the test deletes the key, as the window
// does to every entry once it has passed). The VMs then admit what they
// held, and Redis a whole limit more: L + V × (max_batch − 1) here, within
// the bound L + V × max_batch (a batch whose request was gone by the reply
// is held whole). Redis's record never passes L.
func TestLeaseOvershootBound(t *testing.T) {
	l, key, _ := startLeased(t)
	held := int64(leaseVMs * (leaseBatch - 1))
	if grants := l.w.metric("ratelimit.lease.grants"); grants != 2*leaseVMs {
		t.Fatalf("%d grants for %d VMs, twice", grants, leaseVMs)
	}

	// The window moves on: Redis forgets, the VMs still hold their units.
	if _, err := server.Do("DEL", key); err != nil {
		t.Fatal(err)
	}
	admitted := l.count("/?k=k", 15*leaseVMs)
	bound := leaseLimit + leaseVMs*leaseBatch
	if got := sum(admitted); int64(got) != leaseLimit+held || got > bound {
		t.Errorf("after the window moved: admitted %d %v, want L + held = %d (bound L + V × max_batch = %d)",
			got, admitted, leaseLimit+held, bound)
	}
	if got := logUnits(t, key); got != leaseLimit {
		t.Errorf("Redis's record holds %d units, want the limit %d", got, leaseLimit)
	}
	t.Logf("limit %d, %d VMs, max_batch %d: admitted %d %v in the window after it moved (bound %d); Redis's record %d",
		leaseLimit, leaseVMs, leaseBatch, sum(admitted), admitted, bound, logUnits(t, key))
}

// Unspent units go back: an operator's change (the epoch moves) ends
// every lease within a tick, and Redis's record is then exactly what was
// admitted. The key's next requests ask Redis again.
func TestLeaseUnspentUnitsGoBack(t *testing.T) {
	l, key, admitted := startLeased(t)
	prefix := strings.TrimSuffix(key, "{hot|k}:0")
	returned := l.w.metric("ratelimit.lease.returned")
	if _, err := server.Do("INCR", keyspace.EpochKey(prefix)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leases given back", func() bool { return logUnits(t, key) == admitted })
	if got := l.w.metric("ratelimit.lease.returned") - returned; got != leaseVMs*(leaseBatch-1) {
		t.Errorf("ratelimit.lease.returned grew by %d, want %d", got, leaseVMs*(leaseBatch-1))
	}
	o, _ := l.send("/?k=k")
	if o.status != 200 || o.headers["ratelimit"] == "" {
		t.Fatalf("after the leases ended: %+v", o)
	}
}

// Through Webdis (the stock build), batches are taken and given back the
// same way: their settles go out from the root context.
func TestLeaseStockBuild(t *testing.T) {
	prefix := redistest.Prefix(t)
	w := startBuild(t, "stock", wasmhost.Config{}, leaseConfig(prefix), server.Addr)
	key := prefix + "{hot|k}:0"
	for i := range 10 {
		if o := w.send(t, map[string]string{":path": "/?k=k"}); o.status != 200 {
			t.Fatalf("request %d: %+v", i, o)
		}
	}
	if w.metric("ratelimit.lease.local") == 0 || logUnits(t, key) <= 10 {
		t.Fatalf("no request admitted from a batch: local %d, Redis holds %d", w.metric("ratelimit.lease.local"), logUnits(t, key))
	}
	if _, err := server.Do("INCR", keyspace.EpochKey(prefix)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leases given back", func() bool { return logUnits(t, key) == 10 })
}

// On Redis Cluster (cluster_mode), a batch call and the settle that gives
// its units back carry only keys of the rule key's slot.
func TestLeaseRedisCluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	prefix := redistest.Prefix(t)
	config := strings.Replace(leaseConfig(prefix), `"redis":{"cluster":"redis",`, `"redis":{"cluster":"redis","cluster_mode":true,`, 1)
	w := startCluster(t, config, cluster)
	key := prefix + "{hot|k}:0"
	do := func(args ...any) (any, error) { return cluster.Do(key, args...) }
	for i := range 10 {
		if o := w.send(t, map[string]string{":path": "/?k=k"}); o.status != 200 {
			t.Fatalf("request %d: %+v", i, o)
		}
	}
	if w.metric("ratelimit.lease.local") == 0 || logUnitsBy(t, do, key) <= 10 {
		t.Fatalf("no request admitted from a batch: local %d, Redis holds %d", w.metric("ratelimit.lease.local"), logUnitsBy(t, do, key))
	}
	epoch := keyspace.EpochKey(prefix)
	if _, err := cluster.Do(epoch, "INCR", epoch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leases given back", func() bool { return logUnitsBy(t, do, key) == 10 })
}

// A batch is spent for at most max_hold (1 s here): the VM's tick then
// gives back what is left, and Redis's record falls to what was admitted.
// (After each VM's first epoch read, which ends leases too: no other
// change moves the epoch.)
func TestLeaseEndsAfterMaxHold(t *testing.T) {
	prefix := redistest.Prefix(t)
	config := strings.Replace(leaseConfig(prefix), `"max_hold":"1h"`, `"max_hold":"1s"`, 1)
	h := startBuild(t, "higress", wasmhost.Config{Workers: leaseVMs}, config, server.Addr).h
	l := &localHost{t: t, h: h, w: &wasmTarget{h: h}}
	key := prefix + "{hot|k}:0"
	admitted := int64(sum(l.count("/?k=k", leaseVMs)))
	waitFor(t, "every VM's first epoch read", func() bool { return l.w.metric("ratelimit.epoch.changes") >= leaseVMs })
	waitFor(t, "the first batches given back", func() bool { return logUnits(t, key) == admitted })
	// The rate in this tick sizes the batches: send until a VM holds some.
	for logUnits(t, key) == admitted && admitted < leaseLimit/2 {
		admitted += int64(sum(l.count("/?k=k", 1)))
	}
	held := logUnits(t, key) - admitted
	if held <= 0 {
		t.Fatalf("no VM holds units after %d admitted", admitted)
	}
	waitFor(t, "the leases ended by max_hold", func() bool { return logUnits(t, key) == admitted })
	// No other change moved the epoch: max_hold alone ended them. (The
	// returned counter is bumped as a settle is sent, Redis's record when
	// it is applied: compared across a tick, they race.)
	if changes := l.w.metric("ratelimit.epoch.changes"); changes != leaseVMs {
		t.Errorf("epoch changes %d, want %d (one first read per VM)", changes, leaseVMs)
	}
}
