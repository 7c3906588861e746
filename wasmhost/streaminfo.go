package wasmhost

import (
	"encoding/binary"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// StreamInfo is what the filters before the guest's, and the connection's
// TLS handshake, leave on a stream: Config.StreamInfo makes one for each
// request.
type StreamInfo struct {
	// Metadata is the stream's dynamic metadata, filter_metadata: by
	// namespace, a google.protobuf.Struct's fields, with values as
	// encoding/json decodes them into an any (string, float64, bool, nil,
	// []any, map[string]any; other integer and float types count as the
	// double a Struct holds). jwt_authn, having verified a token, leaves
	// {"envoy.filters.http.jwt_authn": {"<payload_in_metadata>": payload}}.
	Metadata map[string]map[string]any
	// TLS, when set, makes the stream's connection TLS.
	TLS *TLSInfo
}

// TLSInfo is the downstream TLS connection, as the connection.* properties
// show it.
type TLSInfo struct {
	Version string // tls_version, such as "TLSv1.3"
	SNI     string // requested_server_name
	// Peer is the client's certificate, nil when it presented none.
	Peer *PeerCertificate
}

// PeerCertificate is a client certificate: its URI and DNS SANs in order
// (Istio's workload identity is a URI SAN,
// "spiffe://cluster.local/ns/default/sa/productpage"), its subject and its
// SHA-256 digest (hex).
type PeerCertificate struct {
	URISANs, DNSSANs []string
	Subject          string
	SHA256           string
}

// Envoy serves a property by walking its path (Context::getProperty,
// source/extensions/common/wasm/context.cc): "metadata" is the stream's
// dynamic metadata, an envoy.config.core.v3.Metadata message; a field of a
// message, a key of a map or an index of a list takes each next segment,
// and anything else is NotFound. CEL reads a google.protobuf.Struct as a
// map and a Value as its content, a number as a double (cel-cpp,
// cel_proto_wrap_util.cc). The leaf is serialized by its type
// (serializeValue): a string as its bytes, a double as 8 little-endian
// bytes, a bool as one byte, a map or a list as pairs (a list's elements as
// keys with empty values), a message as its protobuf encoding, and a null
// fails with SerializationFailure.

// metadataProperty serves a path below a Metadata message: seg[0] is
// "metadata" (or a route's metadata), md its filter_metadata.
func metadataProperty(md map[string]map[string]any, seg []string) ([]byte, uint32) {
	if len(seg) == 1 {
		return encodeMetadata(md), statusOK
	}
	switch seg[1] {
	case "filter_metadata":
	case "typed_filter_metadata": // none is modelled: an empty map
		if len(seg) == 2 {
			return encodePairs(nil), statusOK
		}
		return nil, statusNotFound
	default:
		return nil, statusNotFound
	}
	if len(seg) == 2 {
		var pairs [][2]string
		for _, ns := range sortedKeys(md) {
			pairs = append(pairs, [2]string{ns, string(serializeCEL(anyMap(md[ns])))})
		}
		return encodePairs(pairs), statusOK
	}
	fields, ok := md[seg[2]]
	if !ok {
		return nil, statusNotFound
	}
	v, ok := walkCEL(anyMap(fields), seg[3:])
	if !ok {
		return nil, statusNotFound
	}
	if v == nil {
		return nil, statusSerializationFailure
	}
	return serializeCEL(v), statusOK
}

func anyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// walkCEL descends a Struct-like value by map keys and list indexes.
func walkCEL(v any, seg []string) (any, bool) {
	for _, s := range seg {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[s]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(strings.TrimSpace(s)) // absl::SimpleAtoi
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// serializeCEL encodes a value as serializeValue does; a null, which fails
// there, is the caller's to refuse.
func serializeCEL(v any) []byte {
	switch c := v.(type) {
	case string:
		return []byte(c)
	case bool:
		if c {
			return []byte{1}
		}
		return []byte{0}
	case map[string]any:
		var pairs [][2]string
		for _, k := range sortedKeys(c) {
			pairs = append(pairs, [2]string{k, string(serializeCEL(c[k]))})
		}
		return encodePairs(pairs)
	case []any:
		var pairs [][2]string
		for _, e := range c {
			pairs = append(pairs, [2]string{string(serializeCEL(e)), ""})
		}
		return encodePairs(pairs)
	}
	if f, ok := number(v); ok {
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))
	}
	return nil
}

// number is a numeric value as the double a Struct holds.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// sortedKeys gives map pairs one order; Envoy's follows its protobuf map,
// which has none a guest may rely on.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// encodeMetadata is the protobuf encoding of an envoy.config.core.v3.Metadata
// holding filter_metadata (field 1, map<string, google.protobuf.Struct>).
func encodeMetadata(md map[string]map[string]any) []byte {
	var b []byte
	for _, ns := range sortedKeys(md) {
		b = appendMapEntry(b, 1, ns, encodeStruct(anyMap(md[ns])))
	}
	return b
}

// encodeStruct encodes a google.protobuf.Struct: fields is field 1,
// map<string, Value>.
func encodeStruct(m map[string]any) []byte {
	var b []byte
	for _, k := range sortedKeys(m) {
		b = appendMapEntry(b, 1, k, encodeValue(m[k]))
	}
	return b
}

// encodeValue encodes a google.protobuf.Value: null_value 1, number_value
// 2, string_value 3, bool_value 4, struct_value 5, list_value 6 (a
// ListValue, values field 1).
func encodeValue(v any) []byte {
	switch c := v.(type) {
	case nil:
		return []byte{1<<3 | 0, 0}
	case string:
		return appendBytesField(nil, 3, []byte(c))
	case bool:
		n := byte(0)
		if c {
			n = 1
		}
		return []byte{4<<3 | 0, n}
	case map[string]any:
		return appendBytesField(nil, 5, encodeStruct(c))
	case []any:
		var list []byte
		for _, e := range c {
			list = appendBytesField(list, 1, encodeValue(e))
		}
		return appendBytesField(nil, 6, list)
	}
	f, _ := number(v)
	return binary.LittleEndian.AppendUint64([]byte{2<<3 | 1}, math.Float64bits(f))
}

// appendMapEntry appends a map entry: a message with the key as field 1
// and the encoded value message as field 2.
func appendMapEntry(b []byte, field int, key string, value []byte) []byte {
	entry := appendBytesField(nil, 1, []byte(key))
	entry = appendBytesField(entry, 2, value)
	return appendBytesField(b, field, entry)
}

// appendBytesField appends a length-delimited field (wire type 2).
func appendBytesField(b []byte, field int, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(field)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// connectionAttribute serves connection.<name> beyond id (properties.go):
// Envoy's ConnectionWrapper (source/extensions/filters/common/expr/
// context.cc). mtls is whether a client certificate was presented;
// requested_server_name is always there; the TLS attributes exist only on
// a TLS connection, and a SAN only when the certificate has one (the
// first is served).
func (s *stream) connectionAttribute(name string) ([]byte, bool) {
	tls := s.info.TLS
	switch name {
	case "mtls":
		if tls != nil && tls.Peer != nil {
			return []byte{1}, true
		}
		return []byte{0}, true
	case "requested_server_name":
		if tls == nil {
			return str(""), true
		}
		return str(tls.SNI), true
	}
	if tls == nil {
		return nil, false
	}
	peer := tls.Peer
	if peer == nil {
		peer = &PeerCertificate{}
	}
	first := func(list []string) ([]byte, bool) {
		if len(list) == 0 {
			return nil, false
		}
		return str(list[0]), true
	}
	switch name {
	case "tls_version":
		return str(tls.Version), true
	case "subject_peer_certificate":
		return str(peer.Subject), true
	case "subject_local_certificate":
		return str(""), true
	case "uri_san_peer_certificate":
		return first(peer.URISANs)
	case "dns_san_peer_certificate":
		return first(peer.DNSSANs)
	case "sha256_peer_certificate_digest":
		if peer.SHA256 == "" {
			return nil, false
		}
		return str(peer.SHA256), true
	}
	return nil, false
}

// streamInfoFor calls Config.StreamInfo for a request, before its headers
// are read, as the filters it stands for run before the guest's.
func (c *Config) streamInfoFor(r *http.Request) StreamInfo {
	if c.StreamInfo == nil {
		return StreamInfo{}
	}
	return c.StreamInfo(r)
}
