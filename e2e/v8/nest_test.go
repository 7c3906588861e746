package v8

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/internal/deepjson"
	"github.com/redisrate/envoy-redis-ratelimit/internal/redistest"
)

// nestRules: a bearer token's claim keys rule jwt, denying a request
// whose claim is missing; rule body reserves max_tokens of the request's
// JSON body (7 without it, or when it is too deep to read: on_unreadable_body
// missing, so the deep response is read too), besides the body's size in
// input tokens (bodyReserve), and settles the usage of the JSON or
// event-stream response.
const nestRules = `"rules":[
	{"name":"jwt","match":{"path_prefix":"/jwt"},"key":[{"source":"jwt_claim","name":"sub"}],"on_missing_key":"deny",
	 "limits":[{"algorithm":"sliding_log","limit":1000,"window":"1m"}]},
	{"name":"body","match":{"path_prefix":"/body"},"key":[{"source":"header","name":"x-user"}],
	 "limits":[{"algorithm":"sliding_counter","limit":10000000,"window":"1m"}],
	 "on_unreadable_body":"missing","response_cost":{"usage":"openai_chat","reserve":{"body":"max_tokens","default":7}}}]}`

// bodyReserve is what rule body reserves for a request body: out output
// tokens and its size in input tokens, 4 bytes a token, rounded up.
func bodyReserve(body string, out int) int { return out + (len(body)+3)/4 }

// bodyLeft is how the RateLimit header of a body request, the first of
// its key, begins (a sliding counter's t depends on the window's phase).
func bodyLeft(body string, out int) string {
	return fmt.Sprintf(`"body";r=%d;`, 10000000-bodyReserve(body, out))
}

// nestUsage is a response's usage: 1 + 2 tokens.
const nestUsage = `"usage":{"prompt_tokens":1,"completion_tokens":2}`

// nestMemoryGrowth bounds how much a VM's linear memory may grow over the
// deep requests, beyond what shallow requests of the same sizes took.
const nestMemoryGrowth = 2 << 20

// In V8, with Envoy's flags, neither build traps on JSON nested up to
// 500,000 deep (1 MB) in a bearer token, a request body, a JSON response
// or an event-stream event, in arrays, objects or both: a deep token's
// claim is missing (on_missing_key deny: 400), a deep request body
// reserves the default (7), and a deep response's usage is missing. Each
// shallow request of the same size before them is read as usual, and the
// deep ones grow the VM's memory by less than nestMemoryGrowth.
func TestV8DeepJSON(t *testing.T) {
	for _, m := range modules {
		t.Run(m.name, func(t *testing.T) {
			srv := redistest.Start(t)
			var s spec
			m.setup(t, &s, srv.Addr, redistest.Prefix(t), "1m")
			s.PluginConfig = s.PluginConfig[:strings.Index(s.PluginConfig, `"rules":`)] + nestRules
			type want struct {
				status int
				header string // RateLimit
			}
			var wants []want
			add := func(r request, w want) { s.Requests, wants = append(s.Requests, r), append(wants, w) }
			user := 0
			bodyReq := func(reqBody string, sse bool, respBody string) request {
				user++
				r := get(fmt.Sprintf("u%d", user))
				r.Headers[1][1] = "/body"
				r.Body = &reqBody
				r.Response = jsonResponse(respBody)
				if sse {
					r.Response = sseResponse("data: " + respBody + "\n\ndata: [DONE]\n\n")
				}
				return r
			}
			jwtReq := func(payload string) request {
				r := get("-", [2]string{"authorization", deepjson.Bearer(payload)})
				r.Headers[1][1] = "/jwt"
				return r
			}
			// Shallow, as large as the deepest: read as usual.
			pad := `"pad":"` + strings.Repeat("p", 1<<20-100) + `"`
			const shallow = 2
			refunds := 0 // what the shallow responses' settles give back: each used 3
			for i := range shallow {
				add(jwtReq(fmt.Sprintf(`{"sub":"x%d","z":[1]}`, i)), want{200, `"jwt";r=999;t=60`})
				for _, b := range []string{`{"max_tokens":5,` + pad + `}`, `{"max_tokens":5}`} {
					add(bodyReq(b, b == `{"max_tokens":5}`, `{`+nestUsage+`,`+pad+`}`), want{200, bodyLeft(b, 5)})
					refunds += bodyReserve(b, 5) - 3
				}
			}
			warm := len(s.Requests)
			deep := 0
			for _, shape := range deepjson.Shapes {
				for _, depth := range []int{1000, 3000, 9000, 100_000} {
					add(jwtReq(`{"sub":"x","z":`+deepjson.Nest(shape, depth, "0")+`}`), want{400, ""})
				}
				for _, depth := range []int{1000, 10_000, 100_000, deepjson.DepthFor(shape, 1<<20-100)} {
					doc := deepjson.Nest(shape, depth, "0")
					b := `{"max_tokens":5,"z":` + doc + `}`
					add(bodyReq(b, false, `{`+nestUsage+`,"z":`+doc+`}`), want{200, bodyLeft(b, 7)})
					add(bodyReq(`{"max_tokens":5}`, true, `{`+nestUsage+`,"z":`+doc+`}`), want{200, bodyLeft(`{"max_tokens":5}`, 5)})
					deep += 2
				}
			}
			r := runHost(t, s)
			mustSucceed(t, r)
			if len(r.responses) != len(wants) {
				t.Fatalf("%d responses, want %d", len(r.responses), len(wants))
			}
			for _, e := range r.responses {
				w := wants[e.Index]
				got := e.header("ratelimit")
				if e.Status != w.status || !strings.HasPrefix(got, w.header) || w.header == "" && got != "" || w.status == 400 && !strings.Contains(e.Body, "missing_key") {
					t.Errorf("request %d: status %d, RateLimit %q, body %q; want %d, %q...", e.Index, e.Status, got, e.Body, w.status, w.header)
				}
			}
			if got := r.end.Metrics["ratelimit.rule.body.usage_missing"]; got != float64(deep) {
				t.Errorf("usage_missing = %v, want %d (every deep response)", got, deep)
			}
			if got := r.end.Metrics["ratelimit.rule.body.units_refunded"]; got != float64(refunds) {
				t.Errorf("units_refunded = %v, want %d (the shallow responses' reservations, less the 3 each used)", got, refunds)
			}
			before := r.responses[warm-1].MemoryBytes
			t.Logf("V8 %s: %d requests in %.0f ms; linear memory %d KiB after the shallow ones, %d KiB at the end",
				m.name, len(wants), r.end.RequestsMs, before>>10, r.end.MemoryBytes>>10)
			if grew := r.end.MemoryBytes - before; grew >= nestMemoryGrowth {
				t.Errorf("linear memory grew by %d KiB over the deep requests, want < %d KiB", grew>>10, nestMemoryGrowth>>10)
			}
		})
	}
}

func jsonResponse(body string) *response {
	return &response{Headers: [][2]string{{":status", "200"}, {"content-type", "application/json"}}, Chunks: chunks(body)}
}

func sseResponse(body string) *response {
	return &response{Headers: [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}}, Chunks: chunks(body)}
}

// chunks cuts body into 256 KiB chunks, as a proxy hands it on.
func chunks(body string) []string {
	var out []string
	for len(body) > 256<<10 {
		out, body = append(out, body[:256<<10]), body[256<<10:]
	}
	return append(out, body)
}
