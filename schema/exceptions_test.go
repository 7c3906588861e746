package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// exception is a known disagreement between config.Parse and the
// schema: a check that a JSON Schema cannot express. The agreement tests
// count a disagreement as an exception only when the configuration has the
// exception's property and, where the parser refuses, it says so with the
// exception's message. Any other disagreement fails them.
type exception struct {
	name string
	// why a JSON Schema cannot check it.
	why string
	// parserAccepts: the parser accepts what the schema refuses; otherwise
	// the parser refuses what the schema accepts.
	parserAccepts bool
	// message matches the parser's error.
	message *regexp.Regexp
	// applies reports whether a configuration has the property.
	applies func(raw []byte, doc map[string]any) bool
	// example shows the disagreement (TestExceptionsAreReal).
	example string
}

// exampleConfig is a valid configuration with its one rule's limits and
// cost, and the redis object, replaced.
func exampleConfig(redis, limits, cost string) string {
	if redis == "" {
		redis = `{"cluster":"redis"}`
	}
	if cost != "" {
		cost = `,"cost":` + cost
	}
	return `{"redis":` + redis + `,"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + limits + cost + `}]}`
}

const oneLog = `[{"algorithm":"sliding_log","limit":5,"window":"1s"}]`

var exceptions = []exception{
	{
		name:    "duplicate-key",
		why:     "JSON Schema validates the decoded document, in which a repeated key has already replaced the first",
		message: regexp.MustCompile(`: duplicate field$`),
		applies: func(raw []byte, _ map[string]any) bool { return hasDuplicateKey(raw) },
		example: `{"redis":{"cluster":"a","cluster":"b"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneLog + `}]}`,
	},
	{
		name:    "duplicate-rule-name",
		why:     "uniqueItems compares whole items, not one property of them",
		message: regexp.MustCompile(`^rules\[\d+\]\.name: duplicate rule name`),
		applies: func(_ []byte, doc map[string]any) bool {
			seen := map[string]bool{}
			for _, r := range objects(doc["rules"]) {
				if n, ok := r["name"].(string); ok {
					if seen[n] {
						return true
					}
					seen[n] = true
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[` + strings.Repeat(`{"name":"r","key":[{"source":"client_ip"}],"limits":`+oneLog+`},`, 2) + `{"name":"s","key":[{"source":"path"}],"limits":` + oneLog + `}]}`,
	},
	{
		name:    "duplicate-limit-name",
		why:     "limit names are unique after defaulting (the rule's name, or <rule>.<index>), which a schema cannot compute",
		message: regexp.MustCompile(`^rules\[\d+\]\.(limits|tiers\.limits\.[A-Za-z0-9_.-]+)\[\d+\]\.name: duplicate limit name`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				for rule, limits := range limitLists(r) {
					seen := map[string]bool{}
					for i, l := range limits {
						n, _ := l["name"].(string)
						switch {
						case n != "":
						case len(limits) == 1:
							n = rule
						default:
							n = fmt.Sprintf("%s.%d", rule, i)
						}
						if seen[n] {
							return true
						}
						seen[n] = true
					}
				}
			}
			return false
		},
		example: exampleConfig("", `[{"algorithm":"sliding_log","limit":5,"window":"1s","name":"r.1"},{"algorithm":"sliding_log","limit":9,"window":"1m"}]`, ""),
	},
	{
		name:    "cost-above-capacity",
		why:     "comparing one field (cost) with another (each limit's limit or capacity) needs $data, which draft 2020-12 lacks",
		message: regexp.MustCompile(`^rules\[\d+\]\.cost(\.default)?: must be <= \d+, the limit's capacity of limits\[\d+\]$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				cost := int64(1)
				switch c := r["cost"].(type) {
				case json.Number:
					cost, _ = integer(c)
				case map[string]any:
					if d, ok := c["default"].(json.Number); ok {
						cost, _ = integer(d)
					}
				}
				for _, l := range allLimits(r) {
					capacity, ok := integer(l["limit"])
					if !ok {
						capacity, ok = integer(l["capacity"])
					}
					if ok && cost > capacity {
						return true
					}
				}
			}
			return false
		},
		example: exampleConfig("", oneLog, "6"),
	},
	{
		name:    "reserve-above-capacity",
		why:     "as cost-above-capacity: response_cost.reserve (or its default; with a price, in money) compared with each limit's limit or capacity needs $data",
		message: regexp.MustCompile(`^rules\[\d+\]\.response_cost\.reserve(\.default)?: must be <= \d+, the limit's capacity of limits\[\d+\]$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				rc, _ := r["response_cost"].(map[string]any)
				reserve, ok := integer(rc["reserve"])
				if o, isObj := rc["reserve"].(map[string]any); isObj {
					reserve, ok = integer(o["default"])
				}
				if pr, priced := rc["price"].(map[string]any); priced && ok {
					reserve = moneyReserve(pr, reserve) // tokens at the dearest output price
				}
				for _, l := range allLimits(r) {
					capacity, found := integer(l["limit"])
					if !found {
						capacity, found = integer(l["capacity"])
					}
					if ok && found && reserve > capacity {
						return true
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneLog +
			`,"response_cost":{"usage":"openai_chat","reserve":6}}]}`,
	},
	{
		name:    "funnel-bounds",
		why:     "period / rate >= 1us and capacity * period / rate <= 2^48us are arithmetic on a duration string",
		message: regexp.MustCompile(`^rules\[\d+\]\.limits\[\d+\]\.(rate|refill|capacity): .*(period / (rate|refill) must be >= 1us|must be <= 2\^48us)$`),
		applies: func(_ []byte, doc map[string]any) bool {
			return anyLimit(doc, func(algo string, l map[string]any) bool {
				if algo != "funnel" && algo != "token_bucket" {
					return false
				}
				rate, ok1 := integer(l["rate"])
				if algo == "token_bucket" {
					rate, ok1 = integer(l["refill"])
				}
				capacity, ok2 := integer(l["capacity"])
				period, ok3 := duration(l["period"])
				if !ok1 || !ok2 || !ok3 || rate < 1 {
					return false
				}
				t := (period.Microseconds() + rate/2) / rate
				return t < 1 || capacity > (1<<48)/t
			})
		},
		example: exampleConfig("", `[{"algorithm":"funnel","capacity":16,"rate":2000001,"period":"1s"}]`, ""),
	},
	{
		name:    "sliding-counter-bounds",
		why:     "a window of whole milliseconds and limit * window(ms) <= 2^50 are arithmetic on a duration string",
		message: regexp.MustCompile(`^rules\[\d+\]\.limits\[\d+\]\.(window: must be a whole number of milliseconds|limit: .*must be <= 2\^50)$`),
		applies: func(_ []byte, doc map[string]any) bool {
			return anyLimit(doc, func(algo string, l map[string]any) bool {
				limit, ok1 := integer(l["limit"])
				window, ok2 := duration(l["window"])
				if algo != "sliding_counter" || !ok1 || !ok2 {
					return false
				}
				ms := window.Milliseconds()
				return window%time.Millisecond != 0 || ms < 1 || limit > (1<<50)/ms
			})
		},
		example: exampleConfig("", `[{"algorithm":"sliding_counter","limit":5,"window":"1500us"}]`, ""),
	},
	{
		name:    "sliding-log-window-below-1us",
		why:     "comparing a duration string with 1us across units (\"999ns\", \"0.0009ms\") is arithmetic",
		message: regexp.MustCompile(`^rules\[\d+\]\.limits\[\d+\]\.window: must be >= 1us$`),
		applies: func(_ []byte, doc map[string]any) bool {
			return anyLimit(doc, func(algo string, l map[string]any) bool {
				w, ok := duration(l["window"])
				return algo == "sliding_log" && ok && w < time.Microsecond
			})
		},
		example: exampleConfig("", `[{"algorithm":"sliding_log","limit":5,"window":"999ns"}]`, ""),
	},
	{
		name:    "concurrency-max-duration-out-of-range",
		why:     "comparing a duration string with 1ms and 24h across units (\"999us\", \"25h\", \"1441m\") is arithmetic",
		message: regexp.MustCompile(`^rules\[\d+\]\.limits\[\d+\]\.max_duration: must be >= 1ms and <= 24h$`),
		applies: func(_ []byte, doc map[string]any) bool {
			return anyLimit(doc, func(algo string, l map[string]any) bool {
				d, ok := duration(l["max_duration"])
				return algo == "concurrency" && ok && (d < time.Millisecond || d > 24*time.Hour)
			})
		},
		example: exampleConfig("", `[{"algorithm":"concurrency","limit":5,"max_duration":"25h"}]`, ""),
	},
	{
		name:    "timeout-out-of-range",
		why:     "comparing a duration string with 1ms and 1m across units (\"999us\", \"61s\", \"60001ms\") is arithmetic",
		message: regexp.MustCompile(`^redis\.timeout: must be >= 1ms and <= 1m$`),
		applies: func(_ []byte, doc map[string]any) bool {
			d, ok := duration(field(doc, "redis", "timeout"))
			return ok && (d > time.Minute || d < time.Millisecond)
		},
		example: exampleConfig(`{"cluster":"redis","timeout":"61s"}`, oneLog, ""),
	},
	{
		name:    "buffer-flush-timeout-whole-ms",
		why:     "whole milliseconds up to 1s, across units (\"1500us\", \"2s\"), is arithmetic on a duration string",
		message: regexp.MustCompile(`^redis\.buffer_flush_timeout: must be whole milliseconds, at most 1s$`),
		applies: func(_ []byte, doc map[string]any) bool {
			d, ok := duration(field(doc, "redis", "buffer_flush_timeout"))
			return ok && (d%time.Millisecond != 0 || d > time.Second)
		},
		example: exampleConfig(`{"cluster":"redis","buffer_flush_timeout":"1500us"}`, oneLog, ""),
	},
	{
		name:    "backoff-above-10m",
		why:     "comparing a duration string with 10m across units is arithmetic",
		message: regexp.MustCompile(`^circuit_breaker\.backoff: must be > 0 and <= 10m$`),
		applies: func(_ []byte, doc map[string]any) bool {
			d, ok := duration(field(doc, "circuit_breaker", "backoff"))
			return ok && d > 10*time.Minute
		},
		example: `{"redis":{"cluster":"redis"},"circuit_breaker":{"backoff":"11m"},"rules":[{"name":"r","key":[{"source":"client_ip"}],"limits":` + oneLog + `}]}`,
	},
	{
		name:    "duration-overflow",
		why:     "durations beyond 2^63ns (about 292 years) overflow time.ParseDuration; the schema checks their syntax only",
		message: regexp.MustCompile(`: must be a duration string such as "500ms", "1m" or "1d"$`),
		applies: func(_ []byte, doc map[string]any) bool {
			overflows := func(v any) bool {
				s, ok := v.(string)
				_, err := config.ParseDuration(s)
				return ok && durationPattern.MatchString(s) && err != nil
			}
			for _, l := range leases(doc) {
				if overflows(l["max_hold"]) {
					return true
				}
			}
			return overflows(field(doc, "redis", "timeout")) || overflows(field(doc, "circuit_breaker", "backoff")) ||
				anyLimit(doc, func(_ string, l map[string]any) bool {
					return overflows(l["window"]) || overflows(l["period"]) || overflows(l["max_duration"])
				})
		},
		example: exampleConfig(`{"cluster":"redis","timeout":"9999999999h"}`, oneLog, ""),
	},
	{
		name:    "integer-with-fraction-or-exponent",
		why:     "JSON Schema's integer is a number with no fractional part, so 5.0 and 5e0 are integers; the parser wants integers written as such",
		message: regexp.MustCompile(`: must be an integer$`),
		applies: func(raw []byte, _ map[string]any) bool { return hasIntegralDecimal(raw) },
		example: exampleConfig("", `[{"algorithm":"sliding_log","limit":5.0,"window":"1s"}]`, ""),
	},
	{
		name:    "key-prefix-bytes",
		why:     "maxLength counts characters; the parser limits key_prefix to 64 bytes",
		message: regexp.MustCompile(`^redis\.key_prefix: must be at most 64 bytes without \{ or \}$`),
		applies: func(_ []byte, doc map[string]any) bool {
			p, ok := field(doc, "redis", "key_prefix").(string)
			return ok && len(p) > 64 && utf8.RuneCountInString(p) <= 64
		},
		example: exampleConfig(`{"cluster":"redis","key_prefix":"`+strings.Repeat("\u00e9", 40)+`"}`, oneLog, ""),
	},
	{
		name:    "method-non-ascii-lower-case",
		why:     "the schema's pattern refuses ASCII lower case only: Unicode case classes are not portable across JSON Schema regex engines",
		message: regexp.MustCompile(`\.methods\[\d+\]: must be an upper-case method such as GET$`),
		applies: func(_ []byte, doc map[string]any) bool {
			for _, r := range objects(doc["rules"]) {
				m, _ := r["match"].(map[string]any)
				methods, _ := m["methods"].([]any)
				for _, v := range methods {
					if s, ok := v.(string); ok && strings.ToUpper(s) != s && !strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") {
						return true
					}
				}
			}
			return false
		},
		example: `{"redis":{"cluster":"redis"},"rules":[{"name":"r","match":{"methods":["G\u00e9T"]},"key":[{"source":"client_ip"}],"limits":` + oneLog + `}]}`,
	},
	{
		name:          "negative-zero-buffer-flush-timeout",
		why:           "the schema refuses every negative duration; the parser reads \"-0s\" as 0, which a buffer_flush_timeout may be",
		parserAccepts: true,
		applies: func(_ []byte, doc map[string]any) bool {
			s, ok := field(doc, "redis", "buffer_flush_timeout").(string)
			d, err := config.ParseDuration(s)
			return ok && strings.HasPrefix(s, "-") && err == nil && d == 0
		},
		example: exampleConfig(`{"cluster":"redis","buffer_flush_timeout":"-0s"}`, oneLog, ""),
	},
}

// durationPattern is the schema's own duration pattern.
var durationPattern = func() *regexp.Regexp {
	var s struct {
		Defs map[string]struct {
			Pattern string `json:"pattern"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(JSON, &s); err != nil {
		panic(err)
	}
	return regexp.MustCompile(s.Defs["duration"].Pattern)
}()

func objects(v any) []map[string]any {
	list, _ := v.([]any)
	var out []map[string]any
	for _, e := range list {
		if o, ok := e.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

func field(doc map[string]any, object, name string) any {
	o, _ := doc[object].(map[string]any)
	return o[name]
}

func anyLimit(doc map[string]any, f func(algorithm string, limit map[string]any) bool) bool {
	for _, r := range objects(doc["rules"]) {
		for _, l := range allLimits(r) {
			if algo, _ := l["algorithm"].(string); f(algo, l) {
				return true
			}
		}
	}
	return false
}

func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func duration(v any) (time.Duration, bool) {
	s, ok := v.(string)
	d, err := config.ParseDuration(s)
	return d, ok && err == nil
}

// hasDuplicateKey reports whether a JSON document has an object with a
// repeated key.
func hasDuplicateKey(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var stack []map[string]bool // keys seen, per open object; nil for arrays
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, map[string]bool{})
			expectKey = true
			continue
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if k, ok := tok.(string); ok && expectKey {
				if stack[len(stack)-1][k] {
					return true
				}
				stack[len(stack)-1][k] = true
				expectKey = false
				continue
			}
		}
		// After a value: inside an object the next token is a key.
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}

// hasIntegralDecimal reports whether a JSON document has a number written
// with a fraction or an exponent whose value is an integer, such as 5.0.
func hasIntegralDecimal(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n, ok := tok.(json.Number); ok && strings.ContainsAny(string(n), ".eE") {
			if r, ok := new(big.Rat).SetString(string(n)); ok && r.IsInt() {
				return true
			}
		}
	}
}
