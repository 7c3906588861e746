package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// The generator edits configurations as ordered JSON trees, which, unlike
// map[string]any, keep member order and can hold a key twice.
//
// A value is *object, *array, string, json.Number, bool or nil.

type object struct{ members []member }

type member struct {
	key string
	val any
}

type array struct{ elems []any }

// parseTree reads one JSON document into a tree.
func parseTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the document")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			o := &object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				o.members = append(o.members, member{k.(string), v})
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := &array{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a.elems = append(a.elems, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", tok)
	default:
		return tok, nil
	}
}

// mustTree parses JSON that the test itself writes.
func mustTree(js string) any {
	v, err := parseTree([]byte(js))
	if err != nil {
		panic(fmt.Sprintf("%s: %v", js, err))
	}
	return v
}

func encodeTree(v any) []byte {
	var b bytes.Buffer
	writeTree(&b, v)
	return b.Bytes()
}

func writeTree(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, m := range v.members {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(m.key)
			b.Write(k)
			b.WriteByte(':')
			writeTree(b, m.val)
		}
		b.WriteByte('}')
	case *array:
		b.WriteByte('[')
		for i, e := range v.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeTree(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(string(v))
	default:
		s, _ := json.Marshal(v)
		b.Write(s)
	}
}

func cloneTree(v any) any {
	switch v := v.(type) {
	case *object:
		o := &object{members: make([]member, len(v.members))}
		for i, m := range v.members {
			o.members[i] = member{m.key, cloneTree(m.val)}
		}
		return o
	case *array:
		a := &array{elems: make([]any, len(v.elems))}
		for i, e := range v.elems {
			a.elems[i] = cloneTree(e)
		}
		return a
	default:
		return v
	}
}

// slot is a place in a tree that holds a value: a member of an object or an
// element of an array. path leads to it from the root.
type slot struct {
	path []string
	obj  *object
	arr  *array
	i    int
}

func (s slot) get() any {
	if s.obj != nil {
		return s.obj.members[s.i].val
	}
	return s.arr.elems[s.i]
}

func (s slot) set(v any) {
	if s.obj != nil {
		s.obj.members[s.i].val = v
	} else {
		s.arr.elems[s.i] = v
	}
}

func (s slot) key() string { return s.path[len(s.path)-1] }

// container is an object or array in a tree, with its path.
type container struct {
	path []string
	v    any
}

// walkTree lists every slot and every container under root (root included).
func walkTree(root any) (slots []slot, containers []container) {
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch v := v.(type) {
		case *object:
			containers = append(containers, container{path, v})
			for i, m := range v.members {
				p := append(append([]string(nil), path...), m.key)
				slots = append(slots, slot{path: p, obj: v, i: i})
				walk(m.val, p)
			}
		case *array:
			containers = append(containers, container{path, v})
			for i, e := range v.elems {
				p := append(append([]string(nil), path...), strconv.Itoa(i))
				slots = append(slots, slot{path: p, arr: v, i: i})
				walk(e, p)
			}
		}
	}
	walk(root, nil)
	return slots, containers
}
