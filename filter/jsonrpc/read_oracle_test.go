package jsonrpc

import (
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// FuzzReadAgrees checks Read, which reads a call's members in one scan,
// against lookupRead, which reads them one jsonbound.Lookup at a time
// (Read before the scan): the same calls, fields and fault on any body
// ReadBody accepts, and Param reading what Lookup reads at "params."+path
// in the call. Seeds in testdata/fuzz/FuzzReadAgrees (duplicates, case
// variants, escaped names, nesting).
func FuzzReadAgrees(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}`), uint8(4), "name")
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"\u006dethod":"a","method":"b"},{"jsonrpc":"2.0","ID":2,"method":"c"}]`), uint8(5), "name")
	f.Add([]byte(`{"jsonrpc":"1.0","Id":1,"method":"a"}`), uint8(1), "a.0")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":1,"Error":{}}`), uint8(1), "x")
	f.Add([]byte(`{"jsonrpc":"2.0","result":1,"Error":{}}`), uint8(1), "x")
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"m","params":{"name":1},"params":{"name":2}}`), uint8(1), "name")
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"m","Params":{"name":1},"p\u0061rams":{"Name":2}}`), uint8(1), "name")
	f.Add([]byte(`[{"jsonrpc":"2.0","method":"m","params":[{"a":{"b":[1]}}]}]`), uint8(1), "0.a.b.0")
	f.Fuzz(func(t *testing.T, in []byte, limit uint8, path string) {
		text, why := jsonbound.ReadBody(in)
		if why != 0 {
			return
		}
		body := string(text)
		calls, fault := Read(body, int(limit), nil)
		want, wantFault := lookupRead(body, int(limit))
		if fault != wantFault || len(calls) != len(want) {
			t.Fatalf("Read(%q, %d) = %d calls, fault %v; Lookup reads %d, %v", body, limit, len(calls), fault, len(want), wantFault)
		}
		for k := range calls {
			c, w := calls[k], want[k]
			if c.At != w.At || c.End != w.End || c.ID != w.ID || c.Kind != w.Kind || c.Method != w.Method {
				t.Fatalf("%q: call %d = %+v; Lookup reads %+v", body, k, c, w)
			}
			v, why := c.Param(path)
			wv, wwhy := jsonbound.Lookup(c.Text(body), "params."+path)
			if v != wv || why != wwhy {
				t.Fatalf("%q: call %d Param(%q) = %q, %v; Lookup reads %q, %v", body, k, path, v, why, wv, wwhy)
			}
		}
	})
}

// lookupRead is Read as it was, one jsonbound.Lookup per member: the
// oracle of FuzzReadAgrees.
func lookupRead(body string, max int) ([]Call, Fault) {
	var calls []Call
	if max < 0 {
		max = 0
	}
	if !Batch(body) {
		i := len(body) - len(strings.TrimLeft(body, " \t\r\n"))
		c, why := lookupCall(body, i, len(strings.TrimRight(body, " \t\r\n")))
		if why != 0 {
			return calls, why
		}
		return append(calls, c), 0
	}
	for start, end, i := jsonbound.NextElement(body, 0); start >= 0; start, end, i = jsonbound.NextElement(body, i) {
		if len(calls) == max {
			return calls, jsonbound.RefuseTooManyCalls
		}
		c, why := lookupCall(body, start, end)
		if why != 0 {
			return calls, why
		}
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		return calls, jsonbound.RefuseNotJSONRPC
	}
	return calls, 0
}

func lookupCall(body string, at, end int) (Call, Fault) {
	c := Call{At: at, End: end}
	text := body[at:end]
	if text == "" || text[0] != '{' {
		return c, jsonbound.RefuseNotJSONRPC
	}
	version, why := jsonbound.Lookup(text, "jsonrpc")
	if why != 0 {
		return c, why
	}
	if s, ok := stringOf(version); !ok || s != "2.0" {
		return c, jsonbound.RefuseNotJSONRPC
	}
	id, why := jsonbound.Lookup(text, "id")
	if why != 0 {
		return c, why
	}
	if id != "" && (id[0] == '{' || id[0] == '[' || id[0] == 't' || id[0] == 'f') {
		return c, jsonbound.RefuseNotJSONRPC
	}
	c.ID = id
	method, why := jsonbound.Lookup(text, "method")
	if why != 0 {
		return c, why
	}
	if method != "" {
		name, ok := stringOf(method)
		if !ok {
			return c, jsonbound.RefuseNotJSONRPC
		}
		c.Method, c.Kind = name, Notification
		if id != "" {
			c.Kind = Request
		}
		return c, 0
	}
	for _, field := range [...]string{"result", "error"} {
		v, why := jsonbound.Lookup(text, field)
		if why != 0 {
			return c, why
		}
		if v != "" && id != "" {
			c.Kind = Response
			return c, 0
		}
	}
	return c, jsonbound.RefuseNotJSONRPC
}
