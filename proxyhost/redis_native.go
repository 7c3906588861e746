//go:build !wasip1

package proxyhost

import (
	"errors"
	"time"
)

// Natively there is no proxy to call; the filter package's tests drive
// filter.Plugin with a fake host instead.
var errNoRedisABI = errors.New("the Redis callout ABI exists only in a wasm build")

func redisInit(string, string, string, time.Duration) error { return errNoRedisABI }

func redisCall(string, []byte) (uint32, error) { return 0, errNoRedisABI }
