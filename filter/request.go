package filter

import (
	"strings"
	"unsafe"

	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/headermap"
	"github.com/redisrate/envoy-redis-ratelimit/filter/ipaddr"
	"github.com/redisrate/envoy-redis-ratelimit/filter/pathnorm"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
)

// request is what the filter reads of one request: its header map as the
// proxy gives it (pseudo-headers included) and, lazily, the peer address.
type request struct {
	headers headermap.Map
	source  StreamHost    // for the downstream peer's "ip:port", read lazily
	bearer  bearerPayload // read at the first jwt_claim part (identity.go)
	// normPath is path(), computed once; valid when hasPath.
	normPath string
	hasPath  bool
	// body is the request's JSON body when a rule reads it, without a
	// BOM (empty when bodyRefusal says why it is not read); bodyLen its
	// size; bodyMax the bound of the rule being evaluated, and refused why
	// that rule could not read the body (0 when it could, or did not try).
	body        []byte
	bodyLen     int
	bodyMax     int
	bodyRefusal jsonbound.Refusal
	refused     jsonbound.Refusal
	// unreadableCounted: ratelimit.request_body.unreadable counted it.
	unreadableCounted bool
	// num holds the text of the last number bodyValue read.
	num []byte
}

// reset readies r for a new request from source, keeping its buffers.
func (r *request) reset(source StreamHost) {
	*r = request{source: source, bearer: bearerPayload{json: r.bearer.json[:0]}, body: r.body[:0], num: r.num[:0]}
}

// header returns every value of the named header, joined by ", " when it
// repeats, and whether it is present and non-empty. name is lower case.
func (r *request) header(name string) (string, bool) {
	v, found := r.headerValues(name)
	return v, found && v != ""
}

// headerValues returns every value of the named header, joined by ", "
// when it repeats, and whether the header is there at all, empty or not.
func (r *request) headerValues(name string) (string, bool) { return r.headers.Values(name) }

// headersMatch reports whether every header match holds for r.
func headersMatch(ms []config.HeaderMatch, r *request) bool {
	for i := range ms {
		if v, present := r.headerValues(ms[i].Name); !valueMatches(&ms[i], v, present) {
			return false
		}
	}
	return true
}

// valueMatches reports whether m holds for a value v (present or not).
func valueMatches(m *config.HeaderMatch, v string, present bool) bool {
	switch m.Op {
	case config.HeaderExact:
		return present && v == m.Value
	case config.HeaderPrefix:
		return present && strings.HasPrefix(v, m.Value)
	case config.HeaderPresent:
		return present
	case config.HeaderAbsent:
		return !present
	}
	return false
}

func (r *request) method() string { v, _ := r.header(":method"); return v }

// path returns :path normalized (see pathnorm.Normalize): without its query
// and fragment, escapes decoded, slashes merged, dot segments resolved.
func (r *request) path() string {
	if !r.hasPath {
		p, _ := r.header(":path")
		r.normPath, r.hasPath = pathnorm.Normalize(p), true
	}
	return r.normPath
}

// host returns :authority (or host) in lower case, without a port.
func (r *request) host() string {
	h, ok := r.header(":authority")
	if !ok {
		h, _ = r.header("host")
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	return strings.ToLower(h)
}

// query returns the first value of a query parameter, URL-decoded.
func (r *request) query(name string) (string, bool) {
	p, _ := r.header(":path")
	i := strings.IndexByte(p, '?')
	if i < 0 {
		return "", false
	}
	q := p[i+1:]
	if j := strings.IndexByte(q, '#'); j >= 0 {
		q = q[:j]
	}
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(pair, "=")
		if k, ok := pathnorm.QueryUnescape(k); !ok || k != name {
			continue
		}
		v, ok := pathnorm.QueryUnescape(v)
		return v, ok && v != ""
	}
	return "", false
}

// cookie returns the first value of a cookie.
func (r *request) cookie(name string) (string, bool) { return r.headers.Cookie(name) }

// clientIP is the client's IP. With hops = 0 it is source.address, the
// downstream address the proxy computed before any filter ran, with its
// own trusted hops (Envoy's use_remote_address, xff_num_trusted_hops).
//
// With hops > 0 trusted proxies in front, it is what Envoy computes with
// use_remote_address: true and xff_num_trusted_hops: hops: the entry of
// X-Forwarded-For hops places left of the one this proxy appended for its
// peer. The header is read only when this proxy visibly appended that
// entry: its last entry is source.address's IP, and source.address has a
// port, so it is the TCP peer, not an address taken from the header (that
// has port 0). Otherwise, or when the chain is shorter or the entry is not
// an IP, it is source.address: never an address the client could choose
// that the proxy did not already trust.
func (r *request) clientIP(hops int) (string, bool) {
	ip, ok := r.clientAddr(hops)
	if !ok {
		return "", false
	}
	return ip.String(), true
}

// clientAddr is clientIP as an address.
func (r *request) clientAddr(hops int) (ipaddr.Addr, bool) {
	if r.source == nil {
		return ipaddr.Addr{}, false
	}
	src, port, ok := ipaddr.ParseSource(r.source.SourceAddress())
	if !ok {
		return ipaddr.Addr{}, false
	}
	if hops > 0 && port != 0 {
		if xff, found := r.header("x-forwarded-for"); found {
			if ip, ok := ipaddr.Forwarded(xff, src, hops); ok {
				return ip, true
			}
		}
	}
	return src, true
}

// matches reports whether r meets m: each condition m sets.
func matches(m *config.Match, r *request) bool {
	return matchesHead(m, r) && (len(m.Body) == 0 || bodyMatch(m.Body, r))
}

// matchesHead reports whether r meets m's conditions on its headers.
func matchesHead(m *config.Match, r *request) bool {
	if m.Path != "" && r.path() != m.Path {
		return false
	}
	if m.PathPrefix != "" && !strings.HasPrefix(r.path(), m.PathPrefix) {
		return false
	}
	if len(m.Methods) > 0 && !contains(m.Methods, r.method()) {
		return false
	}
	if len(m.Hosts) > 0 && !contains(m.Hosts, r.host()) {
		return false
	}
	return headersMatch(m.Headers, r)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// bytesString is b as a string sharing its bytes: b must not change while
// the string is in use.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
