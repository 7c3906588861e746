package redistest

import (
	"fmt"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms/lua"
)

// LoadLibrary loads the filter's Redis Functions library (as ratelimitctl
// install does) unless the server has it already. Every server Start
// starts has it (StartUsers' do not); a test that needs a server without
// it runs FUNCTION DELETE or FUNCTION FLUSH.
func LoadLibrary(c *Client) error {
	_, err := c.Do("FUNCTION", "LOAD", lua.Library.Source())
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("redistest: FUNCTION LOAD %s on %s: %w", lua.Library.Name, c.Addr(), err)
	}
	return nil
}
