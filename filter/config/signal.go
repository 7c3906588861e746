package config

import (
	"math"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// OnLimit is what a rule does when one of its limits is spent: deny the
// request (the default), or, with Degrade, admit it with a request header
// naming the spent limits, for a route to send it elsewhere.
type OnLimit struct {
	Degrade bool
	// Header is the request header a degraded request carries (lower
	// case): "<rule>/<limit>" for each spent limit, ", " between.
	Header string
}

// NearLimit is a rule's near_limit: its own share of a limit past which
// an admission counts as near_limit, and the response header that then
// warns the client.
type NearLimit struct {
	// Ratio is in millionths; 0 takes near_limit_ratio.
	Ratio int64
	// Header, when set, is added to an admitted response for each of the
	// rule's limits past Ratio: "<limit>";r=<remaining>.
	Header string
}

// DefaultDegradeHeader is on_limit.header's default.
const DefaultDegradeHeader = "x-ratelimit-exhausted"

// parseOnLimit reads a rule's on_limit, once its other fields are read.
func parseOnLimit(v jsonvalue.Value, path string, r *Rule) (OnLimit, error) {
	o := OnLimit{}
	if !v.Exists() {
		return o, nil
	}
	f, err := fields(v, path, "action", "header")
	if err != nil {
		return o, err
	}
	action, err := enum(f["action"], path+".action", "deny", "deny", "degrade")
	if err != nil {
		return o, err
	}
	if action == "deny" {
		if f["header"].Exists() {
			return o, errAt(path+".header", "only with action degrade")
		}
		return o, nil
	}
	switch {
	case r.Shadow:
		return o, errAt(path+".action", "degrade is not for a shadow rule: a shadow rule never denies")
	case r.Throttle != nil:
		return o, errAt(path+".action", "degrade and throttle are exclusive: a spent limit either delays or degrades")
	case r.Lease != nil:
		return o, errAt(path+".action", "degrade is not with lease: a VM's held lease denies")
	}
	o.Degrade = true
	if o.Header, err = headerName(f["header"], path+".header", DefaultDegradeHeader); err != nil {
		return o, err
	}
	return o, nil
}

// checkDegradeBody refuses an on_limit degrade rule beside a rule that
// keys or matches on the request body unless body_while_headers_paused
// says the proxy delivers the body while the headers wait: the degrade
// header must be set before the proxy routes, and the request is decided
// at the body's end.
func checkDegradeBody(c *Config) error {
	if c.BodyWhileHeadersPaused {
		return nil
	}
	degrade, body := -1, -1
	for i := range c.Rules {
		if degrade < 0 && c.Rules[i].OnLimit.Degrade {
			degrade = i
		}
		if body < 0 && c.Rules[i].ReadsBody() {
			body = i
		}
	}
	if degrade < 0 || body < 0 {
		return nil
	}
	return errAt(elem("rules", degrade)+".on_limit.action",
		"degrade beside %s, which reads the request body, needs body_while_headers_paused: true: the request headers then wait for the body, so that the degrade header is set before the proxy routes; "+
			"the proxy must deliver the body while they wait: Envoy >= 1.35 with allow_on_headers_stop_iteration: true in the wasm filter's config, or Higress", elem("rules", body))
}

// parseNearLimit reads a rule's near_limit.
func parseNearLimit(v jsonvalue.Value, path string) (NearLimit, error) {
	n := NearLimit{}
	if !v.Exists() {
		return n, nil
	}
	f, err := fields(v, path, "ratio", "header")
	if err != nil {
		return n, err
	}
	if r := f["ratio"]; r.Exists() {
		if n.Ratio, err = ratio(r, path+".ratio"); err != nil {
			return n, err
		}
	}
	if f["header"].Exists() {
		if n.Header, err = headerName(f["header"], path+".header", ""); err != nil {
			return n, err
		}
	}
	if n.Ratio == 0 && n.Header == "" {
		return n, errAt(path, "needs ratio or header")
	}
	return n, nil
}

// ratio reads a share of a limit, 0.000001 to 0.999999, in millionths.
func ratio(v jsonvalue.Value, path string) (int64, error) {
	if v.Type != jsonvalue.Number || v.Num < 0.000001 || v.Num > 0.999999 {
		return 0, errAt(path, "must be a number from 0.000001 to 0.999999 (the share of a limit used past which an admission is near the limit)")
	}
	return int64(math.Round(v.Num * shareUnit)), nil
}

// maxHeaderName bounds a header name the filter writes.
const maxHeaderName = 100

// headerName reads the name of a header the filter writes: 1 to 100 token
// characters (RFC 9110), returned in lower case; none of the rate-limit
// headers the filter writes itself, nor a pseudo-header.
func headerName(v jsonvalue.Value, path, def string) (string, error) {
	s, err := str(v, path, def)
	if err != nil {
		return "", err
	}
	if s == "" || len(s) > maxHeaderName {
		return "", errAt(path, "must be 1 to %d characters", maxHeaderName)
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return "", errAt(path, "must be a header name: %q is not a token character", s[i])
		}
	}
	s = strings.ToLower(s)
	switch s {
	case "ratelimit", "ratelimit-policy", "retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
		"host", "content-length", "content-type", "transfer-encoding", "connection", "te":
		return "", errAt(path, "%q is a header the filter or the proxy sets", s)
	}
	return s, nil
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
