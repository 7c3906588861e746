package redisproto

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// accessors calls each typed accessor of v and reports which succeeded.
func accessors(v Value) map[string]error {
	_, i := v.Int64()
	_, t := v.Text()
	_, b := v.Bytes()
	_, f := v.Float64()
	_, bo := v.Bool()
	_, a := v.Array()
	_, m := v.Map()
	return map[string]error{"Int64": i, "Text": t, "Bytes": b, "Float64": f, "Bool": bo, "Array": a, "Map": m}
}

func TestAccessorKinds(t *testing.T) {
	all := []Value{
		simple("OK"), errv("ERR x"), num(1), bulk("b"), arr(num(1)), null, boolean(true), dbl(1.5),
		big("12"), blobErr("E"), verbatim("txt", "v"), agg(KindMap, num(1), num(2)), agg(KindSet),
		agg(KindPush), arr(), Value{}, Value{Kind: 99},
	}
	ok := map[string][]Kind{
		"Int64":   {KindInteger},
		"Text":    {KindSimpleString, KindBulkString, KindVerbatim, KindBigNumber},
		"Bytes":   {KindSimpleString, KindBulkString, KindVerbatim, KindBigNumber},
		"Float64": {KindDouble, KindInteger},
		"Bool":    {KindBool},
		"Array":   {KindArray, KindSet, KindPush},
		"Map":     {KindMap}, // and even-length arrays, checked below
	}
	for _, v := range all {
		for name, err := range accessors(v) {
			want := false
			for _, k := range ok[name] {
				want = want || k == v.Kind
			}
			if name == "Map" && v.Kind == KindArray {
				want = len(v.Elems)%2 == 0
			}
			if (err == nil) != want {
				t.Errorf("%v.%s() error = %v, want success %v", v, name, err, want)
			}
			if err != nil && (!strings.HasPrefix(err.Error(), "redisproto: "+name+": got ") ||
				!strings.Contains(err.Error(), ", want ")) {
				t.Errorf("%v.%s() error %q does not name both kinds", v, name, err)
			}
		}
	}
}

func TestAccessorValues(t *testing.T) {
	if i, err := num(-5).Int64(); i != -5 || err != nil {
		t.Errorf("Int64 = %d, %v", i, err)
	}
	if s, err := verbatim("txt", "hi").Text(); s != "hi" || err != nil {
		t.Errorf("Text = %q, %v", s, err)
	}
	if b, err := big("-12").Bytes(); string(b) != "-12" || err != nil {
		t.Errorf("Bytes = %q, %v", b, err)
	}
	if f, err := num(3).Float64(); f != 3 || err != nil {
		t.Errorf("Float64 of integer = %v, %v", f, err)
	}
	if f, err := dbl(math.Inf(-1)).Float64(); !math.IsInf(f, -1) || err != nil {
		t.Errorf("Float64 = %v, %v", f, err)
	}
	if b, err := boolean(true).Bool(); !b || err != nil {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if a, err := agg(KindSet, num(1)).Array(); len(a) != 1 || err != nil {
		t.Errorf("Array = %v, %v", a, err)
	}
	if m, err := arr(bulk("k"), num(1)).Map(); len(m) != 2 || err != nil {
		t.Errorf("Map of RESP2 array = %v, %v", m, err)
	}
	if !null.IsNull() || num(0).IsNull() {
		t.Error("IsNull wrong")
	}
}

// TestAccessorOnErrorReply checks that an accessor applied to an error
// reply surfaces the Redis error for errors.As.
func TestAccessorOnErrorReply(t *testing.T) {
	v, _, err := Decode([]byte("-NOSCRIPT No matching script. Please use EVAL.\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Array()
	want := "redisproto: Array: got error, want array, set or push (NOSCRIPT No matching script. Please use EVAL.)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	var rerr *Error
	if !errors.As(err, &rerr) || rerr.Prefix() != "NOSCRIPT" {
		t.Errorf("errors.As(%v, *Error) failed or wrong prefix", err)
	}
	if _, err := num(1).Text(); errors.As(err, &rerr) {
		t.Errorf("kind error of an integer wraps a Redis error: %v", err)
	}
}

func TestErr(t *testing.T) {
	if err := errv("WRONGTYPE Operation against a key").Err(); err == nil ||
		err.Error() != "WRONGTYPE Operation against a key" || err.(*Error).Prefix() != "WRONGTYPE" {
		t.Errorf("Err() = %v", err)
	}
	if err := blobErr("SYNTAX invalid syntax").Err(); err == nil || err.(*Error).Prefix() != "SYNTAX" {
		t.Errorf("blob Err() = %v", err)
	}
	for _, v := range []Value{simple("OK"), num(1), null, {}} {
		if err := v.Err(); err != nil {
			t.Errorf("%v.Err() = %v, want nil", v, err)
		}
	}
}

func TestErrorPrefix(t *testing.T) {
	for msg, want := range map[string]string{
		"ERR unknown command": "ERR",
		"NOSCRIPT":            "NOSCRIPT",
		"":                    "",
		" leading":            "",
	} {
		if got := (&Error{Msg: msg}).Prefix(); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{
		KindSimpleString: "simple string", KindBulkString: "bulk string", KindPush: "push",
		KindVerbatim: "verbatim string", 0: "Kind(0)", 15: "Kind(15)", 255: "Kind(255)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func TestValueString(t *testing.T) {
	v := arr(num(1), bulk("abc"), errv("NOSCRIPT No matching script."), null,
		agg(KindMap, simple("a"), boolean(true)), agg(KindSet, dbl(1.5)), agg(KindPush, big("9")),
		withAttrs(verbatim("txt", "v\n"), simple("ttl"), num(3)), blobErr("E"), Value{Kind: 77})
	want := `[1 "abc" (error) NOSCRIPT No matching script. (nil) {a: true} ~[1.5] >[9] |{ttl: 3}| "v\n" (error) E Kind(77)]`
	if got := v.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
}
