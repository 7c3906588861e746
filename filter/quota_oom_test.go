package filter

import "testing"

// On a Redis full under maxmemory the quota endpoint still answers, for a
// spent limit too: both its peek and the settle of cost 0 that reads a
// spent limit's debt go through the library's peek, flagged no-writes,
// which Redis runs when full (docs/quota-endpoint.md).
func TestQuotaEndpointOnAFullRedis(t *testing.T) {
	srv := fullRedis(t)
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"quota_endpoint":{"path":"/quota"},"rules":[
		{"name":"api","match":{"path_prefix":"/api"},"key":[{"source":"header","name":"x-key"}],
		 "limits":[{"algorithm":"funnel","capacity":2,"rate":2,"period":"1h"}]}]}`)
	h.Redis = srv.Addr
	for i := range 2 {
		if r := h.request("GET", "/api", "x-key=k1"); !r.upstream {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	fill(t, srv)
	for _, key := range []string{"k1", "k2"} { // spent (a debt read), and unused
		r := h.request("GET", "/quota", "x-key="+key)
		if r.status != 200 || len(r.answer.Rules) != 1 || len(r.answer.Rules[0].Limits) != 1 {
			t.Fatalf("%s on a full Redis: %d %s", key, r.status, r.body)
		}
		if l := r.answer.Rules[0].Limits[0]; key == "k1" && (l.Remaining != 0 || l.Used != 2) || key == "k2" && l.Remaining != 2 {
			t.Errorf("%s on a full Redis: %s", key, r.body)
		}
	}
}
