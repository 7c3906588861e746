package config

import (
	"errors"
	"strings"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// parseCost reads a rule's cost: a number, {"header", "default", "min"},
// or for a jsonrpc rule its tables (parseCostTables).
func parseCost(v jsonvalue.Value, path string, r *Rule) (Cost, error) {
	c, limits := Cost{Default: 1}, r.Limits
	var err error
	switch {
	case !v.Exists():
	case v.Type == jsonvalue.Number:
		if c.Default, err = integer(v, path, 1, 0, 1<<53); err != nil {
			return c, err
		}
		if c.Default == 0 && r.JSONRPC != nil {
			return c, errAt(path, "must be >= 1 in a jsonrpc rule: a call of cost 0 adds no key, so the rule would charge nothing")
		}
	case v.IsObject():
		o, err := fields(v, path, "header", "default", "min", "methods", "tools")
		if err != nil {
			return c, err
		}
		switch {
		case r.JSONRPC != nil && o["header"].Exists():
			return c, errAt(path+".header", "not with jsonrpc: a call's cost comes from cost.methods, cost.tools or cost.default")
		case hasTable(o):
			return parseCostTables(o, path, r)
		case r.JSONRPC != nil:
			return c, errAt(path, "must be a number, or an object with methods or tools and default")
		}
		if c.Header, err = str(o["header"], path+".header", ""); err != nil {
			return c, err
		}
		if c.Header == "" {
			return c, errAt(path+".header", "required")
		}
		c.Header = strings.ToLower(c.Header)
		if c.Default, err = integer(o["default"], path+".default", 1, 0, 1<<53); err != nil {
			return c, err
		}
		if c.Min, err = integer(o["min"], path+".min", 1, 0, 1<<53); err != nil {
			return c, err
		}
		if c.Default < c.Min {
			return c, errAt(path+".default", "must be >= min (%d): a request that omits the header pays the default", c.Min)
		}
		path += ".default"
	default:
		return c, errAt(path, "must be a number or an object with header and default")
	}
	return c, checkCosts(path, c.Default, limits)
}

// checkCosts checks that each limit can take a cost of n.
func checkCosts(path string, n int64, limits []NamedLimit) error {
	for i, l := range limits {
		if err := l.Limit.CheckCost(n); err != nil {
			return costError(path, i, err)
		}
	}
	return nil
}

// costError wraps a cost that limits[i] cannot take with the path of the
// cost's field: "<path>: must be <= 10, the limit's capacity of limits[0]".
func costError(path string, i int, err error) error {
	msg := err.Error()
	var pe *algorithms.ParamError
	if errors.As(err, &pe) {
		msg = pe.Message(string(pe.Param)) // the path names the cost
	}
	return &fieldError{path: path, err: err, msg: format.Sprintf("%s of limits[%d]", msg, i)}
}
