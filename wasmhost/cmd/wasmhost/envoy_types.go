package main

import "go.yaml.in/yaml/v3"

// The parts of an Envoy bootstrap (envoy.config.bootstrap.v3.Bootstrap,
// written in YAML with Envoy's snake_case field names) that -envoy reads.
// Fields not named here are ignored; a field of type any is one whose
// presence is refused (envoy.go says why).

type bootstrap struct {
	Admin *struct {
		Address *address `yaml:"address"`
	} `yaml:"admin"`
	StaticResources struct {
		Listeners []listener `yaml:"listeners"`
		Clusters  []cluster  `yaml:"clusters"`
	} `yaml:"static_resources"`
	DynamicResources any `yaml:"dynamic_resources"`
}

type address struct {
	SocketAddress *struct {
		Address   string `yaml:"address"`
		PortValue *int   `yaml:"port_value"`
		Protocol  string `yaml:"protocol"`
	} `yaml:"socket_address"`
	Pipe any `yaml:"pipe"`
}

type listener struct {
	Name            string        `yaml:"name"`
	Address         address       `yaml:"address"`
	ListenerFilters any           `yaml:"listener_filters"`
	FilterChains    []filterChain `yaml:"filter_chains"`
}

type filterChain struct {
	FilterChainMatch any `yaml:"filter_chain_match"`
	TransportSocket  any `yaml:"transport_socket"`
	Filters          []struct {
		Name        string    `yaml:"name"`
		TypedConfig yaml.Node `yaml:"typed_config"`
	} `yaml:"filters"`
}

// typed is the "@type" of a typed_config (a google.protobuf.Any).
type typed struct {
	Type string `yaml:"@type"`
}

const (
	typeHCM    = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	typeWasm   = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"
	typeRouter = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	typeString = "type.googleapis.com/google.protobuf.StringValue"
)

type connectionManager struct {
	UseRemoteAddress             *bool        `yaml:"use_remote_address"`
	XffNumTrustedHops            int          `yaml:"xff_num_trusted_hops"`
	SkipXffAppend                bool         `yaml:"skip_xff_append"`
	NormalizePath                *bool        `yaml:"normalize_path"`
	MergeSlashes                 bool         `yaml:"merge_slashes"`
	PathWithEscapedSlashesAction string       `yaml:"path_with_escaped_slashes_action"`
	OriginalIPDetection          any          `yaml:"original_ip_detection_extensions"`
	RDS                          any          `yaml:"rds"`
	ScopedRoutes                 any          `yaml:"scoped_routes"`
	RouteConfig                  *routeConfig `yaml:"route_config"`
	HTTPFilters                  []struct {
		Name        string    `yaml:"name"`
		TypedConfig yaml.Node `yaml:"typed_config"`
	} `yaml:"http_filters"`
}

type routeConfig struct {
	VirtualHosts []struct {
		Name   string `yaml:"name"`
		Routes []struct {
			Name  string `yaml:"name"`
			Match struct {
				Prefix    *string `yaml:"prefix"`
				Path      any     `yaml:"path"`
				SafeRegex any     `yaml:"safe_regex"`
				PathSep   any     `yaml:"path_separated_prefix"`
				Template  any     `yaml:"path_match_policy"`
			} `yaml:"match"`
			Route *struct {
				Cluster          string `yaml:"cluster"`
				WeightedClusters any    `yaml:"weighted_clusters"`
				ClusterHeader    any    `yaml:"cluster_header"`
			} `yaml:"route"`
		} `yaml:"routes"`
	} `yaml:"virtual_hosts"`
}

type wasmFilter struct {
	Config struct {
		Name     string `yaml:"name"`
		RootID   string `yaml:"root_id"`
		VMConfig struct {
			VMID    string `yaml:"vm_id"`
			Runtime string `yaml:"runtime"`
			Code    struct {
				Local *struct {
					Filename string `yaml:"filename"`
				} `yaml:"local"`
				Remote any `yaml:"remote"`
			} `yaml:"code"`
			Configuration        *anyString `yaml:"configuration"`
			EnvironmentVariables *struct {
				HostEnvKeys []string          `yaml:"host_env_keys"`
				KeyValues   map[string]string `yaml:"key_values"`
			} `yaml:"environment_variables"`
		} `yaml:"vm_config"`
		Configuration               *anyString `yaml:"configuration"`
		FailurePolicy               string     `yaml:"failure_policy"`
		AllowOnHeadersStopIteration *bool      `yaml:"allow_on_headers_stop_iteration"`
	} `yaml:"config"`
}

// anyString is a google.protobuf.Any holding a StringValue.
type anyString struct {
	Type  string `yaml:"@type"`
	Value string `yaml:"value"`
}

type cluster struct {
	Name            string `yaml:"name"`
	ClusterType     any    `yaml:"cluster_type"`
	TransportSocket any    `yaml:"transport_socket"`
	LoadAssignment  *struct {
		Endpoints []struct {
			LbEndpoints []struct {
				Endpoint struct {
					Address address `yaml:"address"`
				} `yaml:"endpoint"`
			} `yaml:"lb_endpoints"`
		} `yaml:"endpoints"`
	} `yaml:"load_assignment"`
}

// snakeFields are the field names above: a file that spells one in
// lowerCamelCase (which Envoy also accepts) is refused rather than read
// as if the field were absent.
var snakeFields = []string{
	"static_resources", "dynamic_resources", "socket_address", "port_value", "listener_filters",
	"filter_chains", "filter_chain_match", "transport_socket", "typed_config", "use_remote_address",
	"xff_num_trusted_hops", "skip_xff_append", "normalize_path", "merge_slashes",
	"path_with_escaped_slashes_action", "original_ip_detection_extensions", "scoped_routes",
	"route_config", "http_filters", "virtual_hosts", "safe_regex", "path_separated_prefix",
	"path_match_policy", "weighted_clusters", "cluster_header", "root_id", "vm_config", "vm_id",
	"environment_variables", "host_env_keys", "key_values", "failure_policy",
	"allow_on_headers_stop_iteration", "cluster_type", "load_assignment", "lb_endpoints",
}
