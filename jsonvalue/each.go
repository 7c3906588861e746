package jsonvalue

// ForEach calls fn with each member of an object (its key a String) or
// each element of an array (its key the Number of its place), in order and
// duplicates included, until fn returns false. A value that is neither is
// passed once with a key that does not exist; an absent value not at all.
func (v Value) ForEach(fn func(key, value Value) bool) {
	if !v.Exists() {
		return
	}
	if v.Type != JSON {
		fn(Value{}, v)
		return
	}
	s := v.Raw
	i := 0
	for i < len(s) && s[i] != '{' && s[i] != '[' {
		if s[i] > ' ' {
			return
		}
		i++
	}
	if i == len(s) {
		return
	}
	object := s[i] == '{'
	key := Value{Type: Number, Num: -1}
	for i++; i < len(s); i++ {
		if object {
			if s[i] != '"' {
				continue
			}
			end, esc, ok := stringEnd(s, i)
			if !ok {
				return
			}
			key = text(s[i:end], esc, true)
			key.Index = i + v.Index
			i = end
		} else {
			key.Num++
		}
		for i < len(s) && (s[i] <= ' ' || s[i] == ',' || s[i] == ':') {
			i++
		}
		start := i
		for i < len(s) && !startsValue(s[i]) {
			i++
		}
		if i == len(s) {
			return
		}
		val, end, ok := token(s, i)
		if !ok {
			return
		}
		val.Index = start + v.Index
		if i = end; !fn(key, val) {
			return
		}
	}
}

// Array returns the elements of an array; a Null gives none, any other
// value itself alone.
func (v Value) Array() []Value {
	switch {
	case v.Type == Null:
		return []Value{}
	case !v.IsArray():
		return []Value{v}
	}
	a := []Value{}
	v.members(func(e Value) { a = append(a, e) })
	return a
}

// Map returns an object's members by key, the first of duplicates; any
// other value gives none.
func (v Value) Map() map[string]Value {
	if v.Type != JSON {
		return map[string]Value{}
	}
	if !v.IsObject() {
		return nil
	}
	m := map[string]Value{}
	var key Value
	n := 0
	v.members(func(e Value) {
		if n++; n%2 == 1 {
			key = e
		} else if _, ok := m[key.Str]; !ok {
			m[key.Str] = e
		}
	})
	return m
}

// members calls fn with each token inside v, an object or array: its
// elements, or its keys and values in turn, up to its first '}' or ']'.
func (v Value) members(fn func(Value)) {
	s := v.Raw
	for i := 1; i < len(s); i++ {
		c := s[i]
		var e Value
		switch {
		case c <= ' ':
			continue
		case c == ']' || c == '}':
			return
		case c >= '0' && c <= '9' || c == '-':
			e = number(s[i:numberEnd(s, i)])
		case c == '{' || c == '[':
			e = Value{Type: JSON, Raw: s[i:containerEnd(s, i)]}
		case c == 'n' || c == 't' || c == 'f':
			e = word(s[i:wordEnd(s, i)])
		case c == '"':
			end, esc, ok := stringEnd(s, i)
			e = text(s[i:end], esc, ok)
		default:
			continue
		}
		e.Index = i + v.Index
		i += len(e.Raw) - 1
		fn(e)
	}
}
