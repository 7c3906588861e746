package config

import (
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/filter/price"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// maxModels bounds a price table; maxServiceTiers its service tiers.
const (
	maxModels       = 256
	maxServiceTiers = 16
)

// parsePrice reads response_cost.price: {"unit": "micro_usd", "models":
// {"gpt-4o": {"input": "2.50", "output": "10", ...}}, "default": {...} or
// "refuse", "model_header": "x-model", "service_tiers": {"flex": "0.5"}}.
func parsePrice(v jsonvalue.Value, path string) (*price.Table, error) {
	if !v.Exists() {
		return nil, nil
	}
	o, err := fields(v, path, "unit", "models", "default", "model_header", "service_tiers")
	if err != nil {
		return nil, err
	}
	t := &price.Table{Models: map[string]*price.Prices{}}
	unit, err := str(o["unit"], path+".unit", "")
	if err != nil {
		return nil, err
	}
	if !o["unit"].Exists() {
		return nil, errAt(path+".unit", `required: what a cost counts, such as "micro_usd"`)
	}
	if t.Unit, err = price.ParseUnit(unit); err != nil {
		return nil, errAt(path+".unit", "%s", err)
	}
	models := o["models"]
	if !models.IsObject() {
		return nil, errAt(path+".models", `must be an object of prices by model, such as {"gpt-4o": {"input": "2.50", "output": "10"}}`)
	}
	models.ForEach(func(k, pv jsonvalue.Value) bool {
		name := k.String()
		at := format.Sprintf("%s.models[%q]", path, name)
		switch {
		case name == "" || len(name) > price.MaxModelLen:
			err = errAt(at, "a model's name must have 1 to %d bytes", price.MaxModelLen)
		case t.Models[name] != nil:
			err = errAt(at, "duplicate field")
		case len(t.Models) == maxModels:
			err = errAt(path+".models", "must list at most %d models", maxModels)
		}
		if err != nil {
			return false
		}
		var p *price.Prices
		p, err = parsePrices(pv, at)
		t.Models[name] = p
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if len(t.Models) == 0 {
		return nil, errAt(path+".models", "must list at least one model")
	}
	switch d := o["default"]; {
	case !d.Exists():
		return nil, errAt(path+".default", `required: the prices a model not listed pays, or "refuse"`)
	case d.Type == jsonvalue.String && d.Str == "refuse":
		t.Refuse = true
	case d.IsObject():
		if t.Default, err = parsePrices(d, path+".default"); err != nil {
			return nil, err
		}
	default:
		return nil, errAt(path+".default", `must be prices such as {"input": "2.50", "output": "10"}, or "refuse"`)
	}
	if t.ModelHeader, err = readHeaderName(o["model_header"], path+".model_header"); err != nil {
		return nil, err
	}
	if t.Tiers, err = parseServiceTiers(o["service_tiers"], path+".service_tiers"); err != nil {
		return nil, err
	}
	t.Seal()
	return t, nil
}

// parseServiceTiers reads service_tiers: {"flex": "0.5", "priority": "2"}, the
// multiplier of a response's cost per service tier it names.
func parseServiceTiers(v jsonvalue.Value, path string) (map[string]uint64, error) {
	if !v.Exists() {
		return nil, nil
	}
	if !v.IsObject() {
		return nil, errAt(path, `must be an object of multipliers by service tier, such as {"flex": "0.5", "priority": "2"}`)
	}
	tiers := map[string]uint64{}
	var err error
	v.ForEach(func(k, mv jsonvalue.Value) bool {
		name := k.String()
		at := format.Sprintf("%s[%q]", path, name)
		switch _, dup := tiers[name]; {
		case name == "" || len(name) > price.MaxTierLen:
			err = errAt(at, "a service tier's name must have 1 to %d bytes", price.MaxTierLen)
		case dup:
			err = errAt(at, "duplicate field")
		case len(tiers) == maxServiceTiers:
			err = errAt(path, "must list at most %d service tiers", maxServiceTiers)
		case mv.Type != jsonvalue.String:
			err = errAt(at, `must be a string such as "0.5": a decimal, exact`)
		}
		if err != nil {
			return false
		}
		var m uint64
		if m, err = price.ParseMultiplier(mv.Str); err != nil {
			err = errAt(at, "%s", err)
			return false
		}
		tiers[name] = m
		return true
	})
	if err != nil {
		return nil, err
	}
	return tiers, nil
}

// parsePrices reads one model's prices per million tokens: input and
// output, required; cached_input and cache_write, input's when absent;
// cache_write_1h, cache_write's; reasoning, output's; and per 1000
// requests: web_search and web_fetch, 0 when absent.
func parsePrices(v jsonvalue.Value, path string) (*price.Prices, error) {
	o, err := fields(v, path, price.KindNames[:]...)
	if err != nil {
		return nil, err
	}
	var p price.Prices
	for k, name := range price.KindNames {
		f := o[name]
		if !f.Exists() {
			if k == price.Input || k == price.Output {
				return nil, errAt(path+"."+name, `required: the price per million tokens, a decimal string such as "2.50"`)
			}
			continue
		}
		if f.Type != jsonvalue.String {
			return nil, errAt(path+"."+name, `must be a string such as "2.50": a decimal, exact`)
		}
		parse := price.ParsePrice
		if price.PerRequest(k) {
			parse = price.ParseRequestPrice
		}
		if p[k], err = parse(f.Str); err != nil {
			return nil, errAt(path+"."+name, "%s", err)
		}
	}
	for _, k := range []int{price.Cached, price.CacheWrite} {
		if !o[price.KindNames[k]].Exists() {
			p[k] = p[price.Input]
		}
	}
	if !o[price.KindNames[price.CacheWrite1h]].Exists() {
		p[price.CacheWrite1h] = p[price.CacheWrite]
	}
	if !o[price.KindNames[price.Reasoning]].Exists() {
		p[price.Reasoning] = p[price.Output]
	}
	return &p, nil
}

// readHeaderName reads an optional name of a header the filter reads,
// lowercased.
func readHeaderName(v jsonvalue.Value, path string) (string, error) {
	s, err := str(v, path, "")
	if err != nil {
		return "", err
	}
	if v.Exists() && s == "" {
		return "", errAt(path, "must not be empty")
	}
	return strings.ToLower(s), nil
}
