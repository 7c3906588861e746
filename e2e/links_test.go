package e2e

import (
	"encoding/binary"
	"strings"
	"testing"
)

// Neither build links fmt or what fmt brings: reflect, internal/fmtsort,
// and time's parsing, about 400 KB of code and data in a module that
// makes its texts with package internal/format; nor gjson and the
// encoding/json its tidwall/pretty brought.
func TestShippedModuleLinksNoFmt(t *testing.T) {
	forbidden := []string{
		"fmt",
		"internal/fmtsort",
		"reflect", // encoding/binary (the SDK's) imports it: its init stays
		"encoding/json",
		"github.com/tidwall/gjson",
	}
	for _, m := range []struct {
		name string
		wasm []byte
	}{{"ratelimit.wasm", stockWasm}, {"ratelimit-higress.wasm", higressWasm}} {
		names := functionNames(t, m.wasm)
		if !links(names, "github.com/redisrate/envoy-redis-ratelimit/filter") || !links(names, "runtime") {
			t.Fatalf("%s: the name section lists too little: %d functions", m.name, len(names))
		}
		for _, f := range forbidden {
			if links(names, f) {
				t.Errorf("%s links %s", m.name, f)
			}
		}
	}
}

// links is whether one of names is a function of package pkg, other than
// its init, which an import alone may keep (reflect's: encoding/binary
// imports reflect). Go's
// linker writes a name as "fmt.Sprintf", with each byte of the package
// path other than a letter, a digit, "." or "_" written as "_":
// "internal_fmtsort.compare", "github.com_redisrate_envoy_redis_ratelimit_filter.(...)".
func links(names []string, pkg string) bool {
	prefix := []byte(pkg + ".")
	for i, c := range prefix {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			prefix[i] = '_'
		}
	}
	for _, n := range names {
		if fn, ok := strings.CutPrefix(n, string(prefix)); ok && fn != "init" && !strings.HasPrefix(fn, "init.") {
			return true
		}
	}
	return false
}

// functionNames reads the function names subsection (1) of the custom
// section "name" (WebAssembly spec, appendix 7.4).
func functionNames(t *testing.T, wasm []byte) []string {
	t.Helper()
	r := wasmReader{b: wasm, t: t}
	if string(r.bytes(8)) != "\x00asm\x01\x00\x00\x00" {
		t.Fatal("not a wasm module")
	}
	for len(r.b) > 0 {
		id := r.bytes(1)[0]
		sec := wasmReader{b: r.bytes(int(r.u32())), t: t}
		if id != 0 || string(sec.bytes(int(sec.u32()))) != "name" {
			continue
		}
		for len(sec.b) > 0 {
			sub := sec.bytes(1)[0]
			body := wasmReader{b: sec.bytes(int(sec.u32())), t: t}
			if sub != 1 {
				continue
			}
			var names []string
			for n := body.u32(); n > 0; n-- {
				body.u32() // the function's index
				names = append(names, string(body.bytes(int(body.u32()))))
			}
			return names
		}
	}
	t.Fatal("no function names: was the module stripped (-s)?")
	return nil
}

type wasmReader struct {
	b []byte
	t *testing.T
}

func (r *wasmReader) bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.t.Fatalf("wasm: %d bytes wanted, %d left", n, len(r.b))
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *wasmReader) u32() uint32 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n > 5 || v > 1<<32-1 {
		r.t.Fatal("wasm: bad LEB128")
	}
	r.b = r.b[n:]
	return uint32(v)
}
