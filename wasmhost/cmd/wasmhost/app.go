package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// app is a running wasmhost: the filter's host, its admin listener, and
// what it started for them.
type app struct {
	log     *log.Logger
	plan    *plan
	host    *wasmhost.Host
	mod     *wasmhost.Module
	admin   *adminServer // nil with -admin ""
	higress bool
	closers []func()
}

// start runs everything the options ask for and returns once the host
// serves. It prints the host's URL as the first line of stdout.
func start(ctx context.Context, o *options, stdout, stderr io.Writer) (*app, error) {
	a := &app{log: log.New(stderr, "wasmhost: ", 0)}
	if err := a.start(ctx, o, stdout, stderr); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func (a *app) start(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	var err error
	if a.plan, err = makePlan(o); err != nil {
		return err
	}
	p := a.plan
	if p.admin != "" {
		if a.admin, err = startAdmin(p.admin, a.log); err != nil {
			return err
		}
		a.closers = append(a.closers, a.admin.close)
	}
	access, err := openAccessLog(o.accessLog, stdout)
	if err != nil {
		return err
	}
	if f, ok := access.(*os.File); ok && f != stdout {
		a.closers = append(a.closers, func() { f.Close() })
	}
	if err := a.compile(ctx, o); err != nil {
		return err
	}
	if err := p.bindClusters(o, a.higress); err != nil {
		return err
	}
	upstream := p.upstream
	if upstream == "" {
		url, closeEcho, err := startEcho(a.log)
		if err != nil {
			return err
		}
		a.closers = append(a.closers, closeEcho)
		upstream = url
	}
	a.host, err = wasmhost.Start(ctx, wasmhost.Config{
		Module: a.mod, PluginConfig: p.pluginConfig, VMConfig: p.vmConfig,
		PluginName: p.pluginName, RootID: p.rootID, VMID: p.vmID, Env: p.env,
		Workers: o.workers, Upstream: upstream, Listen: p.listen, Routes: p.routes,
		UseRemoteAddress: p.useRemote, XffNumTrustedHops: p.xffHops, SkipXffAppend: p.skipXffAppend,
		NormalizePath: p.normalizePath, MergeSlashes: p.mergeSlashes, EscapedSlashes: p.escapedSlashes,
		AllowOnHeadersStopIteration: p.allowStopOnHead,
		RedisClusters:               p.redis, RedisFallback: p.fallback, HTTPClusters: p.http,
		AccessLog: access, LogWriter: stderr, Stdout: stderr,
	})
	if err != nil {
		return err
	}
	if a.admin != nil {
		a.admin.setHost(a.host)
	}
	a.summary(o, upstream)
	fmt.Fprintln(stdout, a.host.URL())
	return nil
}

// compile reads and compiles the module, and tells its build from its
// imports: only the Higress build imports proxy_redis_call.
func (a *app) compile(ctx context.Context, o *options) error {
	p := a.plan
	wasm, err := os.ReadFile(p.wasmPath)
	if errors.Is(err, os.ErrNotExist) && !o.set["wasm"] {
		return fmt.Errorf("%s is missing: run `make build`, or pass -wasm", p.wasmPath)
	}
	if err != nil {
		return err
	}
	cache, err := a.compileCache(o)
	if err != nil {
		return err
	}
	var cacheErr error
	if cache != "" {
		a.mod, cacheErr = wasmhost.Compile(ctx, wasm, wasmhost.WithCacheDir(cache))
	}
	if a.mod == nil { // no cache, or one that failed: an entry it cannot read back, say
		if a.mod, err = wasmhost.Compile(ctx, wasm); err != nil {
			return fmt.Errorf("%s: %w", p.wasmPath, err)
		}
	}
	if cacheErr != nil { // the module is fine: the cache failed
		a.log.Printf("compile cache %s failed (%v): compiled without it; remove the folder to start it afresh", cache, cacheErr)
	}
	a.higress = a.mod.Imports("env", "proxy_redis_call")
	if t := p.plugin.transport(); !a.higress && (t == "redis_abi" || t == "mixed") {
		return fmt.Errorf("%s is the stock build (it does not import proxy_redis_call), and the configuration's redis.transport is redis_abi (the default): "+
			"run the Higress build (-wasm %s), or set \"transport\": \"webdis\" and pass -http-cluster NAME=http://HOST:7379 (Webdis)", p.wasmPath, higressWasm)
	}
	return nil
}

// compileCache is the folder to keep compiled code in, or "" for none.
// The default one (the user's cache directory) that cannot be used, as
// when $HOME is read-only, costs only the compile: a line says so. One
// given with -compile-cache fails the start, naming the flag. (A cache
// that fails the compile itself, with an entry it cannot read back, is
// left out of it: compile.)
func (a *app) compileCache(o *options) (string, error) {
	dir := o.compileCache
	if dir == "" {
		return "", nil
	}
	err := writableDir(dir)
	switch {
	case err == nil:
		return dir, nil
	case o.set["compile-cache"]:
		return "", fmt.Errorf("-compile-cache %s: %w", dir, err)
	}
	a.log.Printf("compile cache %s unusable (%v): compiling without one; -compile-cache DIR names another", dir, err)
	return "", nil
}

// writableDir makes dir if needed and checks that a file can be made in
// it, as wazero makes each entry (a temporary file, renamed).
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// summary logs what was chosen, one line a topic.
func (a *app) summary(o *options, upstream string) {
	p, l := a.plan, a.log
	build := "stock build (no proxy_redis_call import: Redis only through HTTP callouts, such as Webdis)"
	if a.higress {
		build = "Higress build (imports proxy_redis_call: Redis callouts)"
	}
	transport := p.plugin.transport()
	if transport == "" {
		transport = "none named"
	}
	l.Printf("module %s: %s; redis.transport %s; configuration from %s", p.wasmPath, build, transport, p.configFrom)
	for _, name := range keys(p.redis) {
		l.Printf("redis cluster %q -> %s (%s)", name, p.redis[name], p.clusterFrom[name])
	}
	if p.fallback != "" {
		l.Printf("any other Redis cluster name the filter asks for -> %s (-redis; logged once per name)", p.fallback)
	}
	for _, name := range keys(p.http) {
		l.Printf("http cluster %q -> %s (%s)", name, p.http[name], p.clusterFrom[name])
	}
	l.Printf("upstream %s (%s)", upstream, p.upstreamFrom)
	l.Printf("client address: %s", clientMode(p))
	l.Printf("paths: normalize_path %v, merge_slashes %v, path_with_escaped_slashes_action %v", p.normalizePath, p.mergeSlashes, p.escapedSlashes)
	l.Printf("allow_on_headers_stop_iteration %v", p.allowStopOnHead)
	for _, n := range p.notes {
		l.Printf("note: %s", n)
	}
	admin := "admin off"
	if a.admin != nil {
		admin = "admin " + a.admin.URL() + " (/stats, /stats/prometheus, /ready)"
	}
	access := "access log off"
	switch o.accessLog {
	case "":
	case "-":
		access = "access log to stdout"
	default:
		access = "access log to " + o.accessLog
	}
	l.Printf("listening on %s (%d workers); %s; %s", a.host.URL(), o.workers, admin, access)
}

// clientMode says where source.address (the filter's client_ip) comes from.
func clientMode(p *plan) string {
	switch {
	case p.useRemote && p.xffHops == 0:
		return "the TCP peer (use_remote_address true, xff_num_trusted_hops 0): X-Forwarded-For is not trusted"
	case p.useRemote:
		return fmt.Sprintf("X-Forwarded-For's entry %d from the right as it arrives (xff_num_trusted_hops %d: that many proxies in front), else the TCP peer", p.xffHops, p.xffHops)
	}
	return fmt.Sprintf("X-Forwarded-For's entry %d from the right, else the TCP peer (use_remote_address false): any client can choose it", p.xffHops+1)
}

// openAccessLog opens -access-log: stdout for "-", nothing for "".
func openAccessLog(path string, stdout io.Writer) (io.Writer, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		return stdout, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("-access-log: %w", err)
	}
	return f, nil
}

// close stops the host, then what was started for it. The metrics line
// stays for scripts that read it (e2e/cmd/demo).
func (a *app) close() error {
	var err error
	if a.admin != nil {
		a.admin.draining()
	}
	if a.host != nil {
		a.log.Printf("shutting down; metrics: %v", a.host.Metrics())
		err = a.host.Close()
	}
	if a.mod != nil {
		a.mod.Close(context.Background())
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
	return err
}
