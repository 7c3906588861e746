package v8

import (
	"fmt"
	"strings"
)

var benchScenarios = []struct {
	name, status, what string
	redisCalls         float64
}{
	{"admitted", "200", "admitted (canned Redis reply)", 1},
	{"denied", "429", "denied by Redis", 1},
	{"cached", "429", "denied from the deny cache", 0},
	{"tiered", "200", "admitted, tier and override read from Redis", 1},
	{"leased", "200", "admitted from a lease (one call per batch of 100)", 0.01},
	{"held", "200", "held by a throttle, let through at a tick", 1},
	{"llm", "200", "LLM stream, response_cost: settles (refund)", 2},
	{"llm_exact", "200", "LLM stream, response_cost: cost = reservation", 1},
	{"llm_priced", "200", "LLM stream, response_cost priced per model (refund)", 2},
	{"body_key", "200", "admitted, keyed on the JSON body's model", 1},
	{"jsonrpc_batch", "200", "admitted, a JSON-RPC batch of 100 calls over 8 methods", 1},
}

// The LLM streams: 100 token events in 4 KiB chunks, whose usage (prompt
// plus completion tokens) is 250 for "llm", half the reservation of 500,
// so that each request settles a refund, and 500 for "llm_exact", so that
// none does; "llm_priced" is "llm" priced per model (pricedConfig). The scan streams Bytes of events with the usage of
// "llm_exact": reading them sends nothing.
const llmReserve = 500

var benchStreams = map[string]sseSpec{
	"llm":        {Events: 100, Chunk: 4096, PromptTokens: 150, CompletionTokens: 100},
	"llm_exact":  {Events: 100, Chunk: 4096, PromptTokens: 400, CompletionTokens: 100},
	"llm_priced": {Events: 100, Chunk: 4096, PromptTokens: 150, CompletionTokens: 100},
}

func benchScan(bytes, requests, rounds, warmup int) *scanSpec {
	return &scanSpec{sseSpec: sseSpec{Bytes: bytes, PromptTokens: 400, CompletionTokens: 100},
		Chunks: []int{4 << 10, 16 << 10}, Requests: requests, Rounds: rounds, Warmup: warmup}
}

// benchConfig is one rule of two limits keyed by x-user, as a gateway
// might limit an API per user: a funnel per second and a sliding counter
// per hour. tight makes the hourly limit 1, so the second request is
// denied; cache keeps the deny cache on (the default) or turns it off.
func benchConfig(redis, prefix string, tight, cache bool) string {
	hourly := 100_000_000
	if tight {
		hourly = 1
	}
	dc := ""
	if !cache {
		dc = `,"deny_cache":{"max_keys":0}`
	}
	return fmt.Sprintf(`{"redis":{%s,"timeout":"5s","key_prefix":%q}%s,
		"rules":[{"name":"bench","key":[{"source":"header","name":"x-user"}],
		"limits":[{"name":"per-second","algorithm":"funnel","capacity":1000000,"rate":1000000,"period":"1s"},
		{"name":"per-hour","algorithm":"sliding_counter","limit":%d,"window":"1h"}]}]}`, redis, prefix, dc, hourly)
}

// llmConfig is an LLM gateway's rule: tokens per user, a funnel per
// minute and a sliding counter per day, charged what the response's usage
// says (OpenAI chat completions), reserving llmReserve at the request.
// Without responseCost, the same rule charges 1 per request and ignores
// the response.
func llmConfig(redis, prefix string, responseCost bool) string {
	rc := ""
	if responseCost {
		rc = fmt.Sprintf(`,"response_cost":{"usage":"openai_chat","reserve":%d}`, llmReserve)
	}
	return fmt.Sprintf(`{"redis":{%s,"timeout":"5s","key_prefix":%q},
		"rules":[{"name":"llm","key":[{"source":"header","name":"x-user"}],
		"limits":[{"name":"tokens-per-minute","algorithm":"funnel","capacity":1000000,"rate":1000000,"period":"1m"},
		{"name":"tokens-per-day","algorithm":"sliding_counter","limit":10000000,"window":"24h"}]%s}]}`, redis, prefix, rc)
}

// tieredConfig is benchConfig's rule with plans: the tier and an
// override are read from Redis in the deciding call (a key with neither,
// so the default tier decides).
func tieredConfig(redis, prefix string) string {
	limits := func(perSecond, perHour int) string {
		return fmt.Sprintf(`[{"name":"per-second","algorithm":"funnel","capacity":%d,"rate":%d,"period":"1s"},
		{"name":"per-hour","algorithm":"sliding_counter","limit":%d,"window":"1h"}]`, perSecond, perSecond, perHour)
	}
	return fmt.Sprintf(`{"redis":{%s,"timeout":"5s","key_prefix":%q},
		"rules":[{"name":"bench","key":[{"source":"header","name":"x-user"}],"overrides":true,
		"tiers":{"from":"redis","default":"free","limits":{"free":%s,"pro":%s}}}]}`,
		redis, prefix, limits(1000000, 100000000), limits(2000000, 200000000))
}

// leasedConfig is benchConfig's rule leased: every key is hot, and each
// call takes a batch of 100 (the limits are far from full), spent for up
// to an hour.
func leasedConfig(redis, prefix string) string {
	return strings.Replace(benchConfig(redis, prefix, false, true), `"window":"1h"}]`,
		`"window":"1h"}],"lease":{"max_hold":"1h","max_batch":100,"hot_rate":1}`, 1)
}

// heldConfig is a throttled funnel of one request per 100ms on x-user,
// held up to 100ms: the second of two requests within 100ms is held, a
// gap even a busy machine keeps between two recorded requests.
func heldConfig(redis, prefix string) string {
	return fmt.Sprintf(`{"redis":{%s,"timeout":"5s","key_prefix":%q},
		"rules":[{"name":"bench","key":[{"source":"header","name":"x-user"}],
		"limits":[{"name":"per-100ms","algorithm":"funnel","capacity":1,"rate":10,"period":"1s"}],
		"throttle":{"max_delay":"100ms"}}]}`, redis, prefix)
}

// pricedConfig is llmConfig's rule with its tokens priced in
// micro-dollars by a table of 10 models: the stream's model
// (gpt-4o-2024-08-06) takes the gpt-4o-* prefix's prices. Its usage costs
// 150 × 2.50 + 100 × 10 = 1,375 against a reservation of 500 output
// tokens at the table's dearest output price, 5,000: each request settles
// a refund, as "llm" does.
func pricedConfig(redis, prefix string) string {
	return strings.Replace(llmConfig(redis, prefix, true), fmt.Sprintf(`"reserve":%d}`, llmReserve),
		fmt.Sprintf(`"reserve":%d,"price":{"unit":"micro_usd","default":"refuse","models":{
		"gpt-4o":{"input":"2.50","cached_input":"1.25","output":"10"},
		"gpt-4o-*":{"input":"2.50","cached_input":"1.25","output":"10"},
		"gpt-4o-mini":{"input":"0.15","cached_input":"0.075","output":"0.60"},
		"gpt-4.1":{"input":"2","cached_input":"0.50","output":"8"},
		"gpt-4.1-mini":{"input":"0.40","cached_input":"0.10","output":"1.60"},
		"gpt-4.1-nano":{"input":"0.10","cached_input":"0.025","output":"0.40"},
		"o3":{"input":"2","cached_input":"0.50","output":"8"},
		"o3-mini":{"input":"1.10","cached_input":"0.55","output":"4.40"},
		"o4-mini":{"input":"1.10","cached_input":"0.275","output":"4.40"},
		"gpt-5":{"input":"1.25","cached_input":"0.125","output":"10"}}}}`, llmReserve), 1)
}

// bodyKeyConfig is benchConfig's rule (admitted) keyed on the request
// body's model instead of x-user: the headers go on, the body is held
// and the one call is sent at its end.
func bodyKeyConfig(redis, prefix string) string {
	return strings.Replace(benchConfig(redis, prefix, false, true), `{"source":"header","name":"x-user"}`,
		`{"source":"body","path":"model"}`, 1)
}

// benchBodies are the requests with a body, per scenario: an OpenAI chat
// completion request of about 600 bytes.
var benchBodies = map[string]benchRequest{
	"body_key": {Headers: [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "api.example.com"},
		{":scheme", "https"}, {"user-agent", "bench/1.0"}, {"accept", "application/json"}, {"content-type", "application/json"},
		{"content-length", fmt.Sprint(len(chatBody))}, {"x-user", "alice"}},
		Body: chatBody},
	"jsonrpc_batch": {Headers: [][2]string{{":method", "POST"}, {":path", "/rpc"}, {":authority", "api.example.com"},
		{":scheme", "https"}, {"user-agent", "bench/1.0"}, {"accept", "application/json"}, {"content-type", "application/json"},
		{"content-length", fmt.Sprint(len(rpcBatchBody))}, {"x-user", "alice"}},
		Body: rpcBatchBody},
}

// rpcBatchCalls is the calls of rpcBatchBody.
const rpcBatchCalls = 100

// rpcBatchBody is an Ethereum client's batch of rpcBatchCalls calls over
// 8 methods in turn, about 9 KiB.
var rpcBatchBody = func() string {
	params := []struct{ method, params string }{
		{"eth_call", `[{"to":"0x6b175474e89094c44da98b954eedeac495271d0f","data":"0x70a08231000000000000000000000000"},"latest"]`},
		{"eth_getBalance", `["0xd8da6bf26964af9d7eed9e03e53415d37aa96045","latest"]`},
		{"eth_blockNumber", `[]`},
		{"eth_getLogs", `[{"fromBlock":"0x1312d00","toBlock":"0x13130d0","address":"0x6b175474e89094c44da98b954eedeac495271d0f"}]`},
		{"eth_chainId", `[]`},
		{"eth_getTransactionCount", `["0xd8da6bf26964af9d7eed9e03e53415d37aa96045","latest"]`},
		{"eth_gasPrice", `[]`},
		{"eth_getCode", `["0x6b175474e89094c44da98b954eedeac495271d0f","latest"]`},
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range rpcBatchCalls {
		if i > 0 {
			b.WriteByte(',')
		}
		p := params[i%len(params)]
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i+1, p.method, p.params)
	}
	return b.String() + "]"
}()

// rpcBatchConfig is a JSON-RPC provider's rule: compute units per user
// and method (8 keys for rpcBatchBody) from a methods table with a block
// range formula, in a token bucket far from empty.
func rpcBatchConfig(redis, prefix string) string {
	return fmt.Sprintf(`{"redis":{%s,"timeout":"5s","key_prefix":%q},
		"rules":[{"name":"bench","key":[{"source":"header","name":"x-user"},{"source":"call","path":"method"}],
		"jsonrpc":{"max_calls":200},
		"cost":{"methods":{"eth_chainId":0,"eth_blockNumber":10,"eth_call":26,"eth_get*":20,
			"eth_getLogs":{"param":"params.0.toBlock","minus":"params.0.fromBlock","base":60,"per":1,"every":100,"min":60,"max":600}},
			"default":10},
		"limits":[{"name":"cups","algorithm":"token_bucket","capacity":100000000,"refill":1000000,"period":"1s"}]}]}`, redis, prefix)
}

const chatBody = `{"model":"gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant that answers ` +
	`questions about orders, shipping and returns. Keep answers short and cite the order number. When you do not know, say so and ` +
	`offer to open a support ticket."},` +
	`{"role":"user","content":"Where is my order 4711? It was due on Monday and the tracking page has not changed ` +
	`since Friday. Can you tell me when it will arrive, and whether I can still change the delivery address?"}],` +
	`"temperature":0.2,"max_tokens":500,"stream":false,"user":"alice","metadata":{"team":"support","app":"orders"}}`

func benchConfigs(redis, prefix string) map[string]string {
	return map[string]string{
		"admitted":      benchConfig(redis, prefix+"a:", false, true),
		"denied":        benchConfig(redis, prefix+"d:", true, false),
		"cached":        benchConfig(redis, prefix+"c:", true, true),
		"tiered":        tieredConfig(redis, prefix+"t:"),
		"leased":        leasedConfig(redis, prefix+"h:"),
		"held":          heldConfig(redis, prefix+"w:"),
		"llm":           llmConfig(redis, prefix+"l:", true),
		"llm_exact":     llmConfig(redis, prefix+"e:", true),
		"llm_plain":     llmConfig(redis, prefix+"p:", false),
		"llm_priced":    pricedConfig(redis, prefix+"m:"),
		"body_key":      bodyKeyConfig(redis, prefix+"b:"),
		"jsonrpc_batch": rpcBatchConfig(redis, prefix+"j:"),
	}
}
