package jsonrpc

import "strings"

// MaxNameLen bounds a method or tool name: a longer one is not listed.
const MaxNameLen = 128

// Entry is what a listed name costs: Units, or its Formula's units over
// the call when Formula is set.
type Entry struct {
	Units   int64
	Formula *Formula
}

// Table is a cost per method (or per MCP tool) name, and what a name not
// listed costs.
type Table struct {
	// Names by exact name; a name ending in '*' is a prefix (wild), and
	// "*" alone lists every name.
	Names map[string]Entry
	// Default is what a name not listed costs, unless Refuse.
	Default int64
	// Refuse: a name not listed is refused (unknown_method, unknown_tool).
	Refuse bool
	// Dearest is, once sealed, the most a call can cost: the largest of
	// Default, every entry's Units and every formula's Max. A body that
	// cannot be read as calls is charged it, never the cheapest guess.
	Dearest int64
	wild    []wildEntry // the prefixes, longest first
}

type wildEntry struct {
	prefix string
	e      Entry
}

// Seal readies t once Names, Default and Refuse are set: the prefixes, in
// one order whatever the map's, and Dearest.
func (t *Table) Seal() {
	t.wild = t.wild[:0]
	t.Dearest = 0
	if !t.Refuse {
		t.Dearest = t.Default
	}
	for name, e := range t.Names {
		if prefix, ok := strings.CutSuffix(name, "*"); ok {
			t.wild = append(t.wild, wildEntry{prefix, e})
		}
		t.Dearest = max(t.Dearest, e.most())
	}
	for i := 1; i < len(t.wild); i++ {
		for j := i; j > 0 && longer(t.wild[j].prefix, t.wild[j-1].prefix); j-- {
			t.wild[j], t.wild[j-1] = t.wild[j-1], t.wild[j]
		}
	}
}

// most is the most e charges.
func (e Entry) most() int64 {
	if e.Formula != nil {
		return e.Formula.Max
	}
	return e.Units
}

func longer(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a < b
}

// Lookup finds a name's entry: its exact name, else the longest prefix
// ("eth_get*" for "eth_getLogs"; "*" for any), else the default; refused
// is true, and e zero, when the table refuses a name it does not list.
// A name longer than MaxNameLen is not listed.
func (t *Table) Lookup(name string) (e Entry, refused bool) {
	if len(name) <= MaxNameLen {
		if e, ok := t.Names[name]; ok && !strings.HasSuffix(name, "*") {
			return e, false
		}
		for _, w := range t.wild {
			if strings.HasPrefix(name, w.prefix) {
				return w.e, false
			}
		}
	}
	if t.Refuse {
		return Entry{}, true
	}
	return Entry{Units: t.Default}, false
}

// Cost is the units of the call whose object is call (Call.Text) and
// whose name is name: its entry's, evaluated over call for a formula.
// It allocates nothing.
func (t *Table) Cost(name, call string) (units int64, refused bool) {
	e, refused := t.Lookup(name)
	if refused {
		return 0, true
	}
	if e.Formula != nil {
		return e.Formula.Units(call), false
	}
	return e.Units, false
}
