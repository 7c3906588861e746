package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// plan is what the host starts with, from the flags, then -envoy's file,
// then the defaults; notes say where the less obvious parts came from.
type plan struct {
	wasmPath     string
	pluginConfig []byte
	configFrom   string
	vmConfig     []byte
	pluginName   string
	rootID, vmID string
	env          map[string]string
	listen       string
	admin        string
	upstream     string // "" for the built-in echo
	upstreamFrom string
	routes       []wasmhost.Route
	redis        map[string]string // Redis cluster name -> host:port
	http         map[string]string // HTTP callout cluster name -> host:port
	clusterFrom  map[string]string // cluster name -> where its address came from
	fallback     string            // Redis for names no one configured
	plugin       pluginRedis

	useRemote, skipXffAppend    bool
	xffHops                     int
	normalizePath, mergeSlashes bool
	escapedSlashes              wasmhost.EscapedSlashesAction
	allowStopOnHead             bool

	envoy *envoyConfig
	notes []string
}

// Module file names `make build` writes.
const (
	higressWasm = "dist/ratelimit-higress.wasm"
	stockWasm   = "dist/ratelimit.wasm"
)

// makePlan merges the flags with -envoy's file. Clusters are bound later,
// once the module's build is known (bindClusters).
func makePlan(o *options) (*plan, error) {
	p := &plan{pluginName: "wasmhost", clusterFrom: map[string]string{}}
	if o.envoy != "" {
		e, err := loadEnvoy(o.envoy)
		if err != nil {
			return nil, err
		}
		p.envoy = e
		p.vmConfig, p.env = e.vmConfig, e.env
		p.rootID, p.vmID = e.rootID, e.vmID
		if e.pluginName != "" {
			p.pluginName = e.pluginName
		}
		p.routes = e.routes
		for _, name := range e.multiEndpointWarned {
			p.notef("cluster %q has several endpoints in %s: wasmhost sends to the first", name, o.envoy)
		}
		if e.failurePolicy != "" {
			p.notef("failure_policy %s is not modelled: a VM that traps answers 500 until restart", e.failurePolicy)
		}
	}
	if err := p.readPluginConfig(o); err != nil {
		return nil, err
	}
	p.pickWasm(o)
	e := p.envoy
	pick := func(flag string, fromFile func()) {
		if e != nil && !o.set[flag] {
			fromFile()
		}
	}
	p.listen, p.admin = o.listen, o.admin
	pick("listen", func() { p.listen = e.listen })
	pick("admin", func() {
		if e.admin != "" {
			p.admin = e.admin
		}
	})
	p.useRemote, p.xffHops, p.skipXffAppend = o.useRemote, o.xffHops, o.skipXffAppend
	pick("use-remote-address", func() { p.useRemote = e.useRemote })
	pick("xff-num-trusted-hops", func() { p.xffHops = e.xffHops })
	pick("skip-xff-append", func() { p.skipXffAppend = e.skipXffAppend })
	p.normalizePath, p.mergeSlashes = o.normalizePath, o.mergeSlashes
	pick("normalize-path", func() { p.normalizePath = e.normalizePath })
	pick("merge-slashes", func() { p.mergeSlashes = e.mergeSlashes })
	escaped := o.escapedSlashes
	pick("path-with-escaped-slashes-action", func() { escaped = e.escapedSlashes })
	p.escapedSlashes, _ = wasmhost.ParseEscapedSlashesAction(escaped) // checked by both readers
	p.allowStopOnHead = o.allowStopOnHead
	pick("allow-on-headers-stop-iteration", func() { p.allowStopOnHead = e.allowStopOnHead })
	if p.plugin.reservesBody && !p.allowStopOnHead {
		p.notef("a rule reserves from the request body: without allow_on_headers_stop_iteration the filter never sees the body while it decides, and waits 1 s for it, then takes the default")
	}
	return p, p.pickUpstream(o)
}

func (p *plan) notef(format string, a ...any) { p.notes = append(p.notes, fmt.Sprintf(format, a...)) }

func (p *plan) readPluginConfig(o *options) error {
	switch {
	case o.set["config"]:
		b, err := os.ReadFile(o.config)
		if err != nil {
			return fmt.Errorf("-config: %w", err)
		}
		p.pluginConfig, p.configFrom = b, o.config
	case o.noConfig:
		p.configFrom = "none (-no-config)"
	case p.envoy.pluginConfig == nil:
		return fmt.Errorf("-envoy %s: the wasm filter has no configuration: pass -config FILE, or -no-config", o.envoy)
	default:
		p.pluginConfig, p.configFrom = p.envoy.pluginConfig, o.envoy
	}
	p.plugin = readPluginRedis(p.pluginConfig)
	return nil
}

// pickWasm: -wasm, else -envoy's file when it is here, else the build the
// configuration's transport needs.
func (p *plan) pickWasm(o *options) {
	if o.set["wasm"] {
		p.wasmPath = o.wasm
		return
	}
	def, why := higressWasm, "the Higress build: redis.transport redis_abi, the default"
	if p.plugin.transport() == "webdis" {
		def, why = stockWasm, "the stock build, for redis.transport webdis"
	}
	if p.envoy != nil {
		if _, err := os.Stat(p.envoy.wasmFile); err == nil {
			p.wasmPath = p.envoy.wasmFile
			return
		}
		p.notef("vm_config.code.local.filename %s is not here: using %s (%s; -wasm to choose)", p.envoy.wasmFile, def, why)
	}
	p.wasmPath = def
}

func (p *plan) pickUpstream(o *options) error {
	switch {
	case o.set["upstream"] && o.upstream == builtinUpstream, !o.set["upstream"] && p.envoy == nil:
		p.upstreamFrom = "built-in echo"
	case o.set["upstream"]:
		p.upstream, p.upstreamFrom = o.upstream, "-upstream"
	default:
		name := p.envoy.upstreamCluster
		if p.envoy.tlsClusters[name] {
			return fmt.Errorf("-envoy %s: the route's cluster %q uses TLS (transport_socket), which wasmhost does not speak: pass -upstream", o.envoy, name)
		}
		p.upstream = "http://" + p.envoy.clusters[name]
		p.upstreamFrom = fmt.Sprintf("cluster %q in %s", name, o.envoy)
	}
	return nil
}

// bindClusters gives each cluster name its address. Redis names (those
// the configuration uses with redis_abi, and -redis-cluster's) go to
// -redis-cluster, else to -redis when given, else to -envoy's cluster,
// else to -redis's default; any name the filter asks for later goes to
// -redis. HTTP callout clusters come from -http-cluster, then -envoy.
func (p *plan) bindClusters(o *options, higress bool) error {
	p.redis, p.http = map[string]string{}, map[string]string{}
	e := p.envoy
	fileAddr := func(name string) (string, bool) {
		if e == nil {
			return "", false
		}
		a, ok := e.clusters[name]
		return a, ok
	}
	if higress {
		p.fallback = o.redis
		names := append(p.plugin.names("redis_abi"), keys(o.redisClusters.m)...)
		for _, name := range names {
			addr, from := o.redis, "-redis"
			if a, ok := o.redisClusters.m[name]; ok {
				addr, from = a, "-redis-cluster"
			} else if a, ok := fileAddr(name); ok && !o.set["redis"] {
				if e.tlsClusters[name] {
					return fmt.Errorf("-envoy %s: Redis cluster %q uses TLS (transport_socket), which wasmhost does not speak: pass -redis-cluster %s=HOST:PORT", o.envoy, name, name)
				}
				addr, from = a, "cluster in "+o.envoy
			}
			p.redis[name], p.clusterFrom[name] = addr, from
		}
	} else if len(o.redisClusters.m) > 0 {
		return errors.New("-redis-cluster: the stock build makes no Redis callouts (no proxy_redis_call import); its Redis is behind an -http-cluster (Webdis)")
	}
	if e != nil {
		for name, addr := range e.clusters {
			if _, isRedis := p.redis[name]; isRedis || name == e.upstreamCluster || e.tlsClusters[name] {
				continue
			}
			p.http[name], p.clusterFrom[name] = addr, "cluster in "+o.envoy
		}
	}
	for name, addr := range o.httpClusters.m {
		p.http[name], p.clusterFrom[name] = addr, "-http-cluster"
	}
	for _, name := range p.plugin.names("webdis") {
		if _, ok := p.http[name]; !ok {
			return fmt.Errorf("the configuration's redis.cluster %q (transport webdis) has no address: pass -http-cluster %s=http://HOST:7379 (Webdis)", name, name)
		}
	}
	p.checkResolvable()
	return nil
}

// checkResolvable notes the addresses from -envoy's file that do not
// resolve here (compose service names, say).
func (p *plan) checkResolvable() {
	check := func(name, addr, from, flag string) {
		host, _, _ := net.SplitHostPort(addr)
		if net.ParseIP(host) != nil || !strings.HasPrefix(from, "cluster") {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
			p.notef("cluster %q: %s does not resolve here; its calls will fail: pass %s", name, addr, flag)
		}
	}
	for _, name := range keys(p.redis) {
		check(name, p.redis[name], p.clusterFrom[name], "-redis HOST:PORT or -redis-cluster "+name+"=HOST:PORT")
	}
	for _, name := range keys(p.http) {
		check(name, p.http[name], p.clusterFrom[name], "-http-cluster "+name+"=http://HOST:PORT")
	}
	if p.envoy != nil && p.upstream != "" {
		check(p.envoy.upstreamCluster, strings.TrimPrefix(p.upstream, "http://"), p.upstreamFrom, "-upstream http://HOST:PORT or -upstream builtin")
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
