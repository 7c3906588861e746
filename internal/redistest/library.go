package redistest

import (
	"fmt"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
)

// LoadLibrary loads the filter's Redis Functions library (as ratelimitctl
// install does) unless the server has it already. Every server this
// package starts has it, but one whose default user may not load it (a
// test of ACL users loads it as one that may); a test that needs a server
// without it runs FUNCTION DELETE or FUNCTION FLUSH.
func LoadLibrary(c *Client) error {
	_, err := c.Do("FUNCTION", "LOAD", lua.Library.Source)
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("redistest: FUNCTION LOAD %s on %s: %w", lua.Library.Name, c.Addr(), err)
	}
	return nil
}

// deniedToDefault reports whether err says the default user may not run
// FUNCTION LOAD.
func deniedToDefault(err error) bool {
	for _, code := range []string{"NOAUTH", "NOPERM", "WRONGPASS"} {
		if strings.Contains(err.Error(), code) {
			return true
		}
	}
	return false
}
