package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// afterDemo says how to run the ratelimitctl commands the demo printed
// once it is over. They name the demo's Redis and configuration: with
// REDIS_ADDR that Redis outlives the demo, and they work as printed; with
// -keep the demo's own Redis (and its configuration file) stays until
// Ctrl-C; otherwise both are gone, and it says how to keep them.
func afterDemo(addr, config string, keep bool) {
	ctl := func(args ...string) string {
		all := append([]string{"--config", config, "--redis", addr}, args...)
		return "go run ./cmd/ratelimitctl " + strings.Join(quoteArgs(all), " ")
	}
	try := []string{
		ctl("show", "--rule", plansRule, tenant),
		ctl("show", "--rule", tokenRule, apiKey),
		ctl("list", "--rule", plansRule),
	}
	switch {
	case os.Getenv("REDIS_ADDR") != "":
		fmt.Printf("\nThe demo's state stays in REDIS_ADDR (%s): the ratelimitctl commands above work as printed, e.g.\n", addr)
		fmt.Print(indent(strings.Join(try, "\n")))
	case keep:
		fmt.Printf("\nRedis stays at %s until Ctrl-C (-keep). Try:\n", addr)
		fmt.Print(indent(strings.Join(try, "\n")))
		wait := make(chan os.Signal, 1)
		signal.Notify(wait, os.Interrupt, syscall.SIGTERM)
		<-wait
		signal.Stop(wait)
		fmt.Println("\nstopping Redis")
	default:
		fmt.Printf("\nThe ratelimitctl commands above ran against the demo's own Redis, now stopped. To run them\n" +
			"yourself, keep it with `make demo DEMO_FLAGS=-keep` (until Ctrl-C), or point the demo at\n" +
			"your own Redis with `REDIS_ADDR=host:port make demo`; it then prints them ready to paste.\n")
	}
}
