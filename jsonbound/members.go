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

// Members reads the object obj (a value of a text ReadBody accepted, from
// its '{') for several names in one scan of its members, not looking
// inside their values: dst[k] is what Lookup(obj, names[k]) reads, its
// refusal in dst[k].Refusal. names are a few, none a case variant of
// another; dst is as long as names. When obj is not an object every
// dst[k] is zero. Its work is linear in obj's size (times the few
// names), without recursion or allocation.
func Members(obj string, names []string, dst []Member) {
	clear(dst)
	i := skipSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return
	}
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] == '"'; {
		end := stringEnd(obj, i)
		key := obj[i+1 : end-1]
		i = skipSpace(obj, skipSpace(obj, end)+1) // past ':'
		at := i
		i = skipSpace(obj, skipValue(obj, i))
		for k, name := range names {
			if !mayBe(key, name) {
				continue
			}
			exact, folded := keyIs(key, name)
			if exact {
				m := &dst[k]
				m.Many = m.Value != "" || m.Many
				m.Value = obj[at:skipValue(obj, at)]
			} else if folded {
				dst[k].Variant = true
			}
		}
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
}

// mayBe is false when key (raw) can be neither name nor a case variant
// of it: ASCII without escapes, key and name, of other lengths or first
// letters that differ in more than case.
func mayBe(key, name string) bool {
	if key == "" || name == "" {
		return key == name
	}
	a, b := key[0], name[0]
	if a == '\\' || a >= utf8.RuneSelf || b >= utf8.RuneSelf {
		return true
	}
	if a != b && (a|0x20 != b|0x20 || a|0x20 < 'a' || a|0x20 > 'z') {
		return false
	}
	return len(key) == len(name) || hasEscapeOrWide(key) || hasEscapeOrWide(name)
}

// hasEscapeOrWide reports whether s holds a '\\' or a byte past ASCII,
// which can make a key's text longer or shorter than what it matches.
func hasEscapeOrWide(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}
