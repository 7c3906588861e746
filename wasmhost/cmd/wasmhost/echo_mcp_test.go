package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// A POST to .../mcp or .../rpc is answered as JSON-RPC: a result per
// request id (raw, as written), an array for an array, nothing for
// notifications and responses, 202 when nothing is answered.
func TestEchoMCPAnswers(t *testing.T) {
	t.Parallel()
	up := startEchoT(t)
	for _, tc := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 200,
			`{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"/v1/mcp", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}`, 200,
			`{"jsonrpc":"2.0","id":"a","result":{"content":[{"text":"echo: search","type":"text"}]}}`},
		{"/rpc", `{"jsonrpc":"2.0","id":1.50,"method":"eth_call","params":[{"to":"0x1"},"latest"]}`, 200,
			`{"jsonrpc":"2.0","id":1.50,"result":{"method":"eth_call","params":[{"to":"0x1"},"latest"]}}`},
		{"/rpc", `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","id":null,"method":"b"},` +
			`{"jsonrpc":"2.0","id":9,"result":{}},5]`, 200,
			`[{"jsonrpc":"2.0","id":1,"result":{"method":"a"}},{"jsonrpc":"2.0","id":null,"result":{"method":"b"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]`},
		{"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202, ``},
		{"/mcp", `[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}]`, 202, ``},
		{"/mcp", `[]`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an empty array"}}`},
		{"/mcp", `{"jsonrpc":"2.0","id":1`, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid JSON at line 1, column 24: unexpected end of input: missing '}'"}}`},
		{"/mcp", `{"jsonrpc":"1.0","id":1,"method":"x"}`, 200, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
	} {
		r := get(t, up+tc.path, tc.body, nil)
		body := strings.TrimSuffix(r.body, "\n")
		if r.status != tc.status || body != tc.want {
			t.Errorf("%s %s:\n got %d %s\nwant %d %s", tc.path, tc.body, r.status, body, tc.status, tc.want)
		}
		if tc.want != "" && r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: content-type %q", tc.body, r.header.Get("Content-Type"))
		}
	}
	// A GET, or a POST elsewhere, is echoed.
	if r := get(t, up+"/mcp", "", nil); r.echo(t).URI != "/mcp" {
		t.Errorf("GET /mcp: %q", r.body)
	}
	if r := get(t, up+"/mcpx", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); r.echo(t).URI != "/mcpx" {
		t.Errorf("POST /mcpx: %q", r.body)
	}
}

// An initialize answer carries a new Mcp-Session-Id and the protocol
// version asked for; x-echo-sse: 1 answers as an event stream, one
// message event per response; x-echo-status applies.
func TestEchoMCPSessionAndStream(t *testing.T) {
	t.Parallel()
	up := startEchoT(t)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{}}}`
	a, b := get(t, up+"/mcp", init, nil), get(t, up+"/mcp", init, nil)
	sa, sb := a.header.Get("Mcp-Session-Id"), b.header.Get("Mcp-Session-Id")
	if a.status != 200 || sa == "" || sa == sb || !strings.Contains(a.body, `"protocolVersion":"2025-03-26"`) {
		t.Errorf("initialize: %d, sessions %q %q, body %s", a.status, sa, sb, a.body)
	}
	if r := get(t, up+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("ping: Mcp-Session-Id %q; want none", r.header.Get("Mcp-Session-Id"))
	}

	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s"}}]`
	r := get(t, up+"/mcp", batch, map[string]string{sseHeader: "1"})
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"text\":\"echo: s\",\"type\":\"text\"}]}}\n\n"
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || r.body != want {
		t.Errorf("SSE: %d %q\n%q", r.status, r.header.Get("Content-Type"), r.body)
	}
	if r := get(t, up+"/mcp", `{"jsonrpc":"2.0","method":"n"}`, map[string]string{sseHeader: "1"}); r.status != 202 || r.body != "" {
		t.Errorf("SSE of a notification: %d %q; want 202, no body", r.status, r.body)
	}
	if r := get(t, up+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{statusHeader: "503"}); r.status != 503 || !strings.Contains(r.body, `"result":{}`) {
		t.Errorf("x-echo-status 503: %d %q", r.status, r.body)
	}
}

// Any body gets an answer without a panic: 202 and nothing, or JSON (an
// object, or an array for an array), or an event stream of JSON objects.
func FuzzEchoRPC(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[{"jsonrpc":"2.0","method":"n"},1,{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":7}}]`,
		`[]`, `{"jsonrpc":"2.0","id":{},"method":"initialize","params":[]}`, `[[`, `{"jsonrpc":"2.0","result":null}`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, body string, sse bool) {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		if sse {
			r.Header.Set(sseHeader, "1")
		}
		w := httptest.NewRecorder()
		serveRPC(w, r, 200)
		out := w.Body.String()
		switch ct := w.Header().Get("Content-Type"); {
		case w.Code == 202:
			if out != "" {
				t.Fatalf("202 with a body %q", out)
			}
		case ct == "application/json":
			if !json.Valid([]byte(out)) {
				t.Fatalf("%q: invalid JSON %q", body, out)
			}
		case ct == "text/event-stream":
			for _, ev := range strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n") {
				data, ok := strings.CutPrefix(ev, "event: message\ndata: ")
				if !ok || !json.Valid([]byte(data)) {
					t.Fatalf("%q: event %q", body, ev)
				}
			}
		default:
			t.Fatalf("%q: status %d, content-type %q", body, w.Code, ct)
		}
	})
}
