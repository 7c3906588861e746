package filter

import (
	"slices"
	"strings"
	"testing"
)

// A tools/call's name for its cost is read in the params Read kept
// (jsonrpc.Call.Param), as jsonbound.Lookup reads params.name in the
// call: escapes unescaped; params given twice or in two cases make the
// body unreadable, even when no key part reads the name.
func TestToolCostNameInParams(t *testing.T) {
	h := toolsHost(t, "", 100, func(sp *rpcSpec) { sp.callParts = nil })
	const head = `{"jsonrpc":"2.0","id":1,"method":"tools/call",`
	for _, c := range []struct {
		body string
		cost int64
	}{
		{head + `"params":{"n\u0061me":"se\u0061rch"}}`, 2},
		{head + `"params":{"name":"x","name":"deep"}}`, 5},
		{head + `"params":{"arguments":{"name":"deep"}}}`, 1},
		{head + `"params":["deep"]}`, 1},
	} {
		o := h.sendCalls(c.body, "x-user=u")
		if o.status != 0 || !slices.Equal(o.keys, []string{"{tools|u}"}) || !slices.Equal(o.costs, []int64{c.cost}) {
			t.Errorf("%s: %+v; want admitted, {tools|u} charged %d", c.body, o, c.cost)
		}
	}
	for _, c := range []struct{ body, why string }{
		{head + `"params":{"name":"search"},"params":{"name":"deep"}}`, "duplicate object"},
		{head + `"Params":{},"params":{"name":"deep"}}`, "only in case"},
		{head + `"params":{"name":"search","NAME":"deep"}}`, "only in case"},
	} {
		o := h.sendCalls(c.body, "x-user=u")
		if o.status < 400 || o.fcalls != 0 || !strings.Contains(o.body, `"error":"unreadable_body"`) || !strings.Contains(o.body, c.why) {
			t.Errorf("%s: %+v; want refused as unreadable (%s), no call", c.body, o, c.why)
		}
	}
}
