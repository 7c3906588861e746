package wasmhost

import (
	"fmt"
	"net/url"
	"strings"
)

// Route is an entry of Config.Routes, standing for a route of Envoy's
// route table. The first entry whose PathPrefix starts the request's path,
// and whose Header (if set) the request carries, is the stream's route:
// its Name is the route_name property and its Cluster cluster_name, and
// the request goes to its Upstream. Higress names an Ingress's route
// "<namespace>/<name>" and a service's cluster "outbound|<port>||<fqdn>",
// which its matchRules (_rules_) match on. With no such entry, or an
// empty Name or Cluster, the property is NotFound.
//
// Metadata is the route's filter_metadata, as StreamInfo.Metadata is the
// stream's: served at xds.route_metadata (Envoy >= 1.33) and at
// route_metadata (the older name, which Higress's Envoy still serves).
type Route struct {
	PathPrefix, Name, Cluster string
	// Header, if set, is a request header the route needs, with any
	// value: an Envoy route's match.headers entry with present_match
	// (lower case).
	Header string
	// Upstream is where the route's requests go, "http://host:port";
	// default Config.Upstream.
	Upstream string
	Metadata map[string]map[string]any
}

// RouteFor returns the first route whose PathPrefix starts path and that
// needs no header.
func RouteFor(routes []Route, path string) (Route, bool) {
	if i := routeIndex(routes, path, func(string) bool { return false }); i >= 0 {
		return routes[i], true
	}
	return Route{}, false
}

// routeIndex is the index of the first route that path and the headers
// has reports match, or -1.
func routeIndex(routes []Route, path string, has func(name string) bool) int {
	for i, r := range routes {
		if strings.HasPrefix(path, r.PathPrefix) && (r.Header == "" || has(r.Header)) {
			return i
		}
	}
	return -1
}

// parseRouteUpstreams checks each route's Upstream and returns it parsed,
// nil where the route takes Config.Upstream.
func parseRouteUpstreams(routes []Route) ([]*url.URL, error) {
	ups := make([]*url.URL, len(routes))
	for i, r := range routes {
		if r.Header != strings.ToLower(r.Header) {
			return nil, fmt.Errorf("host: Config.Routes[%d].Header %q: must be lower case", i, r.Header)
		}
		if r.Upstream == "" {
			continue
		}
		u, err := url.Parse(r.Upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("host: bad Config.Routes[%d].Upstream %q: want http://host:port", i, r.Upstream)
		}
		ups[i] = u
	}
	return ups, nil
}

// route is the stream's route. Until the request headers go on it follows
// them, as Envoy clears its route cache when a filter changes them; then
// it is the one the router picked (pickRoute).
func (v *vm) route(s *stream) (Route, bool) {
	i := s.routeIdx
	if !s.routeFixed {
		i = v.routeOf(s)
	}
	if i < 0 {
		return Route{}, false
	}
	return v.h.cfg.Routes[i], true
}

func (v *vm) routeOf(s *stream) int {
	path, _ := s.reqHeaders.get(":path")
	return routeIndex(v.h.cfg.Routes, path, func(name string) bool {
		_, ok := s.reqHeaders.get(name)
		return ok
	})
}

// pickRoute fixes the stream's route as the request headers go on to the
// router, which picks it then: a header changed later changes neither the
// route nor the upstream the request goes to.
func (v *vm) pickRoute(s *stream) {
	if !s.routeFixed {
		s.routeIdx, s.routeFixed = v.routeOf(s), true
	}
}

// routeUpstream is where the stream's request goes: its route's Upstream,
// or Config.Upstream (nil).
func (v *vm) routeUpstream(s *stream) *url.URL {
	v.pickRoute(s)
	if s.routeIdx < 0 || s.routeIdx >= len(v.h.routeUps) {
		return nil
	}
	return v.h.routeUps[s.routeIdx]
}
