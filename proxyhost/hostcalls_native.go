//go:build !wasip1

package proxyhost

import (
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

	"github.com/redisrate/envoy-redis-ratelimit/filter"
)

// Natively (the SDK's emulator), the SDK's calls stand in for the direct
// ones of hostcalls_wasm.go.

func onRequestHeaders(s *filter.Stream) filter.Action {
	pairs, err := proxywasm.GetHttpRequestHeaders()
	if err != nil {
		proxywasm.LogError("ratelimit: reading request headers: " + err.Error())
	}
	return s.OnRequestHeaders(pairs)
}

func sendLocalReply(status int, headers [][2]string, body []byte) bool {
	return proxywasm.SendHttpResponse(uint32(status), headers, body, -1) == nil
}

var start = time.Now()

func monotonicNanos() int64 { return int64(time.Since(start)) }

// setDecision sets the ratelimit.decision property with the SDK, on a
// copy: the SDK's emulator keeps the bytes it is handed.
func setDecision(value []byte) bool {
	return proxywasm.SetProperty([]string{decisionProperty}, append([]byte(nil), value...)) == nil
}
