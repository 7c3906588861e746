// WASI preview 1 exactly as proxy-wasm-cpp-host offers it before commit
// 94091cd (Envoy up to 1.38): the 18 functions of FOR_ALL_WASI_FUNCTIONS
// (include/proxy-wasm/exports.h) with the answers of src/exports.cc.
// poll_oneoff and fd_fdstat_set_flags answer ENOSYS, as there.

import { randomFillSync } from "node:crypto";

const SUCCESS = 0, BADF = 8, INVAL = 28, NOENT = 44, NOSYS = 52, NOTSUP = 58;
const RANDOM_GET_MAX = 64 * 1024; // PROXY_WASM_HOST_WASI_RANDOM_GET_MAX_SIZE_BYTES

// WASI_FUNCTIONS is the whole set; a module importing any other WASI
// function fails to load in Envoy ("missing import").
export const WASI_FUNCTIONS = [
  "fd_write", "fd_read", "fd_seek", "fd_close", "fd_fdstat_get", "fd_fdstat_set_flags",
  "environ_get", "environ_sizes_get", "args_get", "args_sizes_get", "clock_time_get",
  "random_get", "sched_yield", "poll_oneoff", "proc_exit", "path_open",
  "fd_prestat_get", "fd_prestat_dir_name",
];

// HIGRESS_WASI_FUNCTIONS: Higress's host (2.1.1 on, alibaba/higress PR
// #2054) runs Go 1.24 modules whose runtime polls, such as Higress's own
// plugins: its poll_oneoff returns at once with no events, and it links
// path_filestat_get (which Go's os imports) as a stub, refused if called.
// Offered only to a module run as on Higress's host (opts.higressWASI).
export const HIGRESS_WASI_FUNCTIONS = ["path_filestat_get"];

// higressWASI changes imports to Higress's host's.
export function higressWASI(vm, imports) {
  return {
    ...imports,
    poll_oneoff(_in, _out, _n, neventsPtr) {
      vm.pollOneoffCalls++;
      vm.setU32(neventsPtr, 0);
      return SUCCESS;
    },
  };
}

// wasiImports returns the functions for module wasi_snapshot_preview1,
// working on vm's memory. env is the VM's environment (Envoy's
// vm_config.environment_variables), a list of [name, value].
export function wasiImports(vm, env) {
  const environ = env.map(([k, v]) => Buffer.from(`${k}=${v}\0`));
  return {
    fd_write(fd, iovs, iovsLen, nwrittenPtr) {
      if (fd !== 1 && fd !== 2) return BADF;
      const chunks = [];
      for (let i = 0; i < iovsLen; i++) {
        const base = (iovs >>> 0) + i * 8;
        chunks.push(vm.read(vm.u32(base), vm.u32(base + 4)));
      }
      const data = Buffer.concat(chunks);
      vm.guestOutput(fd, data);
      vm.setU32(nwrittenPtr, data.length);
      return SUCCESS;
    },
    fd_read: () => NOSYS,
    fd_seek() {
      vm.hostError("wasi_unstable fd_seek");
      return SUCCESS;
    },
    fd_close() {
      vm.hostError("wasi_unstable fd_close");
      return SUCCESS;
    },
    fd_fdstat_get(fd, statPtr) {
      if (fd !== 1 && fd !== 2) return BADF;
      // 24 bytes, zero but fs_rights_base = __WASI_RIGHTS_FD_WRITE.
      vm.write(statPtr, new Uint8Array(24));
      vm.setU64(statPtr + 8, 64n);
      return SUCCESS;
    },
    fd_fdstat_set_flags: () => NOSYS,
    environ_get(arrayPtr, bufPtr) {
      let array = arrayPtr >>> 0, buf = bufPtr >>> 0;
      for (const e of environ) {
        vm.setU32(array, buf);
        vm.write(buf, e);
        array += 4;
        buf += e.length;
      }
      return SUCCESS;
    },
    environ_sizes_get(countPtr, sizePtr) {
      vm.setU32(countPtr, environ.length);
      vm.setU32(sizePtr, environ.reduce((n, e) => n + e.length, 0));
      return SUCCESS;
    },
    args_get: () => SUCCESS,
    args_sizes_get(argcPtr, bufSizePtr) {
      vm.setU32(argcPtr, 0);
      vm.setU32(bufSizePtr, 0);
      return SUCCESS;
    },
    clock_time_get(id, _precision, resultPtr) {
      let ns;
      if (id === 0) ns = BigInt(Math.round((performance.timeOrigin + performance.now() + vm.clockAheadMs) * 1e6));
      else if (id === 1) ns = process.hrtime.bigint() + BigInt(vm.clockAheadMs * 1e6);
      else return NOTSUP;
      vm.setU64(resultPtr, ns);
      return SUCCESS;
    },
    random_get(ptr, len) {
      len >>>= 0;
      if (len > RANDOM_GET_MAX) return INVAL;
      vm.write(ptr, randomFillSync(Buffer.alloc(len)));
      return SUCCESS;
    },
    sched_yield: () => SUCCESS,
    poll_oneoff() {
      vm.pollOneoffCalls++;
      return NOSYS;
    },
    // cpp-host logs an error and returns, and the Go runtime then spins or
    // faults; here the call aborts the VM call so that the test fails.
    proc_exit(code) {
      throw new Error(`wasi proc_exit(${code}): the module exited`);
    },
    path_open: () => NOENT,
    path_filestat_get() {
      vm.hostError("wasi_unstable path_filestat_get");
      return SUCCESS;
    },
    fd_prestat_get: () => BADF,
    fd_prestat_dir_name: () => NOSYS,
  };
}
