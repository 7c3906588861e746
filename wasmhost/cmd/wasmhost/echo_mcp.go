package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// The built-in upstream's answer to a JSON-RPC 2.0 POST (a path ending in
// /mcp or /rpc), enough of an MCP server to try jsonrpc rules: a result
// per request that has an id, an array for an array, 202 and no body when
// the body holds only notifications and responses. A stand-in, not a
// model of MCP: no tool runs, no session is checked.

const (
	// sseHeader asks for the answer as an event stream (MCP's
	// text/event-stream), one "message" event per response.
	sseHeader = "x-echo-sse"
	// mcpSessionHeader is set on an initialize answer, as an MCP server
	// assigns a session.
	mcpSessionHeader = "Mcp-Session-Id"
)

var mcpSessions atomic.Int64

// rpcMessage is what the stand-in reads of one JSON-RPC message. A
// RawMessage is nil when its member is absent and "null" when null.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// isRPCPath is whether a POST to path is answered as JSON-RPC.
func isRPCPath(path string) bool {
	return strings.HasSuffix(path, "/mcp") || strings.HasSuffix(path, "/rpc")
}

// serveRPC answers a JSON-RPC POST with status (for a body with answers).
func serveRPC(w http.ResponseWriter, r *http.Request, status int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEchoBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			rpcFail(w, http.StatusRequestEntityTooLarge, -32600, fmt.Sprintf("request body: larger than %d bytes", maxEchoBody))
		} else {
			rpcFail(w, http.StatusBadRequest, -32700, "request body: "+err.Error())
		}
		return
	}
	if err := jsonbound.Check(body); err != nil {
		rpcFail(w, http.StatusBadRequest, -32700, "Parse error: "+strings.TrimPrefix(err.Error(), "jsonbound: "))
		return
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	batch := len(trimmed) > 0 && trimmed[0] == '['
	elems := []json.RawMessage{json.RawMessage(trimmed)}
	if batch {
		elems = nil
		if json.Unmarshal(trimmed, &elems) != nil || len(elems) == 0 {
			rpcFail(w, http.StatusBadRequest, -32600, "Invalid Request: an empty array")
			return
		}
	}
	var answers []rpcResponse
	for _, e := range elems {
		if a, ok := answerRPC(e, w.Header()); ok {
			answers = append(answers, a)
		}
	}
	if len(answers) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if r.Header.Get(sseHeader) == "1" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(status)
		rc := http.NewResponseController(w)
		for _, a := range answers {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", marshalRPC(a))
			rc.Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if batch {
		w.Write(marshalRPC(answers))
	} else {
		w.Write(marshalRPC(answers[0]))
	}
	io.WriteString(w, "\n")
}

// answerRPC is the answer to one message, if it gets one: a request
// (method and id) gets its result; a notification (no id) or a response
// (no method) gets none; anything else an Invalid Request error.
func answerRPC(e json.RawMessage, h http.Header) (rpcResponse, bool) {
	var m rpcMessage
	null := json.RawMessage("null")
	if len(e) == 0 || e[0] != '{' || json.Unmarshal(e, &m) != nil || m.JSONRPC != "2.0" {
		return rpcResponse{JSONRPC: "2.0", ID: null, Error: &rpcError{-32600, "Invalid Request"}}, true
	}
	switch {
	case m.Method == nil && (m.Result != nil || m.Error != nil):
		return rpcResponse{}, false // a response from the client
	case m.Method == nil:
		return rpcResponse{JSONRPC: "2.0", ID: null, Error: &rpcError{-32600, "Invalid Request"}}, true
	case m.ID == nil:
		return rpcResponse{}, false // a notification
	}
	a := rpcResponse{JSONRPC: "2.0", ID: m.ID}
	switch *m.Method {
	case "initialize":
		h.Set(mcpSessionHeader, fmt.Sprintf("echo-session-%d", mcpSessions.Add(1)))
		a.Result = marshalRPC(map[string]any{"protocolVersion": protocolVersion(m.Params),
			"capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo":   map[string]any{"name": "wasmhost-echo", "version": "1"}})
	case "ping":
		a.Result = json.RawMessage("{}")
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(m.Params, &p)
		a.Result = marshalRPC(map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo: " + p.Name}}})
	default:
		res := map[string]any{"method": *m.Method}
		if m.Params != nil {
			res["params"] = m.Params
		}
		a.Result = marshalRPC(res)
	}
	return a, true
}

// protocolVersion is the version an initialize asks for, else MCP's
// 2025-06-18.
func protocolVersion(params json.RawMessage) string {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(params, &p) == nil && p.ProtocolVersion != "" {
		return p.ProtocolVersion
	}
	return "2025-06-18"
}

// rpcFail answers a body that is not JSON-RPC with one error object, id
// null.
func rpcFail(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(marshalRPC(rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{code, msg}}))
	io.WriteString(w, "\n")
}

// marshalRPC is v as compact JSON, without HTML escapes.
func marshalRPC(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
