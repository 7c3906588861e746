package filter

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// genBatch writes a random JSON-RPC body for the property test: one
// message (as an object or an array of one), or an array of 2 to 200.
// One batch in eight is hostile: its tools/call may name an unknown tool,
// none, or a number, and one message in it may not be JSON-RPC.
func genBatch(r *rand.Rand) string {
	n := 1
	switch p := r.IntN(10); {
	case p < 4:
		n = 2 + r.IntN(19)
	case p < 7:
		n = 21 + r.IntN(180)
	}
	hostile := r.IntN(8) == 0
	if n == 1 && r.IntN(2) == 0 {
		return genMessage(r, 0, hostile)
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteString([]string{",", ", ", ",\n "}[r.IntN(3)])
		}
		b.WriteString(genMessage(r, i, hostile))
	}
	b.WriteByte(']')
	return b.String()
}

// genMethods are the methods a message calls, by weight.
var genMethods = []struct {
	name   string
	weight int
}{
	{"eth_call", 10}, {"eth_getBalance", 8}, {"eth_getLogs", 5}, {"eth_chainId", 5}, {"eth_blockNumber", 6},
	{"net_version", 4}, {"debug_traceCall", 1}, {"ping", 4}, {"notifications/initialized", 3},
	{"tools/call", 7}, {"initialize", 2}, {"web3_clientVersion", 3},
	// A name whose key part is percent-encoded, one hashed (past 64
	// bytes once encoded) under debug_*, one past 128 bytes, which no
	// table lists.
	{"débug size", 1}, {"debug_" + strings.Repeat("x", 70), 1}, {strings.Repeat("m", 130), 1},
}

// genTools are the tools a tools/call names, by weight; translate is
// rare, so that few batches name all five (tools' max_keys is 4).
var genTools = []struct {
	name   string
	weight int
}{{"search", 50}, {"deep_research", 6}, {"fetch_url", 20}, {"fetch_page", 20}, {"translate", 2}}

func pick[T any](r *rand.Rand, items []T, weight func(T) int) T {
	total := 0
	for _, it := range items {
		total += weight(it)
	}
	k := r.IntN(total)
	for _, it := range items {
		if k -= weight(it); k < 0 {
			return it
		}
	}
	return items[len(items)-1]
}

// genMessage writes message i: a request, a notification or a response.
func genMessage(r *rand.Rand, i int, hostile bool) string {
	if r.IntN(25) == 0 {
		return `{"jsonrpc":"2.0","id":` + genID(r, i) + `,"result":{"ok":true}}`
	}
	if hostile && r.IntN(60) == 0 {
		return []string{`{"jsonrpc":"2.0","id":1,"method":7}`, `{"jsonrpc":"1.0","id":1,"method":"eth_call"}`, `[]`, `{"id":2}`}[r.IntN(4)]
	}
	method := pick(r, genMethods, func(m struct {
		name   string
		weight int
	}) int {
		return m.weight
	}).name
	fields := []string{`"jsonrpc":"2.0"`, `"method":"` + genEscape(r, method) + `"`}
	if method != "notifications/initialized" && r.IntN(8) != 0 {
		fields = append(fields, `"id":`+genID(r, i))
	}
	switch method {
	case "eth_getLogs":
		fields = append(fields, `"params":[{`+genRange(r)+`}]`)
	case "tools/call":
		fields = append(fields, `"params":{`+genToolName(r, hostile)+`"arguments":{"q":"x"}}`)
	case "eth_call":
		fields = append(fields, `"params":[{"to":"0xabc","data":"0x"},"latest"]`)
	}
	r.Shuffle(len(fields), func(a, b int) { fields[a], fields[b] = fields[b], fields[a] })
	if r.IntN(20) == 0 { // a duplicate member before the one that counts
		fields = append([]string{[]string{`"method":"eth_chainId"`, `"id":"dup"`}[r.IntN(2)]}, fields...)
	}
	msg := "{" + strings.Join(fields, ",") + "}"
	if r.IntN(10) == 0 { // white space between the tokens
		msg = strings.ReplaceAll(strings.ReplaceAll(msg, `":`, `" : `), `,"`, ` ,
	"`)
	}
	return msg
}

// genID is an id: a number, a string, null, 2^60 as written, or a
// number with a fraction.
func genID(r *rand.Rand, i int) string {
	switch r.IntN(8) {
	case 0:
		return `"a` + strconv.Itoa(i) + `"`
	case 1:
		return "null"
	case 2:
		return "1152921504606846976"
	case 3:
		return "1.50"
	case 4:
		return `"q\"` + strconv.Itoa(i) + `\u00e9"`
	}
	return strconv.Itoa(i)
}

// genRange is eth_getLogs' fromBlock and toBlock, each hex, decimal,
// absent, "latest", past 2^53 or fractional.
func genRange(r *rand.Rand) string {
	value := func() string {
		v := r.IntN(3000)
		switch r.IntN(10) {
		case 0:
			return ""
		case 1:
			return `"latest"`
		case 2:
			return `"0x20000000000001"` // 2^53 + 1
		case 3:
			return []string{"12.5", "1e3", "-0", "0", `"0x0001"`, `"0X10"`, `"0x"`}[r.IntN(7)]
		case 4, 5:
			return strconv.Itoa(v)
		}
		return `"0x` + strconv.FormatInt(int64(v), 16) + `"`
	}
	var parts []string
	if v := value(); v != "" {
		parts = append(parts, `"fromBlock":`+v)
	}
	if v := value(); v != "" {
		parts = append(parts, `"toBlock":`+v)
	}
	return strings.Join(parts, ",")
}

// genToolName is params.name and a comma, or nothing.
func genToolName(r *rand.Rand, hostile bool) string {
	if hostile {
		switch r.IntN(12) {
		case 0:
			return `"name":"rm_rf",`
		case 1:
			return ""
		case 2:
			return `"name":7,`
		}
	}
	return `"name":"` + genEscape(r, pick(r, genTools, func(t struct {
		name   string
		weight int
	}) int {
		return t.weight
	}).name) + `",`
}

// genEscape writes s as JSON string text, one time in ten with one of
// its ASCII letters escaped (\u0063 for c): the same name to a reader.
func genEscape(r *rand.Rand, s string) string {
	if r.IntN(10) != 0 {
		return s
	}
	for range 8 {
		if i := r.IntN(len(s)); s[i] >= 'a' && s[i] <= 'z' {
			return s[:i] + `\u00` + strconv.FormatInt(int64(s[i]), 16) + s[i+1:]
		}
	}
	return s
}
