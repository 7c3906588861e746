package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// Against a Redis Cluster of three masters: the keys of one rule key share
// a slot, the epoch key lives in another, and list walks every master.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	prefix := redistest.Prefix(t)
	e := writeConfig(t, prefix, bothRules(prefix))
	e.conn = []string{"--cluster", "--redis", c.Nodes[1].Addr}
	e.do = func(key string, args ...any) (any, error) { return c.Do(key, args...) }

	t.Run("changes", func(t *testing.T) {
		e.t = t
		alice := e.key("plan", "alice")
		var ch changed
		for i, args := range [][]string{
			{"block", "--rule", "api", "--ttl", "1h", "alice"},
			{"tier", "set", "--rule", "plan", "--tier", "gold", "alice"},
			{"override", "set", "--rule", "plan", "--limits", `[{"algorithm":"sliding_log","limit":9,"window":"1m"}]`, "alice"},
		} {
			e.json(&ch, args...)
			if ch.Epoch != int64(i+1) || e.epoch() != int64(i+1) {
				t.Errorf("%s: epoch %d, reported %d; want %d", strings.Join(args, " "), e.epoch(), ch.Epoch, i+1)
			}
		}
		var sh shown
		e.json(&sh, "show", "--rule", "api", "alice")
		if !sh.Blocked || sh.Block == nil || sh.Block.TTLms <= 3590_000 {
			t.Errorf("show of a blocked key on the cluster: %+v", sh)
		}
		e.ok("unblock", "--rule", "api", "alice")
		e.json(&sh, "show", "--rule", "api", "alice")
		if sh.Blocked || sh.Block != nil || len(sh.Limits) != 2 {
			t.Errorf("show after unblock: %+v", sh)
		}
		e.json(&sh, "show", "--rule", "plan", "alice")
		if sh.AssignedTier == nil || sh.AssignedTier.Value != "gold" || !sh.OverrideApplied || len(sh.Limits) != 1 || sh.Limits[0].Limit != 9 {
			t.Errorf("show of a key with a tier and an override on the cluster: %+v", sh)
		}

		e.set(keyspace.StateKey(alice, 0), "1")
		e.set(keyspace.StateKey(alice, 1), "1")
		e.json(&ch, "reset", "--all", "--rule", "plan", "alice")
		want := []string{keyspace.StateKey(alice, 0), keyspace.StateKey(alice, 1), keyspace.TierKey(alice), keyspace.OverrideKey(alice)}
		if !slices.Equal(ch.Deleted, want) || ch.Epoch != 5 {
			t.Errorf("reset --all: %+v; want deleted %q, epoch 5", ch, want)
		}
	})

	t.Run("list", func(t *testing.T) {
		e.t = t
		var want []string
		for i := range 150 {
			base := e.key("api", "user"+strconv.Itoa(i))
			keys := []string{keyspace.StateKey(base, 0)}
			if i%4 == 0 {
				keys = append(keys, keyspace.BlockKey(base))
			}
			for _, k := range keys {
				e.set(k, "1")
			}
			want = append(want, keys...)
		}
		// Which master, in address order, holds each key.
		addrs := c.Addrs()
		slices.Sort(addrs)
		master := map[string]int{}
		perMaster := make([]int, len(addrs))
		for _, k := range want {
			m, err := c.MasterFor(k)
			if err != nil {
				t.Fatal(err)
			}
			master[k] = slices.Index(addrs, m.Addr)
			perMaster[master[k]]++
		}
		if slices.Contains(perMaster, 0) {
			t.Fatalf("keys per master %v: want some on each", perMaster)
		}

		// Page by page: each page's keys are on the masters from its
		// cursor's to the next cursor's.
		var keys []string
		cursor, pages, masters := "0", 0, map[int]bool{}
		for ; pages < 1000; pages++ {
			masters[nodeOf(t, cursor)] = true
			var l listed
			e.json(&l, "list", "--rule", "api", "--count", "10", "--cursor", cursor)
			from, to := nodeOf(t, cursor), len(addrs)-1
			if l.Cursor != "0" {
				to = nodeOf(t, l.Cursor)
			}
			for _, k := range l.Keys {
				for _, rk := range k.RedisKeys {
					if m := master[rk]; m < from || m > to {
						t.Errorf("page from %s to %s lists %s of master %d", cursor, l.Cursor, rk, m)
					}
				}
				keys = append(keys, k.RedisKeys...)
			}
			if cursor = l.Cursor; cursor == "0" {
				break
			}
		}
		exactlyOnce(t, keys, want)
		if pages < 3 || len(masters) != len(addrs) {
			t.Errorf("%d keys in %d pages of at least 10, starting on masters %v; want several pages on each master", len(want), pages+1, masters)
		}

		// A cursor resumes where it says, every time.
		var first, again listed
		e.json(&first, "list", "--rule", "api", "--count", "5")
		e.json(&again, "list", "--rule", "api", "--count", "5", "--cursor", first.Cursor)
		var resumed listed
		e.json(&resumed, "list", "--rule", "api", "--count", "5", "--cursor", first.Cursor)
		if fmt.Sprint(again) != fmt.Sprint(resumed) || len(again.Keys) == 0 {
			t.Errorf("cursor %s: %+v, then %+v", first.Cursor, again, resumed)
		}

		_, errOut, code := e.ctl("list", "--cursor", "5")
		if code != exitUsage || !strings.Contains(errOut, `--cursor "5": want a cursor printed by the previous page: <master>:<cursor>`) {
			t.Errorf("a single server's cursor on a cluster: exit %d, %q", code, errOut)
		}
		_, errOut, code = e.ctl("list", "--cursor", "7:0")
		if code != exitError || !strings.Contains(errOut, `--cursor "7:0": master 7 of 3`) {
			t.Errorf("a master out of range: exit %d, %q", code, errOut)
		}
	})
}

// nodeOf is a cluster cursor's master index.
func nodeOf(t *testing.T, cursor string) int {
	t.Helper()
	if cursor == "0" {
		return 0
	}
	n, _, ok := strings.Cut(cursor, ":")
	i, err := strconv.Atoi(n)
	if !ok || err != nil {
		t.Fatalf("cursor %q is not <master>:<cursor>", cursor)
	}
	return i
}

// With a replica per master: changes to keys on two masters, show after
// their slot migrated (go-redis follows -MOVED), and install on a cluster
// whose masters lost the library puts it back on every master, whence it
// replicates to every replica.
func TestClusterReplicas(t *testing.T) {
	t.Parallel()
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, Replicas: 1})
	masters, err := c.Masters()
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters %v, %v; want 3", masters, err)
	}
	prefix := redistest.Prefix(t)
	e := writeConfig(t, prefix, bothRules(prefix))
	e.conn = []string{"--cluster", "--redis", masters[0].Addr}
	e.do = func(key string, args ...any) (any, error) { return c.Do(key, args...) }

	// alice and a user on another master.
	owner := func(base string) *redistest.Server {
		t.Helper()
		m, err := c.MasterFor(keyspace.TierKey(base))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	users := []string{"alice"}
	for i := 0; len(users) < 2; i++ {
		if u := "bob" + strconv.Itoa(i); owner(e.key("plan", u)).Addr != owner(e.key("plan", "alice")).Addr {
			users = append(users, u)
		}
	}

	epoch := int64(0)
	for _, u := range users {
		e.t = t
		base := e.key("plan", u)
		var ch changed
		for _, args := range [][]string{
			{"block", "--rule", "api", "--ttl", "1h", u},
			{"tier", "set", "--rule", "plan", "--tier", "gold", u},
			{"override", "set", "--rule", "plan", "--limits", `[{"algorithm":"sliding_log","limit":9,"window":"1m"}]`, u},
		} {
			e.json(&ch, args...)
			if epoch++; ch.Epoch != epoch || e.epoch() != epoch {
				t.Errorf("%s: epoch %d, reported %d; want %d", strings.Join(args, " "), e.epoch(), ch.Epoch, epoch)
			}
		}
		var sh shown
		e.json(&sh, "show", "--rule", "api", u)
		if !sh.Blocked || sh.Block == nil {
			t.Errorf("%s on %s: show of a blocked key: %+v", u, owner(base).Addr, sh)
		}
		e.json(&sh, "show", "--rule", "plan", u)
		if sh.AssignedTier == nil || sh.AssignedTier.Value != "gold" || !sh.OverrideApplied || len(sh.Limits) != 1 || sh.Limits[0].Limit != 9 {
			t.Errorf("%s on %s: show of a key with a tier and an override: %+v", u, owner(base).Addr, sh)
		}
		// The master's replica has the tier too.
		replica, err := c.ReplicaOf(owner(base))
		if err != nil {
			t.Fatal(err)
		}
		waitReplicated(t, replica, keyspace.TierKey(base), "gold")
	}

	// Migrate alice's slot to another master, its keys in batches of one.
	alice := e.key("plan", "alice")
	slot, err := c.KeySlot(keyspace.TierKey(alice))
	if err != nil {
		t.Fatal(err)
	}
	src := owner(alice)
	i := slices.IndexFunc(masters, func(m *redistest.Server) bool { return m.Addr == src.Addr })
	dst := masters[(i+1)%len(masters)]
	if err := c.BeginMigration(slot, src, dst); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for {
		n, err := c.MoveKeys(slot, 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		moved += n
	}
	if err := c.FinishMigration(slot); err != nil {
		t.Fatal(err)
	}
	if now, err := c.OwnerOf(slot); err != nil || now == nil || now.Addr != dst.Addr || moved != 2 {
		t.Fatalf("slot %d after migration: owner %v (%v), %d keys moved; want %s and 2 keys (tier, override)", slot, now, err, moved, dst.Addr)
	}
	var sh shown
	e.json(&sh, "show", "--rule", "plan", "alice")
	if sh.AssignedTier == nil || sh.AssignedTier.Value != "gold" || !sh.OverrideApplied {
		t.Errorf("show after alice's slot moved from %s to %s: %+v", src.Addr, dst.Addr, sh)
	}
	var ch changed
	e.json(&ch, "reset", "--all", "--rule", "plan", "alice")
	if want := []string{keyspace.TierKey(alice), keyspace.OverrideKey(alice)}; !slices.Equal(ch.Deleted, want) || ch.Epoch != epoch+1 {
		t.Errorf("reset --all after the migration: %+v; want deleted %q, epoch %d", ch, want, epoch+1)
	}

	// install: the library deleted on every master (and so on every
	// replica), then installed on every master, is on all six nodes.
	var all []*redistest.Server
	for _, m := range masters {
		r, err := c.ReplicaOf(m)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, m, r)
		if _, err := m.Do("FUNCTION", "DELETE", lua.Library.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range all {
		waitLibrary(t, n, false)
	}
	var in installed
	e.json(&in, "install")
	if len(in.Servers) != len(masters) {
		t.Errorf("install --cluster: %+v; want one line per master", in)
	}
	for _, s := range in.Servers {
		if s.Status != "installed" {
			t.Errorf("install --cluster: %+v; want installed on each", in)
		}
	}
	for _, n := range all {
		waitLibrary(t, n, true)
	}
}

// waitReplicated waits until a replica serves key with value (READONLY).
func waitReplicated(t *testing.T, replica *redistest.Server, key, value string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%s = %q on replica %s", key, value, replica.Addr), func() bool {
		var got string
		err := replica.Client.With(func(conn *redistest.Conn) error {
			if _, err := conn.Do("READONLY"); err != nil {
				return err
			}
			v, err := conn.Do("GET", key)
			got = string(v.Str)
			conn.Do("READWRITE")
			return err
		})
		return err == nil && got == value
	})
}

// waitLibrary waits until the filter's library is on a node, or is not.
func waitLibrary(t *testing.T, n *redistest.Server, present bool) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("library %s on %s: %t", lua.Library.Name, n.Addr, present), func() bool {
		v, err := n.Do("FUNCTION", "LIST", "LIBRARYNAME", lua.Library.Name)
		libs, _ := v.([]any)
		return err == nil && (len(libs) > 0) == present
	})
}

// waitUntil polls cond every 10 ms; the 30 s deadline guards a hang only.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
	}
}
