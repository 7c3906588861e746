package e2e

// Hostile input: key sources carrying separators, braces, control bytes,
// invalid UTF-8, huge and repeated values, and forged X-Forwarded-For
// chains, sent end to end over real HTTP (and natively for what HTTP/1.1
// cannot carry in a header). Whatever arrives, keys stay short and
// well-formed, each call stays in one hash slot, distinct values get
// distinct keys, and no value reaches another user's or rule's key.

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
	"github.com/redisrate/envoy-redis-ratelimit/wasmhost"
)

// hostileRules: every rule allows 2 per minute, so a victim's full quota
// is visible as 200, 200, 429. Rule qry matches every path, so requests to
// /h/ with ?k= match two rules and make two calls (cluster_mode).
const hostileRules = `[
	{"name":"hdr","match":{"path_prefix":"/h/"},"key":[{"source":"header","name":"x-user"},{"source":"path"}],
	 "limits":[{"name":"log","algorithm":"sliding_log","limit":2,"window":"1m"},
	           {"name":"fun","algorithm":"funnel","capacity":2,"rate":1,"period":"1m"}]},
	{"name":"qry","key":[{"source":"query","name":"k"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]},
	{"name":"ck","match":{"path_prefix":"/c"},"key":[{"source":"cookie","name":"s"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]},
	{"name":"ip","match":{"path_prefix":"/ip"},"key":[{"source":"client_ip"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]},
	{"name":"two","match":{"path_prefix":"/two"},"key":[{"source":"header","name":"x-a"},{"source":"header","name":"x-b"}],
	 "limits":[{"algorithm":"sliding_log","limit":2,"window":"1m"}]}]`

// keyParts is how many parts each hostile rule's key has.
var keyParts = map[string]int{"hdr": 2, "qry": 1, "ck": 1, "ip": 1, "two": 2}

func hostileConfig(prefix string) string {
	return fmt.Sprintf(`{"xff_trusted_hops":2,"failure_mode":"deny","circuit_breaker":{"failures":0},
		"redis":{"cluster":"redis","timeout":"2s","key_prefix":%q,"cluster_mode":true},"rules":%s}`, prefix, hostileRules)
}

// hostileValues are header values HTTP/1.1 can carry (no CR, LF or NUL),
// distinct even after the server trims surrounding whitespace, and none
// equal to the victim "other".
var hostileValues = []string{
	"other|/h/p", "other}:0", "}:0", "{other}", "other|/h/p}:0", "{hdr|other|/h/p}:0",
	"other%7C%2Fh%2Fp", "other%7C/h/p", "other:0", "other|", "|other", "|", "||",
	"{", "}", "{}", ":", "%", "%25", "#", "#AAAAAAAAAAAAAAAAAAAAAA", "other\t|x",
	"\xff\xfe", "\xc3\x28", "caf\xe9", "café",
	strings.Repeat("A", 64), strings.Repeat("A", 65), strings.Repeat("|", 21), strings.Repeat("|", 22),
	strings.Repeat("A", 64<<10), strings.Repeat("A", 64<<10-1) + "B", strings.Repeat("{", 64<<10),
}

// hostileQueries reach the query source percent-encoded, so they may hold
// any byte.
var hostileQueries = []string{
	"a\r\nb", "\r\n", "\n", "\r", "x\x00y", "}:0", "{qry|other}:0", "other|", "other%7C",
	"other&k=x", "\xff", "caf\xe9", strings.Repeat("A", 64<<10),
}

// hostileCookies are cookie values (no ';', no surrounding quotes).
var hostileCookies = []string{"other|/c", "}:0", "{ck|other}:0", "\xfe", "other%7C"}

// repeated returns n copies of a header value, or n numbered values.
func repeated(n int, value string, numbered bool) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = value
		if numbered {
			out[i] = fmt.Sprintf("%s%d", value, i)
		}
	}
	return out
}

func TestHostileInput(t *testing.T) {
	prefix := redistest.Prefix(t)
	p := redistest.StartProxy(t, server.Addr)
	rec := recordScripts(p)
	// The proxy appends its peer to X-Forwarded-For, as envoy.yaml and the
	// Istio and Higress gateways do (use_remote_address); the peer is
	// 127.0.0.2, which Envoy appends as it is (it appends its own address
	// for 127.0.0.1 only).
	tg := startBuild(t, "higress", wasmhost.Config{UseRemoteAddress: true}, hostileConfig(prefix), p.Addr)
	client := clientFrom(t, "127.0.0.2")
	sent := 0
	send := func(path string, h http.Header) int {
		t.Helper()
		req, err := http.NewRequest("GET", tg.h.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sent++
		return resp.StatusCode
	}
	want := func(status, expected int, what string) {
		t.Helper()
		if status != expected {
			t.Fatalf("%s: status %d, want %d", what, status, expected)
		}
	}

	// Header values, each once: each is a fresh key, so each is admitted.
	users := 0
	for _, v := range hostileValues {
		want(send("/h/p", http.Header{"X-User": {v}}), 200, fmt.Sprintf("x-user %.40q", v))
		users++
	}
	want(send("/h/p", http.Header{"X-User": repeated(100, "r", true)}), 200, "100 numbered x-user headers")
	want(send("/h/p", http.Header{"X-User": repeated(100, "other", false)}), 200, "100 copies of x-user: other")
	users += 2
	// Two rules on one request, with hostile values in both keys.
	want(send("/h/p?k="+url.QueryEscape("{hdr|other|/h/p}:0"), http.Header{"X-User": {"}:0|/h/p"}}), 200, "two rules")
	users++

	queries := 1 // the two-rule request above
	for _, v := range hostileQueries {
		want(send("/q?k="+url.QueryEscape(v), nil), 200, fmt.Sprintf("k=%.40q", v))
		queries++
	}
	for _, v := range hostileCookies {
		want(send("/c", http.Header{"Cookie": {"s=" + v}}), 200, fmt.Sprintf("cookie %q", v))
	}

	// X-Forwarded-For with 2 trusted hops: the 2nd address from the right
	// of what the client sent (the 3rd once the proxy appended the peer),
	// else the peer (127.0.0.2). Prepending, mapping to IPv6 or repeating
	// the header cannot move a client to a fresh key.
	spoofed := strings.Repeat("6.6.6.6, ", 50)
	for i, c := range []struct {
		xff    []string
		status int
	}{
		{[]string{"198.51.100.1, 203.0.113.9"}, 200},
		{[]string{"6.6.6.6, 198.51.100.1, 203.0.113.9"}, 200},
		{[]string{"::ffff:198.51.100.1, 203.0.113.9"}, 429},
		{[]string{spoofed + "198.51.100.1, 203.0.113.9"}, 429},
		{[]string{"198.51.100.1"}, 200},                    // shorter than 2 hops: the peer
		{[]string{"evil}:0|x, 203.0.113.9"}, 200},          // not an IP: the peer
		{[]string{"1.2.3.4:80, 203.0.113.9"}, 429},         // not an IP: the peer, 3rd time
		{[]string{"2001:db8::1, 203.0.113.9"}, 200},        // IPv6
		{repeated(100, "10.0.0.", true), 200},              // joined: 10.0.0.98
		{[]string{"1.1.1.1, 10.0.0.98", "10.0.0.99"}, 200}, // joined: 10.0.0.98 again
		{[]string{"10.0.0.98", "10.0.0.7"}, 429},           // and a third time
	} {
		want(send("/ip", http.Header{"X-Forwarded-For": c.xff}), c.status, fmt.Sprintf("xff case %d", i))
	}

	// Two-part keys: were "|" not escaped, each of these would share the
	// key of the victim (x-a: other, x-b: x|y). Each tries three times.
	attackers := [][2]string{{"other|x", "y"}, {"other%7Cx", "y"}, {"other", "x%7Cy"}, {"other|x|y", "|"}}
	for _, ab := range attackers {
		for _, status := range []int{200, 200, 429} {
			want(send("/two", http.Header{"X-A": {ab[0]}, "X-B": {ab[1]}}), status, fmt.Sprintf("x-a %q, x-b %q", ab[0], ab[1]))
		}
	}

	// The victims still have their whole quota.
	for _, v := range []struct {
		path string
		h    http.Header
	}{
		{"/h/p", http.Header{"X-User": {"other"}}},
		{"/q?k=other", nil},
		{"/c", http.Header{"Cookie": {"s=other"}}},
		{"/two", http.Header{"X-A": {"other"}, "X-B": {"x|y"}}},
	} {
		for _, status := range []int{200, 200, 429} {
			want(send(v.path, v.h), status, "victim "+v.path)
		}
	}

	tags := checkKeys(t, prefix)
	for rule, n := range map[string]int{"hdr": users + 1, "qry": queries + 1, "ck": len(hostileCookies) + 1, "two": len(attackers) + 1} {
		if len(tags[rule]) != n {
			t.Fatalf("rule %s: %d distinct keys for %d distinct inputs", rule, len(tags[rule]), n)
		}
	}
	wantIPs := map[string]bool{"198.51.100.1": true, "127.0.0.2": true, "2001%3Adb8%3A%3A1": true, "10.0.0.98": true}
	if len(tags["ip"]) != len(wantIPs) {
		t.Fatalf("client_ip keys %v, want %v", tags["ip"], wantIPs)
	}
	for _, tag := range tags["ip"] {
		if !wantIPs[strings.TrimPrefix(tag, "ip|")] {
			t.Fatalf("client_ip key {%s}, want one of %v", tag, wantIPs)
		}
	}
	calls := checkOneSlotPerCall(t, rec.args())
	t.Logf("hostile input: %d requests; %d script calls each in one hash slot; distinct keys per rule %v, one per distinct input, all well-formed and <= %d bytes",
		sent, calls, map[string]int{"hdr": len(tags["hdr"]), "qry": len(tags["qry"]), "ck": len(tags["ck"]), "ip": len(tags["ip"]), "two": len(tags["two"])}, maxKeyLen)
}

// TestHostileInputNative sends what HTTP/1.1 cannot carry in a header
// value (CR, LF, NUL, other control bytes) straight to the filter package.
func TestHostileInputNative(t *testing.T) {
	prefix := redistest.Prefix(t)
	tg := startNative(t, hostileConfig(prefix), server.Addr)
	values := []string{"a\r\nb", "\r\n", "a\nb", "a\rb", "\x00", "a\x00b", "\x7f", "\x01\x02", "other\r\nx-user: other",
		"}:0\r\n", strings.Repeat("\n", 64<<10)}
	for _, v := range values {
		expect(t, tg.send(t, map[string]string{":path": "/h/p", "x-user": v}), 200)
	}
	for _, status := range []int{200, 200, 429} {
		expect(t, tg.send(t, map[string]string{":path": "/h/p", "x-user": "other"}), status)
	}
	tags := checkKeys(t, prefix)
	if len(tags["hdr"]) != len(values)+1 {
		t.Fatalf("%d distinct keys for %d distinct inputs", len(tags["hdr"]), len(values)+1)
	}
}

// maxKeyLen bounds every key: the README promises about 700 bytes at most.
const maxKeyLen = 800

var (
	// keyShape is <prefix>{<rule>|<parts>}:<limit index or block>, with no
	// other brace anywhere.
	keyShape = regexp.MustCompile(`^([^{}]*)\{([^{}]*)\}:([0-9]+|block)$`)
	// partShape is a percent-encoded part or a hashed one.
	partShape = regexp.MustCompile(`^(?:(?:[A-Za-z0-9\-._~!$&'()*+,;=@/]|%[0-9A-F]{2})*|#[A-Za-z0-9_-]{22})$`)
)

// checkKeys checks every key under prefix for length and shape, and
// returns the distinct hash tags (without braces) by rule.
func checkKeys(t *testing.T, prefix string) map[string][]string {
	t.Helper()
	keys, err := server.Client.Strings("KEYS", prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	tags := map[string][]string{}
	for _, k := range keys {
		if len(k) > maxKeyLen {
			t.Fatalf("key of %d bytes: %.80q...", len(k), k)
		}
		m := keyShape.FindStringSubmatch(k)
		if m == nil || m[1] != prefix {
			t.Fatalf("malformed key %q", k)
		}
		parts := strings.Split(m[2], "|")
		if len(parts)-1 != keyParts[parts[0]] {
			t.Fatalf("key %q: %d parts, want %d", k, len(parts)-1, keyParts[parts[0]])
		}
		for _, part := range parts[1:] {
			if !partShape.MatchString(part) {
				t.Fatalf("key %q: part %q is neither encoded nor hashed", k, part)
			}
		}
		if !seen[m[2]] {
			seen[m[2]] = true
			tags[parts[0]] = append(tags[parts[0]], m[2])
		}
	}
	return tags
}

// hashTag is what Redis Cluster hashes of a key: the bytes between the
// first '{' and the first '}' after it, when that is not empty.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// checkOneSlotPerCall checks that the keys of each recorded call share one
// hash tag, and returns the number of calls.
func checkOneSlotPerCall(t *testing.T, calls [][]string) int {
	t.Helper()
	if len(calls) == 0 {
		t.Fatal("no script calls recorded")
	}
	for _, args := range calls {
		var numkeys int
		if _, err := fmt.Sscan(args[2], &numkeys); err != nil || 3+numkeys > len(args) || numkeys < 2 {
			t.Fatalf("bad call %.200q", args)
		}
		keys := args[3 : 3+numkeys]
		for _, k := range keys[1:] {
			if hashTag(k) != hashTag(keys[0]) {
				t.Fatalf("one call spans hash tags %q and %q", hashTag(keys[0]), hashTag(k))
			}
		}
	}
	return len(calls)
}
