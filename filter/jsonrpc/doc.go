// Package jsonrpc reads JSON-RPC 2.0 requests for rate limits (issue 33):
// a body's calls, single or batched (Read); a cost table per method or
// tool name (Table), with a bounded integer formula over a call's params
// (Formula); and the JSON-RPC error objects a refusal answers with
// (AppendErrors).
//
// It is pure: it reads a body that jsonbound.ReadBody accepted, through
// jsonbound.Members and Lookup, so a call's fields are read as the
// upstream's parser reads them (the last of duplicate keys) or refused (a
// case variant of a name, an object on a path given twice). Read scans
// each call's members once (and keeps its params for Call.Param); a
// formula's path is a Lookup in the call. Its work is linear in the body
// per field read, without recursion, and it allocates only where a
// function says so. It imports neither the proxy-wasm SDK nor fmt,
// reflect or encoding/json.
package jsonrpc
