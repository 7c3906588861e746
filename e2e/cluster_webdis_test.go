package e2e

// Test 3a of issue 32: a Redis Cluster of three masters behind a real
// Webdis per node (redis.nodes), the filter routing each call to its
// slot's node. Decisions are exact (checked on the slot's owner, on Redis's
// clock), spread over every master, and after the first slot map load no
// call is redirected. The same exactness holds for the Higress build behind
// the redis_proxy model, which refuses FCALL as the real one does
// (redis.command: evalsha).

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// exactClusterRules: per user, a log of 5 an hour binds; the counter and
// the funnel are checked beside it, so each call holds three keys of one
// slot.
const exactClusterRules = `[{"name":"api","match":{"path_prefix":"/api/"},"key":[{"source":"header","name":"x-user"}],
	"limits":[{"name":"log","algorithm":"sliding_log","limit":5,"window":"1h"},
	          {"name":"counter","algorithm":"sliding_counter","limit":6,"window":"1h"},
	          {"name":"funnel","algorithm":"funnel","capacity":8,"rate":1,"period":"1h"}]}]`

const exactClusterLimit = 5

// Traffic of one exactness run: broadUsers users once each (their slots
// cover most of the 16384), then hotUsers users hotSends times each.
const (
	broadUsers = 3000
	hotUsers   = 40
	hotSends   = 8
	senders    = 16
)

func TestClusterWebdis(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3})
	w := startClusterWebdis(t, c, "FCALL", "CLUSTER")
	masters, err := c.Masters()
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters %v, %v", masters, err)
	}
	broad := broadUsersOf(t, c)

	for _, b := range []struct {
		name string
		mod  **wasmhost.Module
	}{{"stock", &stockModule}, {"higress", &module}} {
		t.Run(b.name+" through a Webdis per node", func(t *testing.T) {
			prefix := redistest.Prefix(t)
			// The seed (nodes[0], where a VM sends before its first map
			// load) owns the epoch key, so the first epoch read is never
			// redirected, and two hosts of one VM each, taking turns, each
			// load the map before the traffic: no -MOVED after that.
			epochOwner, err := c.MasterFor(prefix + "epoch")
			if err != nil {
				t.Fatal(err)
			}
			nodes, clusters := w.nodes(t, epochOwner.Addr)
			tgs := startNodesVMs(t, *b.mod, nodesConfig(prefix, "deny", nodes, "", exactClusterRules), clusters, 2)
			before := metricsOf(tgs...)
			exactRun(t, c, tgs, prefix, broad)
			after := metricsOf(tgs...)
			if d := after["redis.moved"] - before["redis.moved"]; d != 0 {
				t.Errorf("%d calls redirected (-MOVED) after the slot map was loaded; want 0", d)
			}
			t.Logf("metrics %v", after)

			prefix = redistest.Prefix(t) + "seq-"
			clustered := startNodesHost(t, *b.mod, nodesConfig(prefix, "allow", nodes, "", clusterRules), clusters)
			decidesAsSingleServer(t, c, prefix, clusterConfig(prefix, true, "allow"), clustered)
		})
	}

	t.Run("higress behind the redis_proxy model, evalsha", func(t *testing.T) {
		prefix := redistest.Prefix(t)
		config := fmt.Sprintf(`{"failure_mode":"deny","redis":{"cluster":"redis","command":"evalsha","timeout":"2s","key_prefix":%q,"cluster_mode":true},"rules":%s}`,
			prefix, exactClusterRules)
		tg := startProxyCluster(t, config, c)
		exactRun(t, c, []*wasmTarget{tg}, prefix, broad)
		if s := tg.h.RedisClusterStats("redis"); s.RedirectionsToGuest != 0 || s.CrossSlot != 0 {
			t.Errorf("redis_proxy stats %+v; want no redirection or CROSSSLOT reaching the filter", s)
		}
	})

	// A master missing from redis.nodes: its slots get failure_mode and a
	// log line naming it; the other masters' slots decide as ever.
	t.Run("a master not in redis.nodes", func(t *testing.T) {
		prefix := redistest.Prefix(t)
		missing := masters[2]
		nodes, clusters := w.nodes(t, "", missing.Addr)
		tg := startNodesHost(t, stockModule, nodesConfig(prefix, "deny", nodes, "", exactClusterRules), clusters)
		warmUp(t, tg)
		before := metricsOf(tg)
		var on, off []string
		for i := 0; len(on) < 20 || len(off) < 20; i++ {
			u := "n" + strconv.Itoa(i)
			if m, err := c.MasterFor(stateKey(prefix, u)); err != nil {
				t.Fatal(err)
			} else if m.Addr == missing.Addr {
				on = append(on, u)
			} else {
				off = append(off, u)
			}
		}
		l := newLoad(t, 4, tg)
		l.run(t, append(on[:20:20], off[:20]...), 4)
		got := l.answers()
		if n := countBy(got, 503); len(n) != 20 || !allOf(n, on[:20], 1) {
			t.Errorf("503 per user %v; want one for each user on %s", n, missing.Addr)
		}
		if n := countBy(got, 200); !allOf(n, off[:20], 1) || len(n) != 20 {
			t.Errorf("200 per user %v; want one for each user on the listed masters", n)
		}
		if m := metricsOf(tg); m["redis.unknown_node"] == 0 || m["failure_mode.denied"]-before["failure_mode.denied"] != 20 {
			t.Errorf("metrics %v; want unknown_node > 0 and 20 failure-mode denials", m)
		}
		if logs := strings.Join(tg.h.GuestLogs(wasmhost.LogWarn), "\n"); !strings.Contains(logs, w.announced(t, missing.Addr)) {
			t.Errorf("no log line names the unlisted master %s:\n%s", missing.Addr, logs)
		}
	})

	// Webdis refuses CLUSTER (403): the filter learns slots from -MOVED
	// alone, still exactly.
	t.Run("without CLUSTER NODES, from -MOVED alone", func(t *testing.T) {
		prefix := redistest.Prefix(t)
		w := startClusterWebdis(t, c, "FCALL")
		nodes, clusters := w.nodes(t, "")
		tg := startNodesHost(t, stockModule, nodesConfig(prefix, "deny", nodes, "", exactClusterRules), clusters)
		exactRun(t, c, []*wasmTarget{tg}, prefix, broad)
		m := metricsOf(tg)
		if m["redis.moved"] == 0 || m["redis.slot_map_loads"] != 0 {
			t.Errorf("metrics %v; want -MOVED followed and no slot map loaded", m)
		}
		if logs := strings.Join(tg.h.GuestLogs(wasmhost.LogWarn), "\n"); !strings.Contains(logs, "cluster|nodes") {
			t.Errorf("no log line says to grant +cluster|nodes:\n%s", logs)
		}
	})
}

// stateKey is the sliding log of exactClusterRules' rule api for user.
func stateKey(prefix, user string) string { return prefix + "{api|" + user + "}:0" }

// warmUp waits for two slot map loads on tg (of 2 VMs), as each VM loads
// at its first tick; most often one per VM, not always (see
// startNodesVMs), so nothing exact rests on it.
func warmUp(t *testing.T, tg *wasmTarget) {
	t.Helper()
	waitFor(t, "a slot map load per VM", func() bool { return tg.metric("ratelimit.redis.slot_map_loads") >= 2 })
}

// exactRun sends the broad and the hot traffic through tgs and checks: every
// answer a 200 or a 429; per user, admitted = min(sent, limit), which is
// ZCARD of its log on the slot's owner; no Redis error; every master
// decided some of it.
func exactRun(t *testing.T, c *redistest.Cluster, tgs []*wasmTarget, prefix string, broad []string) {
	t.Helper()
	masters, err := c.Masters()
	if err != nil {
		t.Fatal(err)
	}
	calls0 := fcallsPerNode(t, masters)
	var hot []string
	for range hotSends {
		for i := range hotUsers {
			hot = append(hot, "h"+strconv.Itoa(i))
		}
	}
	l := newLoad(t, senders, tgs...)
	l.run(t, broad, senders)
	l.run(t, hot, senders)

	got := l.answers()
	if s := statuses(got); s[200]+s[429] != len(got) {
		t.Errorf("statuses %v; want 200 and 429 only", s)
	}
	sent, admitted := map[string]int{}, countBy(got, 200)
	for _, a := range got {
		sent[a.user]++
	}
	checked := 0
	for u, n := range sent {
		want := min(n, exactClusterLimit)
		if admitted[u] != want {
			t.Errorf("%s: %d sent, %d admitted; want %d", u, n, admitted[u], want)
		}
		// Every hot user, and one broad user in ten, read back on Redis.
		if n > 1 || checked < broadUsers/10 {
			checked++
			if z := ownerZcard(t, c, stateKey(prefix, u)); z != admitted[u] {
				t.Errorf("%s: ZCARD %d on the slot's owner, %d admitted", u, z, admitted[u])
			}
		}
	}
	m := metricsOf(tgs...)
	if m["redis.errors"] != 0 || m["failure_mode.denied"] != 0 {
		t.Errorf("metrics %v; want no Redis error and no failure-mode answer", m)
	}
	calls := fcallsPerNode(t, masters)
	for _, s := range masters {
		if calls[s.Addr] == calls0[s.Addr] {
			t.Errorf("master %s decided none of it (calls %v)", s.Addr, calls)
		}
		calls[s.Addr] -= calls0[s.Addr]
	}
	t.Logf("%d requests, %d users, %d read back; calls by master %v", len(got), len(sent), checked, calls)
}

// broadUsersOf picks broadUsers users of whom more than 2500 have slots
// of their own (CRC16 of names that differ little repeats slots more than
// chance would): the first candidate of each new slot until 2600 slots,
// then any. A slot depends on the hash tag {api|<user>} alone.
func broadUsersOf(t *testing.T, c *redistest.Cluster) []string {
	t.Helper()
	var picked, rest []string
	slots := map[int]bool{}
	for i := 0; len(picked) < 2600 || len(picked)+len(rest) < broadUsers; i++ {
		u := "u" + strconv.Itoa(i)
		s, err := c.KeySlot(stateKey("", u))
		if err != nil {
			t.Fatal(err)
		}
		if !slots[s] && len(picked) < 2600 {
			slots[s] = true
			picked = append(picked, u)
		} else {
			rest = append(rest, u)
		}
		if i > 100*broadUsers {
			t.Fatalf("%d candidates cover only %d slots", i, len(slots))
		}
	}
	return append(picked, rest[:broadUsers-len(picked)]...)
}

// allOf says n[u] == want for each of users.
func allOf(n map[string]int, users []string, want int) bool {
	for _, u := range users {
		if n[u] != want {
			return false
		}
	}
	return true
}
