package jsonrpc

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// Fault is why a body is not read as JSON-RPC calls: a jsonbound.Refusal,
// so the filter answers it as any unreadable body. Read returns
// RefuseNotJSONRPC, RefuseTooManyCalls, or a Lookup's refusal of a call's
// field (RefuseCaseVariant, RefuseDuplicateParent).
type Fault = jsonbound.Refusal

// Kind is what a call is.
type Kind uint8

const (
	Request      Kind = iota + 1 // a method with an id: answered
	Notification                 // a method without an id: never answered
	Response                     // a result or error the client sends back (MCP's sampling): neither charged nor answered
)

// Call is one JSON-RPC message of a body: body[At:End] is its object.
type Call struct {
	At, End int
	// ID is the id's JSON text as written (a string with its quotes, a
	// number, null), "" when absent.
	ID   string
	Kind Kind
	// Method is the method's value, unescaped; "" for a Response.
	Method string
	// Params is the params member's JSON text, "" when absent or when
	// ParamsFault says why a path inside it is refused (a case variant
	// or a repeated "params"); see Param.
	Params      string
	ParamsFault Fault
}

// Text is the call's object in body.
func (c *Call) Text(body string) string { return body[c.At:c.End] }

// Batch reports whether body's value is an array (a batch, even of one
// call), which is answered with an array.
func Batch(body string) bool {
	body = strings.TrimLeft(body, " \t\r\n")
	return body != "" && body[0] == '['
}

// Read lists the calls of body, a text jsonbound.ReadBody accepted: one
// object, or an array of at most max objects (more is
// RefuseTooManyCalls; max < 0 counts as 0). It appends to dst[:0] and allocates only when dst
// is too small or a method name holds an escape. A message is refused
// as RefuseNotJSONRPC when the array is empty, an element is not an
// object, "jsonrpc" is not "2.0", "method" is not a string, "id" is an
// object, an array or a boolean, or it has neither a method nor a
// "result" or "error" (a response, which needs an id).
func Read(body string, max int, dst []Call) ([]Call, Fault) {
	calls := dst[:0]
	if max < 0 {
		max = 0
	}
	if !Batch(body) {
		i := len(body) - len(strings.TrimLeft(body, " \t\r\n"))
		c, why := readCall(body[:len(strings.TrimRight(body, " \t\r\n"))], i)
		if why != 0 {
			return calls, why
		}
		return append(calls, c), 0
	}
	for i := jsonbound.NextStart(body, 0); i >= 0; {
		if len(calls) == max {
			return calls, jsonbound.RefuseTooManyCalls
		}
		c, why := readCall(body, i)
		if why != 0 {
			return calls, why
		}
		calls = append(calls, c)
		i = jsonbound.NextStart(body, c.End)
	}
	if len(calls) == 0 {
		return calls, jsonbound.RefuseNotJSONRPC
	}
	return calls, 0
}

// callNames are the members readCall reads, in one scan of a call.
var callNames = [...]string{"jsonrpc", "id", "method", "result", "error", "params"}

const (
	memberVersion = iota
	memberID
	memberMethod
	memberResult
	memberError
	memberParams
)

// readCall reads the message at body[at:], which ends in body (c.End):
// its members in one scan (jsonbound.Members), then each as
// jsonbound.Lookup would read it, in the order the faults are told.
func readCall(body string, at int) (Call, Fault) {
	c := Call{At: at, End: -1}
	var ms [len(callNames)]jsonbound.Member
	if at < len(body) {
		c.End = jsonbound.Members(body[at:], callNames[:], ms[:])
	}
	if c.End < 0 {
		return c, jsonbound.RefuseNotJSONRPC
	}
	c.End += at
	if why := ms[memberVersion].Refusal(false); why != 0 {
		return c, why
	}
	if s, ok := stringOf(ms[memberVersion].Value); !ok || s != "2.0" {
		return c, jsonbound.RefuseNotJSONRPC
	}
	if why := ms[memberID].Refusal(false); why != 0 {
		return c, why
	}
	id := ms[memberID].Value
	if id != "" && (id[0] == '{' || id[0] == '[' || id[0] == 't' || id[0] == 'f') {
		return c, jsonbound.RefuseNotJSONRPC
	}
	c.ID = id
	c.Params, c.ParamsFault = ms[memberParams].Value, ms[memberParams].Refusal(true)
	if c.ParamsFault != 0 {
		c.Params = ""
	}
	if why := ms[memberMethod].Refusal(false); why != 0 {
		return c, why
	}
	if method := ms[memberMethod].Value; method != "" {
		name, ok := stringOf(method)
		if !ok {
			return c, jsonbound.RefuseNotJSONRPC
		}
		c.Method, c.Kind = name, Notification
		if id != "" {
			c.Kind = Request
		}
		return c, 0
	}
	for _, m := range ms[memberResult : memberError+1] {
		if why := m.Refusal(false); why != 0 {
			return c, why
		}
		if m.Value != "" && id != "" {
			c.Kind = Response
			return c, 0
		}
	}
	return c, jsonbound.RefuseNotJSONRPC
}

// Param is the field at path (dotted, as jsonbound.Lookup's) inside the
// call's params, as jsonbound.Lookup(c.Text(body), "params."+path) reads
// it, without scanning the call again: its JSON text, "" when absent, or
// why it is refused.
func (c *Call) Param(path string) (string, Fault) {
	if c.ParamsFault != 0 || c.Params == "" {
		return "", c.ParamsFault
	}
	return jsonbound.Lookup(c.Params, path)
}

// stringOf is the value of a JSON string's text, unescaped (allocating
// only for an escape); ok is false for any other value.
func stringOf(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if s := raw[1 : len(raw)-1]; strings.IndexByte(s, '\\') < 0 {
		return s, true
	}
	return jsonvalue.Parse(raw).Str, true
}
