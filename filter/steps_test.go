package filter

import (
	"reflect"
	"testing"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// plainConfig is a rule with one limit keyed on a header.
const plainConfig = `{"redis":{"cluster":"redis"},"rules":[{"name":"api",
	"key":[{"source":"header","name":"x-user"}],
	"limits":[{"algorithm":"sliding_counter","limit":10,"window":"1s"}]}]}`

// fullConfig has a rule for each optional step.
const fullConfig = `{"redis":{"cluster":"redis"},"body_while_headers_paused":true,"failure_mode":"local","local_fallback":{"share":0.5},"quota_endpoint":{"path":"/quota"},"rules":[
	{"name":"cost","key":[{"source":"header","name":"x-user"}],"cost":{"header":"x-cost"},
	 "limits":[{"algorithm":"sliding_log","limit":10,"window":"1s"}],
	 "near_limit":{"ratio":0.8,"header":"x-warn"}},
	{"name":"team","key":[{"source":"header","name":"x-team"}],
	 "limits":[{"algorithm":"sliding_log","limit":1000000,"window":"1h"}],
	 "response_cost":{"usage":"openai_chat","reserve":{"header":"x-max-tokens","default":1000},
	 "price":{"unit":"micro_usd","default":"refuse","model_header":"x-model","models":{"gpt-4o":{"input":"2.50","output":"10"}}}}},
	{"name":"body","key":[{"source":"body","path":"user"}],"limits":[{"algorithm":"sliding_log","limit":10,"window":"1s"}]},
	{"name":"rpc","key":[{"source":"call","path":"params.name"}],"jsonrpc":{},"limits":[{"algorithm":"sliding_log","limit":10,"window":"1s"}]},
	{"name":"degrade","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":10,"window":"1s"}],
	 "on_limit":{"action":"degrade"}},
	{"name":"calm","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"funnel","capacity":1,"rate":1,"period":"1s"}],
	 "throttle":{"max_delay":"2.5s"}},
	{"name":"global","key":[{"source":"constant","value":"all"}],"limits":[{"algorithm":"sliding_log","limit":1000,"window":"1h"}],
	 "lease":{"max_hold":"1s","max_batch":10,"hot_rate":1}},
	{"name":"slots","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"concurrency","limit":2,"max_duration":"5m"}]}]}`

func compiledPolicy(t *testing.T, conf string) *policy {
	t.Helper()
	cfg, err := config.Parse([]byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	return NewPlugin(cfg, &benchHost{}).top()
}

// A plain rule's policy compiles to the core steps only; a configuration
// with every feature compiles to all of them.
func TestPlainRuleSteps(t *testing.T) {
	const plain = "match, key, deny cache, call, verdict, near limit, headers"
	if got := compiledPolicy(t, plainConfig).steps.String(); got != plain {
		t.Errorf("plain rule: %s, want %s", got, plain)
	}
	if got, want := compiledPolicy(t, fullConfig).steps, steps(1<<numSteps-1); got != want {
		t.Errorf("every feature: %s, want %s", got, want)
	}
}

// coreFields are Stream's fields every request uses. Any other field is
// an optional step's state: a pointer, nil until a request of a policy
// with the step needs it.
var coreFields = map[string]bool{"vm": true, "pol": true, "host": true, "req": true, "calls": true,
	"spare": true, "outstanding": true, "decided": true, "inHeaders": true, "allowed": true,
	"ruleKey": true, "now": true, "verdict": true, "hasVerdict": true, "enforced": true,
	"denyStored": true, "stampKey": true, "shadow": true, "hasShadow": true, "local": true,
	"decision": true, "bodyFollows": true}

// optionalStates names the stream's fields outside the core that hold
// something, or that are no step's state (not a pointer).
func optionalStates(s *Stream) []string {
	var held []string
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case coreFields[name]:
		case f.Kind() != reflect.Pointer:
			held = append(held, name+" (not a step's state)")
		case !f.IsNil():
			held = append(held, name)
		}
	}
	return held
}

// After plain-rule requests, admitted and denied, a recycled stream holds
// no state of an optional step.
func TestPlainRuleStreamState(t *testing.T) {
	cfg, err := config.Parse([]byte(plainConfig))
	if err != nil {
		t.Fatal(err)
	}
	h := &benchHost{}
	p := NewPlugin(cfg, h)
	headers := [][2]string{{":method", "GET"}, {":path", "/api"}, {":authority", "example.com"}, {"x-user", "alice"}}
	for _, allowed := range []int64{1, 0} {
		ints := []int64{1700000000000000, -2, allowed, 10, 10 * allowed, 500000 * (1 - allowed), 1000000}
		reply := redisproto.AppendArrayLen(nil, len(ints))
		for _, n := range ints {
			reply = redisproto.AppendInt(reply, n)
		}
		bs := &benchStream{}
		st := p.NewStream(bs)
		if st.OnRequestHeaders(headers) != Pause {
			t.Fatal("not paused")
		}
		p.OnRedisReply(h.id, true, reply)
		st.OnResponseHeaders(true)
		st.OnDone()
		if bs.resumed+bs.replied != 1 {
			t.Fatalf("reply %d: resumed %d, replied %d", allowed, bs.resumed, bs.replied)
		}
		if held := optionalStates(st); len(held) > 0 {
			t.Errorf("reply %d: the stream holds %v", allowed, held)
		}
	}
}

// A stream of a policy with optional steps makes their states when a
// request needs them, and keeps them for its next request.
func TestStepStatesMadeWhenUsed(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
	{"name":"warn","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"sliding_log","limit":2,"window":"1h"}],
	 "near_limit":{"ratio":0.5,"header":"x-warn"}},
	{"name":"slots","key":[{"source":"header","name":"x-user"}],"limits":[{"algorithm":"concurrency","limit":5,"max_duration":"1m"}]}]}`)
	for range 2 {
		if o := h.send("x-user=steps"); o.status != 200 {
			t.Fatalf("status %d", o.status)
		}
	}
	if o := h.send("x-user=steps"); o.status != 429 {
		t.Fatalf("third: status %d", o.status)
	}
	if n := len(h.plugin.freeStreams); n != 1 {
		t.Fatalf("%d streams", n)
	}
	held := optionalStates(h.plugin.freeStreams[0])
	if want := []string{"near", "slot", "resp"}; !reflect.DeepEqual(held, want) {
		t.Errorf("the stream holds %v, want %v", held, want)
	}
}

// A policy's steps print in the order a request visits them: the
// request headers' (quota, usage ask, body wait), each rule's in the
// rule loop (evaluate.go: a jsonrpc rule's calls before a rule's key,
// reserve before cost, the deny cache before capacity), the reply's
// (decide.go: the fallback before the verdict, near limit before
// degrade) and the response's.
func TestStepsInRequestOrder(t *testing.T) {
	const want = "quota, usage ask, body wait, match, calls, key, reserve, cost, deny cache, capacity, lease, call, " +
		"fallback, verdict, near limit, degrade, throttle, headers, near header, settle, concurrency"
	if got := compiledPolicy(t, fullConfig).steps.String(); got != want {
		t.Errorf("steps: %s\nwant   %s", got, want)
	}
}
