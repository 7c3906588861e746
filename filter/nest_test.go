package filter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/filtertest"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
	"github.com/redisrate/envoy-redis-ratelimit/filter/jwt"
	"github.com/redisrate/envoy-redis-ratelimit/filter/usage"
	"github.com/redisrate/envoy-redis-ratelimit/filter/webdis"
	"github.com/redisrate/envoy-redis-ratelimit/internal/deepjson"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// nestDepths are hostile depths: one past the bound, the 9,000,
// and more. In a bearer token, the first two meet jsonbound; the others
// make tokens longer than jwt.MaxToken, refused before they are decoded.
var nestDepths = []int{jsonbound.MaxDepth + 1, 1000, 9000, 100_000}

// A bearer token nested deeper than jsonbound.MaxDepth, or longer than
// jwt.MaxToken, has no claims; one within both has.
func TestDeepBearerTokenIsMissing(t *testing.T) {
	for _, shape := range deepjson.Shapes {
		for _, depth := range nestDepths {
			// The payload object is one level more.
			auth := deepjson.Bearer(`{"sub":"x","z":` + deepjson.Nest(shape, depth-1, "0") + `}`)
			if v, ok := bearerClaim(auth, "sub"); ok {
				t.Errorf("%s %d deep: claim %q found", shape, depth, v)
			}
		}
		auth := deepjson.Bearer(`{"sub":"x","z":` + deepjson.Nest(shape, jsonbound.MaxDepth-1, "0") + `}`)
		if v, ok := bearerClaim(auth, "sub"); !ok || v != "x" {
			t.Errorf("%s 64 deep: claim %q %v, want x", shape, v, ok)
		}
	}
	pad := func(n int) string { // a token of n bytes
		payload := `{"sub":"x","p":"` + strings.Repeat("p", (n-len("e30.")-len(".sig"))*3/4-len(`{"sub":"x","p":""}`)) + `"}`
		return deepjson.Bearer(payload)
	}
	if a := pad(jwt.MaxToken); len(a) != len("Bearer ")+jwt.MaxToken {
		t.Fatalf("pad: a token of %d bytes", len(a)-len("Bearer "))
	}
	if v, ok := bearerClaim(pad(jwt.MaxToken), "sub"); !ok || v != "x" {
		t.Errorf("a token of %d bytes: claim %q %v, want x", jwt.MaxToken, v, ok)
	}
	if v, ok := bearerClaim(pad(jwt.MaxToken+4), "sub"); ok {
		t.Errorf("a token of %d bytes: claim %q found", jwt.MaxToken+4, v)
	}
}

// A request's token is decoded once, at its first jwt_claim part, for
// all of them; the next request decodes its own into the same buffer.
func TestBearerPayloadOncePerRequest(t *testing.T) {
	parts := keyParts(t, `[{"source":"jwt_claim","name":"sub"},{"source":"jwt_claim","name":"org"}]`)
	r := &request{headers: headermap.Append(nil, [][2]string{{"authorization", bearer(`{"sub":"alice","org":"acme"}`)}}),
		source: filtertest.NewStream("10.0.0.1:5000", nil)}
	if v, ok := r.keyPartValue(parts[0], 0); v != "alice" || !ok {
		t.Fatalf("sub: %q %v", v, ok)
	}
	// The header changing now shows the payload is not read again.
	r.headers = headermap.Append(nil, [][2]string{{"authorization", bearer(`{"sub":"bob","org":"evil"}`)}})
	if v, ok := r.keyPartValue(parts[1], 0); v != "acme" || !ok {
		t.Fatalf("org: %q %v, want acme from the token already decoded", v, ok)
	}
	r.reset(r.source)
	r.headers = headermap.Append(nil, [][2]string{{"authorization", bearer(`{"sub":"bob","org":"evil"}`)}})
	if v, ok := r.keyPartValue(parts[0], 0); v != "bob" || !ok {
		t.Fatalf("next request's sub: %q %v", v, ok)
	}
	auth, _ := r.header("authorization")
	if n := testing.AllocsPerRun(100, func() {
		r.bearer.json, r.bearer.ok = jwt.AppendPayload(r.bearer.json[:0], auth)
		jwt.Claim(r.bearer.json, "sub")
	}); n != 0 {
		t.Errorf("%v allocations decoding a token into the buffer of an earlier one, want 0", n)
	}
}

// With on_missing_key deny, a deep token is denied at once, as any
// request without the claim: no call, no trap.
func TestDeepBearerTokenDenied(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[{"name":"u","key":[{"source":"jwt_claim","name":"sub"}],
		"on_missing_key":"deny","limits":[{"algorithm":"sliding_log","limit":10,"window":"1m"}]}]}`)
	for _, shape := range deepjson.Shapes {
		fs := filtertest.NewStream("192.0.2.7:40000", nil)
		st := h.plugin.NewStream(fs)
		auth := deepjson.Bearer(`{"sub":"x","z":` + deepjson.Nest(shape, 9000, "0") + `}`)
		st.OnRequestHeaders([][2]string{{":method", "GET"}, {":path", "/"}, {"authorization", auth}})
		if fs.Status != 400 || !strings.Contains(fs.Body, "missing_key") || h.plugin.Pending() != 0 {
			t.Errorf("%s: status %d, body %q, %d calls; want a local 400 for the missing key", shape, fs.Status, fs.Body, h.plugin.Pending())
		}
		st.OnDone()
	}
}

// A JSON body or an event nested deeper than jsonbound.MaxDepth, up to
// 1 MB, has no usage, even beside a usage field; within the bound it has.
func TestDeepUsageIsMissing(t *testing.T) {
	const usageField = `"usage":{"prompt_tokens":1,"completion_tokens":2}`
	var u usage.Scanner
	f, _ := usage.Preset("openai_chat")
	for _, shape := range deepjson.Shapes {
		for _, depth := range append(nestDepths, deepjson.DepthFor(shape, 1<<20)) {
			doc := `{` + usageField + `,"z":` + deepjson.Nest(shape, depth-1, "0") + `}`
			if n, ok := usageScan(&u, f, false, []byte(doc)); ok {
				t.Errorf("JSON, %s %d deep: usage %d found", shape, depth, n)
			}
			if n, ok := usageScan(&u, f, true, []byte("data: "+doc+"\n\n")); ok {
				t.Errorf("SSE, %s %d deep: usage %d found", shape, depth, n)
			}
		}
		doc := `{` + usageField + `,"z":` + deepjson.Nest(shape, jsonbound.MaxDepth-1, "0") + `}`
		if n, ok := usageScan(&u, f, false, []byte(doc)); !ok || n != 3 {
			t.Errorf("JSON, %s 64 deep: usage %d %v, want 3", shape, n, ok)
		}
		if n, ok := usageScan(&u, f, true, []byte("data: "+doc+"\n\n")); !ok || n != 3 {
			t.Errorf("SSE, %s 64 deep: usage %d %v, want 3", shape, n, ok)
		}
	}
}

// A request body nested deeper than jsonbound.MaxDepth is denied (400),
// or under on_unreadable_body: missing reserves the default estimate; one
// within the bound reserves its max_tokens; each besides its size in input
// tokens (4 bytes a token).
func TestDeepRequestBodyTakesDefault(t *testing.T) {
	reserve := strings.Replace(bodyReserve, `"limit":1000,`, `"limit":1000000,`, 1)
	missing := strings.Replace(reserve, `"response_cost"`, `"on_unreadable_body":"missing","response_cost"`, 1)
	for _, cfg := range []string{reserve, missing} {
		h := newFakeHost(t, cfg)
		for _, tc := range []struct {
			shape deepjson.Shape
			depth int
			out   int
		}{
			{deepjson.Array, jsonbound.MaxDepth, 300},
			{deepjson.Array, jsonbound.MaxDepth + 1, 100},
			{deepjson.Object, 10_000, 100},
			{deepjson.Mixed, 100_000, 100},
			{deepjson.Array, 500_000, 100},
		} {
			body := `{"max_tokens":300,"z":` + deepjson.Nest(tc.shape, tc.depth-1, "0") + `}`
			want := fmt.Sprintf(`"tpm";r=%d;t=60`, 1000000-tc.out-(len(body)+3)/4)
			fs := filtertest.NewStream("192.0.2.7:40000", nil)
			st := h.plugin.NewStream(fs)
			st.SetBodyFollows(true)
			pairs := append([][2]string{}, bodyPairs...)
			pairs[3][1] = string(tc.shape) + strings.Repeat("x", tc.depth%97) // a key per case
			st.OnRequestHeaders(pairs)
			st.OnRequestBody([]byte(body))
			h.Pump()
			if deep := tc.depth > jsonbound.MaxDepth; cfg == reserve && deep {
				if fs.Status != 400 || !strings.Contains(string(fs.Body), `"reason":"nested deeper than 64"`) {
					t.Errorf("%s %d deep: %d %s, want 400 nested deeper than 64", tc.shape, tc.depth, fs.Status, fs.Body)
				}
				st.OnDone()
				continue
			}
			fs.Upstream = map[string]string{":status": "200"}
			st.OnResponseHeaders(true)
			if got := fs.Response["ratelimit"]; got != want {
				t.Errorf("%s %d deep: ratelimit %q, want %q", tc.shape, tc.depth, got, want)
			}
			st.OnDone()
		}
	}
}

// A Webdis reply nested deeper than jsonbound.MaxDepth is an error, and
// so is a configuration.
func TestDeepWebdisReplyAndConfig(t *testing.T) {
	if _, err := webdis.Reply(nil, []byte(`{"EVALSHA":`+deepjson.Nest(deepjson.Array, 100_000, "1")+`}`)); err == nil {
		t.Error("a deep Webdis reply was read")
	}
	if _, err := config.Parse([]byte(deepjson.Nest(deepjson.Object, 100_000, "1"))); err == nil || !strings.Contains(err.Error(), "deeper than 64") {
		t.Errorf("a deep configuration: %v", err)
	}
}

// usageScan reads body whole with u, under a 2 MB cap.
func usageScan(u *usage.Scanner, f *usage.Fields, sse bool, body []byte) (int64, bool) {
	u.Start(f, sse, 2<<20)
	u.Write(body)
	return u.Finish()
}
