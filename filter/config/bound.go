package config

import (
	"slices"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
)

// MaxRequestLimits bounds the limits one request may carry, over every
// rule of its configuration that can match it together: each limit costs
// Redis about 10us of CPU (BenchmarkRedisCostPerLimits), so one request
// stays within 100us, and its RateLimit-Policy header within 1 KB.
// The filter's Redis functions refuse calls of more than 256 keys.
const MaxRequestLimits = 8

// checkRequestLimits rejects a configuration in which one request could
// match rules of more than MaxRequestLimits limits in all. Two rules whose
// matches exclude each other (Match.excludes) never add up, so per-route
// rules need not be split into _rules_ entries. The sum over a rule and
// every rule that may match with it bounds what any request carries.
func checkRequestLimits(rules []Rule, path string) error {
	for i := range rules {
		n, with := rules[i].Positions(), []string(nil)
		for j := range rules {
			if j != i && !rules[i].Match.excludes(&rules[j].Match) {
				n += rules[j].Positions()
				with = append(with, rules[j].Name)
			}
		}
		if n > MaxRequestLimits {
			return errAt(format.Sprintf("%s[%d]", path, i), "one request may match this rule and %s, %d limits in all; at most %d, since each limit costs Redis about 10us: make rules exclusive (match.path, path_prefix, methods, hosts or headers that no request meets at once), or move them into _rules_ entries",
				quoteNames(with), n, MaxRequestLimits)
		}
	}
	return nil
}

// checkBatchStates rejects a configuration in which one request's batch
// could carry more than MaxBatchStates limit states: for a jsonrpc rule
// and every rule that may match with it, each key's limits and block key,
// a jsonrpc rule with call key parts having up to max_keys keys. A request
// that matches no jsonrpc rule carries at most 2 * MaxRequestLimits.
func checkBatchStates(rules []Rule, path string) error {
	for i := range rules {
		r := &rules[i]
		if r.JSONRPC == nil {
			continue
		}
		n, with := r.BatchStates(), []string(nil)
		for j := range rules {
			if j != i && !r.Match.excludes(&rules[j].Match) {
				n += rules[j].BatchStates()
				with = append(with, rules[j].Name)
			}
		}
		if n <= MaxBatchStates {
			continue
		}
		limits := format.Sprintf("%d limits", r.Positions())
		if r.Positions() == 1 {
			limits = "1 limit"
		}
		if r.ManualBlock {
			limits += " and its block key"
		}
		others := ""
		if len(with) > 0 {
			others = ", and " + quoteNames(with)
		}
		return errAt(format.Sprintf("%s[%d].jsonrpc.max_keys", path, i), "one batch may carry %d keys of this rule's %s%s, %d limit states in all; at most %d, since each costs Redis about 10us: lower max_keys, or make the rules exclusive",
			r.batchKeys(), limits, others, n, MaxBatchStates)
	}
	return nil
}

func quoteNames(names []string) string {
	if len(names) == 0 {
		return "no other rule"
	}
	return "rule " + strings.Join(names, ", ")
}

// excludes reports whether no request can meet both m and o: a
// conservative test, true only when their paths, methods, hosts or some
// header's tests cannot all hold at once.
func (m *Match) excludes(o *Match) bool {
	return pathsExclude(m, o) || pathsExclude(o, m) ||
		disjoint(m.Methods, o.Methods) || disjoint(m.Hosts, o.Hosts) || headersExclude(m.Headers, o.Headers)
}

// pathsExclude reports whether m's path tests rule out o's.
func pathsExclude(m, o *Match) bool {
	switch {
	case m.Path != "" && o.Path != "":
		return m.Path != o.Path
	case m.Path != "" && o.PathPrefix != "":
		return !strings.HasPrefix(m.Path, o.PathPrefix)
	case m.PathPrefix != "" && o.PathPrefix != "":
		return !strings.HasPrefix(m.PathPrefix, o.PathPrefix) && !strings.HasPrefix(o.PathPrefix, m.PathPrefix)
	}
	return false
}

// disjoint reports whether two sets that each constrain (non-empty) share
// no member.
func disjoint(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	for _, x := range a {
		if slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// headersExclude reports whether some header is tested by both in ways
// that no one value meets.
func headersExclude(a, b []HeaderMatch) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Name == y.Name && (headerTestsExclude(x, y) || headerTestsExclude(y, x)) {
				return true
			}
		}
	}
	return false
}

func headerTestsExclude(x, y HeaderMatch) bool {
	switch {
	case x.Op == HeaderAbsent:
		return y.Op != HeaderAbsent
	case x.Op == HeaderExact && y.Op == HeaderExact:
		return x.Value != y.Value
	case x.Op == HeaderExact && y.Op == HeaderPrefix:
		return !strings.HasPrefix(x.Value, y.Value)
	case x.Op == HeaderPrefix && y.Op == HeaderPrefix:
		return !strings.HasPrefix(x.Value, y.Value) && !strings.HasPrefix(y.Value, x.Value)
	}
	return false
}
