package wasmhost

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// CppHost selects the proxy-wasm-cpp-host whose WASI the Host offers. The
// two differ in poll_oneoff, in the WASI functions linked, and in what
// _initialize and proxy_on_memory_allocate may call (see restricted.go).
type CppHost int

const (
	// CppHostBefore94091cd is proxy-wasm-cpp-host from PR #427 (c4d7bb0,
	// Envoy 1.33) up to commit 94091cd: 18 WASI functions, and
	// poll_oneoff and fd_fdstat_set_flags answer ENOSYS (52). Envoy 1.33
	// to 1.38 and the Istio releases built on them run it. The default.
	CppHostBefore94091cd CppHost = iota
	// CppHost94091cd is proxy-wasm-cpp-host from commit 94091cd
	// (2026-04-06, PR #533; in Envoy through PR #45756): every WASI
	// preview 1 function is linked, mostly as stubs, and poll_oneoff
	// returns at once with no events. fd_fdstat_set_flags still answers
	// ENOSYS.
	CppHost94091cd
)

// String names the version, e.g. "proxy-wasm-cpp-host before 94091cd".
func (c CppHost) String() string {
	if c == CppHost94091cd {
		return "proxy-wasm-cpp-host 94091cd"
	}
	return "proxy-wasm-cpp-host before 94091cd"
}

// WASI errno values (wasi-libc api.h).
const (
	errnoSuccess  uint32 = 0
	errnoBadf     uint32 = 8
	errnoNotdir   uint32 = 20
	errnoFault    uint32 = 21
	errnoInval    uint32 = 28
	errnoNoent    uint32 = 44
	errnoNosys    uint32 = 52
	errnoNotsup   uint32 = 58
	maxRandomSize uint32 = 64 << 10 // PROXY_WASM_HOST_WASI_RANDOM_GET_MAX_SIZE_BYTES
)

// wasiFunc is one WASI function as proxy-wasm-cpp-host links it
// (src/exports.cc), under both "wasi_unstable" and
// "wasi_snapshot_preview1". sig lists the parameter types, 'i' for i32
// and 'l' for i64; every function returns an i32 errno except proc_exit.
type wasiFunc struct {
	sig   string
	void  bool
	since CppHost
	impl  func(v *vm, a args) uint32
}

var wasiModules = []string{"wasi_snapshot_preview1", "wasi_unstable"}

func wasiFuncs() map[string]wasiFunc {
	enosys := func(*vm, args) uint32 { return errnoNosys }
	enotsup := func(*vm, args) uint32 { return errnoNotsup }
	badf := func(*vm, args) uint32 { return errnoBadf }
	stdio := stdioOnly(errnoSuccess)
	const after = CppHost94091cd
	return map[string]wasiFunc{
		// The 18 of PR #427 (c4d7bb0).
		"fd_write":            {sig: "iiii", impl: wFdWrite},
		"fd_read":             {sig: "iiii", impl: enosys},
		"fd_seek":             {sig: "ilii", impl: logged("wasi_unstable fd_seek")},
		"fd_close":            {sig: "i", impl: logged("wasi_unstable fd_close")},
		"fd_fdstat_get":       {sig: "ii", impl: wFdFdstatGet},
		"fd_fdstat_set_flags": {sig: "ii", impl: enosys},
		"environ_get":         {sig: "ii", impl: wEnvironGet},
		"environ_sizes_get":   {sig: "ii", impl: wEnvironSizesGet},
		"args_get":            {sig: "ii", impl: func(*vm, args) uint32 { return errnoSuccess }},
		"args_sizes_get":      {sig: "ii", impl: wTwoZeros},
		"clock_time_get":      {sig: "ili", impl: wClockTimeGet},
		"random_get":          {sig: "ii", impl: wRandomGet},
		"sched_yield":         {sig: "", impl: func(*vm, args) uint32 { return errnoSuccess }},
		"poll_oneoff":         {sig: "iiii", impl: wPollOneoff},
		"proc_exit":           {sig: "i", void: true, impl: logged("wasi_unstable proc_exit")},
		"path_open":           {sig: "iiiiillii", impl: func(*vm, args) uint32 { return errnoNoent }},
		"fd_prestat_get":      {sig: "ii", impl: badf},
		"fd_prestat_dir_name": {sig: "iii", impl: enosys},
		// Added by 94091cd, with its signatures (path_link and
		// path_symlink take one i32 less than WASI's).
		"fd_fdstat_set_rights":    {sig: "ill", since: after, impl: stdio},
		"clock_res_get":           {sig: "ii", since: after, impl: wClockResGet},
		"fd_advise":               {sig: "illi", since: after, impl: func(*vm, args) uint32 { return errnoSuccess }},
		"fd_allocate":             {sig: "ill", since: after, impl: stdio},
		"fd_datasync":             {sig: "i", since: after, impl: stdio},
		"fd_filestat_set_size":    {sig: "il", since: after, impl: stdio},
		"fd_filestat_set_times":   {sig: "illi", since: after, impl: stdio},
		"fd_pread":                {sig: "iiili", since: after, impl: enosys},
		"fd_pwrite":               {sig: "iiili", since: after, impl: wFdPwrite},
		"fd_readdir":              {sig: "iiili", since: after, impl: zeroU32Then(4, errnoNotdir)},
		"fd_renumber":             {sig: "ii", since: after, impl: wFdRenumber},
		"fd_sync":                 {sig: "i", since: after, impl: stdio},
		"fd_tell":                 {sig: "ii", since: after, impl: wFdTell},
		"fd_filestat_get":         {sig: "ii", since: after, impl: badf},
		"path_create_directory":   {sig: "iii", since: after, impl: enotsup},
		"path_filestat_get":       {sig: "iiiii", since: after, impl: enotsup},
		"path_filestat_set_times": {sig: "iiiilli", since: after, impl: enotsup},
		"path_link":               {sig: "iiiiii", since: after, impl: enotsup},
		"path_readlink":           {sig: "iiiiii", since: after, impl: zeroU32Then(5, errnoNotsup)},
		"path_remove_directory":   {sig: "iii", since: after, impl: enotsup},
		"path_rename":             {sig: "iiiiii", since: after, impl: enotsup},
		"path_symlink":            {sig: "iiii", since: after, impl: enotsup},
		"path_unlink_file":        {sig: "iii", since: after, impl: enotsup},
		"sock_accept":             {sig: "iii", since: after, impl: wSockAccept},
		"sock_recv":               {sig: "iiiiii", since: after, impl: wSockRecv},
		"sock_send":               {sig: "iiiii", since: after, impl: zeroU32Then(4, errnoNotsup)},
		"sock_shutdown":           {sig: "ii", since: after, impl: enotsup},
	}
}

func (f wasiFunc) params() []api.ValueType {
	t := make([]api.ValueType, len(f.sig))
	for i, c := range f.sig {
		t[i] = api.ValueTypeI32
		if c == 'l' {
			t[i] = api.ValueTypeI64
		}
	}
	return t
}

func (f wasiFunc) results() []api.ValueType {
	if f.void {
		return nil
	}
	return i32s(1)
}

// instantiateWASI registers the WASI modules in r: the functions of every
// CppHost version, so that one compiled Module serves both; link checks
// that a module imports only those of the Host's version.
func instantiateWASI(ctx context.Context, r wazero.Runtime) error {
	funcs := wasiFuncs()
	names := make([]string, 0, len(funcs))
	for name := range funcs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, module := range wasiModules {
		b := r.NewHostModuleBuilder(module)
		for _, name := range names {
			f := funcs[name]
			b.NewFunctionBuilder().
				WithGoModuleFunction(wrapWASI(module+"."+name, name, f), f.params(), f.results()).
				Export(name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			return fmt.Errorf("host: instantiate module %s: %w", module, err)
		}
	}
	return nil
}

func wrapWASI(fullName, name string, f wasiFunc) api.GoModuleFunc {
	return func(ctx context.Context, _ api.Module, stack []uint64) {
		v, _ := ctx.Value(vmKey{}).(*vm)
		if v == nil || v.mod == nil {
			if !f.void {
				stack[0] = uint64(errnoFault)
			}
			return
		}
		v.checkRestricted(fullName)
		v.h.wasiStats.count(name)
		a := append(args(nil), stack...)
		res := f.impl(v, a)
		if !f.void {
			stack[0] = api.EncodeU32(res)
		}
	}
}

// wasiStats counts the guest's WASI calls by function name.
type wasiStats struct {
	once sync.Once
	n    map[string]*atomic.Int64
}

func (s *wasiStats) init() {
	s.n = map[string]*atomic.Int64{}
	for name := range wasiFuncs() {
		s.n[name] = &atomic.Int64{}
	}
}

func (s *wasiStats) count(name string) {
	s.once.Do(s.init)
	s.n[name].Add(1)
}

// WASICalls returns how many times the guests called each WASI function
// (by name, e.g. "poll_oneoff"), for the functions called at least once.
func (h *Host) WASICalls() map[string]int64 {
	h.wasiStats.once.Do(h.wasiStats.init)
	out := map[string]int64{}
	for name, n := range h.wasiStats.n {
		if c := n.Load(); c > 0 {
			out[name] = c
		}
	}
	return out
}
