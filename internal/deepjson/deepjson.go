// Package deepjson builds deeply nested JSON documents and bearer tokens
// for the tests of hostile input: a recursive parser or validator on such
// bytes overflows its stack, or grows it by megabytes.
package deepjson

import (
	"encoding/base64"
	"strings"
)

// Shape is how each level of a document nests.
type Shape string

const (
	Array  Shape = "array"  // [[[…]]]: 2 bytes a level
	Object Shape = "object" // {"a":{"a":…}}: 6 bytes a level
	Mixed  Shape = "mixed"  // [{"a":[{"a":…}]}]: 4 bytes a level
)

// Shapes lists every shape.
var Shapes = []Shape{Array, Object, Mixed}

// Nest returns inner inside depth containers of shape.
func Nest(shape Shape, depth int, inner string) string {
	var b strings.Builder
	b.Grow(6*depth + len(inner))
	for i := range depth {
		if shape == Object || shape == Mixed && i%2 == 1 {
			b.WriteString(`{"a":`)
		} else {
			b.WriteByte('[')
		}
	}
	b.WriteString(inner)
	for i := depth - 1; i >= 0; i-- {
		if shape == Object || shape == Mixed && i%2 == 1 {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String()
}

// DepthFor is the depth at which Nest(shape, depth, "0") takes about size
// bytes.
func DepthFor(shape Shape, size int) int {
	switch shape {
	case Object:
		return size / 6
	case Mixed:
		return size / 4
	}
	return size / 2
}

// Bearer is an Authorization value, "Bearer <header>.<payload>.sig", whose
// payload is payload, unsigned.
func Bearer(payload string) string {
	return "Bearer e30." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".sig"
}
