package filter

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// The property test's oracle: what a batch should charge, written apart
// from the filter with encoding/json (a map keeps the last of duplicate
// keys, as the filter's reading must) and math/big.

// oCall is one message of a body, as the oracle reads it.
type oCall struct {
	kind   int    // oRequest, oNotification or oResponse
	method string // "" for a response
	id     string // the id's JSON text, "" when absent
	raw    json.RawMessage
}

const (
	oRequest = iota + 1
	oNotification
	oResponse
)

// oracleRead reads body as JSON-RPC 2.0 messages; ok is false when the
// filter must refuse it as not JSON-RPC.
func oracleRead(body string) (calls []oCall, batch, ok bool) {
	trimmed := bytes.TrimSpace([]byte(body))
	var elems []json.RawMessage
	if batch = len(trimmed) > 0 && trimmed[0] == '['; batch {
		if json.Unmarshal(trimmed, &elems) != nil || len(elems) == 0 {
			return nil, batch, false
		}
	} else {
		elems = []json.RawMessage{trimmed}
	}
	for _, e := range elems {
		var m map[string]json.RawMessage
		if len(e) == 0 || e[0] != '{' || json.Unmarshal(e, &m) != nil {
			return nil, batch, false
		}
		var version string
		if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
			return nil, batch, false
		}
		c := oCall{raw: e}
		if id, has := m["id"]; has {
			if id[0] == '{' || id[0] == '[' || id[0] == 't' || id[0] == 'f' {
				return nil, batch, false
			}
			c.id = string(id)
		}
		switch method, has := m["method"]; {
		case has:
			if json.Unmarshal(method, &c.method) != nil || method[0] != '"' {
				return nil, batch, false
			}
			c.kind = oNotification
			if c.id != "" {
				c.kind = oRequest
			}
		case c.id != "" && (m["result"] != nil || m["error"] != nil):
			c.kind = oResponse
		default:
			return nil, batch, false
		}
		calls = append(calls, c)
	}
	return calls, batch, true
}

// oLookup is the JSON text at a dotted path in raw: object members by
// name (the last of duplicates), array elements by index; "" when absent.
func oLookup(raw json.RawMessage, path string) string {
	for _, name := range strings.Split(path, ".") {
		switch {
		case len(raw) > 0 && raw[0] == '{':
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil {
				return ""
			}
			raw = m[name]
		case len(raw) > 0 && raw[0] == '[':
			var a []json.RawMessage
			i, ok := new(big.Int).SetString(name, 10)
			if json.Unmarshal(raw, &a) != nil || !ok || i.Sign() < 0 || !i.IsInt64() || i.Int64() >= int64(len(a)) {
				return ""
			}
			raw = a[i.Int64()]
		default:
			return ""
		}
		if raw == nil {
			return ""
		}
	}
	return string(raw)
}

// oString is raw's value when raw is a JSON string.
func oString(raw string) (string, bool) {
	var s string
	if raw == "" || raw[0] != '"' || json.Unmarshal([]byte(raw), &s) != nil {
		return "", false
	}
	return s, true
}

var oMaxValue = new(big.Int).Lsh(big.NewInt(1), 53)

// oQuantity is a formula's value: a JSON integer without fraction or
// exponent, or a "0x" hex string, of at most 20 digits and at most 2^53.
func oQuantity(raw string) (*big.Int, bool) {
	digits, base := raw, 10
	if s, ok := oString(raw); ok {
		h, isHex := strings.CutPrefix(s, "0x")
		if !isHex {
			return nil, false
		}
		digits, base = h, 16
	}
	if digits == "" || len(digits) > 20 || strings.ContainsAny(digits, "+-_") {
		return nil, false
	}
	v, ok := new(big.Int).SetString(digits, base)
	if !ok || v.Cmp(oMaxValue) > 0 {
		return nil, false
	}
	return v, true
}

// oFormula is a formula entry of the oracle's tables.
type oFormula struct {
	param, minus             string
	base, per, every, lo, hi int64
}

// units is clamp(base + per × ceil(v / every), lo, hi), hi when a value is
// unreadable or v is negative, in exact arithmetic.
func (f oFormula) units(call json.RawMessage) int64 {
	v, ok := oQuantity(oLookup(call, f.param))
	if ok && f.minus != "" {
		var m *big.Int
		if m, ok = oQuantity(oLookup(call, f.minus)); ok {
			v = new(big.Int).Sub(v, m)
		}
	}
	if !ok || v.Sign() < 0 {
		return f.hi
	}
	q, r := new(big.Int).QuoRem(v, big.NewInt(f.every), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	u := q.Mul(q, big.NewInt(f.per))
	u.Add(u, big.NewInt(f.base))
	switch {
	case u.Cmp(big.NewInt(f.hi)) > 0:
		return f.hi
	case u.Cmp(big.NewInt(f.lo)) < 0:
		return f.lo
	}
	return u.Int64()
}

// oTable is a cost table: exact names, "prefix*" entries (the longest
// prefix wins), and a default (refuse when refuse).
type oTable struct {
	units    map[string]int64
	formulas map[string]oFormula
	def      int64
	refuse   bool
}

// cost is a name's units over call; refused when the table refuses it.
func (t oTable) cost(name string, call json.RawMessage) (units int64, refused bool) {
	entry := func(n string) (int64, bool) {
		if f, ok := t.formulas[n]; ok {
			return f.units(call), true
		}
		u, ok := t.units[n]
		return u, ok
	}
	if len(name) > 128 { // no table lists a longer name
		if t.refuse {
			return 0, true
		}
		return t.def, false
	}
	if !strings.HasSuffix(name, "*") {
		if u, ok := entry(name); ok {
			return u, false
		}
	}
	best, found := "", false
	for n := range t.all() {
		p, wild := strings.CutSuffix(n, "*")
		if wild && strings.HasPrefix(name, p) && (!found || len(n) > len(best)) {
			best, found = n, true
		}
	}
	if found {
		u, _ := entry(best)
		return u, false
	}
	if t.refuse {
		return 0, true
	}
	return t.def, false
}

// all is every name the table lists.
func (t oTable) all() map[string]bool {
	out := map[string]bool{}
	for n := range t.units {
		out[n] = true
	}
	for n := range t.formulas {
		out[n] = true
	}
	return out
}

// oPart is a key part as keys hold it: the bytes A-Z a-z 0-9 and
// -._~!$&'()*+,;=@/ kept, every other byte %XX; past 64 bytes so
// written, "#" and the base64url of the first 16 bytes of the value's
// SHA-256.
func oPart(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=@/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > 64 {
		sum := sha256.Sum256([]byte(v))
		return "#" + base64.RawURLEncoding.EncodeToString(sum[:16])
	}
	return b.String()
}

// oCharge is one key's expected charge, and the index in the body of
// the call that opened it (-1: none, the request's key).
type oCharge struct {
	key   string
	cost  int64
	first int
}

// oMerge adds cost to key in charges, a new key last (first appearance,
// opened by call first).
func oMerge(charges []oCharge, key string, cost int64, first int) []oCharge {
	for i := range charges {
		if charges[i].key == key {
			charges[i].cost += cost
			return charges
		}
	}
	return append(charges, oCharge{key, cost, first})
}
