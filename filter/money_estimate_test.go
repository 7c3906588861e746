package filter

import (
	"strconv"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
	"github.com/redisrate/envoy-redis-ratelimit/filter/usage"
)

// A usage rule's reservation rounds the request's size up to whole tokens
// of bytesPerToken (4) bytes: 1 byte is 1 token, 4 bytes 1, 5 bytes 2,
// from the body read or else content-length. Kills a rounding off by one
// ((n+4)/4, n/4, (n+2)/4), which only the end-to-end pricing tests caught.
func TestInputEstimateRoundsUpAtTheEdge(t *testing.T) {
	rc := &config.ResponseCost{Usage: &usage.Fields{}}
	for _, tc := range []struct{ n, want int64 }{{0, 0}, {1, 1}, {3, 1}, {4, 1}, {5, 2}, {8, 2}, {9, 3}} {
		var body, length Stream
		body.req.bodyLen = int(tc.n)
		if got := reservation(rc, &reqEstimate{bytes: body.requestBytes()}); got != tc.want {
			t.Errorf("a body of %d bytes: %d tokens, want %d", tc.n, got, tc.want)
		}
		length.req.headers = headermap.Append(nil, [][2]string{{"content-length", strconv.FormatInt(tc.n, 10)}})
		if got := reservation(rc, &reqEstimate{bytes: length.requestBytes()}); got != tc.want {
			t.Errorf("content-length %d: %d tokens, want %d", tc.n, got, tc.want)
		}
	}
}
