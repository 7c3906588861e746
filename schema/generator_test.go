package schema

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
)

// generator mutates valid configurations into near-misses: fields dropped,
// duplicated (as a repeated key, or a repeated array element), retyped, set
// to values from per-field pools (valid ones, out-of-range numbers, bad enum
// values, bad durations and names), unknown fields added.
//
// The pools stay clear of what only the documented exceptions could tell
// apart: integers written as 1.0, durations beyond the parser's ranges or
// below 1us, non-ASCII key prefixes and methods, limits large enough to
// reach the algorithms' arithmetic bounds. Duplicates and costs above a
// capacity do arise, and are counted as the named exceptions they are.
type generator struct {
	rng *rand.Rand
}

// kindOf names the kind of object found at path in a configuration.
func kindOf(path []string) string {
	n := len(path)
	switch {
	case n == 0:
		return "root"
	case n >= 2 && path[0] == "_rules_":
		return entryKind(path[2:])
	case n == 1 && path[0] == "redis":
		return "redis"
	case n == 3 && path[0] == "redis" && path[1] == "nodes":
		return "redisNode"
	case n == 1 && path[0] == "circuit_breaker":
		return "breaker"
	case path[0] != "rules":
		return ""
	case n == 2:
		return "rule"
	case n == 3 && path[2] == "match":
		return "match"
	case n == 3 && path[2] == "cost":
		return "cost"
	case n == 3 && path[2] == "response_cost":
		return "responseCost"
	case n == 3 && path[2] == "lease":
		return "lease"
	case n == 3 && path[2] == "throttle":
		return "throttle"
	case n == 4 && path[2] == "response_cost" && path[3] == "reserve":
		return "reserve"
	case n == 4 && path[2] == "key":
		return "keyPart"
	case n == 5 && path[2] == "match" && path[3] == "headers":
		return "headerMatch"
	case n == 5 && path[2] == "match" && path[3] == "body":
		return "bodyMatch"
	case n == 5 && path[2] == "match" && path[3] == "call":
		return "callMatch"
	case n == 3 && path[2] == "jsonrpc":
		return "jsonrpc"
	case n == 4 && path[2] == "cost" && (path[3] == "methods" || path[3] == "tools"):
		return "callTable"
	case n == 5 && path[2] == "cost" && (path[3] == "methods" || path[3] == "tools"):
		return "formula"
	case n == 4 && path[2] == "limits":
		return "limit"
	}
	return ""
}

// optionalFields are the fields addField may add to each kind of object.
var optionalFields = map[string][]string{
	"root":         {"failure_mode", "failure_status", "rejected_status", "headers", "xff_trusted_hops", "circuit_breaker", "local_fallback", "near_limit_ratio", "decision_filter_state", "body_while_headers_paused"},
	"breaker":      {"failures", "backoff"},
	"redis":        {"transport", "username", "password", "timeout", "database", "key_prefix", "cluster_mode", "authority", "path", "nodes", "slot_map_refresh"},
	"redisNode":    {"authority"},
	"rule":         {"match", "on_missing_key", "cost", "response_cost", "shadow", "manual_block", "lease", "throttle", "on_limit", "near_limit", "max_request_body_bytes", "on_unreadable_body", "refusal_status", "jsonrpc"},
	"match":        {"path", "path_prefix", "methods", "hosts", "headers", "body", "call"},
	"callMatch":    {"exact", "prefix", "present", "absent"},
	"jsonrpc":      {"protocol", "max_calls", "max_keys", "free", "refusal", "error_code"},
	"callTable":    {"eth_call", "eth_get*", "*", "tools/call"},
	"formula":      {"minus", "base", "per", "every", "min", "max"},
	"headerMatch":  {"exact", "prefix", "present", "absent"},
	"bodyMatch":    {"exact", "prefix", "present", "absent"},
	"keyPart":      {"name", "value", "path", "payload_in_metadata", "ipv4_prefix_len", "ipv6_prefix_len"},
	"limit":        {"name", "limit", "window", "capacity", "rate", "refill", "period", "max_duration", "time_zone", "week_starts"},
	"cost":         {"header", "default", "min", "methods", "tools"},
	"responseCost": {"header", "usage", "json", "statuses", "reserve", "on_missing", "on_reset", "default", "max_body_bytes", "price", "max_cost"},
	"reserve":      {"header", "body", "default"},
	"lease":        {"max_hold", "max_batch", "hot_rate", "max_keys"},
	"throttle":     {"max_delay"},
}

var (
	statuses = []string{`200`, `503`, `599`, `199`, `600`, `0`, `503.5`, `"503"`}
	counts   = []string{`1`, `2`, `16`, `30`, `0`, `-1`, `1.5`, `"5"`, `9007199254740994`}
	paths    = []string{`"/api/"`, `"/"`, `""`, `"api/"`, `"/login"`}
	// windows are positive and whole milliseconds, or not durations at all.
	windows = []string{`"1s"`, `"250ms"`, `"100ms"`, `"1m"`, `"1h"`, `"2h"`, `"1.5s"`, `".5s"`, `"90s"`, `"1m30s"`, `"+1s"`,
		`""`, `"0s"`, `"0"`, `"-1s"`, `"1d"`, `"10"`, `"1 s"`, `"s"`, `"1e3ms"`, `"1.5.s"`, `60`, `null`}
	// localFallbacks: shares from 0.000001 to 1, and some outside.
	localFallbacks = []string{`{"share":0.25}`, `{"share":1}`, `{"share":0.000001}`, `{"share":0.0000009}`, `{"share":0}`,
		`{"share":1.5}`, `{"share":"0.5"}`, `{}`, `{"share":0.5,"max_keys":1}`, `{"share":0.5,"max_keys":1048576}`,
		`{"share":0.5,"max_keys":0}`, `{"share":0.5,"max_keys":1048577}`, `{"share":0.5,"workers":4}`, `[]`, `null`}
	// timeouts are at most 1m, or not durations at all.
	timeouts = []string{`"200ms"`, `"1s"`, `"1m"`, `"0s"`, `"0"`, `"+250ms"`, `"60000ms"`, "\"200000\u00b5s\"", "\"200000\u03bcs\"",
		`"1m0s"`, `".25s"`, `""`, `"200"`, `"-1s"`, `"1d"`, `"1e3ms"`, `"1.5.s"`, `200`}
)

// pools holds JSON values for "<kind>.<field>".
var pools = map[string][]string{
	"root.failure_mode":     {`"allow"`, `"deny"`, `"local"`, `"open"`, `"ALLOW"`, `1`},
	"root.local_fallback":   localFallbacks,
	"root.failure_status":   statuses,
	"root.rejected_status":  statuses,
	"root.headers":          {`"draft10"`, `"legacy"`, `"both"`, `"none"`, `"ietf"`, `""`},
	"root.xff_trusted_hops": {`0`, `1`, `16`, `17`, `-1`, `2.5`},
	"root.near_limit_ratio": {`0.8`, `0.5`, `0.000001`, `0.999999`, `0.0000009`, `0`, `1`, `-0.5`, `"0.8"`, `null`},
	"root.circuit_breaker":  {`{}`, `{"failures":0}`, `{"failures":3,"backoff":"2s"}`, `{"backoff":"0s"}`, `{"failures":1001}`, `{"failures":5,"x":1}`, `[]`},
	"root.redis":            {`{"cluster":"redis"}`, `{"transport":"webdis","cluster_mode":true,"nodes":[{"address":"a:1","cluster":"w"}]}`, `{"transport":"webdis","cluster":"webdis","path":"/r/"}`, `{}`, `{"cluster":""}`},
	"root.rules": {`[]`, `[{"name":"r","key":[{"source":"client_ip"}],"limits":[{"algorithm":"funnel","capacity":5,"rate":1,"period":"1s"}]}]`,
		`[{"name":"r","key":[{"source":"client_ip"}]}]`},
	"breaker.failures":   {`0`, `5`, `1000`, `1001`, `-1`, `1.5`, `"5"`},
	"breaker.backoff":    {`"1s"`, `"500ms"`, `"10m"`, `"10m0s"`, `"0s"`, `"-1s"`, `"1d"`, `5`, `""`},
	"redis.transport":    {`"redis_abi"`, `"webdis"`, `"http"`, `""`},
	"redis.cluster":      {`"redis"`, `"outbound|6379||redis.static"`, `""`, `7`},
	"redis.username":     {`"u"`, `""`, `"ratelimit"`},
	"redis.password":     {`"secret"`, `""`, `false`},
	"redis.timeout":      timeouts,
	"redis.database":     {`0`, `1`, `65536`, `65537`, `-1`, `"0"`},
	"redis.key_prefix":   {`"rl:"`, `""`, `"edge:"`, `"a{b"`, `"}"`, `"` + strings.Repeat("p", 64) + `"`, `"` + strings.Repeat("p", 65) + `"`},
	"redis.cluster_mode": {`true`, `false`, `"true"`, `0`},
	"redis.authority":    {`"webdis"`, `""`, `"webdis.ns.svc"`},
	"redis.path":         {`"/"`, `"/redis/"`, `"/redis"`, `"redis/"`, `""`, `"//"`},
	"redis.nodes": {`[{"address":"redis-0.redis:6379","cluster":"webdis-0"},{"address":"10.0.0.2:6379","cluster":"webdis-1"}]`,
		`[{"address":"a:1","cluster":"w","authority":"w.ns"}]`, `[]`, `{}`, `[{"address":"a:1"}]`,
		`[{"address":"a:1","cluster":"w"},{"address":"a:1","cluster":"v"}]`, `[{"address":"a:1","cluster":"w"},{"address":"b:1","cluster":"w"}]`},
	"redis.slot_map_refresh": {`"30s"`, `"1s"`, `"10m"`, `"1m"`, `"999ms"`, `"11m"`, `"0s"`, `""`, `30`},
	"redisNode.address":      {`"redis-0.redis:6379"`, `"::1:7000"`, `"10.0.0.1:65535"`, `"a:65536"`, `"a:0"`, `"a:01"`, `"a"`, `":1"`, `"[::1]:1"`, `"a b:1"`, `""`, `6379`},
	"redisNode.cluster":      {`"webdis-7"`, `"outbound|7379||webdis-7.ns.svc.cluster.local"`, `""`, `1`},
	"redisNode.authority":    {`"webdis-7"`, `""`, `null`},
	"rule.name": {`"r1"`, `"per-user"`, `"a.b_c-D"`, `""`, `"per user"`, `"` + strings.Repeat("n", 64) + `"`,
		`"` + strings.Repeat("n", 65) + `"`, "\"\u00fcn\u00ef\"", `3`},
	"rule.match": {`{}`, `{"path":"/x"}`, `{"path":"/x","path_prefix":"/y"}`, `{"hosts":["a.example"]}`, `[]`},
	"rule.key": {`[{"source":"method"}]`, `[]`, `[{"source":"header"}]`,
		`[` + strings.Repeat(`{"source":"path"},`, 8) + `{"source":"host"}]`},
	"rule.on_missing_key": {`"skip"`, `"deny"`, `"shared"`, `"allow"`},
	"rule.limits": {`[]`, `[{"algorithm":"token_bucket","capacity":10,"refill":1,"period":"1s"}]`,
		`[` + strings.Repeat(`{"algorithm":"sliding_log","limit":5,"window":"1s"},`, 16) + `{"algorithm":"sliding_log","limit":5,"window":"1s"}]`},
	"rule.cost": {`0`, `1`, `2`, `-1`, `1.5`, `"1"`, `{"header":"x-cost"}`, `{"header":"x-cost","default":0}`, `{"header":""}`,
		`{"default":1}`, `{"header":"x-cost","default":-1}`, `{"header":"x","extra":1}`, `9007199254740994`, `null`},
	"rule.shadow":       {`true`, `false`, `"yes"`, `1`},
	"rule.manual_block": {`true`, `false`, `"false"`, `0`},
	"match.path":        paths,
	"match.path_prefix": paths,
	"match.methods":     {`["GET"]`, `["GET","POST"]`, `[]`, `["get"]`, `[""]`, `"GET"`, `[1]`, `["PATCH","Post"]`},
	"match.hosts":       {`["api.example.com"]`, `["API.example.com"]`, `[]`, `[""]`, `"a"`, `[1]`},
	"keyPart.source": {`"header"`, `"query"`, `"cookie"`, `"client_ip"`, `"path"`, `"method"`, `"host"`, `"constant"`,
		`"jwt_claim"`, `"property"`, `"body"`, `"call"`, `"ip"`, `""`},
	"keyPart.name":  {`"x-user-id"`, `""`, `"X-Api-Key"`, `"org.id"`, `"org..id"`, `".sub"`, `1`},
	"keyPart.value": {`"all"`, `""`, `true`},
	"keyPart.path": {`"model"`, `"metadata.team"`, `"a#b"`, `"a\\b"`, `"source.address"`, `"connection.uri_san_peer_certificate"`, `["xds","route_metadata","filter_metadata","ratelimit","tier"]`,
		`""`, `"a..b"`, `"a."`, `[]`, `[""]`, `["a.b"]`, `[1]`, `5`, `"` + strings.Repeat("a.", 16) + `a"`},
	"keyPart.payload_in_metadata": {`"jwt_payload"`, `"payload"`, `""`, `1`},
	"keyPart.ipv4_prefix_len":     {`0`, `24`, `32`, `33`, `-1`, `"24"`},
	"keyPart.ipv6_prefix_len":     {`0`, `64`, `128`, `129`, `-1`, `1.5`},
	"match.headers": {`[{"name":"x-plan","exact":"free"}]`, `[{"name":"x-debug","present":true},{"name":"x-b","absent":true}]`,
		`[{"name":"x","present":false}]`, `[{"name":"x","exact":"a","prefix":"b"}]`, `[{"name":""}]`, `[{"name":"x"}]`, `[]`, `{}`,
		`[{"name":"x","prefix":""}]`, `[{"name":"x","exact":""}]`},
	"match.body": {`[{"path":"model","exact":"gpt-4o"}]`, `[{"path":"metadata.team","present":true},{"path":"user","absent":true}]`,
		`[{"path":"model"}]`, `[{"path":"a.#","present":true}]`, `[{"name":"model","exact":"x"}]`, `[]`, `{}`},
	"bodyMatch.path":              {`"model"`, `"metadata.team"`, `""`, `".a"`, `"a."`, `"a|b"`, `"` + strings.Repeat("a.", 16) + `a"`, `1`},
	"bodyMatch.exact":             {`"gpt-4o"`, `""`, `1`},
	"bodyMatch.prefix":            {`"gpt-"`, `""`},
	"bodyMatch.present":           {`true`, `false`},
	"bodyMatch.absent":            {`true`, `false`},
	"rule.max_request_body_bytes": {`1`, `65536`, `67108864`, `67108865`, `0`, `-1`, `1.5`, `"1"`},
	"rule.on_unreadable_body":     {`"deny"`, `"missing"`, `"skip"`, `""`, `true`},
	"rule.refusal_status":         {`400`, `422`, `429`, `499`, `399`, `500`, `0`, `400.5`, `"400"`},
	"headerMatch.name":            {`"x-plan"`, `"X-Plan"`, `""`, `1`},
	"headerMatch.exact":           {`"free"`, `""`, `1`},
	"headerMatch.prefix":          {`"abc"`, `""`, `null`},
	"headerMatch.present":         {`true`, `false`, `"true"`},
	"headerMatch.absent":          {`true`, `false`, `1`},
	"limit.algorithm":             {`"sliding_log"`, `"sliding_counter"`, `"funnel"`, `"token_bucket"`, `"concurrency"`, `"calendar"`, `"fixed_window"`, `""`},
	"limit.time_zone":             {`"UTC"`, `"Europe/Berlin"`, `"America/New_York"`, `"Mars/Olympus"`, `""`, `1`},
	"limit.week_starts":           {`"monday"`, `"sunday"`, `"mon"`, `""`, `1`},
	"limit.name":                  {`"per-second"`, `""`, `"bad name"`, `"` + strings.Repeat("l", 65) + `"`, `"x"`},
	"limit.limit":                 {`1`, `2`, `10`, `1048576`, `1048577`, `0`, `-1`, `1.5`, `"10"`, `9007199254740994`},
	"limit.capacity":              counts,
	"limit.rate":                  counts,
	"limit.refill":                counts,
	"limit.window":                windows,
	"limit.period":                append([]string{`"hour"`, `"day"`, `"week"`, `"month"`, `"fortnight"`}, windows...),
	"limit.max_duration":          windows,
	"cost.header":                 {`"x-cost"`, `""`, `5`},
	"cost.default":                {`0`, `1`, `2`, `-1`, `1.5`, `"refuse"`, `"free"`},
	"cost.methods": {`{"eth_call":1,"eth_get*":2}`, `{"*":1}`, `{"eth_getLogs":{"param":"params.0.toBlock","minus":"params.0.fromBlock","every":100,"min":1,"max":5}}`,
		`{}`, `{"":1}`, `{"a":-1}`, `{"a":"1"}`, `{"a":{"max":1}}`, `{"a":{"param":"p","max":1,"scale":2}}`, `[]`, `1`,
		`{"a":{"param":"id","min":1,"max":1}}`, `{"a":{"param":"params.0","max":1}}`, `{"a*b":1}`},
	"cost.tools":           {`{"search":1}`, `{"deep_*":{"param":"params.arguments.limit","min":1,"max":3}}`, `{}`, `{"search":1.5}`, `[]`},
	"callTable.eth_call":   {`0`, `1`, `2`, `-1`, `1.5`, `"1"`, `{"param":"params.0","max":1}`, `{}`},
	"callTable.eth_get*":   {`0`, `1`, `9007199254740994`, `{"param":"params.0","min":2,"max":1}`},
	"callTable.*":          {`1`, `{"param":"params.limit","base":1,"per":1,"every":10,"min":1,"max":3}`},
	"callTable.tools/call": {`1`, `null`},
	"formula.param":        {`"params.0.toBlock"`, `"params.arguments.limit"`, `""`, `"a..b"`, `"a*"`, `1`},
	"formula.minus":        {`"params.0.fromBlock"`, `""`, `"a|b"`, `null`},
	"formula.base":         {`0`, `1`, `9007199254740992`, `9007199254740993`, `-1`, `1.5`},
	"formula.per":          {`0`, `1`, `1048576`, `1048577`, `-1`},
	"formula.every":        {`1`, `100`, `0`, `-1`, `"1"`},
	"formula.min":          {`0`, `1`, `2`, `-1`},
	"formula.max":          {`0`, `1`, `2`, `5`, `-1`, `null`},
	"rule.jsonrpc":         {`{}`, `{"protocol":"mcp"}`, `{"max_calls":1}`, `{"refusal":"jsonrpc"}`, `{"batch":1}`, `[]`, `true`, `null`},
	"jsonrpc.protocol":     {`"jsonrpc"`, `"mcp"`, `"grpc"`, `""`, `1`},
	"jsonrpc.max_calls":    {`1`, `100`, `1000`, `1001`, `0`, `-1`, `1.5`, `"1"`},
	"jsonrpc.max_keys":     {`1`, `2`, `16`, `64`, `65`, `0`, `"2"`},
	"jsonrpc.free":         {`[]`, `["ping"]`, `["initialize","notifications/*"]`, `[""]`, `["*"]`, `["a*b"]`, `["**"]`, `"ping"`, `[1]`},
	"jsonrpc.refusal":      {`"http"`, `"jsonrpc"`, `"json"`, `""`, `true`},
	"jsonrpc.error_code":   {`-32005`, `-32000`, `1`, `-32700`, `-32600`, `-32603`, `-32604`, `2147483648`, `-1.5`, `"-32005"`},
	"match.call": {`[{"path":"method","exact":"tools/call"}]`, `[{"path":"params.name","prefix":"deep_"},{"path":"id","present":true}]`,
		`[{"path":"method"}]`, `[{"path":"a.#","present":true}]`, `[]`, `{}`},
	"callMatch.path":    {`"method"`, `"params.name"`, `""`, `".a"`, `"a|b"`, `1`},
	"callMatch.exact":   {`"tools/call"`, `""`, `1`},
	"callMatch.prefix":  {`"eth_"`, `""`},
	"callMatch.present": {`true`, `false`},
	"callMatch.absent":  {`true`, `false`},
	"cost.min":          {`0`, `1`, `3`, `-1`, `1.5`, `"1"`},
	"rule.response_cost": {`{"usage":"openai_chat"}`, `{"statuses":[401,403]}`, `{"header":"x-usage","reserve":1}`,
		`{"json":["usage.total_tokens"],"on_missing":"default","default":5}`, `{}`, `{"reserve":1}`, `{"header":"x","usage":"anthropic"}`,
		`{"usage":"anthropic","json":["a"]}`, `{"usage":"anthropic","on_reset":"default"}`, `"openai_chat"`, `null`},
	"responseCost.header": {`"x-usage-tokens"`, `"X-Usage"`, `""`, `5`},
	"responseCost.usage":  {`"openai_chat"`, `"openai_responses"`, `"anthropic"`, `"openai"`, `""`, `1`},
	"responseCost.json": {`["usage.total_tokens"]`, `["usage.input_tokens","usage.output_tokens"]`, `["a\\.b"]`, `[]`, `[""]`,
		`["usage.#"]`, `["a|b"]`, `["@this"]`, `"usage.total_tokens"`, `[1]`, `[` + strings.Repeat(`"a",`, 8) + `"b"]`},
	"responseCost.statuses": {`[401]`, `[401,403]`, `["5xx"]`, `["5XX",429]`, `[100,599]`, `[]`, `[99]`, `[600]`, `["6xx"]`,
		`["5x"]`, `["0xx"]`, `[401.5]`, `["401"]`, `"5xx"`, `[null]`},
	"responseCost.reserve": {`0`, `1`, `2`, `-1`, `1.5`, `"1"`, `{"header":"x-max-tokens"}`, `{"header":"x-max-tokens","default":1}`,
		`{"body":"max_tokens","default":1}`, `{"body":"max_tokens","header":""}`, `{"body":"a.#"}`, `{"header":"x","body":"y"}`,
		`{"header":""}`, `{"default":1}`, `{"header":"x","extra":1}`, `1099511627777`, `null`, `[]`},
	"responseCost.max_cost":       {`1`, `100`, `1099511627776`, `1099511627777`, `0`, `-1`, `1.5`, `"1"`},
	"responseCost.on_missing":     {`"estimate"`, `"reserved"`, `"default"`, `"nothing"`, `"charge"`, `""`, `1`},
	"responseCost.on_reset":       {`"estimate"`, `"reserved"`, `"default"`, `"nothing"`, `"refund"`, `""`, `null`},
	"responseCost.default":        {`0`, `1`, `4096`, `1099511627776`, `1099511627777`, `-1`, `1.5`, `"1"`},
	"responseCost.max_body_bytes": {`1`, `1048576`, `67108864`, `67108865`, `0`, `-1`, `1.5`, `"1"`},
	"responseCost.price": {`{"unit":"micro_usd","models":{"m":{"input":"2.50","output":"10"}},"default":"refuse"}`,
		`{"unit":"nano_eur","models":{"m-*":{"input":"0.000000001","output":"1000000","reasoning":"0"}},"default":{"input":"1","output":"2"},"model_header":"x-model"}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1000000.5","output":"1"}},"default":"refuse"}`,
		`{"unit":"micro_usd","models":{"m":{"input":"0001.5","output":"1.0000000001"}},"default":"refuse"}`,
		`{"unit":"usd","models":{"m":{"input":"1","output":"1"}},"default":"refuse"}`, `{"unit":"micro_usd","models":{},"default":"refuse"}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1"}},"default":"refuse"}`, `{"unit":"micro_usd","models":{"m":{"input":1,"output":"1"}},"default":"free"}`,
		`{"unit":"micro_usd","models":{"":{"input":"1","output":"1"}},"default":"refuse"}`, `{"unit":"micro_usd","models":{"m":{"input":"1","output":"1"}}}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1","output":"1"}},"default":"refuse","model_header":""}`, `{}`, `"micro_usd"`, `null`,
		`{"unit":"micro_usd","models":{"m":{"input":"3","cache_write_1h":"6","output":"15","web_search":"10","web_fetch":"0"}},"default":"refuse","service_tiers":{"flex":"0.5","priority":"2","x":"100.000000000"}}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1","output":"1","web_search":"1000000.1"}},"default":"refuse"}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1","output":"1"}},"default":"refuse","service_tiers":{"flex":"0"}}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1","output":"1"}},"default":"refuse","service_tiers":{"flex":"100.5"}}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1","output":"1"}},"default":"refuse","service_tiers":{"flex":0.5}}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1","output":"1"}},"default":"refuse","service_tiers":{"":"1"}}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1","output":"1"}},"default":"refuse","service_tiers":[]}`,
		`{"unit":"micro_usd","models":{"m":{"input":"1","output":"1"}},"default":"refuse","service_tiers":{"a":"0.000000001","b":"099.9"}}`},
	"reserve.header":  {`"x-max-tokens"`, `""`, `5`},
	"reserve.body":    {`"max_tokens"`, `"max_output_tokens"`, `""`, `"messages.#"`, `"a@b"`, `5`},
	"reserve.default": {`0`, `1`, `2`, `-1`, `1.5`, `1099511627777`},
	"rule.lease": {`{}`, `{"max_hold":"500ms","max_batch":1}`, `{"hot_rate":10,"max_keys":1}`, `{"max_batch":0}`, `{"batch":5}`,
		`{"max_hold":"0s"}`, `true`, `[]`, `null`},
	"rule.on_limit": {`{}`, `{"action":"deny"}`, `{"action":"degrade"}`, `{"action":"degrade","header":"x-spent"}`,
		`{"action":"degrade","header":"X-Fallback_1"}`, `{"action":"deny","header":"x-spent"}`, `{"header":"x-spent"}`,
		`{"action":"reroute"}`, `{"action":"degrade","header":"x spent"}`, `{"action":"degrade","header":""}`,
		`{"action":"degrade","header":"Retry-After"}`, `{"action":"degrade","header":"te"}`, `{"action":"degrade","value":1}`, `true`, `null`},
	"rule.near_limit": {`{"ratio":0.9}`, `{"header":"x-ratelimit-warning"}`, `{"ratio":0.5,"header":"x-warn"}`, `{}`,
		`{"ratio":1}`, `{"ratio":0}`, `{"ratio":"0.9"}`, `{"header":"ratelimit"}`, `{"header":5}`, `{"share":0.9}`, `[]`},
	"rule.throttle": {`{}`, `{"max_delay":"2s"}`, `{"delay":"1s"}`, `true`, `[]`, `null`},
	// max_delays stay within the parser's 10ms to 1m, or are not positive durations.
	"throttle.max_delay": {`"10ms"`, `"500ms"`, `"1s"`, `"1m"`, `"+2s"`, `"0s"`, `"0"`, `"-1s"`, `""`, `"1d"`, `1`},
	// max_holds stay within the parser's 1h, or are not positive durations.
	"lease.max_hold":  {`"1s"`, `"250ms"`, `"1m"`, `"1h"`, `"+2s"`, `"0s"`, `"0"`, `"-1s"`, `""`, `"1d"`, `1`},
	"lease.max_batch": {`1`, `2`, `0`, `-1`, `1.5`, `"1"`, `9007199254740994`},
	"lease.hot_rate":  {`1`, `2`, `65535`, `65536`, `0`, `-1`, `"2"`},
	"lease.max_keys":  {`1`, `1000`, `1048576`, `1048577`, `0`, `2.5`},

	"root.decision_filter_state":     {`true`, `false`, `"false"`, `0`, `null`},
	"root.body_while_headers_paused": {`true`, `false`, `"true"`, `1`, `null`},
}

// anyValues replace a value by one of another JSON type.
var anyValues = []string{`"str"`, `7`, `2.5`, `true`, `null`, `[]`, `{}`, `["a"]`, `{"a":1}`}

func jsonType(v any) string {
	switch v.(type) {
	case *object:
		return "object"
	case *array:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

func (g *generator) pick(values []string) any { return mustTree(values[g.rng.IntN(len(values))]) }

// poolOf returns the pool of the value at a slot, if it has one.
func poolOf(s slot) []string {
	if s.obj == nil {
		return nil
	}
	return pools[kindOf(s.path[:len(s.path)-1])+"."+s.key()]
}

type mutation struct {
	name   string
	weight int
	apply  func(g *generator, root any) bool // false: not applicable here
}

var mutations = []mutation{
	{"set-from-pool", 6, func(g *generator, root any) bool {
		var withPool []slot
		slots, _ := walkTree(root)
		for _, s := range slots {
			if poolOf(s) != nil {
				withPool = append(withPool, s)
			}
		}
		if len(withPool) == 0 {
			return false
		}
		s := withPool[g.rng.IntN(len(withPool))]
		s.set(g.pick(poolOf(s)))
		return true
	}},
	{"add-field", 3, func(g *generator, root any) bool {
		o, kind := g.object(root)
		fields := optionalFields[kind]
		if o == nil || len(fields) == 0 {
			return false
		}
		f := fields[g.rng.IntN(len(fields))]
		v := g.pick(pools[kind+"."+f])
		for i := range o.members {
			if o.members[i].key == f {
				o.members[i].val = v
				return true
			}
		}
		o.members = append(o.members, member{f, v})
		return true
	}},
	{"add-unknown-field", 1, func(g *generator, root any) bool {
		o, _ := g.object(root)
		if o == nil {
			return false
		}
		o.members = append(o.members, member{"x_unknown", mustTree(`1`)})
		return true
	}},
	{"drop-field", 2, func(g *generator, root any) bool {
		o, _ := g.object(root)
		if o == nil || len(o.members) == 0 {
			return false
		}
		i := g.rng.IntN(len(o.members))
		o.members = append(o.members[:i], o.members[i+1:]...)
		return true
	}},
	{"retype", 2, func(g *generator, root any) bool {
		slots, _ := walkTree(root)
		if len(slots) == 0 {
			return false
		}
		s := slots[g.rng.IntN(len(slots))]
		for {
			v := g.pick(anyValues)
			if jsonType(v) != jsonType(s.get()) {
				s.set(v)
				return true
			}
		}
	}},
	{"duplicate-key", 1, func(g *generator, root any) bool {
		o, kind := g.object(root)
		if o == nil || len(o.members) == 0 {
			return false
		}
		m := o.members[g.rng.IntN(len(o.members))]
		v := cloneTree(m.val)
		if p := pools[kind+"."+m.key]; p != nil && g.rng.IntN(2) == 0 {
			v = g.pick(p)
		}
		o.members = append(o.members, member{m.key, v})
		return true
	}},
	{"duplicate-element", 1, func(g *generator, root any) bool {
		a := g.array(root)
		if a == nil || len(a.elems) == 0 {
			return false
		}
		a.elems = append(a.elems, cloneTree(a.elems[g.rng.IntN(len(a.elems))]))
		return true
	}},
	{"drop-element", 1, func(g *generator, root any) bool {
		a := g.array(root)
		if a == nil || len(a.elems) == 0 {
			return false
		}
		i := g.rng.IntN(len(a.elems))
		a.elems = append(a.elems[:i], a.elems[i+1:]...)
		return true
	}},
}

// object picks a random object of the tree, and its kind.
func (g *generator) object(root any) (*object, string) {
	_, cs := walkTree(root)
	var objs []container
	for _, c := range cs {
		if _, ok := c.v.(*object); ok {
			objs = append(objs, c)
		}
	}
	if len(objs) == 0 {
		return nil, ""
	}
	c := objs[g.rng.IntN(len(objs))]
	return c.v.(*object), kindOf(c.path)
}

func (g *generator) array(root any) *array {
	_, cs := walkTree(root)
	var arrs []*array
	for _, c := range cs {
		if a, ok := c.v.(*array); ok {
			arrs = append(arrs, a)
		}
	}
	if len(arrs) == 0 {
		return nil
	}
	return arrs[g.rng.IntN(len(arrs))]
}

// mutate applies one to three mutations to root and names them.
func (g *generator) mutate(root any) []string {
	total := 0
	for _, m := range mutations {
		total += m.weight
	}
	var applied []string
	for n := 1 + g.rng.IntN(3); len(applied) < n; {
		r := g.rng.IntN(total)
		for _, m := range mutations {
			if r -= m.weight; r < 0 {
				if m.apply(g, root) {
					applied = append(applied, m.name)
				}
				break
			}
		}
	}
	return applied
}
