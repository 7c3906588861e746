package filter

import "strings"

// A rule that counts usage reads the response body: as it is, or through
// gzip (package usage). A response in any other encoding (deflate, br,
// zstd) would carry no usage the filter can read, so the request's
// Accept-Encoding is narrowed, in its headers' callback, before the
// proxy routes it: to gzip when the client accepts gzip, else to identity
// (set, not removed: without the header any coding is acceptable, RFC
// 9110 section 12.5.3).

// narrowEncoding narrows the request's Accept-Encoding when a rule that
// counts usage may match it.
func (s *Stream) narrowEncoding() {
	w, _ := s.host.(RequestHeaderWriter)
	v, present := s.req.headerValues("accept-encoding")
	if w == nil || present && strings.EqualFold(strings.TrimSpace(v), "gzip") || !s.countsUsage() {
		return
	}
	if present && acceptsGzip(v) {
		w.SetRequestHeader("accept-encoding", "gzip")
	} else {
		w.SetRequestHeader("accept-encoding", "identity")
	}
}

// countsUsage reports whether a rule that reads the response's usage
// matches the request, as far as its headers tell.
func (s *Stream) countsUsage() bool {
	for i := range s.pol.cfg.Rules {
		r := &s.pol.cfg.Rules[i]
		if r.Response != nil && r.Response.Usage != nil && matchesHead(&r.Match, &s.req) {
			return true
		}
	}
	return false
}

// maxCodings bounds the Accept-Encoding entries read: a client that lists
// more is taken not to accept gzip.
const maxCodings = 32

// acceptsGzip reports whether an Accept-Encoding value (RFC 9110, 12.5.3)
// accepts gzip: gzip or x-gzip with a q-value above 0, else, when neither
// is listed, "*" with one.
func acceptsGzip(v string) bool {
	star := false
	for i := 0; i < maxCodings && v != ""; i++ {
		var item string
		item, v, _ = strings.Cut(v, ",")
		coding, params, _ := strings.Cut(item, ";")
		coding = strings.TrimSpace(coding)
		ok := qAboveZero(params)
		switch {
		case strings.EqualFold(coding, "gzip") || strings.EqualFold(coding, "x-gzip"):
			return ok
		case coding == "*":
			star = ok
		}
	}
	return star
}

// qAboveZero reports whether a coding's parameters leave its weight above
// 0: no q, or a q that is not 0, 0., 0.0, 0.00 or 0.000. A q that is not
// a number is read as 0.
func qAboveZero(params string) bool {
	for i := 0; i < maxCodings && params != ""; i++ {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, q, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		q = strings.TrimSpace(q)
		if q == "" || len(q) > 5 || q[0] != '0' && q[0] != '1' {
			return false
		}
		whole, frac, _ := strings.Cut(q, ".")
		if len(whole) != 1 || strings.Trim(frac, "0123456789") != "" {
			return false
		}
		return q[0] == '1' || strings.Trim(frac, "0") != ""
	}
	return true
}
