package wasmhost

import (
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"time"
)

// Properties follow Envoy's attribute names and encodings: strings are raw
// bytes, integers and timestamps 8 little-endian bytes, booleans one byte,
// maps serialized pairs. A path arrives as NUL-separated segments.

func hGetProperty(v *vm, a args) uint32 {
	path, ok := v.readString(a.u32(0), a.u32(1))
	if !ok {
		return statusInvalidMemoryAccess
	}
	val, status := v.propertyStatus(path)
	if status != statusOK {
		return status
	}
	return v.copyOut(val, a.u32(2), a.u32(3))
}

// propertyStatus serves a property, or says why not: NotFound, or
// SerializationFailure for a null in metadata.
func (v *vm) propertyStatus(path string) ([]byte, uint32) {
	s := v.activeStream()
	seg := strings.Split(path, "\x00")
	if _, set := s.propSet(path); s != nil && !set {
		switch {
		case seg[0] == "metadata":
			return metadataProperty(s.info.Metadata, seg)
		case seg[0] == "route_metadata", len(seg) >= 2 && seg[0] == "xds" && seg[1] == "route_metadata":
			r, ok := v.route(s)
			if !ok {
				return nil, statusNotFound
			}
			if seg[0] == "xds" {
				seg = seg[1:]
			}
			return metadataProperty(r.Metadata, seg)
		}
	}
	val, found := v.property(path)
	if !found {
		return nil, statusNotFound
	}
	return val, statusOK
}

// propSet returns a value the guest set with proxy_set_property.
func (s *stream) propSet(path string) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	val, ok := s.props[path]
	return val, ok
}

// hSetProperty stores the value on the stream, where get_property finds it
// again (Envoy keeps it in the stream's filter state). The root context has
// no stream, so Envoy answers NotFound there.
func hSetProperty(v *vm, a args) uint32 {
	path, ok1 := v.readString(a.u32(0), a.u32(1))
	val, ok2 := v.read(a.u32(2), a.u32(3))
	if !ok1 || !ok2 {
		return statusInvalidMemoryAccess
	}
	s := v.activeStream()
	if s == nil {
		return statusNotFound
	}
	if s.props == nil {
		s.props = map[string][]byte{}
	}
	s.props[path] = val
	return statusOK
}

func (v *vm) property(path string) ([]byte, bool) {
	s := v.activeStream()
	if s != nil {
		if val, ok := s.props[path]; ok {
			return val, true
		}
	}
	seg := strings.Split(path, "\x00")
	switch seg[0] {
	case "plugin_name":
		return str(v.h.cfg.PluginName), len(seg) == 1
	case "plugin_root_id":
		return str(v.h.cfg.RootID), len(seg) == 1
	case "plugin_vm_id":
		return str(v.h.cfg.VMID), len(seg) == 1
	case "route_name", "cluster_name":
		if s == nil || len(seg) != 1 {
			return nil, false
		}
		r, _ := v.route(s)
		val := r.Name
		if seg[0] == "cluster_name" {
			val = r.Cluster
		}
		return str(val), val != ""
	case "xds":
		// Envoy >= 1.33 serves only these (PR #36619); the names above
		// are the older ones Higress's Envoy still serves.
		if s == nil || len(seg) != 2 {
			return nil, false
		}
		r, ok := v.route(s)
		switch {
		case !ok:
			return nil, false
		case seg[1] == "route_name":
			return str(r.Name), true
		case seg[1] == "cluster_name":
			return str(r.Cluster), r.Cluster != ""
		}
		return nil, false
	}
	if s == nil || len(seg) < 2 {
		return nil, false
	}
	val, ok := s.attribute(seg[0], seg[1])
	if !ok {
		return nil, false
	}
	switch {
	case len(seg) == 2:
		return val, true
	case len(seg) == 3 && (seg[1] == "headers"):
		// A header map attribute indexed by header name.
		m := s.reqHeaders
		if seg[0] == "response" {
			m = s.respHeaders
		}
		h, found := m.get(seg[2])
		return str(h), found
	}
	return nil, false
}

// attribute returns the Envoy attribute group.name of the stream.
func (s *stream) attribute(group, name string) ([]byte, bool) {
	switch group {
	case "source":
		return addrAttribute(s.remote, name)
	case "destination":
		return addrAttribute(s.local, name)
	case "upstream":
		if s.upstreamAddr == "" {
			return nil, false
		}
		return addrAttribute(s.upstreamAddr, name)
	case "connection":
		if name == "id" {
			return u64(s.connID), true
		}
		return s.connectionAttribute(name)
	case "request":
		return s.requestAttribute(name)
	case "response":
		return s.responseAttribute(name)
	}
	return nil, false
}

func addrAttribute(addr, name string) ([]byte, bool) {
	switch name {
	case "address":
		return str(addr), true
	case "port":
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, false
		}
		n, err := strconv.ParseInt(port, 10, 64)
		return u64(uint64(n)), err == nil
	}
	return nil, false
}

func (s *stream) requestAttribute(name string) ([]byte, bool) {
	h := s.reqHeaders
	header := func(key string) ([]byte, bool) {
		val, ok := h.get(key)
		return str(val), ok
	}
	switch name {
	case "path":
		return header(":path")
	case "url_path":
		p, _ := h.get(":path")
		p, _, _ = strings.Cut(p, "?")
		return str(p), true
	case "query":
		p, _ := h.get(":path")
		_, q, _ := strings.Cut(p, "?")
		return str(q), true
	case "host":
		return header(":authority")
	case "scheme":
		return header(":scheme")
	case "method":
		return header(":method")
	case "headers":
		return encodePairs(h.pairs), true
	case "referer":
		return header("referer")
	case "useragent":
		return header("user-agent")
	case "id":
		return header("x-request-id")
	case "protocol":
		return str(s.protocol), true
	case "time":
		return u64(uint64(s.start.UnixNano())), true
	case "duration":
		if s.phase < phaseReplied {
			return nil, false
		}
		return u64(uint64(time.Since(s.start))), true
	case "size":
		return u64(uint64(len(s.reqBody))), true
	case "total_size":
		return u64(uint64(len(s.reqBody) + h.byteSize())), true
	}
	return nil, false
}

func (s *stream) responseAttribute(name string) ([]byte, bool) {
	if s.respHeaders == nil {
		return nil, false
	}
	switch name {
	case "code":
		code, err := strconv.ParseInt(firstValue(s.respHeaders, ":status"), 10, 64)
		return u64(uint64(code)), err == nil
	case "code_details":
		return str(s.codeDetails), true
	case "headers":
		return encodePairs(s.respHeaders.pairs), true
	case "trailers":
		if s.respTrailers == nil {
			return encodePairs(nil), true
		}
		return encodePairs(s.respTrailers.pairs), true
	case "size": // as Envoy's bytesSent: the body sent to the client so far
		return u64(uint64(s.respSent)), true
	case "total_size":
		return u64(uint64(s.respSent) + uint64(s.respHeaders.byteSize())), true
	}
	return nil, false
}

func str(s string) []byte { return []byte(s) }

func u64(n uint64) []byte {
	return binary.LittleEndian.AppendUint64(nil, n)
}
