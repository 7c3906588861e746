package wasmhost_test

import "strings"

// A tiny WebAssembly encoder for modules too small or too odd to write in
// Go: a module that imports what the Go SDK never does, or that calls a
// host function from _initialize or from its allocator.

const (
	i32 = 0x7f
	i64 = 0x7e
)

type wasmImport struct {
	module, name    string
	params, results []byte
}

type wasmFunc struct {
	export          string
	params, results []byte
	body            func(m *wasmModule) []byte // instructions, without the final end
}

type wasmModule struct {
	imports []wasmImport
	funcs   []wasmFunc
}

// call returns the instructions that call the import "module.name" with
// i32 arguments args and drop its result, if any.
func (m *wasmModule) call(fullName string, args ...int32) []byte {
	var b []byte
	for _, a := range args {
		b = append(b, 0x41)
		b = appendSLEB(b, int64(a))
	}
	for i, imp := range m.imports {
		if imp.module+"."+imp.name == fullName {
			b = append(b, 0x10)
			b = appendULEB(b, uint32(i))
			if len(imp.results) > 0 {
				b = append(b, 0x1a) // drop
			}
			return b
		}
	}
	panic("no import " + fullName)
}

// i32Const returns the instruction pushing n.
func i32Const(n int32) []byte { return appendSLEB([]byte{0x41}, int64(n)) }

func (m *wasmModule) bytes() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	var types, imports, funcs, exports, code []byte
	ntypes := 0
	addType := func(params, results []byte) uint32 {
		types = append(types, 0x60)
		types = appendVec(types, params)
		types = appendVec(types, results)
		ntypes++
		return uint32(ntypes - 1)
	}
	for _, imp := range m.imports {
		t := addType(imp.params, imp.results)
		imports = appendName(imports, imp.module)
		imports = appendName(imports, imp.name)
		imports = append(imports, 0x00)
		imports = appendULEB(imports, t)
	}
	nexports := 1
	exports = appendName(exports, "memory")
	exports = append(exports, 0x02, 0x00)
	for i, f := range m.funcs {
		funcs = appendULEB(funcs, addType(f.params, f.results))
		if f.export != "" {
			exports = appendName(exports, f.export)
			exports = append(exports, 0x00)
			exports = appendULEB(exports, uint32(len(m.imports)+i))
			nexports++
		}
		var body []byte
		if f.body != nil {
			body = f.body(m)
		}
		if len(f.results) > 0 && (f.body == nil || len(body) == 0) {
			body = append(body, i32Const(0)...)
		}
		fn := append([]byte{0x00}, body...) // no locals
		fn = append(fn, 0x0b)
		code = appendULEB(code, uint32(len(fn)))
		code = append(code, fn...)
	}
	out = appendSection(out, 1, ntypes, types)
	out = appendSection(out, 2, len(m.imports), imports)
	out = appendSection(out, 3, len(m.funcs), funcs)
	out = appendSection(out, 5, 1, []byte{0x00, 0x01}) // one memory, min 1 page
	out = appendSection(out, 7, nexports, exports)
	out = appendSection(out, 10, len(m.funcs), code)
	return out
}

func appendSection(out []byte, id byte, n int, content []byte) []byte {
	payload := appendULEB(nil, uint32(n))
	payload = append(payload, content...)
	out = append(out, id)
	out = appendULEB(out, uint32(len(payload)))
	return append(out, payload...)
}

func appendVec(b, items []byte) []byte {
	b = appendULEB(b, uint32(len(items)))
	return append(b, items...)
}

func appendName(b []byte, s string) []byte {
	b = appendULEB(b, uint32(len(s)))
	return append(b, s...)
}

func appendULEB(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// sig turns "iil" into value types.
func sig(s string) []byte {
	out := make([]byte, len(s))
	for i, c := range s {
		out[i] = i32
		if c == 'l' {
			out[i] = i64
		}
	}
	return out
}

// minimalFilter is a module with the exports a host needs (the ABI
// version, memory and an allocator returning a fixed address) plus extra
// functions, importing imports ("module.name:params>results", e.g.
// "wasi_snapshot_preview1.poll_oneoff:iiii>i").
func minimalFilter(abi string, imports []string, extra ...wasmFunc) *wasmModule {
	m := &wasmModule{}
	for _, imp := range imports {
		full, types, _ := strings.Cut(imp, ":")
		params, results, _ := strings.Cut(types, ">")
		module, name, _ := strings.Cut(full, ".")
		m.imports = append(m.imports, wasmImport{module, name, sig(params), sig(results)})
	}
	if abi != "" {
		m.funcs = append(m.funcs, wasmFunc{export: "proxy_abi_version_" + strings.ReplaceAll(abi, ".", "_")})
	}
	m.funcs = append(m.funcs, extra...)
	hasMalloc := false
	for _, f := range extra {
		hasMalloc = hasMalloc || f.export == "proxy_on_memory_allocate"
	}
	if !hasMalloc {
		m.funcs = append(m.funcs, wasmFunc{export: "proxy_on_memory_allocate", params: sig("i"), results: sig("i"),
			body: func(*wasmModule) []byte { return i32Const(1024) }})
	}
	return m
}
