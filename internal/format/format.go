// Package format builds the filter's error and log texts as fmt would,
// without linking fmt: fmt brings reflect, internal/fmtsort and time's
// formatting, about 400 KB of the module, for texts a request rarely
// makes.
//
// It knows the verbs %s, %d, %q, %v, %t and %w, without flags or width,
// and the argument types the shipped module passes: strings, booleans,
// integers, floats, errors, Stringers and []int64. A named type that is
// not an error or a Stringer must be converted to its basic type by the
// caller (fmt would read it through reflect); TestCallersPassKnownTypes
// checks every call in the module. Anything else prints as fmt prints a
// bad verb: "%!d(?)".
package format

import "errors"

// Sprintf is fmt.Sprintf for the verbs and types above.
func Sprintf(format string, args ...any) string {
	b, _ := appendf(nil, format, args, false)
	return string(b)
}

// Errorf is fmt.Errorf for the verbs and types above: an error whose %w
// operands errors.Is and errors.As find through Unwrap.
func Errorf(format string, args ...any) error {
	b, wrapped := appendf(nil, format, args, true)
	switch len(wrapped) {
	case 0:
		return errors.New(string(b))
	case 1:
		return &wrapError{msg: string(b), err: wrapped[0]}
	}
	return &wrapErrors{msg: string(b), errs: wrapped}
}

type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

type wrapErrors struct {
	msg  string
	errs []error
}

func (e *wrapErrors) Error() string   { return e.msg }
func (e *wrapErrors) Unwrap() []error { return e.errs }

// appendf appends format with args to b; with wrap, a %w's error operand
// is returned too.
func appendf(b []byte, format string, args []any, wrap bool) ([]byte, []error) {
	var wrapped []error
	n := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		if i+1 == len(format) {
			b = append(b, "%!(NOVERB)"...)
			break
		}
		i++
		verb := format[i]
		if verb == '%' {
			b = append(b, '%')
			continue
		}
		if n >= len(args) {
			b = append(b, "%!"...)
			b = append(b, verb)
			b = append(b, "(MISSING)"...)
			continue
		}
		arg := args[n]
		n++
		if verb == 'w' {
			if err, ok := arg.(error); ok && wrap {
				wrapped = append(wrapped, err)
				b = append(b, err.Error()...)
				continue
			}
			if !wrap {
				b = append(b, "%!w("...)
				b = appendValue(b, 'v', arg)
				b = append(b, ')')
				continue
			}
		}
		b = appendValue(b, verb, arg)
	}
	if n < len(args) {
		b = append(b, "%!(EXTRA "...)
		for j, a := range args[n:] {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = appendValue(b, 'v', a)
		}
		b = append(b, ')')
	}
	return b, wrapped
}
