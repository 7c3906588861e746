package jsonvalue

import (
	"strings"
	"unsafe"
)

// Get returns the value at path in json, or a Value that does not exist.
// The walk starts at the first '{' or '[' of json; at an object it takes
// the first member named so whose value holds the rest of the path, at an
// array the element a name of digits counts to. It reads json from left
// to right once, keeping one level per name of the path.
func Get(json, path string) Value {
	i := 0
	for i < len(json) && json[i] != '{' && json[i] != '[' {
		i++
	}
	if i == len(json) {
		return Value{}
	}
	var stack [4]level
	levels := append(stack[:0], enter(json[i] == '{', path))
	for i++; ; {
		l := &levels[len(levels)-1]
		var want bool // the value at i is the path's name at this level
		if l.object {
			for i < len(json) && json[i] != '"' && json[i] != '}' {
				i++
			}
			if i == len(json) {
				return Value{}
			}
			if json[i] == '}' {
				if levels = levels[:len(levels)-1]; len(levels) == 0 {
					return Value{}
				}
				i++
				continue
			}
			end, esc, ok := stringEnd(json, i)
			if !ok {
				return Value{}
			}
			want = keyIs(json[i+1:end-1], esc, l.name)
			for i = end; i < len(json) && !startsValue(json[i]); i++ {
			}
			if i == len(json) {
				return Value{}
			}
		} else {
			want = l.index == l.seen
			l.seen++
			for i < len(json) && json[i] != ']' && !startsValue(json[i]) {
				i++
			}
			if i == len(json) {
				return Value{}
			}
			if json[i] == ']' {
				if levels = levels[:len(levels)-1]; len(levels) == 0 {
					return Value{}
				}
				i++
				continue
			}
		}
		if want && l.more && (json[i] == '{' || json[i] == '[') {
			levels = append(levels, enter(json[i] == '{', l.rest))
			i++
			continue
		}
		if want && !l.more {
			v, _, ok := token(json, i)
			if !ok {
				return Value{}
			}
			v.Index = i
			return v
		}
		end, ok := valueEnd(json, i)
		if !ok {
			return Value{}
		}
		i = end
	}
}

// Get returns the value at path within v, its Index counted in the text v
// was read from.
func (v Value) Get(path string) Value {
	r := Get(v.Raw, path)
	r.Index += v.Index
	return r
}

// GetBytes is Get for bytes; the Value holds copies, not json's bytes.
func GetBytes(json []byte, path string) Value {
	if json == nil {
		return Value{}
	}
	v := Get(unsafe.String(unsafe.SliceData(json), len(json)), path)
	v.Raw, v.Str = strings.Clone(v.Raw), strings.Clone(v.Str)
	return v
}

// Parse reads the value json starts with (after spaces): an object or an
// array holds the rest of json in Raw, unread; json starting with anything
// else is a Value that does not exist.
func Parse(json string) Value {
	for i := 0; i < len(json); i++ {
		c := json[i]
		var v Value
		switch {
		case c <= ' ':
			continue
		case c == '{' || c == '[':
			v = Value{Type: JSON, Raw: json[i:]}
		case c == '"':
			end, esc, ok := stringEnd(json, i)
			v = text(json[i:end], esc, ok)
		case c == 'n' && i+1 < len(json) && json[i+1] != 'u': // nan
			v = number(json[i:numberEnd(json, i)])
		case c == 'n' || c == 't' || c == 'f':
			v = word(json[i:wordEnd(json, i)])
		case startsNumber(c):
			v = number(json[i:numberEnd(json, i)])
		default:
			return Value{}
		}
		v.Index = i
		return v
	}
	return Value{}
}

// ParseBytes is Parse for bytes; the Value holds a copy.
func ParseBytes(json []byte) Value { return Parse(string(json)) }

// Escape returns name as one name of a path: a '\' before every byte but
// letters, digits, '_', '-', ':', spaces, control bytes and non-ASCII.
func Escape(name string) string {
	var b []byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !plain(c) && b == nil {
			b = append(make([]byte, 0, len(name)+1), name[:i]...)
		}
		if b != nil {
			if !plain(c) {
				b = append(b, '\\')
			}
			b = append(b, c)
		}
	}
	if b == nil {
		return name
	}
	return string(b)
}

func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c <= ' ' || c > '~' || c == '_' || c == '-' || c == ':'
}

// keyIs reports whether a key, its text between quotes raw (esc set when
// it holds a '\'), is name: unescaped on the stack and only as far as
// name's length, as escaped keys in a response are not worth an
// allocation each (a name longer than 63 bytes may take one).
func keyIs(raw string, esc bool, name string) bool {
	if !esc || len(raw) < len(name) { // unescaping never lengthens
		return raw == name
	}
	var buf [64]byte
	return string(appendUnescaped(buf[:0], raw, len(name))) == name
}

// level is where Get's walk is: in an object or array, at one name of the
// path.
type level struct {
	object bool
	name   string // the path's name here, unescaped
	index  int    // in an array: the element name counts to, or -1
	rest   string // the path after name
	more   bool   // whether rest follows name
	seen   int    // in an array: the elements met
}

// enter starts a level in an object or array at the first name of path.
func enter(object bool, path string) level {
	l := level{object: object, index: -1}
	raw := path
	if i := strings.IndexByte(path, '.'); i >= 0 {
		raw = path[:i]
	}
	if strings.IndexByte(raw, '\\') < 0 {
		l.name = raw
		if len(raw) < len(path) {
			l.rest, l.more = path[len(raw)+1:], true
		}
		if !object {
			if n, ok := digits(raw, false); ok {
				l.index = int(n)
			}
		}
		return l
	}
	// A name with escapes: a '\' takes the next byte as it is; one at the
	// end is dropped. An array has no element so named.
	b := make([]byte, 0, len(path))
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '.' {
			l.rest, l.more = path[i+1:], true
			break
		}
		if c == '\\' {
			if i++; i == len(path) {
				break
			}
			c = path[i]
		}
		b = append(b, c)
	}
	l.name = string(b)
	return l
}

// startsValue reports whether c begins a value.
func startsValue(c byte) bool { return valueStart[c] }

var valueStart = [256]bool{'"': true, '{': true, '[': true, 'n': true, 't': true, 'f': true,
	'-': true, '+': true, 'i': true, 'I': true, 'N': true,
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true}
