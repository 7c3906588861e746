package main

import (
	"encoding/json"
	"sort"
)

// pluginRedis is what the command reads of a configuration: how each of
// its redis objects (the top level's, and each _rules_ or matchRules
// entry's) reaches Redis. The filter itself checks the configuration.
type pluginRedis struct {
	// json is false when the configuration is not a JSON object: another
	// filter's, or one the filter will refuse with its own message.
	json bool
	// transports and clusters by cluster name: "redis_abi" or "webdis".
	clusters map[string]string
	// reservesBody: a rule reads its reservation from the request body.
	reservesBody bool
}

type redisObject struct {
	Transport string `json:"transport"`
	Cluster   string `json:"cluster"`
}

// filterRule is what the command reads of one of the filter's rules.
type filterRule struct {
	ResponseCost *struct {
		Reserve any `json:"reserve"`
	} `json:"response_cost"`
}

// reservesBody reports whether the rule reads its reservation from the
// request body ({"body": "max_tokens", ...}).
func (r filterRule) reservesBody() bool {
	if r.ResponseCost == nil {
		return false
	}
	m, ok := r.ResponseCost.Reserve.(map[string]any)
	return ok && m["body"] != nil
}

type ruleEntry struct {
	Redis  *redisObject `json:"redis"`
	Rules  []filterRule `json:"rules"`
	Config *struct {
		Redis *redisObject `json:"redis"`
		Rules []filterRule `json:"rules"`
	} `json:"config"` // matchRules, as a WasmPlugin writes them
}

type pluginDoc struct {
	Redis       *redisObject `json:"redis"`
	FilterRules []filterRule `json:"rules"`
	Rules       []ruleEntry  `json:"_rules_"`
	MatchRules  []ruleEntry  `json:"matchRules"`
}

// readPluginRedis reads the redis objects of a configuration; a missing
// transport is the filter's default, redis_abi.
func readPluginRedis(config []byte) pluginRedis {
	var doc pluginDoc
	if err := json.Unmarshal(config, &doc); err != nil {
		return pluginRedis{}
	}
	p := pluginRedis{json: true, clusters: map[string]string{}}
	add := func(r *redisObject) {
		if r == nil || r.Cluster == "" {
			return
		}
		t := r.Transport
		if t == "" {
			t = "redis_abi"
		}
		p.clusters[r.Cluster] = t
	}
	rules := func(rs []filterRule) {
		for _, r := range rs {
			p.reservesBody = p.reservesBody || r.reservesBody()
		}
	}
	add(doc.Redis)
	rules(doc.FilterRules)
	for _, e := range append(doc.Rules, doc.MatchRules...) {
		add(e.Redis)
		rules(e.Rules)
		if e.Config != nil {
			add(e.Config.Redis)
			rules(e.Config.Rules)
		}
	}
	return p
}

// names returns the cluster names of one transport, sorted.
func (p pluginRedis) names(transport string) []string {
	var out []string
	for n, t := range p.clusters {
		if t == transport {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// transport is the configuration's transport: "redis_abi", "webdis",
// "mixed", or "" when it names none.
func (p pluginRedis) transport() string {
	abi, webdis := len(p.names("redis_abi")) > 0, len(p.names("webdis")) > 0
	switch {
	case abi && webdis:
		return "mixed"
	case abi:
		return "redis_abi"
	case webdis:
		return "webdis"
	}
	return ""
}
