package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// options are the command line, checked; set names the flags given on it,
// which win over what -envoy's file says.
type options struct {
	wasm, config    string
	noConfig        bool
	envoy           string
	redis           string
	redisClusters   clusterFlag // name -> host:port
	httpClusters    clusterFlag // name -> host:port
	upstream        string
	listen, admin   string
	accessLog       string
	workers         int
	compileCache    string
	useRemote       bool
	xffHops         int
	skipXffAppend   bool
	normalizePath   bool
	mergeSlashes    bool
	escapedSlashes  string
	allowStopOnHead bool

	set map[string]bool
}

// Defaults the documentation (docs/wasmhost.md) names.
const (
	defaultListen   = "127.0.0.1:8080"
	defaultAdmin    = "127.0.0.1:9901"
	defaultRedis    = "127.0.0.1:6379"
	builtinUpstream = "builtin"
)

const usageHead = `Usage: wasmhost [flags]

Runs a proxy-wasm filter locally, as Envoy would: an HTTP listener, the
filter in -workers VMs, Redis and HTTP callouts to real servers, and an
upstream. docs/wasmhost.md documents every flag.

  wasmhost -config plugin.json                    # Higress build, Redis at 127.0.0.1:6379
  wasmhost -wasm dist/ratelimit.wasm -config webdis.json -http-cluster webdis=http://127.0.0.1:7379
  wasmhost -envoy envoy.yaml -http-cluster webdis=http://127.0.0.1:7379 -upstream builtin

Flags:
`

// parseFlags reads the command line. Help goes to out; it returns
// flag.ErrHelp then.
func parseFlags(args []string, out io.Writer) (*options, error) {
	o := &options{redisClusters: clusterFlag{kind: "redis"}, httpClusters: clusterFlag{kind: "http"}}
	fs := flag.NewFlagSet("wasmhost", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageHead)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.wasm, "wasm", "", "the filter module `file` (.wasm); default: dist/ratelimit-higress.wasm, or dist/ratelimit.wasm when the configuration's redis.transport is webdis")
	fs.StringVar(&o.config, "config", "", "the plugin configuration `file` (JSON): Envoy's config.configuration")
	fs.BoolVar(&o.noConfig, "no-config", false, "start the filter with an empty plugin configuration (for a filter that takes none)")
	fs.StringVar(&o.envoy, "envoy", "", "read listener, connection manager, wasm filter and clusters from this Envoy bootstrap `file` (YAML); flags given win")
	fs.StringVar(&o.redis, "redis", defaultRedis, "Redis `host:port` for every Redis cluster name the configuration uses, and any other the filter asks for")
	fs.Var(&o.redisClusters, "redis-cluster", "a Redis cluster at its own address, `NAME=HOST:PORT` (repeatable); wins over -redis for NAME")
	fs.Var(&o.httpClusters, "http-cluster", "a cluster for HTTP callouts (proxy_http_call), `NAME=http://HOST:PORT` (repeatable), e.g. webdis=http://127.0.0.1:7379")
	fs.StringVar(&o.upstream, "upstream", "", "where allowed requests go, `http://HOST:PORT`; \"builtin\" (the default without -envoy) is an echo server (x-echo-status, OpenAI-style .../chat/completions: docs/wasmhost.md)")
	fs.StringVar(&o.listen, "listen", defaultListen, "`address` to serve HTTP on")
	fs.StringVar(&o.admin, "admin", defaultAdmin, "admin `address` (/stats, /stats/prometheus, /ready); empty for none")
	fs.StringVar(&o.accessLog, "access-log", "-", "access log: `file` to append to, \"-\" for stdout, empty for none")
	fs.IntVar(&o.workers, "workers", 2, "number of Wasm VMs, as Envoy runs one per worker thread")
	fs.StringVar(&o.compileCache, "compile-cache", defaultCompileCache(), "keep wazero's compiled code in this `dir`, so that later starts skip compiling; empty for none")
	fs.BoolVar(&o.useRemote, "use-remote-address", true, "client address is the TCP peer (Envoy's use_remote_address); false trusts X-Forwarded-For, which any client can send")
	fs.IntVar(&o.xffHops, "xff-num-trusted-hops", 0, "trusted proxies in front that append to X-Forwarded-For (Envoy's xff_num_trusted_hops)")
	fs.BoolVar(&o.skipXffAppend, "skip-xff-append", false, "do not append the peer to X-Forwarded-For (Envoy's skip_xff_append)")
	fs.BoolVar(&o.normalizePath, "normalize-path", true, "normalize the path before the filter (Envoy's normalize_path)")
	fs.BoolVar(&o.mergeSlashes, "merge-slashes", true, "merge repeated slashes in the path (Envoy's merge_slashes)")
	fs.StringVar(&o.escapedSlashes, "path-with-escaped-slashes-action", "UNESCAPE_AND_REDIRECT", "what a path with %2F or %5C gets: KEEP_UNCHANGED, REJECT_REQUEST, UNESCAPE_AND_REDIRECT or UNESCAPE_AND_FORWARD")
	fs.BoolVar(&o.allowStopOnHead, "allow-on-headers-stop-iteration", false, "the filter sees the request body while its headers are paused (Envoy >= 1.35); a reserve.body rule then decides at the body's end")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: wasmhost takes flags only (see -h)", fs.Arg(0))
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	return o, o.check()
}

// defaultCompileCache is wasmhost's folder in the user's cache directory
// ($XDG_CACHE_HOME, else ~/.cache, on Linux), or "" when there is none.
// wazero keys what it keeps there by the module's content and its own
// version, and writes each entry whole (a temporary file, renamed), so
// starts of different modules, or at once, share it safely.
func defaultCompileCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "wasmhost")
}

// check refuses flags that conflict or are malformed.
func (o *options) check() error {
	switch {
	case o.set["config"] && o.noConfig:
		return errors.New("-config and -no-config conflict: give one")
	case o.set["config"] && o.config == "":
		return errors.New("-config: empty file name (use -no-config for an empty configuration)")
	case !o.set["config"] && !o.noConfig && o.envoy == "":
		return errors.New("no plugin configuration: pass -config FILE (the filter's JSON configuration), -envoy envoy.yaml, or -no-config for a filter that takes none")
	case o.workers < 1:
		return fmt.Errorf("-workers %d: must be at least 1", o.workers)
	case o.xffHops < 0:
		return fmt.Errorf("-xff-num-trusted-hops %d: must be >= 0", o.xffHops)
	case o.admin != "" && o.admin == o.listen && !strings.HasSuffix(o.listen, ":0"):
		return fmt.Errorf("-admin and -listen are both %s", o.listen)
	}
	if _, err := wasmhost.ParseEscapedSlashesAction(o.escapedSlashes); err != nil {
		return fmt.Errorf("-path-with-escaped-slashes-action: %w", err)
	}
	if err := checkHostPort(o.redis); err != nil {
		return fmt.Errorf("-redis %q: %w", o.redis, err)
	}
	if o.upstream != "" && o.upstream != builtinUpstream {
		if _, err := parseHTTPAddr(o.upstream, true); err != nil {
			return fmt.Errorf("-upstream %q: %w", o.upstream, err)
		}
	}
	return nil
}

// clusterFlag is a repeatable NAME=ADDRESS flag.
type clusterFlag struct {
	kind string // "redis" (host:port) or "http" (http://host:port)
	m    map[string]string
}

func (f *clusterFlag) String() string {
	if f == nil || len(f.m) == 0 {
		return ""
	}
	names := make([]string, 0, len(f.m))
	for n := range f.m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + f.m[n]
	}
	return strings.Join(parts, ",")
}

func (f *clusterFlag) Set(v string) error {
	name, addr, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=ADDRESS, got %q", v)
	}
	var err error
	if f.kind == "http" {
		addr, err = parseHTTPAddr(addr, false)
	} else {
		err = checkHostPort(addr)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, dup := f.m[name]; dup {
		return fmt.Errorf("cluster %q given twice", name)
	}
	if f.m == nil {
		f.m = map[string]string{}
	}
	f.m[name] = addr
	return nil
}

// parseHTTPAddr reads "http://host:port" (or "host:port" unless
// schemeRequired) into "host:port". HTTPS, paths and queries are refused:
// the host speaks plain HTTP to its clusters.
func parseHTTPAddr(s string, schemeRequired bool) (string, error) {
	if !strings.Contains(s, "://") {
		if schemeRequired {
			return "", errors.New("want http://HOST:PORT")
		}
		return s, checkHostPort(s)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http":
		return "", fmt.Errorf("scheme %q: only http is supported", u.Scheme)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.User != nil:
		return "", errors.New("want http://HOST:PORT, with no path, query or user")
	}
	return u.Host, checkHostPort(u.Host)
}

func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want HOST:PORT")
	}
	if host == "" || port == "" {
		return errors.New("want HOST:PORT, both given")
	}
	return nil
}
