package filter

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
)

// orderStream records the headers of a local reply and of an admitted
// request's response, in order.
type orderStream struct {
	benchStream
	got []string
}

func (s *orderStream) SendLocalReply(status int, headers [][2]string, body []byte) {
	s.got = append(s.got, strconv.Itoa(status))
	for _, h := range headers {
		s.got = append(s.got, h[0]+": "+h[1])
	}
	s.got = append(s.got, string(body))
}

func (s *orderStream) AddResponseHeader(name, value string) {
	s.got = append(s.got, name+": "+value)
}

// Every header style's rate-limit headers, their bytes and their order,
// on an admitted request and on one Redis denies (as before issue 31).
func TestRateLimitHeadersInOrder(t *testing.T) {
	for style, want := range map[string]string{
		"draft10": `ratelimit-policy: "per-second";q=1000000;w=1, "per-hour";q=100000000;w=3600
ratelimit: "per-second";r=999999;t=0
429
retry-after: 3500
ratelimit-policy: "per-second";q=1000000;w=1, "per-hour";q=100000000;w=3600
ratelimit: "per-hour";r=0;t=3500
content-type: application/json
{"error":"rate_limited","rule":"bench","limit":"per-hour","retry_after":3500}
`,
		"legacy": `x-ratelimit-limit: 1000000
x-ratelimit-remaining: 999999
x-ratelimit-reset: 0
429
retry-after: 3500
x-ratelimit-limit: 100000000
x-ratelimit-remaining: 0
x-ratelimit-reset: 3500
content-type: application/json
{"error":"rate_limited","rule":"bench","limit":"per-hour","retry_after":3500}
`,
		"both": `ratelimit-policy: "per-second";q=1000000;w=1, "per-hour";q=100000000;w=3600
ratelimit: "per-second";r=999999;t=0
x-ratelimit-limit: 1000000
x-ratelimit-remaining: 999999
x-ratelimit-reset: 0
429
retry-after: 3500
ratelimit-policy: "per-second";q=1000000;w=1, "per-hour";q=100000000;w=3600
ratelimit: "per-hour";r=0;t=3500
x-ratelimit-limit: 100000000
x-ratelimit-remaining: 0
x-ratelimit-reset: 3500
content-type: application/json
{"error":"rate_limited","rule":"bench","limit":"per-hour","retry_after":3500}
`,
		"none": `429
retry-after: 3500
content-type: application/json
{"error":"rate_limited","rule":"bench","limit":"per-hour","retry_after":3500}
`,
	} {
		conf := strings.Replace(allocConfig, `"rules"`, `"headers":"`+style+`","deny_cache":{"max_keys":0},"rules"`, 1)
		cfg, err := config.Parse([]byte(conf))
		if err != nil {
			t.Fatal(err)
		}
		h := &benchHost{}
		p := NewPlugin(cfg, h)
		s := &orderStream{}
		for _, reply := range [][]byte{replyOf(1700000000000000, -2, 1, 1000000, 999999, -1, 0, 1, 100000000, 99999999, -1, 0), deniedLong} {
			st := p.NewStream(s)
			if st.OnRequestHeaderMap(allocHeaders) == Pause {
				p.OnRedisReply(h.id, true, reply)
			}
			st.OnResponseHeaders(true)
			st.OnDone()
		}
		if got := strings.Join(s.got, "\n"); got != want {
			t.Errorf("%s:\n%s\nwant\n%s", style, got, want)
		}
	}
}
