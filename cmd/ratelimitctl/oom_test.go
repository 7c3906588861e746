package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// fullRedis is a Redis full under maxmemory (noeviction), which refuses
// every write that may add data, with the env of testRules on it: alice
// sent 3 requests (api's minute is spent, route's key charged), carol is
// blocked for an hour, dave with no TTL.
func fullRedis(t *testing.T) (*env, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t, "--maxmemory-policy", "noeviction")
	e := newEnvOn(t, srv, redistest.Prefix(t), testRules)
	p := newProxyOn(t, e, srv.Addr)
	for n := range 3 {
		if status := p.send(t, [2]string{"x-user", "alice"}); status != 200 {
			t.Fatalf("request %d: status %d", n+1, status)
		}
	}
	e.ok("block", "--rule", "api", "--ttl", "1h", "carol")
	e.ok("block", "--rule", "api", "dave")
	if err := srv.Fill(); err != nil {
		t.Fatal(err)
	}
	return e, srv
}

// show reads a full Redis: the library's peek is a no-writes function.
func TestShowOnFullRedis(t *testing.T) {
	t.Parallel()
	e, srv := fullRedis(t)
	// show: the filter's peek, a no-writes function, and reads.
	var sh shown
	e.json(&sh, "show", "--rule", "api", "alice")
	checkLimits(t, "show on a full Redis", sh.Limits,
		limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 3, Used: 3},
		limitShown{Name: "burst", Algorithm: "funnel", Limit: 5, Used: 3})
	if !sh.Denied || sh.Limits[0].RetryAfterMs <= 0 {
		t.Errorf("show on a full Redis: %+v", sh)
	}

	// The filter's quota endpoint calls the same peek with FCALL, which a
	// full Redis runs too, the function being flagged no-writes.
	if _, err := srv.Do("FCALL", lua.Library.Peek, "1", keyspace.StateKey(e.key("api", "alice"), 0), "0",
		"l", "3", "60000000", "-1"); err != nil {
		t.Errorf("FCALL of the peek on a full Redis: %v", err)
	}

}

// On a full Redis, reset deletes and bumps the epoch (through the
// library's allow-oom bump); a write is refused with nothing changed; and
// without the library a change says what it deleted, that the epoch was
// not bumped and what that leaves, exiting 1.
func TestChangesOnFullRedis(t *testing.T) {
	t.Parallel()
	e, srv := fullRedis(t)
	epoch := e.epoch()
	aliceKey := e.key("api", "alice")
	state := []string{keyspace.StateKey(aliceKey, 0), keyspace.StateKey(aliceKey, 1)}
	var c changed
	e.json(&c, "reset", "--rule", "api", "alice")
	if !slices.Equal(c.Deleted, state) || c.Epoch != epoch+1 || e.epoch() != epoch+1 {
		t.Errorf("reset on a full Redis: %+v; want %v deleted and epoch %d", c, state, epoch+1)
	}

	// A write is refused, and says that nothing changed.
	out, errOut, code := e.ctl("block", "--rule", "api", "bob")
	if code != exitError || out != "" || !strings.Contains(errOut, "block: SET "+keyspace.BlockKey(e.key("api", "bob"))+": OOM ") ||
		!strings.Contains(errOut, ". Nothing was changed. Redis is full under maxmemory") {
		t.Errorf("block on a full Redis: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Without the library, the epoch cannot be bumped: the change says
	// what it deleted, and how long proxies may keep denying.
	if _, err := srv.Do("FUNCTION", "DELETE", lua.Library.Name); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		key   string
		stale string
	}{
		{[]string{"unblock", "--rule", "api", "carol"}, keyspace.BlockKey(e.key("api", "carol")),
			"Proxies that cached the block may keep denying this key for up to 1h, until the block would have expired"},
		{[]string{"unblock", "--rule", "api", "dave"}, keyspace.BlockKey(e.key("api", "dave")),
			"No proxy holds a stale denial: a block without a TTL is never cached"},
		{[]string{"reset", "--rule", "route", "alice", "/"}, keyspace.StateKey(e.key("route", "alice", "/"), 0),
			"Proxies that cached a denial of this key may keep denying it for up to 1h (a denial is cached until its Retry-After"},
	} {
		out, errOut, code := e.ctl(tc.args...)
		what := strings.Join(tc.args, " ")
		if code != exitError || out != "deleted  "+tc.key+"\nepoch    "+keyspace.EpochKey(e.prefix)+" not bumped\n" {
			t.Errorf("%s: exit %d, stdout:\n%s", what, code, out)
		}
		for _, want := range []string{tc.args[0] + ": deleted 1 key(s): " + tc.key + ". The epoch was not bumped: INCR ",
			": OOM ", "FCALL " + lua.Library.Name + "_bump: ERR Function not found", "run `ratelimitctl install`", tc.stale,
			"Redis is full under maxmemory"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", what, want, errOut)
			}
		}
		if e.exists(tc.key) {
			t.Errorf("%s: %s not deleted", what, tc.key)
		}
	}
	if e.epoch() != epoch+1 {
		t.Errorf("epoch %d; want %d", e.epoch(), epoch+1)
	}
}

// show only reads, so it runs on a replica; a change there is refused,
// and says that nothing was deleted.
func TestShowOnReplica(t *testing.T) {
	t.Parallel()
	master, replica := redistest.Start(t), redistest.Start(t)
	e := newEnvOn(t, master, redistest.Prefix(t), testRules)
	p := newProxyOn(t, e, master.Addr)
	for n := range 2 {
		if status := p.send(t, [2]string{"x-user", "alice"}); status != 200 {
			t.Fatalf("request %d: status %d", n+1, status)
		}
	}
	host, port, _ := strings.Cut(master.Addr, ":")
	if _, err := replica.Do("REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	if _, err := master.Do("WAIT", "1", "0"); err != nil { // until the replica has every write
		t.Fatal(err)
	}
	e.conn = []string{"--redis", replica.Addr}
	var sh shown
	e.json(&sh, "show", "--rule", "api", "alice")
	checkLimits(t, "show on a replica", sh.Limits,
		limitShown{Name: "minute", Algorithm: "sliding_log", Limit: 3, Used: 2},
		limitShown{Name: "burst", Algorithm: "funnel", Limit: 5, Used: 2})
	out, errOut, code := e.ctl("reset", "--rule", "api", "alice")
	if code != exitError || out != "" || !strings.Contains(errOut, "reset: DEL ") || !strings.Contains(errOut, "READONLY") ||
		!strings.HasSuffix(errOut, "; nothing was deleted.\n") {
		t.Errorf("reset on a replica: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
