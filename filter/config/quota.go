package config

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/pathnorm"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// QuotaEndpoint is quota_endpoint: a path the filter answers itself, with
// what the caller has left of each limit of Rules, read from Redis
// uncharged. The request is decided first, as any request, by the rules
// that match it; it never reaches the upstream.
type QuotaEndpoint struct {
	// Path is the exact path, normalized, without query; Methods the
	// methods answered (default GET). A request to Path with another
	// method is an ordinary request.
	Path    string
	Methods []string
	// Rules are the rules shown, as indexes into Config.Rules, in the
	// order named (default: every rule that is not shadow and has no call
	// key parts, in order); their limits are at most MaxRequestLimits,
	// read in one call. A rule with call key parts (a jsonrpc rule's
	// source call) has a key per call, which a quota request cannot name.
	Rules []int
}

// Matches reports whether a request of that method and normalized path
// is the endpoint's.
func (q *QuotaEndpoint) Matches(method, path string) bool {
	if path != q.Path {
		return false
	}
	for _, m := range q.Methods {
		if m == method {
			return true
		}
	}
	return false
}

func parseQuotaEndpoint(v jsonvalue.Value, rules []Rule) (*QuotaEndpoint, error) {
	const path = "quota_endpoint"
	if !v.Exists() {
		return nil, nil
	}
	o, err := fields(v, path, "path", "methods", "rules")
	if err != nil {
		return nil, err
	}
	q := &QuotaEndpoint{}
	if q.Path, err = str(o["path"], path+".path", ""); err != nil {
		return nil, err
	}
	switch n := pathnorm.Normalize(q.Path); {
	case q.Path == "":
		return nil, errAt(path+".path", "required: the path the filter answers, such as /v1/quota")
	case !strings.HasPrefix(q.Path, "/"):
		return nil, errAt(path+".path", "must start with /")
	case n != q.Path:
		return nil, errAt(path+".path", "must be a normalized path, as requests are matched on theirs: %q", n)
	}
	if q.Methods, err = strList(o["methods"], path+".methods"); err != nil {
		return nil, err
	}
	if o["methods"].Exists() && len(q.Methods) == 0 {
		return nil, errAt(path+".methods", "must not be empty (default [\"GET\"])")
	}
	for i, m := range q.Methods {
		if m == "" || strings.ToUpper(m) != m {
			return nil, errAt(elem(path+".methods", i), "must be an upper-case method such as GET")
		}
	}
	if len(q.Methods) == 0 {
		q.Methods = []string{"GET"}
	}
	names, err := strList(o["rules"], path+".rules")
	if err != nil {
		return nil, err
	}
	if o["rules"].Exists() && len(names) == 0 {
		return nil, errAt(path+".rules", "must not be empty (default: every rule that is not shadow)")
	}
	for i, name := range names {
		at := indexOfRule(rules, name)
		if at < 0 {
			return nil, errAt(elem(path+".rules", i), "no rule %q in this configuration's rules", name)
		}
		if rules[at].HasCallParts() {
			return nil, errAt(elem(path+".rules", i), "rule %q has call key parts, which a quota request cannot name", name)
		}
		for _, seen := range q.Rules {
			if seen == at {
				return nil, errAt(elem(path+".rules", i), "rule %q is named twice", name)
			}
		}
		q.Rules = append(q.Rules, at)
	}
	if len(names) == 0 {
		for i := range rules {
			if !rules[i].Shadow && !rules[i].HasCallParts() {
				q.Rules = append(q.Rules, i)
			}
		}
	}
	if len(q.Rules) == 0 {
		return nil, errAt(path+".rules", "every rule is shadow or has call key parts: name the rules to show")
	}
	n := 0
	for _, ri := range q.Rules {
		n += rules[ri].Positions()
	}
	if n > MaxRequestLimits {
		return nil, errAt(path+".rules", "%d limits in all; at most %d, read in one call: name fewer rules", n, MaxRequestLimits)
	}
	return q, nil
}

func indexOfRule(rules []Rule, name string) int {
	for i := range rules {
		if rules[i].Name == name {
			return i
		}
	}
	return -1
}
