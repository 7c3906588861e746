// Command ratelimitctl inspects and changes what the rate-limit filter keeps
// in Redis: a key's limits as the filter would decide them now, its block,
// tier and override, and the keys of a rule. It reads the filter's own
// configuration and builds keys with package filter, so it names the same
// keys the filter does. Every change bumps the epoch key, so every proxy VM
// drops its deny cache within a second. Run "ratelimitctl help".
package main

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"
)

func main() {
	redis.SetLogger(quiet{}) // errors reach the user through run's message
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// quiet drops go-redis's log lines.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
