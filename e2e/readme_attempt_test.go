package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// A recipe's run proves nothing when the machine was too slow for it: a
// call to Redis that timed out let a request pass by failure_mode, or a
// command that took over a second may have crossed a per-second limit's
// window. Such a run is repeated, from the keys Redis held before it, at
// most maxRecipeAttempts times; any other mismatch fails at once.
const maxRecipeAttempts = 3

// recipeAttempt is how one run of a recipe ended.
type recipeAttempt struct {
	mismatches []string
	why        string // why the run proves nothing; "" when it does
}

// keyDump is a key as DUMP gives it, with its time to live.
type keyDump struct {
	key, dump string
	pttl      int64
}

// snapshotKeys dumps every key of srv.
func snapshotKeys(srv *redistest.Server) ([]keyDump, error) {
	keys, err := srv.Client.Strings("KEYS", "*")
	if err != nil {
		return nil, err
	}
	out := make([]keyDump, 0, len(keys))
	for _, k := range keys {
		d, err := srv.Client.Text("DUMP", k)
		if err != nil {
			return nil, err
		}
		ttl, err := srv.Client.Int("PTTL", k)
		if err != nil {
			return nil, err
		}
		out = append(out, keyDump{key: k, dump: d, pttl: max(ttl, 0)})
	}
	return out, nil
}

// restoreKeys brings srv's keys back to a snapshot (the library, which is
// no key, stays).
func restoreKeys(srv *redistest.Server, keys []keyDump) error {
	if _, err := srv.Do("FLUSHALL"); err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := srv.Do("RESTORE", k.key, k.pttl, k.dump, "REPLACE"); err != nil {
			return fmt.Errorf("RESTORE %s: %w", k.key, err)
		}
	}
	return nil
}

// redisErrors reads ratelimit.redis.errors from a wasmhost's admin stats;
// 0 when it cannot.
func redisErrors(admin string) int64 {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + admin + "/stats")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wasmcustom.ratelimit.redis.errors: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
