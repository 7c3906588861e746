package wasmhost

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// testVM is a VM with one stream (context 2) for properties to be read
// from, without a guest.
func testVM(t *testing.T, cfg Config, info StreamInfo, path string) *vm {
	t.Helper()
	s := &stream{id: 2, info: info, reqHeaders: newHeaderMap([][2]string{{":path", path}})}
	return &vm{h: &Host{cfg: cfg}, streams: map[uint32]*stream{2: s}, current: 2}
}

// jwtInfo is what jwt_authn leaves once it has verified a token whose
// payload is payload, with payload_in_metadata "jwt_payload".
func jwtInfo(t *testing.T, payload string) StreamInfo {
	t.Helper()
	var claims map[string]any
	if err := json.Unmarshal([]byte(payload), &claims); err != nil {
		t.Fatal(err)
	}
	return StreamInfo{Metadata: map[string]map[string]any{
		"envoy.filters.http.jwt_authn": {"jwt_payload": claims},
	}}
}

func f64(f float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)) }

// A path below metadata reads what jwt_authn left as Envoy serves it: a
// string claim as its bytes, a number as the 8 bytes of a double (a
// Struct holds every number so), a bool as one byte, an object or a list
// as pairs; a missing key or a step into a scalar is NotFound, a null a
// SerializationFailure.
func TestMetadataProperties(t *testing.T) {
	v := testVM(t, Config{}, jwtInfo(t, `{"sub":"alice","uid":42,"admin":true,"org":{"id":"acme"},
		"groups":["a","b"],"none":null,"ratio":0.5}`), "/")
	const ns = "metadata\x00filter_metadata\x00envoy.filters.http.jwt_authn\x00jwt_payload\x00"
	for _, tc := range []struct {
		path   string
		want   []byte
		status uint32
	}{
		{ns + "sub", []byte("alice"), statusOK},
		{ns + "uid", f64(42), statusOK},
		{ns + "ratio", f64(0.5), statusOK},
		{ns + "admin", []byte{1}, statusOK},
		{ns + "org\x00id", []byte("acme"), statusOK},
		{ns + "org", encodePairs([][2]string{{"id", "acme"}}), statusOK},
		{ns + "groups", encodePairs([][2]string{{"a", ""}, {"b", ""}}), statusOK},
		{ns + "groups\x001", []byte("b"), statusOK},
		{ns + "groups\x002", nil, statusNotFound},
		{ns + "groups\x00x", nil, statusNotFound},
		{ns + "none", nil, statusSerializationFailure},
		{ns + "missing", nil, statusNotFound},
		{ns + "sub\x00deeper", nil, statusNotFound},
		{"metadata\x00filter_metadata\x00other.namespace", nil, statusNotFound},
		{"metadata\x00no_such_field", nil, statusNotFound},
		{"metadata\x00typed_filter_metadata", encodePairs(nil), statusOK},
		{"metadata\x00filter_metadata", encodePairs([][2]string{{"envoy.filters.http.jwt_authn",
			string(encodePairs([][2]string{{"jwt_payload", string(serializeCEL(v.streams[2].info.Metadata["envoy.filters.http.jwt_authn"]["jwt_payload"]))}}))}}), statusOK},
		// Istio's attribute, not Envoy's: NotFound, as in Envoy.
		{"source\x00principal", nil, statusNotFound},
	} {
		got, status := v.propertyStatus(tc.path)
		if status != tc.status || !bytes.Equal(got, tc.want) {
			t.Errorf("%q: %x, status %d; want %x, status %d", strings.ReplaceAll(tc.path, "\x00", "."), got, status, tc.want, tc.status)
		}
	}
	// No metadata at all: every path below filter_metadata is NotFound.
	empty := testVM(t, Config{}, StreamInfo{}, "/")
	if _, status := empty.propertyStatus(ns + "sub"); status != statusNotFound {
		t.Errorf("without metadata: status %d", status)
	}
	if got, status := empty.propertyStatus("metadata"); status != statusOK || len(got) != 0 {
		t.Errorf("empty metadata message: %x, status %d", got, status)
	}
}

// The whole metadata is the protobuf encoding of an
// envoy.config.core.v3.Metadata, written out by hand here.
func TestMetadataMessageEncoding(t *testing.T) {
	md := map[string]map[string]any{"ns": {"s": "x", "n": 1.0, "b": false, "z": nil, "l": []any{"y"}, "o": map[string]any{}}}
	value := func(v ...byte) []byte { return v }
	field := func(n byte, data []byte) []byte { return append([]byte{n<<3 | 2, byte(len(data))}, data...) }
	entry := func(k string, v []byte) []byte { return field(1, append(field(1, []byte(k)), field(2, v)...)) }
	var st []byte // the Struct's fields, in key order
	st = append(st, entry("b", value(4<<3, 0))...)
	st = append(st, entry("l", field(6, field(1, field(3, []byte("y")))))...)
	st = append(st, entry("n", append([]byte{2<<3 | 1}, f64(1)...))...)
	st = append(st, entry("o", field(5, nil))...)
	st = append(st, entry("s", field(3, []byte("x")))...)
	st = append(st, entry("z", value(1<<3, 0))...)
	want := entry("ns", st)
	if got := encodeMetadata(md); !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

// connection.* follows Envoy's ConnectionWrapper: mtls and
// requested_server_name always; the TLS attributes only on a TLS
// connection; a SAN only when the certificate has one.
func TestConnectionProperties(t *testing.T) {
	plain := testVM(t, Config{}, StreamInfo{}, "/")
	spiffe := "spiffe://cluster.local/ns/default/sa/productpage"
	mtls := testVM(t, Config{}, StreamInfo{TLS: &TLSInfo{Version: "TLSv1.3", SNI: "api.example.com",
		Peer: &PeerCertificate{URISANs: []string{spiffe, "spiffe://other"}, Subject: "CN=client"}}}, "/")
	server := testVM(t, Config{}, StreamInfo{TLS: &TLSInfo{Version: "TLSv1.2"}}, "/")
	for _, tc := range []struct {
		name   string
		v      *vm
		path   string
		want   []byte
		status uint32
	}{
		{"plain mtls", plain, "connection\x00mtls", []byte{0}, statusOK},
		{"plain sni", plain, "connection\x00requested_server_name", []byte{}, statusOK},
		{"plain san", plain, "connection\x00uri_san_peer_certificate", nil, statusNotFound},
		{"plain version", plain, "connection\x00tls_version", nil, statusNotFound},
		{"mtls", mtls, "connection\x00mtls", []byte{1}, statusOK},
		{"first uri san", mtls, "connection\x00uri_san_peer_certificate", []byte(spiffe), statusOK},
		{"no dns san", mtls, "connection\x00dns_san_peer_certificate", nil, statusNotFound},
		{"subject", mtls, "connection\x00subject_peer_certificate", []byte("CN=client"), statusOK},
		{"sni", mtls, "connection\x00requested_server_name", []byte("api.example.com"), statusOK},
		{"version", mtls, "connection\x00tls_version", []byte("TLSv1.3"), statusOK},
		{"no client cert: mtls", server, "connection\x00mtls", []byte{0}, statusOK},
		{"no client cert: san", server, "connection\x00uri_san_peer_certificate", nil, statusNotFound},
		{"no client cert: subject", server, "connection\x00subject_peer_certificate", []byte{}, statusOK},
		{"unknown", mtls, "connection\x00principal", nil, statusNotFound},
	} {
		got, status := tc.v.propertyStatus(tc.path)
		if status != tc.status || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %q, status %d; want %q, status %d", tc.name, got, status, tc.want, tc.status)
		}
	}
}

// Route metadata is served where Envoy >= 1.33 serves it
// (xds.route_metadata) and at the older route_metadata; xds.route_name is
// the route's name, "" included, and NotFound without a route.
func TestRouteProperties(t *testing.T) {
	cfg := Config{Routes: []Route{
		{PathPrefix: "/api/", Name: "api", Cluster: "backend", Metadata: map[string]map[string]any{"ratelimit": {"tier": "gold"}}},
		{PathPrefix: "/anon/"},
	}}
	api := testVM(t, cfg, StreamInfo{}, "/api/x")
	for _, path := range []string{"xds\x00route_metadata\x00filter_metadata\x00ratelimit\x00tier", "route_metadata\x00filter_metadata\x00ratelimit\x00tier"} {
		if got, status := api.propertyStatus(path); status != statusOK || string(got) != "gold" {
			t.Errorf("%q: %q, status %d", path, got, status)
		}
	}
	if got, status := api.propertyStatus("xds\x00route_name"); status != statusOK || string(got) != "api" {
		t.Errorf("xds.route_name: %q, status %d", got, status)
	}
	anon := testVM(t, cfg, StreamInfo{}, "/anon/x")
	if got, status := anon.propertyStatus("xds\x00route_name"); status != statusOK || len(got) != 0 {
		t.Errorf("unnamed route: %q, status %d", got, status)
	}
	if _, status := anon.propertyStatus("xds\x00cluster_name"); status != statusNotFound {
		t.Errorf("no cluster: status %d", status)
	}
	none := testVM(t, cfg, StreamInfo{}, "/other")
	for _, path := range []string{"xds\x00route_name", "xds\x00route_metadata", "route_metadata"} {
		if _, status := none.propertyStatus(path); status != statusNotFound {
			t.Errorf("no route, %q: status %d", path, status)
		}
	}
}
