package algorithms

import (
	"strconv"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// The library's bump, flagged allow-oom, increments the epoch on a Redis
// full under maxmemory, and never creates a key: a bump naming a new key
// would add data past maxmemory, one key a call.
func TestBumpOnAFullRedisCreatesNoKey(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory-policy", "noeviction")
	p := redistest.Prefix(t)
	epoch := p + "epoch"
	if _, err := srv.Do("SET", epoch, "7"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Fill(); err != nil {
		t.Fatal(err)
	}
	if n, err := srv.Client.Int("FCALL", Library.Bump, "1", epoch); err != nil || n != 8 {
		t.Fatalf("bump of the epoch on a full Redis: %d (%v), want 8", n, err)
	}
	for i := range 3 {
		key := p + strconv.Itoa(i) + "epoch"
		if v, err := srv.Do("FCALL", Library.Bump, "1", key); err == nil {
			t.Errorf("bump of a new key %s on a full Redis: %v, want an error", key, v)
		}
		if n, err := srv.Client.Int("EXISTS", key); err != nil || n != 0 {
			t.Errorf("bump of a new key: EXISTS %s is %d (%v)", key, n, err)
		}
	}
}
