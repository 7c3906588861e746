package e2e

// Test 3b of issue 32: slots move between masters under load (CLUSTER
// SETSLOT IMPORTING/MIGRATING, MIGRATE in small batches, SETSLOT NODE).
// While a slot migrates its calls get -TRYAGAIN or -ASK and wait, retried
// by the filter, until the handover; then -MOVED, followed. No decision
// fails or is lost: every admitted charge is on the new owner.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// reshardRules: rule api (a log and a funnel, and a block key) gets
// -TRYAGAIN while its slot migrates, since its call names keys the source
// has and the block key no one has; rule one (a single key,
// manual_block false) gets -ASK once its key has moved. The limits are
// never reached: every request charges both.
const reshardRules = `[
	{"name":"api","match":{"path_prefix":"/api/"},"key":[{"source":"header","name":"x-user"}],
	 "limits":[{"name":"log","algorithm":"sliding_log","limit":1000000,"window":"1h"},
	           {"name":"funnel","algorithm":"funnel","capacity":1000000,"rate":1000000,"period":"1h"}]},
	{"name":"one","match":{"path_prefix":"/api/"},"key":[{"source":"header","name":"x-user"}],"manual_block":false,
	 "limits":[{"algorithm":"sliding_log","limit":1000000,"window":"1h"}]}]`

// reshardHot are the users whose slots move: the slots of {api|h0},
// {api|h1}, {api|h2} and {one|h0}.
var reshardHot = []string{"h0", "h1", "h2"}

func TestClusterReshard(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, Hostnames: true})
	w := startClusterWebdis(t, c, "FCALL", "CLUSTER")
	prefix := redistest.Prefix(t)
	nodes, clusters := w.nodes(t, "")
	tg := startNodesHost(t, stockModule, nodesConfig(prefix, "deny", nodes, "", reshardRules), clusters)
	warmUp(t, tg)
	errs0 := errorStats(t, c)
	reshardUnderLoad(t, c, tg, prefix)

	m := metricsOf(tg)
	if m["redis.moved"] == 0 || m["redis.retried"] == 0 {
		t.Errorf("metrics %v; want calls moved and retried", m)
	}
	errs := errorStats(t, c)
	for _, e := range []string{"TRYAGAIN", "ASK", "MOVED"} {
		if errs[e] == errs0[e] {
			t.Errorf("no -%s replied during the migration (error stats %v)", e, errs)
		}
	}
	t.Logf("metrics %v; replies by the masters %v", m, errs)
}

// reshardUnderLoad sends requests for reshardHot and 60 other users from 8
// senders while it migrates each hot slot to the next master, its keys one
// per batch 50 ms apart (and -TRYAGAIN, -ASK seen), and checks: no answer but 200 (no failure_mode,
// redis.timeout 2s); per user, ZCARD of each rule's log on the slot's new
// owner equals the 200s; each slot's owner changed. It logs the latency of
// the requests held by a migration.
func reshardUnderLoad(t *testing.T, c *redistest.Cluster, tg *wasmTarget, prefix string) {
	t.Helper()
	masters, err := c.Masters()
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{prefix + "{api|h0}:0", prefix + "{api|h1}:0", prefix + "{api|h2}:0", prefix + "{one|h0}:0"}
	// What the source answers the filter's calls: until the last key has
	// moved, rule api's get -TRYAGAIN (their keys but the block), rule
	// one's run (its one key is there); then both get -ASK. The migration
	// steps wait for each (the hot users keep sending), so both are seen
	// whatever the machine's speed.
	replied := func(src *redistest.Server, kind string, than int64) {
		waitFor(t, fmt.Sprintf("-%s from %s", kind, src.Addr), func() bool { return nodeErrors(t, src)[kind] > than })
	}
	var users []string
	for i := range 60 {
		users = append(users, "b"+strconv.Itoa(i))
	}
	for range 20 {
		users = append(users, reshardHot...)
	}
	l := newLoad(t, 8, tg)
	stop := l.start(t, users, 8)
	waitFor(t, "the load to be going", func() bool { return len(l.answers()) >= 200 })

	type window struct {
		user     string
		from, to time.Time
		slot     int
	}
	var windows []window
	for _, key := range keys {
		slot, err := c.KeySlot(key)
		if err != nil {
			t.Fatal(err)
		}
		src, err := c.OwnerOf(slot)
		if err != nil {
			t.Fatal(err)
		}
		var dst *redistest.Server
		for i, m := range masters {
			if m.Addr == src.Addr {
				dst = masters[(i+1)%len(masters)]
			}
		}
		win := window{user: key[strings.IndexByte(key, '|')+1 : strings.IndexByte(key, '}')], from: time.Now(), slot: slot}
		errs0 := nodeErrors(t, src)
		if err := c.BeginMigration(slot, src, dst); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(key, "{api|") {
			replied(src, "TRYAGAIN", errs0["TRYAGAIN"])
		}
		for {
			time.Sleep(50 * time.Millisecond)
			n, err := c.MoveKeys(slot, 1)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		replied(src, "ASK", errs0["ASK"])
		if err := c.FinishMigration(slot); err != nil {
			t.Fatal(err)
		}
		win.to = time.Now()
		windows = append(windows, win)
		if now, err := c.OwnerOf(slot); err != nil || now.Addr != dst.Addr {
			t.Errorf("slot %d: owner %v (%v) after its migration from %s to %s", slot, now, err, src.Addr, dst.Addr)
		}
		n := len(l.answers())
		waitFor(t, "more answers after a migration", func() bool { return len(l.answers()) >= n+100 })
	}
	stop()

	got := l.answers()
	if s := statuses(got); s[200] != len(got) {
		t.Errorf("statuses %v; want 200 only", s)
	}
	admitted := countBy(got, 200)
	for u, n := range admitted {
		for _, rule := range []string{"api", "one"} {
			key := prefix + "{" + rule + "|" + u + "}:0"
			if z := ownerZcard(t, c, key); z != n {
				t.Errorf("%s: ZCARD %d on the slot's owner, %d admitted", key, z, n)
			}
		}
	}
	var held, other []time.Duration
	for _, a := range got {
		in := false
		for _, w := range windows {
			in = in || (a.user == w.user && a.done.After(w.from) && a.sent.Before(w.to))
		}
		if in {
			held = append(held, a.done.Sub(a.sent))
		} else {
			other = append(other, a.done.Sub(a.sent))
		}
	}
	p50, p99, max := percentiles(held)
	o50, o99, omax := percentiles(other)
	t.Logf("%d requests; %d during their slot's migration: latency p50 %v p99 %v max %v; the others p50 %v p99 %v max %v",
		len(got), len(held), p50, p99, max, o50, o99, omax)
	for _, w := range windows {
		t.Logf("slot %d (%s) migrated in %v", w.slot, w.user, w.to.Sub(w.from).Round(time.Millisecond))
	}
}

// errorStats sums the running nodes' error replies by kind (INFO
// errorstats); a node down is left out.
func errorStats(t *testing.T, c *redistest.Cluster) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, s := range c.Nodes {
		for kind, n := range nodeErrors(t, s) {
			out[kind] += n
		}
	}
	return out
}

// nodeErrors is one node's error replies by kind, none when it is down.
func nodeErrors(t *testing.T, s *redistest.Server) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	info, err := s.Client.Text("INFO", "errorstats")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(info, "\n") {
		// errorstat_TRYAGAIN:count=3
		kind, n, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "errorstat_"), ":count=")
		if v, err := strconv.ParseInt(n, 10, 64); ok && err == nil {
			out[kind] += v
		}
	}
	return out
}

// stalledRules: rule api of reshardRules alone, a log and a funnel, so
// that a slot with one of its two keys moved answers -TRYAGAIN.
const stalledRules = `[{"name":"api","match":{"path_prefix":"/api/"},"key":[{"source":"header","name":"x-user"}],
	"limits":[{"name":"log","algorithm":"sliding_log","limit":1000000,"window":"1h"},
	          {"name":"funnel","algorithm":"funnel","capacity":1000000,"rate":1000000,"period":"1h"}]}]`

// A migration that stalls with half a slot's keys moved: the slot's
// requests are held and retried until redis.timeout, then get the failure
// mode, not left paused; other slots decide meanwhile; once the slot is
// handed over its requests decide again, and the failed ones charged
// nothing.
func TestClusterReshardStalled(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3})
	w := startClusterWebdis(t, c, "FCALL", "CLUSTER")
	prefix := redistest.Prefix(t)
	nodes, clusters := w.nodes(t, "")
	tg := startNodesHost(t, stockModule, nodesConfig(prefix, "deny", nodes, "", stalledRules), clusters)
	warmUp(t, tg)
	key := stateKey(prefix, "h0")
	src, err := c.MasterFor(key)
	if err != nil {
		t.Fatal(err)
	}
	_, others := splitUsers(t, c, prefix, "b", src, 4)
	expect(t, tg.send(t, userRequest("h0")), 200) // its two keys exist
	slot, err := c.KeySlot(key)
	if err != nil {
		t.Fatal(err)
	}
	masters, err := c.Masters()
	if err != nil {
		t.Fatal(err)
	}
	dst := masters[0]
	if dst.Addr == src.Addr {
		dst = masters[1]
	}
	if err := c.BeginMigration(slot, src, dst); err != nil {
		t.Fatal(err)
	}
	if n, err := c.MoveKeys(slot, 1); err != nil || n != 1 {
		t.Fatalf("moved %d keys (%v); want 1 of 2", n, err)
	}
	before := metricsOf(tg)
	l := newLoad(t, 6, tg)
	l.run(t, append([]string{"h0", "h0"}, others...), 6)
	got := l.answers()
	if n := countBy(got, 503); n["h0"] != 2 || len(n) != 1 {
		t.Errorf("503s by user %v; want the 2 requests of the stalled slot's user only", n)
	}
	if n := countBy(got, 200); len(n) != len(others) || !allOf(n, others, 1) {
		t.Errorf("200s by user %v; want one for each user of another slot", n)
	}
	m := metricsOf(tg)
	if m["redis.retried"] == before["redis.retried"] || m["failure_mode.denied"]-before["failure_mode.denied"] != 2 {
		t.Errorf("metrics %v, before %v; want the held calls retried, then 2 failure-mode denials", m, before)
	}
	for {
		n, err := c.MoveKeys(slot, 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if err := c.FinishMigration(slot); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.send(t, userRequest("h0")), 200)
	if z := ownerZcard(t, c, key); z != 2 {
		t.Errorf("ZCARD %d on the new owner; want 2: the requests that failed charged nothing", z)
	}
}
