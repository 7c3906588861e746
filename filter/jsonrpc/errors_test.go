package jsonrpc

import (
	"testing"
)

func TestAppendErrors(t *testing.T) {
	limited := Error{Code: CodeLimitExceeded, Message: "Rate limited", Reason: "rate_limited", Rule: "tools", Limit: "per-hour",
		RetryAfter: 42, RetryAfterMs: 41250, Call: 3}
	const data = `"error":{"code":-32005,"message":"Rate limited","data":{"reason":"rate_limited","rule":"tools","limit":"per-hour","retry_after":42,"retry_after_ms":41250,"call":3}}}`
	unreadable := Error{Code: CodeInvalidRequest, Message: "Invalid Request", Reason: "not a JSON-RPC request", Call: -1}
	for _, c := range []struct {
		name, body string
		e          *Error
		want       string
	}{
		{"single", `{"jsonrpc":"2.0","id":"a-1","method":"tools/call"}`, &limited,
			`{"jsonrpc":"2.0","id":"a-1",` + data},
		{"batch in order", `[{"jsonrpc":"2.0","id":2,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":1.0,"method":"b"},` +
			`{"jsonrpc":"2.0","id":9,"result":1},{"jsonrpc":"2.0","id":null,"method":"c"}]`, &limited,
			`[{"jsonrpc":"2.0","id":2,` + data + `,{"jsonrpc":"2.0","id":1.0,` + data + `,{"jsonrpc":"2.0","id":null,` + data + `]`},
		{"batch of one", `[{"jsonrpc":"2.0","id":5,"method":"a"}]`, &limited, `[{"jsonrpc":"2.0","id":5,` + data + `]`},
		{"only notifications", `[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","method":"m"}]`, &limited,
			`{"jsonrpc":"2.0","id":null,` + data},
		{"notification", `{"jsonrpc":"2.0","method":"n"}`, &limited, `{"jsonrpc":"2.0","id":null,` + data},
		{"unreadable", `[]`, &unreadable,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"reason":"not a JSON-RPC request"}}}`},
		{"detail", `{"jsonrpc":"2.0","id":1,"method":"a"}`, &Error{Code: -32602, Message: "Unknown tool", Reason: "unknown_tool", Rule: "r", Detail: `,"tool":"x"`, Call: 0},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool","data":{"reason":"unknown_tool","rule":"r","tool":"x","call":0}}}`},
		{"escaped", `{"jsonrpc":"2.0","id":1,"method":"a"}`, &Error{Code: -32601, Message: "Method \"x\"", Reason: "a\\b\n", Call: 0},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method \"x\"","data":{"reason":"a\\b\u000a","call":0}}}`},
	} {
		calls, _ := Read(c.body, 100, nil)
		if got := string(AppendErrors(nil, calls, Batch(c.body), c.e)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestAppendErrorsAllocatesOnce: one allocation sized up front, for
// a 200-call batch, and none when dst has the room.
func TestAppendErrorsAllocatesOnce(t *testing.T) {
	body := []byte{'['}
	for k := range 200 {
		if k > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"jsonrpc":"2.0","id":"call-number-`...)
		body = append(body, byte('0'+k%10), byte('0'+k/10%10), byte('0'+k/100))
		body = append(body, `","method":"tools/call"}`...)
	}
	body = append(body, ']')
	calls, fault := Read(string(body), 200, nil)
	if fault != 0 || len(calls) != 200 {
		t.Fatalf("Read: %v, %d calls", fault, len(calls))
	}
	e := &Error{Code: CodeLimitExceeded, Message: "Rate limited", Reason: "rate_limited", Rule: "a-rule-with-a-long-name", Limit: "per-hour",
		RetryAfter: 1 << 40, RetryAfterMs: 1 << 50, Call: 199}
	var out []byte
	if n := testing.AllocsPerRun(20, func() { out = AppendErrors(nil, calls, true, e) }); n != 1 {
		t.Errorf("AppendErrors(nil, …): %v allocations; want 1", n)
	}
	room, again := make([]byte, 0, len(out)), []byte(nil)
	if n := testing.AllocsPerRun(20, func() { again = AppendErrors(room, calls, true, e) }); n != 0 || string(again) != string(out) {
		t.Errorf("AppendErrors(room, …): %v allocations; want 0, the same text", n)
	}
	prefix := AppendErrors([]byte("x"), calls, true, e)
	if string(prefix) != "x"+string(out) {
		t.Errorf("AppendErrors lost what dst held")
	}
}

// TestAppendErrorsSize: the size computed up front is the text's.
func TestAppendErrorsSize(t *testing.T) {
	for _, body := range []string{`[]`, `{"jsonrpc":"2.0","id":"x","method":"a"}`, `{"jsonrpc":"2.0","method":"a"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":"22","method":"a"},{"jsonrpc":"2.0","method":"a"}]`} {
		calls, _ := Read(body, 10, nil)
		for _, e := range []*Error{{Code: -32700, Message: "Parse error", Reason: "x\"\x01", Call: -1},
			{Code: 7, Message: "m", Reason: "r", Rule: "a\\", Limit: "l", Detail: `,"tool":"x"`, RetryAfter: 10, RetryAfterMs: 9999, Call: 12}} {
			out := AppendErrors(nil, calls, Batch(body), e)
			if len(out) != cap(out) {
				t.Errorf("%s: %d bytes in a buffer of %d", body, len(out), cap(out))
			}
		}
	}
}
