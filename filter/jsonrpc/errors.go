package jsonrpc

import "strconv"

// JSON-RPC 2.0's error codes, and EIP-1474's "Limit exceeded", the
// default for a rate limit (viem retries it).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602 // MCP's unknown tool
	CodeLimitExceeded  = -32005
)

// Error is one refusal as JSON-RPC error objects: every object of it is
// the same but for its id.
type Error struct {
	Code    int
	Message string // "Rate limited", "Method not found", ...
	// data: Reason always; Rule and Limit when not ""; Detail; RetryAfter
	// (whole seconds) and RetryAfterMs when > 0; Call (the index of the
	// call that decided) when >= 0.
	Reason, Rule, Limit string
	// Detail is more members of data as JSON text, each after a comma
	// (`,"tool":"search"`): the caller's, written as given.
	Detail                   string
	RetryAfter, RetryAfterMs int64
	Call                     int
}

// AppendErrors appends the answer to a refused body whose calls are
// calls (Read's; none when the body was unreadable) and which was a batch
// (Batch): for a single request, one error object with its id; for a
// batch with requests, an array of one object per request, in the
// calls' order, ids echoed as written; otherwise (only notifications and
// responses, or no calls) one object with id null. It allocates at most
// once, sized exactly up front, and nothing when dst has the room.
func AppendErrors(dst []byte, calls []Call, batch bool, e *Error) []byte {
	requests, ids := 0, 0
	for k := range calls {
		if calls[k].Kind == Request {
			requests, ids = requests+1, ids+len(calls[k].ID)
		}
	}
	need := len(`{"jsonrpc":"2.0","id":`) + errorSize(e) // one object, id aside
	if requests == 0 || !batch && len(calls) != 1 {
		need += len("null")
	} else if !batch {
		need += ids
	} else {
		need = 2 + requests*(need+1) - 1 + ids // [a,b]
	}
	if cap(dst)-len(dst) < need {
		grown := make([]byte, len(dst), len(dst)+need)
		copy(grown, dst)
		dst = grown
	}
	if requests == 0 || !batch && len(calls) != 1 {
		return appendObject(dst, "null", e)
	}
	if !batch {
		return appendObject(dst, calls[0].ID, e)
	}
	dst = append(dst, '[')
	first := true
	for k := range calls {
		if calls[k].Kind != Request {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendObject(dst, calls[k].ID, e)
	}
	return append(dst, ']')
}

// appendObject appends one error object with the raw id.
func appendObject(dst []byte, id string, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	dst = append(dst, `,"data":{"reason":`...)
	dst = appendString(dst, e.Reason)
	if e.Rule != "" {
		dst = appendString(append(dst, `,"rule":`...), e.Rule)
	}
	if e.Limit != "" {
		dst = appendString(append(dst, `,"limit":`...), e.Limit)
	}
	dst = append(dst, e.Detail...)
	if e.RetryAfter > 0 {
		dst = strconv.AppendInt(append(dst, `,"retry_after":`...), e.RetryAfter, 10)
	}
	if e.RetryAfterMs > 0 {
		dst = strconv.AppendInt(append(dst, `,"retry_after_ms":`...), e.RetryAfterMs, 10)
	}
	if e.Call >= 0 {
		dst = strconv.AppendInt(append(dst, `,"call":`...), int64(e.Call), 10)
	}
	return append(dst, "}}}"...)
}

// errorSize is the length of an object's error member and closing
// brace, as appendObject writes them.
func errorSize(e *Error) int {
	n := len(`,"error":{"code":,"message":,"data":{"reason":}}}`) + intLen(int64(e.Code)) +
		stringLen(e.Message) + stringLen(e.Reason) + len(e.Detail)
	if e.Rule != "" {
		n += len(`,"rule":`) + stringLen(e.Rule)
	}
	if e.Limit != "" {
		n += len(`,"limit":`) + stringLen(e.Limit)
	}
	if e.RetryAfter > 0 {
		n += len(`,"retry_after":`) + intLen(e.RetryAfter)
	}
	if e.RetryAfterMs > 0 {
		n += len(`,"retry_after_ms":`) + intLen(e.RetryAfterMs)
	}
	if e.Call >= 0 {
		n += len(`,"call":`) + intLen(int64(e.Call))
	}
	return n
}

// intLen is the length of v in decimal.
func intLen(v int64) int {
	n := 1
	if v < 0 {
		n, v = 2, -v // a Code is far from the smallest int64
	}
	for ; v >= 10; v /= 10 {
		n++
	}
	return n
}

// stringLen is the length of s as appendString writes it.
func stringLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped; other bytes as they are (the texts are
// the configuration's names and this package's words).
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
