package redistest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// fillBytes is what Fill writes before it lowers maxmemory: about three
// times fillMaxmemory, so that used memory stays above it whatever the
// server's own overhead (client buffers, the library).
const (
	fillBytes     = 2 << 20
	fillValue     = 10_000
	fillMaxmemory = "1mb"
)

// Fill makes s a full Redis, as a limiter's Redis is when its keys outgrow
// maxmemory: it writes about 2 MiB of filler keys ("filler:<n>", outside
// every test's prefix), sets maxmemory to 1mb, below what is used, and
// checks that a write is refused with -OOM. The server must run with
// maxmemory-policy noeviction (start it with "--maxmemory-policy",
// "noeviction"): an evicting one deletes keys instead. Then every command
// that may add data, and every function not flagged no-writes, gets -OOM.
// Unfill lifts maxmemory again.
func (s *Server) Fill() error {
	policy, err := s.Client.Strings("CONFIG", "GET", "maxmemory-policy")
	if err != nil {
		return err
	}
	if len(policy) != 2 || policy[1] != "noeviction" {
		return fmt.Errorf("redistest: Fill needs maxmemory-policy noeviction, not %v", policy)
	}
	value := strings.Repeat("x", fillValue)
	for i := range fillBytes / fillValue {
		if _, err := s.Do("SET", "filler:"+strconv.Itoa(i), value); err != nil {
			return fmt.Errorf("redistest: Fill: %w", err)
		}
	}
	if _, err := s.Do("CONFIG", "SET", "maxmemory", fillMaxmemory); err != nil {
		return err
	}
	_, err = s.Do("SET", "filler:probe", "1")
	if rerr := (*redisproto.Error)(nil); !errors.As(err, &rerr) || rerr.Prefix() != "OOM" {
		return fmt.Errorf("redistest: Fill: a write after maxmemory %s answered %v, not -OOM", fillMaxmemory, err)
	}
	return nil
}

// Unfill lifts maxmemory (0: no limit), as an operator who raises it does;
// the filler keys stay.
func (s *Server) Unfill() error {
	_, err := s.Do("CONFIG", "SET", "maxmemory", "0")
	return err
}
