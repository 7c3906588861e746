package filter

import (
	"net/netip"
	"net/url"
	"strings"
)

// request is what the filter reads of one request: its header pairs as the
// proxy gives them (pseudo-headers included) and, lazily, the peer address.
type request struct {
	headers [][2]string
	source  StreamHost // for the downstream peer's "ip:port", read lazily
}

// header returns every value of the named header, joined by ", " when it
// repeats, and whether it is present and non-empty. name is lower case.
func (r *request) header(name string) (string, bool) {
	var joined string
	found := false
	for _, h := range r.headers {
		if !strings.EqualFold(h[0], name) {
			continue
		}
		if found {
			joined += ", " + h[1]
		} else {
			joined, found = h[1], true
		}
	}
	return joined, found && joined != ""
}

func (r *request) method() string { v, _ := r.header(":method"); return v }

// path returns :path without its query string.
func (r *request) path() string {
	p, _ := r.header(":path")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
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
		if k, err := url.QueryUnescape(k); err != nil || k != name {
			continue
		}
		v, err := url.QueryUnescape(v)
		return v, err == nil && v != ""
	}
	return "", false
}

// cookie returns the first value of a cookie.
func (r *request) cookie(name string) (string, bool) {
	for _, h := range r.headers {
		if !strings.EqualFold(h[0], "cookie") {
			continue
		}
		for c := range strings.SplitSeq(h[1], ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(c), "=")
			if ok && k == name {
				v = strings.Trim(v, `"`)
				return v, v != ""
			}
		}
	}
	return "", false
}

// clientIP is the downstream peer's IP, or, with hops trusted proxies in
// front, the hops-th address from the right of X-Forwarded-For: each
// trusted proxy appended the address it saw. A chain shorter than hops, or
// an entry that is not an IP, means the header was not written by the
// trusted proxies, and the peer address is used instead.
func (r *request) clientIP(hops int) (string, bool) {
	if hops > 0 {
		if xff, ok := r.header("x-forwarded-for"); ok {
			entries := strings.Split(xff, ",")
			if len(entries) >= hops {
				if ip, err := netip.ParseAddr(strings.TrimSpace(entries[len(entries)-hops])); err == nil {
					return ip.Unmap().String(), true
				}
			}
		}
	}
	if r.source == nil {
		return "", false
	}
	src := r.source.SourceAddress()
	ap, err := netip.ParseAddrPort(src)
	if err != nil {
		if ip, err := netip.ParseAddr(src); err == nil {
			return ip.Unmap().String(), true
		}
		return "", false
	}
	return ap.Addr().Unmap().String(), true
}
