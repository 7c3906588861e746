package jsonrpc

import (
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// want is a call as a test writes it: kind, method, raw id, text.
type want struct {
	kind   Kind
	method string
	id     string
	text   string
}

func TestRead(t *testing.T) {
	const req = `{"jsonrpc":"2.0","id":1,"method":"eth_call"}`
	for _, c := range []struct {
		name  string
		body  string
		max   int
		calls []want
		fault Fault
		batch bool
	}{
		{"request", req, 10, []want{{Request, "eth_call", "1", req}}, 0, false},
		{"spaces", "\n " + req + " \t", 10, []want{{Request, "eth_call", "1", req}}, 0, false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 10,
			[]want{{Notification, "notifications/initialized", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`}}, 0, false},
		{"string id", `{"id":"a\"b","method":"ping","jsonrpc":"2.0"}`, 10,
			[]want{{Request, "ping", `"a\"b"`, `{"id":"a\"b","method":"ping","jsonrpc":"2.0"}`}}, 0, false},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"x"}`, 10, []want{{Request, "x", "null", `{"jsonrpc":"2.0","id":null,"method":"x"}`}}, 0, false},
		{"number as written", `{"jsonrpc":"2.0","id":1.50,"method":"x"}`, 10, []want{{Request, "x", "1.50", `{"jsonrpc":"2.0","id":1.50,"method":"x"}`}}, 0, false},
		{"escaped method", `{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, 10, []want{{Request, "tools/call", "1", `{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`}}, 0, false},
		{"last duplicate", `{"jsonrpc":"2.0","id":1,"method":"a","method":"b","id":2}`, 10,
			[]want{{Request, "b", "2", `{"jsonrpc":"2.0","id":1,"method":"a","method":"b","id":2}`}}, 0, false},
		{"response", `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`, 10, []want{{Response, "", "7", `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`}}, 0, false},
		{"error response", `{"jsonrpc":"2.0","id":7,"error":{"code":1}}`, 10, []want{{Response, "", "7", `{"jsonrpc":"2.0","id":7,"error":{"code":1}}`}}, 0, false},
		{"batch", `[` + req + `, {"jsonrpc":"2.0","method":"n"} ,{"jsonrpc":"2.0","id":"r","result":1}]`, 10, []want{
			{Request, "eth_call", "1", req},
			{Notification, "n", "", `{"jsonrpc":"2.0","method":"n"}`},
			{Response, "", `"r"`, `{"jsonrpc":"2.0","id":"r","result":1}`},
		}, 0, true},
		{"batch of one", `[` + req + `]`, 1, []want{{Request, "eth_call", "1", req}}, 0, true},
		{"too many", `[` + req + `,` + req + `]`, 1, nil, jsonbound.RefuseTooManyCalls, true},
		{"empty batch", `[]`, 10, nil, jsonbound.RefuseNotJSONRPC, true},
		{"element not object", `[1,2]`, 10, nil, jsonbound.RefuseNotJSONRPC, true},
		{"scalar", `"x"`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"empty", ``, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"no version", `{"id":1,"method":"a"}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"version 1", `{"jsonrpc":"1.0","id":1,"method":"a"}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"version number", `{"jsonrpc":2.0,"id":1,"method":"a"}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"method number", `{"jsonrpc":"2.0","id":1,"method":1}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"method null", `{"jsonrpc":"2.0","id":1,"method":null}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"id object", `{"jsonrpc":"2.0","id":{},"method":"a"}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"a"}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"id bool", `{"jsonrpc":"2.0","id":true,"method":"a"}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"nothing", `{"jsonrpc":"2.0","id":1}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"result without id", `{"jsonrpc":"2.0","result":1}`, 10, nil, jsonbound.RefuseNotJSONRPC, false},
		{"case variant", `{"jsonrpc":"2.0","id":1,"method":"a","Method":"b"}`, 10, nil, jsonbound.RefuseCaseVariant, false},
		{"case variant id", `{"jsonrpc":"2.0","ID":1,"method":"a"}`, 10, nil, jsonbound.RefuseCaseVariant, false},
		{"bad element after good", `[` + req + `,{"jsonrpc":"2.0"}]`, 10, nil, jsonbound.RefuseNotJSONRPC, true},
	} {
		calls, fault := Read(c.body, c.max, nil)
		if fault != c.fault || Batch(c.body) != c.batch {
			t.Errorf("%s: fault %v, batch %v; want %v, %v", c.name, fault, Batch(c.body), c.fault, c.batch)
			continue
		}
		if fault != 0 {
			continue
		}
		if len(calls) != len(c.calls) {
			t.Errorf("%s: %d calls; want %d", c.name, len(calls), len(c.calls))
			continue
		}
		for k, w := range c.calls {
			got := calls[k]
			if got.Kind != w.kind || got.Method != w.method || got.ID != w.id || got.Text(c.body) != w.text {
				t.Errorf("%s: call %d = %d %q %q %q; want %+v", c.name, k, got.Kind, got.Method, got.ID, got.Text(c.body), w)
			}
		}
	}
}

func TestReadAllocatesNothing(t *testing.T) {
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}},` +
		`{"jsonrpc":"2.0","method":"notifications/progress"},{"jsonrpc":"2.0","id":"x","result":{}}]`
	dst := make([]Call, 0, 4)
	var fault Fault
	if n := testing.AllocsPerRun(100, func() { dst, fault = Read(body, 100, dst) }); n != 0 || fault != 0 || len(dst) != 3 {
		t.Fatalf("Read: %v allocations, fault %v, %d calls; want 0, 0, 3", n, fault, len(dst))
	}
}
