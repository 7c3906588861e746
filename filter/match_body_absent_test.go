package filter

import "testing"

// match.body's absent holds for a field that is not there or null, never
// for one present with an empty string: "" is present. Kills bodyValue
// taking an empty string as absent, which no test covered.
func TestBodyMatchAbsentIsNotAnEmptyValue(t *testing.T) {
	h := newFakeHost(t, `{"redis":{"cluster":"redis"},"rules":[
		{"name":"no-model","match":{"path":"/v1/chat/completions","body":[{"path":"model","absent":true}]},
		 "key":[{"source":"header","name":"x-api-key"}],"limits":[{"algorithm":"sliding_log","limit":1,"window":"1m"}]}]}`)
	const chat = "/v1/chat/completions"
	// The rule does not apply to a present empty model: never limited.
	for i := range 3 {
		if r := h.sendBody(bodyRequest{path: chat, body: `{"model":""}`}); r.status != 0 {
			t.Fatalf(`{"model":""} #%d: %+v; want admitted, the rule not applying`, i+1, r)
		}
	}
	// It applies to an absent or null one: the second is denied.
	for _, body := range []string{`{"messages":[]}`, `{"model":null}`} {
		_ = h.sendBody(bodyRequest{path: chat, body: body})
		if r := h.sendBody(bodyRequest{path: chat, body: body}); r.status != 429 {
			t.Fatalf("%s, the second: %+v; want 429", body, r)
		}
	}
}
