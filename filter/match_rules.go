package filter

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// routeInfo holds what the matchers read of a request: the stream
// properties, each read from the host at most once per request and only
// when an entry needs it, and the host.
type routeInfo struct {
	r                    *request
	route, cluster, host string
	read                 uint8 // bits: 1 route, 2 cluster, 4 host read
}

func (ri *routeInfo) routeName() string {
	if ri.read&1 == 0 {
		ri.route, ri.read = ri.r.source.Property("route_name"), ri.read|1
	}
	return ri.route
}

func (ri *routeInfo) hostName() string {
	if ri.read&4 == 0 {
		ri.host, ri.read = ri.r.host(), ri.read|4
	}
	return ri.host
}

func (ri *routeInfo) clusterName() string {
	if ri.read&2 == 0 {
		ri.cluster, ri.read = ri.r.source.Property("cluster_name"), ri.read|2
	}
	return ri.cluster
}

// pick returns the policy whose configuration applies to the request:
// that of the first _rules_ entry that matches it, else the top level's
// (which limits nothing when the configuration holds only _rules_).
func (p *Plugin) pick(r *request) *policy {
	ri := routeInfo{r: r}
	for _, pol := range p.policies[1:] {
		if routeMatches(pol.route, &ri) {
			return pol
		}
	}
	return p.top()
}

// routeMatches follows Higress's RuleMatcher.GetMatchConfig, except that domains
// compare case-insensitively (Envoy's route table does too).
func routeMatches(m *config.MatchRule, ri *routeInfo) bool {
	switch {
	case len(m.Routes) > 0:
		return contains(m.Routes, ri.routeName()) && (len(m.Services) == 0 || serviceMatches(m.Services, ri.clusterName()))
	case len(m.Domains) > 0:
		return domainMatches(m.Domains, ri.hostName())
	case len(m.Services) > 0:
		return serviceMatches(m.Services, ri.clusterName())
	}
	route := ri.routeName()
	for _, prefix := range m.RoutePrefixes {
		if strings.HasPrefix(route, prefix) {
			return len(m.Consumers) == 0 || contains(m.Consumers, firstHeader(ri.r, "x-mse-consumer"))
		}
	}
	return false
}

// domainMatches matches a lower-case host without port against patterns
// that may start or end with "*".
func domainMatches(patterns []string, host string) bool {
	for _, d := range patterns {
		switch {
		case strings.HasPrefix(d, "*"):
			if strings.HasSuffix(host, d[1:]) {
				return true
			}
		case strings.HasSuffix(d, "*"):
			if strings.HasPrefix(host, d[:len(d)-1]) {
				return true
			}
		case host == d:
			return true
		}
	}
	return false
}

// serviceMatches matches a cluster name outbound|<port>|<subset>|<fqdn>
// against "<fqdn>" or "<fqdn>:<port>" entries.
func serviceMatches(services []string, cluster string) bool {
	if strings.Count(cluster, "|") != 3 {
		return false
	}
	_, rest, _ := strings.Cut(cluster, "|")
	port, rest, _ := strings.Cut(rest, "|")
	_, fqdn, _ := strings.Cut(rest, "|")
	for _, s := range services {
		if s == fqdn || len(s) == len(fqdn)+1+len(port) && strings.HasPrefix(s, fqdn) && s[len(fqdn)] == ':' && s[len(fqdn)+1:] == port {
			return true
		}
	}
	return false
}

// firstHeader returns the first value of a header, as Envoy's
// get_header_map_value does.
func firstHeader(r *request, name string) string {
	v, _ := r.headers.First(name)
	return v
}
