// Command wasmhost runs a proxy-wasm filter locally, in the wasmhost
// library's model of Envoy: a real HTTP listener in front of an upstream,
// the filter in one VM per worker, its Redis callouts (Higress build) to a
// real Redis and its HTTP callouts (stock build: Webdis) to real servers,
// an admin listener and an access log. docs/wasmhost.md documents it.
//
//	wasmhost -config plugin.json                  # Higress build, Redis at 127.0.0.1:6379
//	wasmhost -envoy envoy.yaml -http-cluster webdis=http://127.0.0.1:7379 -upstream builtin
//
// The first line on stdout is the URL it serves; then come the access log
// lines (-access-log -, the default). Everything else goes to stderr: the
// start-up summary (module build, transport, clusters and their addresses,
// the listen and admin addresses, how the client address is found), the
// filter's logs, and at shutdown (SIGINT, SIGTERM) its metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "wasmhost:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	a, err := start(ctx, o, stdout, stderr)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return a.close()
}
