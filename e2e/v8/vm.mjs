// One proxy-wasm VM in V8, as proxy-wasm-cpp-host runs it in Envoy
// (src/wasm.cc, src/exports.cc before commit 94091cd): the same WASI set,
// the same allow-lists for _initialize and proxy_on_memory_allocate, the
// host functions of the module's ABI version, and an import the host lacks
// failing the load. Every trap, restricted call or host error is recorded
// in failures, and the driver exits non-zero.

import { WASI_FUNCTIONS, HIGRESS_WASI_FUNCTIONS, higressWASI, wasiImports } from "./wasi.mjs";
import { envImports, HOST_FUNCTIONS, ABI_FUNCTIONS, REDIS_FUNCTIONS } from "./env.mjs";

// What _initialize may call (WasmBase::startVm).
const INITIALIZE_ALLOWED = new Set([
  "env.emscripten_notify_memory_growth", "env.proxy_log",
  ...["fd_write", "args_sizes_get", "args_get", "environ_sizes_get", "environ_get",
    "fd_prestat_get", "fd_prestat_dir_name", "clock_time_get", "random_get",
    "fd_fdstat_get", "fd_fdstat_set_flags"].map((f) => "wasi_snapshot_preview1." + f),
]);

// What proxy_on_memory_allocate may call (WasmBase::allocMemory).
const ALLOCATE_ALLOWED = new Set([
  "env.proxy_log", "wasi_snapshot_preview1.fd_write", "wasi_snapshot_preview1.clock_time_get",
]);

// Higress's host lets both also poll (as proxy-wasm-cpp-host does from
// 94091cd on): a Go runtime's garbage collection may poll in either.
const HIGRESS_POLL = ["wasi_snapshot_preview1.poll_oneoff"];

export class VM {
  // opts: { env: [[k, v]], redisABI: bool (Higress's Envoy build),
  //         higressWASI: bool (Higress's host's WASI, see wasi.mjs),
  //         onLog(level, msg), onOutput(fd, line),
  //         post(task): run task after the VM call in progress, as Envoy's
  //         dispatcher runs what is posted to it (proxy_on_queue_ready) }
  constructor(module, opts) {
    this.module = module;
    this.opts = opts;
    this.failures = [];
    this.allowed = null; // the allow-list in force, or null
    this.current = 0; // context of the VM call in progress
    this.effective = 0; // set by proxy_set_effective_context, 0 if none
    this.rootID = 1;
    this.nextID = 2;
    // id -> stream (see request in host.mjs): { request, response: header
    // pairs; responseBody: the chunk of the proxy_on_response_body call in
    // progress; properties, continued, local }
    this.streams = new Map();
    this.buffers = new Map(); // buffer type -> bytes, during the callback that owns them
    this.callResponse = null; // { headers, body } during proxy_on_http_call_response
    this.metrics = new Map(); // id -> { name, type, value }
    this.tickPeriodMs = 0;
    // clockAheadMs moves the clocks the guest reads forward, wall and
    // monotonic (bench.mjs lets held requests' time come without waiting).
    this.clockAheadMs = 0;
    this.pollOneoffCalls = 0;
    // Counts for bench.mjs: host functions the guest called, guest
    // exports the host called; with opts.timing, the milliseconds spent
    // in each (exports counted at the outermost call only).
    this.hostCalls = 0;
    this.importCalls = {}; // "module.name" -> { n: calls }
    this.guestCalls = 0;
    this.hostMs = 0;
    this.guestMs = 0;
    this.depth = 0;
    this.output = { 1: "", 2: "" };
    this.abi = this.abiVersion();
    this.instance = new WebAssembly.Instance(module, this.imports());
    this.exports = this.instance.exports;
    this.memory = this.exports.memory;
  }

  // allowing is an allow-list as this VM's host has it.
  allowing(set) {
    return this.opts.higressWASI ? new Set([...set, ...HIGRESS_POLL]) : set;
  }

  abiVersion() {
    const names = WebAssembly.Module.exports(this.module).map((e) => e.name);
    const v = ["proxy_abi_version_0_1_0", "proxy_abi_version_0_2_0", "proxy_abi_version_0_2_1", "proxy_abi_version_0_2_100"].find((n) => names.includes(n));
    if (!v) throw new Error("Missing or unknown Proxy-Wasm ABI version");
    return v.slice("proxy_abi_version_".length);
  }

  // imports builds the import object, each function behind the allow-list
  // check, and fails like V8::link when the module needs anything else.
  imports() {
    const offered = {
      wasi_snapshot_preview1: this.opts.higressWASI
        ? pick(higressWASI(this, wasiImports(this, this.opts.env)), [...WASI_FUNCTIONS, ...HIGRESS_WASI_FUNCTIONS])
        : pick(wasiImports(this, this.opts.env), WASI_FUNCTIONS),
      env: pick(envImports(this), [...HOST_FUNCTIONS, ...ABI_FUNCTIONS[this.abi],
        "pthread_equal", "emscripten_notify_memory_growth",
        ...(this.opts.redisABI ? REDIS_FUNCTIONS : [])]),
    };
    const out = {};
    for (const imp of WebAssembly.Module.imports(this.module)) {
      const name = `${imp.module}.${imp.name}`;
      const fn = offered[imp.module]?.[imp.name];
      if (imp.kind !== "function" || !fn) {
        throw new Error(`Failed to load Wasm module due to a missing import: ${name}`);
      }
      const timing = !!this.opts.timing;
      const count = (this.importCalls[name] = { n: 0 });
      (out[imp.module] ||= {})[imp.name] = (...args) => {
        if (this.allowed && !this.allowed.has(name)) {
          throw new Error(`restricted_callback: ${name} called while only ${[...this.allowed].join(", ")} may be`);
        }
        this.hostCalls++;
        count.n++;
        if (!timing) return fn(...args);
        const t = performance.now();
        try {
          return fn(...args);
        } finally {
          this.hostMs += performance.now() - t;
        }
      };
    }
    return out;
  }

  // flushMetrics has a module that buffers its metrics until its tick
  // (the filter) hand them over now, if it exports
  // ratelimit_flush_metrics; Envoy itself reads what the ticks flushed.
  flushMetrics() {
    if (typeof this.exports.ratelimit_flush_metrics === "function") this.call("ratelimit_flush_metrics", this.rootID);
  }

  // call runs one export with ctx as the current context, as cpp-host's
  // SaveRestoreContext does. A trap is recorded and rethrown.
  call(name, ctx, ...args) {
    const fn = this.exports[name];
    if (typeof fn !== "function") throw this.fail(`the module does not export ${name}`);
    const savedCurrent = this.current, savedEffective = this.effective;
    this.current = ctx;
    this.effective = 0;
    this.guestCalls++;
    const t = this.opts.timing && this.depth === 0 ? performance.now() : -1;
    this.depth++;
    try {
      return fn(...args);
    } catch (err) {
      if (!err.recorded) this.fail(`trap in ${name}: ${err.stack || err}`);
      err.recorded = true;
      throw err;
    } finally {
      this.depth--;
      if (t >= 0) this.guestMs += performance.now() - t;
      this.current = savedCurrent;
      this.effective = savedEffective;
    }
  }

  restricted(allowed, f) {
    const saved = this.allowed;
    this.allowed = allowed;
    try {
      return f();
    } finally {
      this.allowed = saved;
    }
  }

  // start is WasmBase::startVm, then the root context's onStart and
  // onConfigure. It returns whether the plugin started.
  // startMs holds the milliseconds each phase took.
  start(pluginConfig, vmConfig = "") {
    const t0 = performance.now();
    this.restricted(this.allowing(INITIALIZE_ALLOWED), () => this.call("_initialize", 0));
    const t1 = performance.now();
    this.call("proxy_on_context_create", this.rootID, this.rootID, 0);
    this.buffers.set(6, Buffer.from(vmConfig));
    const vmOK = this.call("proxy_on_vm_start", this.rootID, this.rootID, vmConfig.length) !== 0;
    this.buffers.delete(6);
    const t2 = performance.now();
    this.startMs = { initialize: t1 - t0, vm_start: t2 - t1, configure: 0 };
    if (!vmOK) return false;
    const config = Buffer.from(pluginConfig);
    this.buffers.set(7, config);
    const ok = this.call("proxy_on_configure", this.rootID, this.rootID, config.length) !== 0;
    this.buffers.delete(7);
    this.startMs.configure = performance.now() - t2;
    return ok;
  }

  // ctx is the context host calls act on: the effective one, else the
  // current one (contextOrEffectiveContext).
  ctx() {
    return this.effective || this.current;
  }

  stream() {
    return this.streams.get(this.ctx());
  }

  fail(msg) {
    this.failures.push(msg);
    const err = new Error(msg);
    err.recorded = true;
    return err;
  }

  // hostError is cpp-host's context->error: a call the host refuses.
  hostError(msg) {
    this.fail(`host error: ${msg}`);
  }

  // guestOutput takes what the module writes to fd 1 or 2, line by line.
  guestOutput(fd, data) {
    const text = this.output[fd] + data.toString();
    const lines = text.split("\n");
    this.output[fd] = lines.pop();
    for (const line of lines) this.opts.onOutput(fd, line);
  }

  flushOutput() {
    for (const fd of [1, 2]) {
      if (this.output[fd]) this.opts.onOutput(fd, this.output[fd]);
      this.output[fd] = "";
    }
  }

  // copyOut hands bytes to the guest as cpp-host's copyToPointerSize
  // does: memory from proxy_on_memory_allocate (under its allow-list),
  // its address at ptrPtr and the size at sizePtr; nothing for no bytes.
  copyOut(bytes, ptrPtr, sizePtr) {
    let addr = 0;
    if (bytes.length > 0) {
      addr = this.restricted(this.allowing(ALLOCATE_ALLOWED), () => this.call("proxy_on_memory_allocate", this.current, bytes.length)) >>> 0;
      if (addr === 0) return false;
      this.write(addr, bytes);
    }
    this.setU32(ptrPtr, addr);
    this.setU32(sizePtr, bytes.length);
    return true;
  }

  // Memory access. memory.grow detaches the old buffer, so the views are
  // remade when the buffer changes.
  bytes() {
    return new Uint8Array(this.memory.buffer);
  }

  view() {
    if (this.dv?.buffer !== this.memory.buffer) this.dv = new DataView(this.memory.buffer);
    return this.dv;
  }

  // read copies guest memory out; readString decodes it in place.
  read(ptr, len) {
    return Buffer.from(this.window(ptr, len));
  }

  readString(ptr, len) {
    return this.window(ptr, len).toString();
  }

  window(ptr, len) {
    ptr >>>= 0;
    len >>>= 0;
    if (ptr + len > this.memory.buffer.byteLength) throw this.fail(`guest pointer out of bounds: ${ptr}+${len}`);
    return Buffer.from(this.memory.buffer, ptr, len);
  }

  write(ptr, data) {
    this.bytes().set(data, ptr >>> 0);
  }

  u32(ptr) {
    return this.view().getUint32(ptr >>> 0, true);
  }

  setU32(ptr, v) {
    this.view().setUint32(ptr >>> 0, v >>> 0, true);
  }

  setU64(ptr, v) {
    this.view().setBigUint64(ptr >>> 0, typeof v === "bigint" ? BigInt.asUintN(64, v) : BigInt.asUintN(64, BigInt(v)), true);
  }
}

function pick(fns, names) {
  const out = {};
  for (const n of names) {
    if (!fns[n]) throw new Error(`host bug: no implementation for ${n}`);
    out[n] = fns[n];
  }
  return out;
}
