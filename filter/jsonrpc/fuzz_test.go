package jsonrpc

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// FuzzRead checks Read against encoding/json on a body ReadBody accepts:
// each call's span is an element (or the body's one object), and its
// method, id and kind are what encoding/json reads there (the last of
// duplicate keys, as Read). Seeds in testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}`), uint8(4))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"a","method":"m"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"result":{}}]`), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, limit uint8) {
		text, why := jsonbound.ReadBody(in)
		if why != 0 || bytes.Contains(text, []byte("NaN")) || bytes.Contains(text, []byte("Infinity")) {
			return
		}
		body := string(text)
		calls, fault := Read(body, int(limit), nil)
		var elements []json.RawMessage
		if Batch(body) {
			if err := json.Unmarshal(text, &elements); err != nil {
				t.Fatalf("%q: encoding/json refuses an array ReadBody accepts: %v", body, err)
			}
			if fault == 0 && (len(elements) > int(limit) || len(elements) != len(calls)) {
				t.Fatalf("Read(%q, %d) = %d calls; encoding/json reads %d elements", body, limit, len(calls), len(elements))
			}
			if fault == jsonbound.RefuseTooManyCalls && len(elements) <= int(limit) {
				t.Fatalf("Read(%q, %d): too many calls of %d", body, limit, len(elements))
			}
		} else {
			elements = []json.RawMessage{json.RawMessage(strings.Trim(body, " \t\r\n"))}
		}
		if fault != 0 {
			return
		}
		for k, c := range calls {
			if c.Text(body) != string(elements[k]) {
				t.Fatalf("%q: call %d is %q; encoding/json reads %q", body, k, c.Text(body), elements[k])
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(elements[k], &m); err != nil {
				t.Fatalf("%q: call %d is no object to encoding/json: %v", body, k, err)
			}
			var version, method string
			if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
				t.Fatalf("%q: call %d read, its jsonrpc %s", body, k, m["jsonrpc"])
			}
			if c.ID != string(m["id"]) {
				t.Fatalf("%q: call %d id %q; encoding/json reads %q", body, k, c.ID, m["id"])
			}
			_, result := m["result"]
			_, failed := m["error"]
			switch {
			case c.Kind == Response && (m["method"] != nil || !result && !failed || c.ID == ""):
				t.Fatalf("%q: call %d read as a response", body, k)
			case c.Kind != Response && (json.Unmarshal(m["method"], &method) != nil || method != c.Method):
				t.Fatalf("%q: call %d method %q; encoding/json reads %s", body, k, c.Method, m["method"])
			case c.Kind != Response && (c.Kind == Request) != (c.ID != ""):
				t.Fatalf("%q: call %d kind %d with id %q", body, k, c.Kind, c.ID)
			}
		}
	})
}

// FuzzFormula checks Apply against big-integer arithmetic, for formulas
// within Check's bounds (the fuzzer's fields taken modulo them).
func FuzzFormula(f *testing.F) {
	f.Add(int64(60), int64(1), int64(100), int64(60), int64(600), int64(2500), true)
	f.Add(int64(MaxValue), int64(MaxPer), int64(1), int64(0), int64(MaxValue), int64(MaxValue), true)
	f.Add(int64(0), int64(3), int64(7), int64(1), int64(10), int64(-5), true)
	f.Fuzz(func(t *testing.T, base, per, every, lo, hi, v int64, ok bool) {
		fm := Formula{Param: "p", Base: mod(base, MaxValue+1), Per: mod(per, MaxPer+1), Every: 1 + mod(every, MaxValue),
			Min: mod(lo, MaxValue+1), Max: mod(hi, MaxValue+1)}
		if fm.Min > fm.Max {
			fm.Min, fm.Max = fm.Max, fm.Min
		}
		if fm.Check() != "" {
			t.Fatalf("Check(%+v) = %q", fm, fm.Check())
		}
		got := fm.Apply(v, ok)
		want := fm.Max
		if ok && v >= 0 && v <= MaxValue {
			q := new(big.Int).Add(big.NewInt(v), big.NewInt(fm.Every-1))
			q.Quo(q, big.NewInt(fm.Every))
			u := q.Mul(q, big.NewInt(fm.Per))
			u.Add(u, big.NewInt(fm.Base))
			if u.Cmp(big.NewInt(fm.Max)) > 0 {
				u.SetInt64(fm.Max)
			}
			if u.Cmp(big.NewInt(fm.Min)) < 0 {
				u.SetInt64(fm.Min)
			}
			want = u.Int64()
		}
		if got != want {
			t.Fatalf("%+v.Apply(%d, %v) = %d; want %d", fm, v, ok, got, want)
		}
		raw := []byte(`{"p":`)
		raw = append(raw, []byte(big.NewInt(v).String())...)
		if fm.Units(string(append(raw, '}'))) != fm.Apply(v, true) {
			t.Fatalf("%+v.Units(%d) differs from Apply", fm, v)
		}
	})
}

func mod(v, m int64) int64 {
	if v %= m; v < 0 {
		v += m
	}
	return v
}

// FuzzAppendErrors checks that AppendErrors' answer to the calls Read
// finds is JSON that encoding/json reads: one object per request, in
// order, each with the request's id, or one object with id null.
func FuzzAppendErrors(f *testing.F) {
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"x\u00e9","method":"b"}]`), "rate_limited", "tools", 3)
	f.Add([]byte(`{"jsonrpc":"2.0","id":-1.5e3,"method":"a"}`), "a\"b\\c\x01", "r\n", -1)
	f.Fuzz(func(t *testing.T, in []byte, reason, rule string, call int) {
		text, why := jsonbound.ReadBody(in)
		if why != 0 {
			return
		}
		body := string(text)
		calls, fault := Read(body, 1000, nil)
		if fault != 0 {
			calls = nil
		}
		e := &Error{Code: CodeLimitExceeded, Message: "Rate limited", Reason: reason, Rule: rule, Limit: "per-hour", RetryAfter: 42, RetryAfterMs: 41250, Call: call}
		out := AppendErrors(nil, calls, Batch(body), e)
		if len(out) != cap(out) {
			t.Fatalf("%q: %d bytes in a buffer of %d", body, len(out), cap(out))
		}
		var ids []string
		for _, c := range calls {
			if c.Kind == Request {
				ids = append(ids, c.ID)
			}
		}
		type object struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code int `json:"code"`
				Data struct {
					Reason string `json:"reason"`
				} `json:"data"`
			} `json:"error"`
		}
		var got []object
		if len(out) > 0 && out[0] == '[' {
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%q: %s is not JSON: %v", body, out, err)
			}
		} else {
			var one object
			if err := json.Unmarshal(out, &one); err != nil {
				t.Fatalf("%q: %s is not JSON: %v", body, out, err)
			}
			got, ids = []object{one}, []string{string(one.ID)}
			if !Batch(body) && len(calls) == 1 && calls[0].Kind == Request {
				ids[0] = calls[0].ID
			} else if string(one.ID) != "null" {
				t.Fatalf("%q: one object with id %s; want null", body, one.ID)
			}
		}
		if len(got) != len(ids) {
			t.Fatalf("%q: %d objects for %d requests", body, len(got), len(ids))
		}
		for k, o := range got {
			if string(o.ID) != ids[k] || o.JSONRPC != "2.0" || o.Error.Code != CodeLimitExceeded {
				t.Fatalf("%q: object %d is %+v; want id %s", body, k, o, ids[k])
			}
			if utf8.ValidString(reason) && reason != o.Error.Data.Reason {
				t.Fatalf("%q: reason %q read as %q", body, reason, o.Error.Data.Reason)
			}
		}
	})
}
