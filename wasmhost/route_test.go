package wasmhost_test

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// The route is picked from the request headers as the guest leaves them
// when they go on: a header the guest removed in its headers callback
// does not route the request, one it added does, and the request goes to
// that route's upstream.
func TestRouteByHeaderAsTheHeadersGoOn(t *testing.T) {
	primary, forged, added := newUpstream(t), newUpstream(t), newUpstream(t)
	h := start(t, wasmhost.Config{Module: module(t, "probe"), Upstream: primary.URL, Workers: 1, Routes: []wasmhost.Route{
		{PathPrefix: "/", Header: "x-probe-remove", Name: "forged", Upstream: forged.URL},
		{PathPrefix: "/added", Header: "x-probe-added", Name: "added", Upstream: added.URL},
		{PathPrefix: "/", Name: "primary"},
	}})
	if r := do(t, "GET", h.URL()+"/", "", map[string]string{"x-probe-remove": "1"}); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	if r := do(t, "GET", h.URL()+"/added", "", nil); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	if p, f, a := primary.calls.Load(), forged.calls.Load(), added.calls.Load(); p != 1 || f != 0 || a != 1 {
		t.Fatalf("primary %d, forged %d, added %d calls; want 1, 0, 1", p, f, a)
	}
}

// A route's upstream must be a URL, its header lower case.
func TestRouteConfigChecked(t *testing.T) {
	up := newUpstream(t)
	for _, r := range []wasmhost.Route{{PathPrefix: "/", Upstream: "nohost"}, {PathPrefix: "/", Header: "X-A"}} {
		if _, err := wasmhost.Start(t.Context(), wasmhost.Config{Module: module(t, "noop"), Upstream: up.URL, Routes: []wasmhost.Route{r}}); err == nil {
			t.Errorf("route %+v: started", r)
		}
	}
}
