package wasmhost

import "fmt"

// proxy-wasm-cpp-host lets the guest call only a few host functions while
// it runs _initialize (WasmBase::startVm, src/wasm.cc) and while the host
// runs the guest's allocator (WasmBase::allocMemory,
// include/proxy-wasm/wasm.h). Any other call traps with
// "restricted_callback" (src/v8/v8.cc), which fails the VM.

var (
	initAllowedSets   = [...]map[string]bool{buildInitAllowed(CppHostBefore94091cd), buildInitAllowed(CppHost94091cd)}
	mallocAllowedSets = [...]map[string]bool{buildMallocAllowed(CppHostBefore94091cd), buildMallocAllowed(CppHost94091cd)}
)

// initAllowed are the functions _initialize (and main or __main_void, which
// run under the same restriction) may call.
func initAllowed(c CppHost) map[string]bool { return initAllowedSets[c] }

// mallocAllowed are the functions proxy_on_memory_allocate may call. Before
// 94091cd poll_oneoff is not among them: a Go guest whose allocation
// starts a garbage collection that polls traps there.
func mallocAllowed(c CppHost) map[string]bool { return mallocAllowedSets[c] }

func buildInitAllowed(c CppHost) map[string]bool {
	wasi := []string{"fd_write", "args_sizes_get", "args_get", "environ_sizes_get", "environ_get",
		"fd_prestat_get", "fd_prestat_dir_name", "clock_time_get", "random_get",
		"fd_fdstat_get", "fd_fdstat_set_flags"}
	if c >= CppHost94091cd {
		wasi = append(wasi, "clock_res_get", "poll_oneoff",
			"fd_advise", "fd_allocate", "fd_datasync", "fd_fdstat_set_rights", "fd_filestat_get",
			"fd_filestat_set_size", "fd_filestat_set_times", "fd_pread", "fd_pwrite", "fd_readdir",
			"fd_renumber", "fd_sync", "fd_tell", "path_create_directory", "path_filestat_get",
			"path_filestat_set_times", "path_link", "path_readlink", "path_remove_directory",
			"path_rename", "path_symlink", "path_unlink_file", "sock_accept", "sock_recv",
			"sock_send", "sock_shutdown")
	}
	return allowSet([]string{"emscripten_notify_memory_growth", "proxy_log"}, wasi)
}

func buildMallocAllowed(c CppHost) map[string]bool {
	wasi := []string{"fd_write", "clock_time_get"}
	if c >= CppHost94091cd {
		wasi = append(wasi, "poll_oneoff")
	}
	return allowSet([]string{"proxy_log"}, wasi)
}

func allowSet(env, wasi []string) map[string]bool {
	set := map[string]bool{}
	for _, name := range env {
		set["env."+name] = true
	}
	for _, name := range wasi {
		for _, module := range wasiModules {
			set[module+"."+name] = true
		}
	}
	return set
}

// RestrictedCallError is the trap of a host call made where
// proxy-wasm-cpp-host forbids it.
type RestrictedCallError struct {
	Func  string // e.g. "wasi_snapshot_preview1.poll_oneoff"
	Phase string // "_initialize" or "proxy_on_memory_allocate"
}

func (e *RestrictedCallError) Error() string {
	return fmt.Sprintf("restricted_callback: %s called during %s", e.Func, e.Phase)
}

// restrict allows only the functions in allowed until unrestrict.
func (v *vm) restrict(phase string, allowed map[string]bool) {
	v.restrictedPhase, v.allowed = phase, allowed
}

// unrestrict lifts the restriction. As in proxy-wasm-cpp-host it does not
// restore an outer one.
func (v *vm) unrestrict() { v.restrictedPhase, v.allowed = "", nil }

// checkRestricted traps (by panicking, which wazero turns into the guest
// call's error) if fullName may not be called now.
func (v *vm) checkRestricted(fullName string) {
	if v.allowed != nil && !v.allowed[fullName] {
		panic(&RestrictedCallError{Func: fullName, Phase: v.restrictedPhase})
	}
}

// initialize runs the reactor's _initialize, then main(0, 0) or else
// __main_void when exported, as WasmBase::startVm does, allowing only the
// host calls initAllowed lists. A WASI command's _start is not run.
func (v *vm) initialize() error {
	init := v.mod.ExportedFunction("_initialize")
	if init == nil {
		return nil
	}
	v.restrict("_initialize", initAllowed(v.h.cfg.CppHost))
	defer v.unrestrict()
	if _, ok := v.call("_initialize", init, 0); !ok {
		return v.failed
	}
	if f := v.mod.ExportedFunction("main"); f != nil {
		if _, ok := v.call("main", f, 0, 0, 0); !ok {
			return v.failed
		}
	} else if f := v.mod.ExportedFunction("__main_void"); f != nil {
		if _, ok := v.call("__main_void", f, 0); !ok {
			return v.failed
		}
	}
	return nil
}
