package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// The config parser never panics; what it accepts has valid rules.
func FuzzParseConfig(f *testing.F) {
	for _, dir := range []string{"testdata/valid", "testdata/invalid"} {
		for _, file := range fixtures(f, filepath.Join(dir, "*.json")) {
			f.Add(readFixture(f, file))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if c != nil {
				t.Fatal("a config returned with an error")
			}
			if msg := err.Error(); strings.HasPrefix(msg, "configuration: not valid JSON") && !strings.HasPrefix(msg, "configuration: not valid JSON at line ") {
				t.Fatalf("a JSON error without its place: %s", msg)
			}
			return
		}
		if len(c.Rules)+len(c.MatchRules) == 0 || (c.Redis.Cluster == "") == (c.Redis.Nodes == nil) || strings.ContainsAny(c.Redis.Prefix, "{}") {
			t.Fatalf("accepted a config that limits nothing or breaks keys: %+v", c)
		}
		if r := c.Redis; len(r.Nodes) > maxNodes || (r.Nodes == nil) != (r.SlotMapRefresh == 0) || (r.Nodes != nil && (!r.ClusterMode || r.Transport != TransportWebdis)) {
			t.Fatalf("bad redis.nodes accepted: %+v", r)
		}
		for _, n := range c.Redis.Nodes {
			if !hostPort(n.Address) || n.Cluster == "" || n.Authority == "" {
				t.Fatalf("bad node accepted: %+v", n)
			}
		}
		if f := c.Local; f != nil && (f.Share < 1 || f.Share > shareUnit || f.MaxKeys < 1 || c.FailOpen) {
			t.Fatalf("bad local_fallback accepted: %+v", f)
		}
		rules := c.Rules
		for _, mr := range c.MatchRules {
			if len(mr.Config.Rules) == 0 || !mr.Config.Redis.Equal(&c.Redis) || len(mr.Routes)+len(mr.Domains)+len(mr.Services)+len(mr.RoutePrefixes) == 0 {
				t.Fatalf("bad _rules_ entry accepted: %+v", mr)
			}
			rules = append(rules, mr.Config.Rules...)
		}
		for _, r := range rules {
			if !validName(r.Name) || len(r.Key) == 0 || len(r.Limits) == 0 {
				t.Fatalf("bad rule accepted: %+v", r)
			}
			for _, l := range r.Limits {
				if l.Limit.Validate() != nil || l.Limit.CheckCost(r.Cost.Default) != nil {
					t.Fatalf("bad limit accepted: %+v", l)
				}
			}
			checkJSONRPCRule(t, &r)
		}
	})
}

// checkJSONRPCRule fails t when a rule breaks what jsonrpc promises the
// filter: bounds, both tables or neither, no entry above a capacity, no
// call part or match.call or table outside a jsonrpc rule.
func checkJSONRPCRule(t *testing.T, r *Rule) {
	j := r.JSONRPC
	if j == nil {
		if r.HasCallParts() || r.Match.Call != nil || r.Cost.Methods != nil || r.Cost.Tools != nil {
			t.Fatalf("a call part, match.call or table without jsonrpc: %+v", r)
		}
		return
	}
	if j.MaxCalls < 1 || j.MaxCalls > MaxCalls || j.MaxKeys < 1 || j.MaxKeys > MaxCallKeys ||
		r.Lease != nil || r.Throttle != nil || r.Response != nil || r.Tiers != nil || r.Overrides || r.OnLimit.Degrade || r.HasConcurrency() ||
		r.Cost.Header != "" || !r.ReadsBody() || (r.Cost.Methods == nil) != (r.Cost.Tools == nil) {
		t.Fatalf("bad jsonrpc rule accepted: %+v %+v", r, j)
	}
	if m := r.Cost.Methods; m != nil {
		for _, l := range r.Limits {
			if l.Limit.CheckCost(m.Dearest) != nil || l.Limit.CheckCost(r.Cost.Tools.Dearest) != nil {
				t.Fatalf("a call cost above a capacity accepted: %+v", r.Cost)
			}
		}
		if m.Refuse != r.Cost.Tools.Refuse || m.Default != r.Cost.Tools.Default || len(r.Cost.Tools.Names) > 0 && j.Protocol != ProtocolMCP {
			t.Fatalf("tables disagree: %+v %+v", m, r.Cost.Tools)
		}
	}
}
