package jsonbound

import "unicode/utf8"

// Member is what Members found of one name in an object, as Lookup
// would: Value is the last member's value text ("" when no member has
// the name), Many that more than one has it, Variant that a member's
// name is a case variant of it.
type Member struct {
	Value   string
	Many    bool
	Variant bool
}

// Refusal is Lookup's refusal of a path that ends at the member (parent
// false) or goes on inside it (parent true): RefuseCaseVariant for a
// case variant, RefuseDuplicateParent for a repeated parent, else 0.
func (m *Member) Refusal(parent bool) Refusal {
	switch {
	case m.Variant:
		return RefuseCaseVariant
	case parent && m.Many:
		return RefuseDuplicateParent
	}
	return 0
}

// Members reads the object at the start of obj (after spaces; obj may
// run on past it, as a batch's element does) for several names, in one
// scan of its members, not looking inside their values: dst[k] is what
// Lookup(object, names[k]) reads, its refusal in dst[k].Refusal. names
// are a few, none a case variant of another; dst is as long as names.
// It returns the offset in obj just past the object, or -1 (every dst[k]
// zero) when obj's value is not an object. obj is a text ReadBody
// accepted, or such a text from one of its values on. Its work is linear
// in the object's size (times the few names), without recursion or
// allocation.
func Members(obj string, names []string, dst []Member) (end int) {
	clear(dst)
	i := skipSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return -1
	}
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] == '"'; {
		quote := stringEnd(obj, i) // past the key's closing quote
		key := obj[i+1 : quote-1]
		i = skipSpace(obj, skipSpace(obj, quote)+1) // past ':'
		at, end := i, skipValue(obj, i)
		i = skipSpace(obj, end)
		for k, name := range names {
			if plainDiffer(key, name) {
				continue
			}
			exact, folded := keyIs(key, name)
			if exact {
				m := &dst[k]
				m.Many = m.Value != "" || m.Many
				m.Value = obj[at:end]
			} else if folded {
				dst[k].Variant = true
			}
		}
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return min(i+1, len(obj)) // past '}'
}

// plainDiffer is true when key (raw) can be neither name nor a case
// variant of it, by their first characters: both ASCII, unescaped, and
// other than in a letter's case. (It may be false for other keys too:
// keyIs then decides.)
func plainDiffer(key, name string) bool {
	if key == "" || name == "" {
		return false
	}
	a, b := key[0], name[0]
	return a != '\\' && a < utf8.RuneSelf && b < utf8.RuneSelf && a|0x20 != b|0x20
}
