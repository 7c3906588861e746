package schema

import (
	"encoding/json"
	"math/rand/v2"
)

// generator mutates valid configurations into near-misses: fields dropped,
// duplicated (as a repeated key, or a repeated array element), retyped, set
// to values from per-field pools (valid ones, out-of-range numbers, bad enum
// values, bad durations and names), unknown fields added.
//
// The pools stay clear of what only the documented exceptions could tell
// apart: integers written as 1.0, durations beyond the parser's ranges or
// below 1us, non-ASCII key prefixes and methods, limits large enough to
// reach the algorithms' arithmetic bounds. Duplicates and costs above a
// capacity do arise, and are counted as the named exceptions they are.
type generator struct {
	rng *rand.Rand
}

// kindOf names the kind of object found at path in a configuration.
func kindOf(path []string) string {
	n := len(path)
	switch {
	case n == 0:
		return "root"
	case n >= 2 && path[0] == "_rules_":
		return entryKind(path[2:])
	case n == 1 && path[0] == "redis":
		return "redis"
	case n == 3 && path[0] == "redis" && path[1] == "nodes":
		return "redisNode"
	case n == 1 && path[0] == "circuit_breaker":
		return "breaker"
	case path[0] != "rules":
		return ""
	case n == 2:
		return "rule"
	case n == 3 && path[2] == "match":
		return "match"
	case n == 3 && path[2] == "cost":
		return "cost"
	case n == 3 && path[2] == "response_cost":
		return "responseCost"
	case n == 3 && path[2] == "lease":
		return "lease"
	case n == 3 && path[2] == "throttle":
		return "throttle"
	case n == 4 && path[2] == "response_cost" && path[3] == "reserve":
		return "reserve"
	case n == 4 && path[2] == "key":
		return "keyPart"
	case n == 5 && path[2] == "match" && path[3] == "headers":
		return "headerMatch"
	case n == 5 && path[2] == "match" && path[3] == "body":
		return "bodyMatch"
	case n == 5 && path[2] == "match" && path[3] == "call":
		return "callMatch"
	case n == 3 && path[2] == "jsonrpc":
		return "jsonrpc"
	case n == 4 && path[2] == "cost" && (path[3] == "methods" || path[3] == "tools"):
		return "callTable"
	case n == 5 && path[2] == "cost" && (path[3] == "methods" || path[3] == "tools"):
		return "formula"
	case n == 4 && path[2] == "limits":
		return "limit"
	}
	return ""
}

func jsonType(v any) string {
	switch v.(type) {
	case *object:
		return "object"
	case *array:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

func (g *generator) pick(values []string) any { return mustTree(values[g.rng.IntN(len(values))]) }

// poolOf returns the pool of the value at a slot, if it has one.
func poolOf(s slot) []string {
	if s.obj == nil {
		return nil
	}
	return pools[kindOf(s.path[:len(s.path)-1])+"."+s.key()]
}

type mutation struct {
	name   string
	weight int
	apply  func(g *generator, root any) bool // false: not applicable here
}

var mutations = []mutation{
	{"set-from-pool", 6, func(g *generator, root any) bool {
		var withPool []slot
		slots, _ := walkTree(root)
		for _, s := range slots {
			if poolOf(s) != nil {
				withPool = append(withPool, s)
			}
		}
		if len(withPool) == 0 {
			return false
		}
		s := withPool[g.rng.IntN(len(withPool))]
		s.set(g.pick(poolOf(s)))
		return true
	}},
	{"add-field", 3, func(g *generator, root any) bool {
		o, kind := g.object(root)
		fields := optionalFields[kind]
		if o == nil || len(fields) == 0 {
			return false
		}
		f := fields[g.rng.IntN(len(fields))]
		v := g.pick(pools[kind+"."+f])
		for i := range o.members {
			if o.members[i].key == f {
				o.members[i].val = v
				return true
			}
		}
		o.members = append(o.members, member{f, v})
		return true
	}},
	{"add-unknown-field", 1, func(g *generator, root any) bool {
		o, _ := g.object(root)
		if o == nil {
			return false
		}
		o.members = append(o.members, member{"x_unknown", mustTree(`1`)})
		return true
	}},
	{"drop-field", 2, func(g *generator, root any) bool {
		o, _ := g.object(root)
		if o == nil || len(o.members) == 0 {
			return false
		}
		i := g.rng.IntN(len(o.members))
		o.members = append(o.members[:i], o.members[i+1:]...)
		return true
	}},
	{"retype", 2, func(g *generator, root any) bool {
		slots, _ := walkTree(root)
		if len(slots) == 0 {
			return false
		}
		s := slots[g.rng.IntN(len(slots))]
		for {
			v := g.pick(anyValues)
			if jsonType(v) != jsonType(s.get()) {
				s.set(v)
				return true
			}
		}
	}},
	{"duplicate-key", 1, func(g *generator, root any) bool {
		o, kind := g.object(root)
		if o == nil || len(o.members) == 0 {
			return false
		}
		m := o.members[g.rng.IntN(len(o.members))]
		v := cloneTree(m.val)
		if p := pools[kind+"."+m.key]; p != nil && g.rng.IntN(2) == 0 {
			v = g.pick(p)
		}
		o.members = append(o.members, member{m.key, v})
		return true
	}},
	{"duplicate-element", 1, func(g *generator, root any) bool {
		a := g.array(root)
		if a == nil || len(a.elems) == 0 {
			return false
		}
		a.elems = append(a.elems, cloneTree(a.elems[g.rng.IntN(len(a.elems))]))
		return true
	}},
	{"drop-element", 1, func(g *generator, root any) bool {
		a := g.array(root)
		if a == nil || len(a.elems) == 0 {
			return false
		}
		i := g.rng.IntN(len(a.elems))
		a.elems = append(a.elems[:i], a.elems[i+1:]...)
		return true
	}},
}

// object picks a random object of the tree, and its kind.
func (g *generator) object(root any) (*object, string) {
	_, cs := walkTree(root)
	var objs []container
	for _, c := range cs {
		if _, ok := c.v.(*object); ok {
			objs = append(objs, c)
		}
	}
	if len(objs) == 0 {
		return nil, ""
	}
	c := objs[g.rng.IntN(len(objs))]
	return c.v.(*object), kindOf(c.path)
}

func (g *generator) array(root any) *array {
	_, cs := walkTree(root)
	var arrs []*array
	for _, c := range cs {
		if a, ok := c.v.(*array); ok {
			arrs = append(arrs, a)
		}
	}
	if len(arrs) == 0 {
		return nil
	}
	return arrs[g.rng.IntN(len(arrs))]
}

// mutate applies one to three mutations to root and names them.
func (g *generator) mutate(root any) []string {
	total := 0
	for _, m := range mutations {
		total += m.weight
	}
	var applied []string
	for n := 1 + g.rng.IntN(3); len(applied) < n; {
		r := g.rng.IntN(total)
		for _, m := range mutations {
			if r -= m.weight; r < 0 {
				if m.apply(g, root) {
					applied = append(applied, m.name)
				}
				break
			}
		}
	}
	return applied
}
