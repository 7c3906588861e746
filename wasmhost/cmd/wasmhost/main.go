// Command wasmhost runs a proxy-wasm filter locally in the e2e host: a real
// HTTP listener in front of an upstream, with Redis callouts going to a real
// Redis. It is what `make demo` uses, since no Envoy runs on the machines
// this project is developed on.
//
//	wasmhost -wasm dist/ratelimit.wasm -config config.json -redis 127.0.0.1:6379
//
// Without -upstream it forwards allowed requests to a built-in echo upstream
// that answers 200 with a small JSON description of the request.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("wasmhost: ")
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	wasmPath := flag.String("wasm", "dist/ratelimit.wasm", "compiled proxy-wasm filter")
	configPath := flag.String("config", "", "plugin configuration file (JSON); empty for none")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis address (host:port)")
	redisCluster := flag.String("redis-cluster", "redis", "Envoy cluster name the filter uses for Redis")
	upstream := flag.String("upstream", "", "upstream URL; empty for a built-in echo upstream")
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	workers := flag.Int("workers", 2, "number of Wasm VMs (Envoy worker threads)")
	flag.Parse()

	wasm, err := os.ReadFile(*wasmPath)
	if err != nil {
		return err
	}
	var pluginConfig []byte
	if *configPath != "" {
		if pluginConfig, err = os.ReadFile(*configPath); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *upstream == "" {
		addr, closeEcho, err := startEcho()
		if err != nil {
			return err
		}
		defer closeEcho()
		*upstream = "http://" + addr
		log.Printf("built-in echo upstream on %s", *upstream)
	}
	mod, err := wasmhost.Compile(ctx, wasm)
	if err != nil {
		return err
	}
	defer mod.Close(context.Background())
	h, err := wasmhost.Start(ctx, wasmhost.Config{
		Module:        mod,
		PluginConfig:  pluginConfig,
		Workers:       *workers,
		Upstream:      *upstream,
		Listen:        *listen,
		RedisClusters: map[string]string{*redisCluster: *redisAddr},
		LogWriter:     os.Stderr,
		Stdout:        os.Stderr,
	})
	if err != nil {
		return err
	}
	fmt.Println(h.URL())
	log.Printf("listening on %s (%d workers, redis cluster %q at %s, upstream %s)",
		h.URL(), *workers, *redisCluster, *redisAddr, *upstream)
	<-ctx.Done()
	log.Printf("shutting down; metrics: %v", h.Metrics())
	return h.Close()
}

// startEcho serves the built-in upstream: 200 and a JSON echo of the request.
func startEcho() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"upstream": "echo",
			"method":   r.Method,
			"uri":      r.RequestURI,
			"host":     r.Host,
			"headers":  r.Header,
			"body":     string(body),
		})
	})}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("echo upstream: %v", err)
		}
	}()
	return ln.Addr().String(), func() { srv.Close() }, nil
}
