package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/redisrate/envoy-redis-ratelimit/jsonvalue"
)

// fields checks that v is an object holding only the allowed keys, each at
// most once, and returns them by name.
func fields(v jsonvalue.Value, path string, allowed ...string) (map[string]jsonvalue.Value, error) {
	if !v.IsObject() {
		if path == "" {
			return nil, errors.New("configuration: must be a JSON object")
		}
		return nil, errAt(path, "must be an object")
	}
	// A repeated field is reported before an unknown one: which fields
	// are allowed may hang on a field that is repeated (a limit's
	// algorithm).
	out := make(map[string]jsonvalue.Value, len(allowed))
	var err, unknown error
	var others map[string]bool
	v.ForEach(func(k, val jsonvalue.Value) bool {
		name := k.String()
		at := name
		if path != "" {
			at = path + "." + name
		}
		known := false
		for _, a := range allowed {
			known = known || a == name
		}
		switch {
		case out[name].Exists() || others[name]:
			err = errAt(at, "duplicate field")
			return false
		case !known:
			if unknown == nil {
				unknown = errAt(at, "unknown field (allowed: %s)", strings.Join(allowed, ", "))
			}
			if others == nil {
				others = map[string]bool{}
			}
			others[name] = true
		default:
			out[name] = val
		}
		return true
	})
	if err == nil {
		err = unknown
	}
	return out, err
}

func str(v jsonvalue.Value, path, def string) (string, error) {
	if !v.Exists() {
		return def, nil
	}
	if v.Type != jsonvalue.String {
		return "", errAt(path, "must be a string")
	}
	return v.Str, nil
}

func boolean(v jsonvalue.Value, path string, def bool) (bool, error) {
	if !v.Exists() {
		return def, nil
	}
	if v.Type != jsonvalue.True && v.Type != jsonvalue.False {
		return false, errAt(path, "must be true or false")
	}
	return v.Bool(), nil
}

// integer reads a whole number in [min, max].
func integer(v jsonvalue.Value, path string, def, min, max int64) (int64, error) {
	if !v.Exists() {
		return def, nil
	}
	if v.Type != jsonvalue.Number || v.Num != math.Trunc(v.Num) || strings.ContainsAny(v.Raw, ".eE") {
		return 0, errAt(path, "must be an integer")
	}
	switch n := v.Int(); {
	case v.Num < float64(min):
		return 0, errAt(path, "must be >= %d", min)
	case v.Num > float64(max):
		return 0, errAt(path, "must be <= %d", max)
	default:
		return n, nil
	}
}

// duration reads a Go duration string such as "200ms", "1s" or "1m".
func duration(v jsonvalue.Value, path string, def time.Duration) (time.Duration, error) {
	if !v.Exists() {
		return def, nil
	}
	if v.Type != jsonvalue.String {
		return 0, errAt(path, `must be a duration string such as "500ms", "1m" or "1d"`)
	}
	d, err := ParseDuration(v.Str)
	if err != nil {
		return 0, errAt(path, `must be a duration string such as "500ms", "1m" or "1d"`)
	}
	if d < 0 {
		return 0, errAt(path, "must be > 0")
	}
	return d, nil
}

func enum(v jsonvalue.Value, path, def string, allowed ...string) (string, error) {
	if !v.Exists() {
		return def, nil
	}
	if v.Type == jsonvalue.String {
		for _, a := range allowed {
			if v.Str == a {
				return a, nil
			}
		}
	}
	return "", errAt(path, "must be one of %s", strings.Join(allowed, ", "))
}

func status(v jsonvalue.Value, path string, def int) (int, error) {
	n, err := integer(v, path, int64(def), 200, 599)
	return int(n), err
}

func strList(v jsonvalue.Value, path string) ([]string, error) {
	if !v.Exists() {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, errAt(path, "must be an array of strings")
	}
	var out []string
	for _, e := range v.Array() {
		if e.Type != jsonvalue.String {
			return nil, errAt(path, "must be an array of strings")
		}
		out = append(out, e.Str)
	}
	return out, nil
}

// fieldError names the field a bad value came from.
type fieldError struct {
	path string
	err  error
	// msg, when set, says what is wrong in the configuration's terms
	// instead of err's message: err is then an *algorithms.ParamError,
	// which names the parameter, not the field.
	msg string
}

func (e *fieldError) Error() string {
	if e.msg != "" {
		return e.path + ": " + e.msg
	}
	return e.path + ": " + e.err.Error()
}

func (e *fieldError) Unwrap() error { return e.err }

// elem is path's element i: "rules[2]". The paths of a valid configuration
// are built without fmt, which V8 would compile at start-up only for them.
func elem(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// errAt is not inlined: its many callers would each grow by its body.
//
//go:noinline
func errAt(path, what string, args ...any) error {
	return &fieldError{path: path, err: format.Errorf(what, args...)}
}

// notJSON is the error for field's JSON that jsonbound refused: invalid
// ("configuration: not valid JSON at line 3, column 1: unexpected '}'
// after ','"), or nested too deep or too large to read.
func notJSON(field string, err error) error {
	var se *jsonbound.SyntaxError
	switch {
	case errors.As(err, &se) && se.Err == jsonbound.ErrTooDeep:
		return errors.New(field + ": nested deeper than " + strconv.Itoa(jsonbound.MaxDepth) + " at " + se.Position())
	case errors.As(err, &se):
		return errors.New(field + ": not valid JSON at " + se.Position() + ": " + se.What)
	}
	return format.Errorf("%s: %w", field, err)
}
