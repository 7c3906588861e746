package filter

import (
	"strings"
	"testing"
	"time"
)

// A deny-cache hit of a rule in the HTTP form names the call of its own
// request that opened the denied key, not the call of the request whose
// reply the cache rendered last.
func TestCachedHTTPRefusalNamesItsCall(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"rpc","key":[{"source":"header","name":"x-user"}],"jsonrpc":{},
	 "limits":[{"name":"per-hour","algorithm":"sliding_log","limit":1,"window":"1h"}]}]}`)
	h.Clock = time.Unix(1700000000, 0) // one Retry-After second for every reply
	const call, resp = `{"jsonrpc":"2.0","id":1,"method":"a"}`, `{"jsonrpc":"2.0","id":9,"result":1}`
	for i, c := range []struct {
		body   string
		fcalls int
		want   string
	}{
		{call, 1, ``},
		{jsonArray(call), 1, `"call":0`},
		{jsonArray(resp, resp, call), 0, `"call":2`},
		{jsonArray(call), 0, `"call":0`},
		{jsonArray(resp, call), 0, `"call":1`},
	} {
		o := h.sendCalls(c.body, "x-user=u")
		if o.fcalls != c.fcalls || !strings.Contains(o.body, c.want) {
			t.Fatalf("request %d %s: %+v; want %d calls, a body with %s", i, c.body, o, c.fcalls, c.want)
		}
	}
}
