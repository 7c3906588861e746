package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// envoyConfig is what -envoy takes from an Envoy bootstrap: the one
// listener, its connection manager's address and path settings, its
// routes (one upstream cluster), the wasm filter, and the clusters'
// addresses. Absent fields take Envoy's defaults, not the command's.
type envoyConfig struct {
	listen, admin       string
	useRemote           bool
	xffHops             int
	skipXffAppend       bool
	normalizePath       bool
	mergeSlashes        bool
	escapedSlashes      string
	routes              []wasmhost.Route
	upstreamCluster     string
	wasmFile            string
	pluginConfig        []byte
	vmConfig            []byte
	pluginName, rootID  string
	vmID, runtime       string
	env                 map[string]string
	allowStopOnHead     bool
	failurePolicy       string
	clusters            map[string]string // name -> host:port
	tlsClusters         map[string]bool
	multiEndpointWarned []string
}

// loadEnvoy reads and checks an Envoy bootstrap file.
func loadEnvoy(path string) (*envoyConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := refuseCamelCase(&root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var b bootstrap
	if err := root.Decode(&b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	e, err := fromBootstrap(&b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

func fromBootstrap(b *bootstrap) (*envoyConfig, error) {
	e := &envoyConfig{clusters: map[string]string{}, tlsClusters: map[string]bool{}, escapedSlashes: "KEEP_UNCHANGED"}
	if b.DynamicResources != nil {
		return nil, errors.New("dynamic_resources: xDS is not supported; write the listener and clusters under static_resources")
	}
	if b.Admin != nil && b.Admin.Address != nil {
		a, err := hostPort(b.Admin.Address, "admin.address")
		if err != nil {
			return nil, err
		}
		e.admin = a
	}
	ls := b.StaticResources.Listeners
	if len(ls) != 1 {
		return nil, fmt.Errorf("static_resources.listeners: %d listeners; wasmhost serves exactly one", len(ls))
	}
	if err := e.readListener(&ls[0], "static_resources.listeners[0]"); err != nil {
		return nil, err
	}
	for i := range b.StaticResources.Clusters {
		if err := e.readCluster(&b.StaticResources.Clusters[i], fmt.Sprintf("static_resources.clusters[%d]", i)); err != nil {
			return nil, err
		}
	}
	if _, ok := e.clusters[e.upstreamCluster]; !ok && e.upstreamCluster != "" {
		return nil, fmt.Errorf("route cluster %q: no such cluster in static_resources.clusters", e.upstreamCluster)
	}
	return e, nil
}

func (e *envoyConfig) readListener(l *listener, at string) error {
	a, err := hostPort(&l.Address, at+".address")
	if err != nil {
		return err
	}
	e.listen = a
	switch {
	case l.ListenerFilters != nil:
		return fmt.Errorf("%s.listener_filters: not supported (they change what the connection manager sees)", at)
	case len(l.FilterChains) != 1:
		return fmt.Errorf("%s.filter_chains: %d chains; wasmhost serves exactly one", at, len(l.FilterChains))
	}
	fc := &l.FilterChains[0]
	at += ".filter_chains[0]"
	switch {
	case fc.FilterChainMatch != nil:
		return fmt.Errorf("%s.filter_chain_match: not supported", at)
	case fc.TransportSocket != nil:
		return fmt.Errorf("%s.transport_socket: TLS is not supported; wasmhost serves plain HTTP", at)
	case len(fc.Filters) != 1:
		return fmt.Errorf("%s.filters: %d network filters; wasmhost runs only envoy.filters.network.http_connection_manager", at, len(fc.Filters))
	}
	f := &fc.Filters[0]
	at += ".filters[0].typed_config"
	if t := typeOf(&f.TypedConfig); t != typeHCM {
		return fmt.Errorf("%s: @type %q (%s); wasmhost runs only the HttpConnectionManager", at, t, f.Name)
	}
	var hcm connectionManager
	if err := f.TypedConfig.Decode(&hcm); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return e.readConnectionManager(&hcm, at)
}

func (e *envoyConfig) readConnectionManager(h *connectionManager, at string) error {
	switch {
	case h.OriginalIPDetection != nil:
		return fmt.Errorf("%s.original_ip_detection_extensions: not supported; use use_remote_address and xff_num_trusted_hops", at)
	case h.RDS != nil || h.ScopedRoutes != nil:
		return fmt.Errorf("%s: rds and scoped_routes are not supported; write an inline route_config", at)
	case h.RouteConfig == nil:
		return fmt.Errorf("%s.route_config: required", at)
	case h.XffNumTrustedHops < 0:
		return fmt.Errorf("%s.xff_num_trusted_hops: %d is negative", at, h.XffNumTrustedHops)
	}
	if h.UseRemoteAddress != nil {
		e.useRemote = *h.UseRemoteAddress
	}
	e.xffHops, e.skipXffAppend = h.XffNumTrustedHops, h.SkipXffAppend
	if h.NormalizePath != nil {
		e.normalizePath = *h.NormalizePath
	}
	e.mergeSlashes = h.MergeSlashes
	if h.PathWithEscapedSlashesAction != "" {
		a, err := wasmhost.ParseEscapedSlashesAction(h.PathWithEscapedSlashesAction)
		if err != nil {
			return fmt.Errorf("%s.path_with_escaped_slashes_action: %w", at, err)
		}
		e.escapedSlashes = a.String()
	}
	if err := e.readRoutes(h.RouteConfig, at+".route_config"); err != nil {
		return err
	}
	wasmSeen := false
	for i, f := range h.HTTPFilters {
		fat := fmt.Sprintf("%s.http_filters[%d]", at, i)
		t := typeOf(&f.TypedConfig)
		switch {
		case t == typeRouter || (t == "" && f.Name == "envoy.filters.http.router"):
			if i != len(h.HTTPFilters)-1 {
				return fmt.Errorf("%s: the router must be the last HTTP filter", fat)
			}
		case t == typeWasm && !wasmSeen:
			wasmSeen = true
			var w wasmFilter
			if err := f.TypedConfig.Decode(&w); err != nil {
				return fmt.Errorf("%s.typed_config: %w", fat, err)
			}
			if err := e.readWasm(&w, fat+".typed_config.config"); err != nil {
				return err
			}
		case t == typeWasm:
			return fmt.Errorf("%s: a second wasm filter; wasmhost runs one", fat)
		default:
			return fmt.Errorf("%s (%s): @type %q is not supported; wasmhost runs one wasm filter, then the router", fat, f.Name, t)
		}
	}
	if !wasmSeen {
		return fmt.Errorf("%s.http_filters: no envoy.filters.http.wasm filter", at)
	}
	return nil
}

func (e *envoyConfig) readRoutes(rc *routeConfig, at string) error {
	for i, vh := range rc.VirtualHosts {
		for j, r := range vh.Routes {
			rat := fmt.Sprintf("%s.virtual_hosts[%d].routes[%d]", at, i, j)
			m := r.Match
			switch {
			case m.Path != nil || m.SafeRegex != nil || m.PathSep != nil || m.Template != nil || m.Prefix == nil:
				return fmt.Errorf("%s.match: only prefix is supported", rat)
			case r.Route == nil:
				return fmt.Errorf("%s: only route (to a cluster) is supported, not redirect or direct_response", rat)
			case r.Route.WeightedClusters != nil || r.Route.ClusterHeader != nil || r.Route.Cluster == "":
				return fmt.Errorf("%s.route: only cluster is supported", rat)
			case e.upstreamCluster != "" && r.Route.Cluster != e.upstreamCluster:
				return fmt.Errorf("%s.route.cluster: %q, where an earlier route has %q; wasmhost forwards to one upstream", rat, r.Route.Cluster, e.upstreamCluster)
			}
			e.upstreamCluster = r.Route.Cluster
			e.routes = append(e.routes, wasmhost.Route{PathPrefix: *m.Prefix, Name: r.Name, Cluster: r.Route.Cluster})
		}
	}
	if e.upstreamCluster == "" {
		return fmt.Errorf("%s.virtual_hosts: no route", at)
	}
	return nil
}

func (e *envoyConfig) readWasm(w *wasmFilter, at string) error {
	c := &w.Config
	vm := &c.VMConfig
	switch {
	case vm.Code.Remote != nil:
		return fmt.Errorf("%s.vm_config.code.remote: not supported; use code.local.filename, or -wasm", at)
	case vm.Code.Local == nil || vm.Code.Local.Filename == "":
		return fmt.Errorf("%s.vm_config.code.local.filename: required (inline code is not supported; or pass -wasm)", at)
	}
	e.wasmFile = vm.Code.Local.Filename
	e.pluginName, e.rootID, e.vmID, e.runtime = c.Name, c.RootID, vm.VMID, vm.Runtime
	e.failurePolicy = c.FailurePolicy
	if c.AllowOnHeadersStopIteration != nil {
		e.allowStopOnHead = *c.AllowOnHeadersStopIteration
	}
	var err error
	if e.pluginConfig, err = c.Configuration.bytes(at + ".configuration"); err != nil {
		return err
	}
	if e.vmConfig, err = vm.Configuration.bytes(at + ".vm_config.configuration"); err != nil {
		return err
	}
	if ev := vm.EnvironmentVariables; ev != nil {
		e.env = map[string]string{}
		for _, k := range ev.HostEnvKeys {
			if v, ok := os.LookupEnv(k); ok {
				e.env[k] = v
			}
		}
		for k, v := range ev.KeyValues {
			e.env[k] = v
		}
	}
	return nil
}

// bytes is the StringValue's text; nil when absent.
func (a *anyString) bytes(at string) ([]byte, error) {
	if a == nil {
		return nil, nil
	}
	if a.Type != typeString {
		return nil, fmt.Errorf("%s: @type %q; wasmhost reads %s", at, a.Type, typeString)
	}
	return []byte(a.Value), nil
}

func (e *envoyConfig) readCluster(c *cluster, at string) error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%s.name: required", at)
	case c.ClusterType != nil:
		return fmt.Errorf("%s (%s).cluster_type: custom cluster types are not supported", at, c.Name)
	case c.LoadAssignment == nil:
		return fmt.Errorf("%s (%s).load_assignment: required", at, c.Name)
	}
	var addrs []string
	for i, ep := range c.LoadAssignment.Endpoints {
		for j, lb := range ep.LbEndpoints {
			a, err := hostPort(&lb.Endpoint.Address, fmt.Sprintf("%s (%s).load_assignment.endpoints[%d].lb_endpoints[%d].endpoint.address", at, c.Name, i, j))
			if err != nil {
				return err
			}
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%s (%s).load_assignment: no endpoint", at, c.Name)
	}
	if len(addrs) > 1 {
		e.multiEndpointWarned = append(e.multiEndpointWarned, c.Name)
	}
	e.clusters[c.Name] = addrs[0]
	e.tlsClusters[c.Name] = c.TransportSocket != nil
	return nil
}

// hostPort reads a TCP socket_address as "host:port".
func hostPort(a *address, at string) (string, error) {
	s := a.SocketAddress
	switch {
	case a.Pipe != nil || s == nil:
		return "", fmt.Errorf("%s: only socket_address is supported", at)
	case s.Protocol != "" && s.Protocol != "TCP":
		return "", fmt.Errorf("%s.socket_address.protocol: %s; only TCP is supported", at, s.Protocol)
	case s.Address == "":
		return "", fmt.Errorf("%s.socket_address.address: required", at)
	case s.PortValue == nil || *s.PortValue < 0 || *s.PortValue > 65535:
		return "", fmt.Errorf("%s.socket_address.port_value: required, 0 to 65535", at)
	}
	return net.JoinHostPort(s.Address, strconv.Itoa(*s.PortValue)), nil
}

// typeOf is a typed_config's @type, "" when absent.
func typeOf(n *yaml.Node) string {
	var t typed
	if n.Kind == 0 || n.Decode(&t) != nil {
		return ""
	}
	return t.Type
}

// refuseCamelCase refuses a field read above spelled in lowerCamelCase,
// walking the document with an explicit stack.
func refuseCamelCase(root *yaml.Node) error {
	stack := []*yaml.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if s := snakeCase(k); s != k && slices.Contains(snakeFields, s) {
					return fmt.Errorf("line %d: field %s: write it as %s (wasmhost reads Envoy's snake_case names)", n.Content[i].Line, k, s)
				}
			}
		}
		stack = append(stack, n.Content...)
	}
	return nil
}

func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
