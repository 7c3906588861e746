//go:build !(wasip1 && higress)

package proxyhost

import (
	"errors"
	"time"
)

// Without the higress tag the module imports no Redis callout ABI, so stock
// Envoy and Istio load it; it reaches Redis through Webdis only.
const hasRedisABI = false

var errNoRedisABI = errors.New("this build has no Redis callout ABI")

func redisInit(string, string, string, time.Duration) error { return errNoRedisABI }

func redisCall(string, []byte) (uint32, error) { return 0, errNoRedisABI }
