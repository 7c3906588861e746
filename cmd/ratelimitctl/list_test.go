package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/keyspace"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// globPrefix holds every character special to SCAN's MATCH.
const globPrefix = `ls*[x]?\:`

// pageAll lists with --count n from the start until the cursor is 0, and
// returns every Redis key listed, in order, and the cursors seen.
func pageAll(t *testing.T, e *env, n int, args ...string) (keys, cursors []string) {
	t.Helper()
	cursor := "0"
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("list never ends")
		}
		var l listed
		e.json(&l, append([]string{"list", "--count", fmt.Sprint(n), "--cursor", cursor}, args...)...)
		for _, k := range l.Keys {
			keys = append(keys, k.RedisKeys...)
		}
		if cursor = l.Cursor; cursor == "0" {
			return keys, cursors
		}
		cursors = append(cursors, cursor)
	}
}

// exactlyOnce reports each key of want that got does not hold exactly
// once, and each key of got that want lacks.
func exactlyOnce(t *testing.T, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, k := range got {
		seen[k]++
	}
	for _, k := range want {
		if seen[k] != 1 {
			t.Errorf("%s listed %d times", k, seen[k])
		}
		delete(seen, k)
	}
	for k := range seen {
		t.Errorf("%s listed, but is not one of the rule's keys", k)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t) // its own server: nothing else changes its keys while a scan goes on
	e := newEnvOn(t, s, globPrefix, testRules)
	var want []string
	for i := range 40 {
		base := e.key("api", fmt.Sprintf("user%02d", i))
		keys := []string{keyspace.StateKey(base, 0)}
		if i%3 == 0 {
			keys = append(keys, keyspace.StateKey(base, 1), keyspace.BlockKey(base))
		}
		for _, k := range keys {
			e.set(k, "1")
		}
		want = append(want, keys...)
	}
	// What --rule api must not list: another rule whose name starts the
	// same, and keys that MATCH would take if the prefix were not escaped.
	for _, k := range []string{globPrefix + "{api2|user01}:0", globPrefix + "{route|user01|/}:0",
		"lsQQxZ:{api|user01}:0", `ls*[x]?\\:{api|user01}:0`, "ls*[x]?:{api|user01}:0"} {
		e.set(k, "1")
	}

	keys, cursors := pageAll(t, e, 7, "--rule", "api")
	exactlyOnce(t, keys, want)
	if len(cursors) < 3 {
		t.Errorf("%d keys in %d pages of 7; want several", len(want), len(cursors)+1)
	}

	// Without --rule: the keys of every rule of the configuration, and
	// apart, counted, those of a rule it lacks; the other prefixes' left out.
	keys, _ = pageAll(t, e, 1000)
	exactlyOnce(t, keys, append(want, globPrefix+"{route|user01|/}:0"))
	var l listed
	e.json(&l, "list", "--count", "1000")
	if len(l.Elsewhere) != 1 || l.Elsewhere[0] != (otherRule{"api2", 1}) {
		t.Errorf("list: not in the configuration: %+v; want api2's one key", l.Elsewhere)
	}
	if out := e.ok("list", "--count", "1000"); !strings.Contains(out, "\nnot in "+e.config+"  api2 (1 key): rules of another configuration") {
		t.Errorf("list: the rule not in the configuration:\n%s", out)
	}
}

// The text output, and the decoding of parts, in JSON and as text.
func TestListParts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testRules)
	long := strings.Repeat("x", 70)
	alice, bob, tag, hashed := e.key("api", "alice"), e.key("api", "bob smith"), e.key("api", "#tag"), e.key("api", long)
	for _, k := range []string{keyspace.StateKey(alice, 0), keyspace.StateKey(alice, 1), keyspace.TierKey(alice),
		keyspace.BlockKey(bob), keyspace.OverrideKey(tag), keyspace.StateKey(hashed, 0), hashed + ":future"} {
		e.set(k, "1")
	}
	_, hash, _, _ := keyspace.SplitKey(e.prefix, hashed)

	var l listed
	e.json(&l, "list", "--rule", "api")
	want := []listedKey{
		{Rule: "api", Parts: []listedPart{{hash[0], true}}, Key: hashed, State: []int{0}, Other: []string{":future"}},
		{Rule: "api", Parts: []listedPart{{"#tag", false}}, Key: tag, State: []int{}, Override: true},
		{Rule: "api", Parts: []listedPart{{"alice", false}}, Key: alice, State: []int{0, 1}, Tier: true},
		{Rule: "api", Parts: []listedPart{{"bob smith", false}}, Key: bob, State: []int{}, Block: true},
	}
	if l.Cursor != "0" || len(l.Keys) != len(want) {
		t.Fatalf("list: %+v", l)
	}
	for i, w := range want {
		g := l.Keys[i]
		g.RedisKeys = nil
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("key %d: %+v\nwant    %+v", i, g, w)
		}
	}

	// Columns are two spaces or more apart.
	columns := regexp.MustCompile(`  +`)
	out := columns.ReplaceAllString(e.ok("list", "--rule", "api"), "|")
	wantText := strings.Join([]string{
		"RULE|PARTS|HAS",
		"api|" + hash[0] + "|state 0, other :future",
		`api|"#tag"|override`,
		"api|alice|state 0,1, tier",
		`api|"bob smith"|block`,
		"",
		"next cursor|0 (done)",
		"",
	}, "\n")
	if out != wantText {
		t.Errorf("list:\n%s\nwant\n%s", out, wantText)
	}
	if !strings.HasPrefix(hash[0], "#") || len(hash[0]) != 23 {
		t.Errorf("hashed part %q", hash[0])
	}
}
