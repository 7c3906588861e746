package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

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
