// The proxy-wasm host functions of module env, as proxy-wasm-cpp-host
// registers them (WasmBase::registerCallbacks before commit 94091cd) and
// Envoy implements them, plus Higress's Redis callout. Functions this
// filter never calls are offered, so that the module links as in Envoy,
// but throw when called: a test host must not guess at them.

import { httpCallout } from "./callouts.mjs";

// FOR_ALL_HOST_FUNCTIONS in include/proxy-wasm/exports.h, without "proxy_".
export const HOST_FUNCTIONS = [
  "log", "get_status", "set_property", "get_property", "send_local_response",
  "get_shared_data", "set_shared_data", "register_shared_queue", "resolve_shared_queue",
  "dequeue_shared_queue", "enqueue_shared_queue", "get_header_map_value",
  "add_header_map_value", "replace_header_map_value", "remove_header_map_value",
  "get_header_map_pairs", "set_header_map_pairs", "get_header_map_size",
  "get_buffer_status", "get_buffer_bytes", "set_buffer_bytes", "http_call", "grpc_call",
  "grpc_stream", "grpc_close", "grpc_cancel", "grpc_send", "set_tick_period_milliseconds",
  "get_current_time_nanoseconds", "define_metric", "increment_metric", "record_metric",
  "get_metric", "set_effective_context", "done", "call_foreign_function",
].map((f) => "proxy_" + f);

// The functions that depend on the ABI version the module exports.
export const ABI_FUNCTIONS = {
  "0_1_0": ["get_configuration", "continue_request", "continue_response", "clear_route_cache"].map((f) => "proxy_" + f),
  "0_2_0": ["proxy_continue_stream", "proxy_close_stream"],
  "0_2_1": ["proxy_continue_stream", "proxy_close_stream", "proxy_get_log_level"],
  // Higress's own SDK (higress-group/proxy-wasm-go-sdk, the peer's)
  // exports 0.2.100; this host serves it 0.2.1's functions.
  "0_2_100": ["proxy_continue_stream", "proxy_close_stream", "proxy_get_log_level"],
};

// Higress's Envoy build adds the Redis callout (higress-group/envoy,
// source/extensions/common/wasm/context.cc).
export const REDIS_FUNCTIONS = ["proxy_redis_init", "proxy_redis_call"];

const OK = 0, NOT_FOUND = 1, BAD_ARGUMENT = 2, INVALID_MEMORY_ACCESS = 6, EMPTY = 7;
const REDIS_STATUS_FAILED = 1;

export function envImports(vm) {
  const fns = {};
  for (const name of [...HOST_FUNCTIONS, ...Object.values(ABI_FUNCTIONS).flat()]) {
    fns[name] = () => {
      throw vm.fail(`${name}: not modelled by this test host`);
    };
  }
  const o = vm.opts;
  let token = 0;

  // headerMap returns the stream's map of a type, or null.
  const headerMap = (type) => {
    if (type === 6) return vm.callResponse?.headers ?? null;
    const s = vm.stream();
    if (!s) return null;
    if (type === 0) return s.request;
    if (type === 2) return s.response;
    return null;
  };
  // buffer returns the bytes of a buffer type, or null: a stream's body
  // chunk (0 request, 1 response: the chunk of the proxy_on_*_body call in
  // progress, as Envoy hands a filter that does not buffer), else what the
  // callback in progress owns (vm.buffers).
  const buffer = (type) => {
    if (type > 1) return vm.buffers.get(type) ?? null;
    const s = vm.stream();
    return (type === 0 ? s?.requestBody : s?.responseBody) ?? null;
  };
  // Shared queues (cpp-host's SharedQueue), of this VM only: a queue
  // belongs to the root context that registered it, and each enqueue posts
  // proxy_on_queue_ready(root, token) to run after the callback in progress.
  const queues = new Map(); // name -> { token, root, items }
  const byToken = new Map();
  const copyPairs = (pairs, ptrPtr, sizePtr) => (vm.copyOut(wireOf(pairs), ptrPtr, sizePtr) ? OK : INVALID_MEMORY_ACCESS);
  const lower = (ptr, len) => vm.readString(ptr, len).toLowerCase();

  Object.assign(fns, {
    pthread_equal: (a, b) => (a === b ? 1 : 0),
    emscripten_notify_memory_growth: () => {},
    proxy_log(level, ptr, len) {
      if (level > 6) return BAD_ARGUMENT;
      o.onLog(level, vm.readString(ptr, len));
      return OK;
    },
    proxy_get_log_level(ptr) {
      vm.setU32(ptr, 0);
      return OK;
    },
    proxy_get_current_time_nanoseconds(ptr) {
      vm.setU64(ptr, BigInt(Math.round((performance.timeOrigin + performance.now() + vm.clockAheadMs) * 1e6)));
      return OK;
    },
    proxy_set_tick_period_milliseconds(ms) {
      vm.tickPeriodMs = ms >>> 0;
      o.onTickPeriod?.(vm.tickPeriodMs);
      return OK;
    },
    proxy_set_effective_context(id) {
      if (id !== vm.rootID && !vm.streams.has(id)) return BAD_ARGUMENT;
      vm.effective = id;
      return OK;
    },
    proxy_get_property(pathPtr, pathLen, ptrPtr, sizePtr) {
      const path = vm.readString(pathPtr, pathLen).split("\0").filter((p) => p !== "").join(".");
      const value = vm.stream()?.properties?.[path] ?? o.properties?.[path];
      if (value === undefined) return NOT_FOUND;
      return vm.copyOut(Buffer.from(value), ptrPtr, sizePtr) ? OK : INVALID_MEMORY_ACCESS;
    },
    // Envoy keeps a property the guest sets in the effective stream's
    // filter state, as "wasm." + the path (context.cc, Context::setProperty);
    // the root context has no stream, so there it answers NotFound.
    proxy_set_property(pathPtr, pathLen, valuePtr, valueLen) {
      const s = vm.stream();
      if (!s) return NOT_FOUND;
      (s.filterState ??= {})["wasm." + vm.readString(pathPtr, pathLen)] = vm.read(valuePtr, valueLen);
      return OK;
    },
    proxy_get_buffer_status(type, lenPtr, flagsPtr) {
      const b = buffer(type);
      if (!b) return NOT_FOUND;
      vm.setU32(lenPtr, b.length);
      vm.setU32(flagsPtr, 0);
      return OK;
    },
    proxy_get_buffer_bytes(type, start, length, ptrPtr, sizePtr) {
      const b = buffer(type);
      if (!b) return NOT_FOUND;
      start >>>= 0;
      length >>>= 0;
      if (start > b.length) return BAD_ARGUMENT;
      const out = b.subarray(start, Math.min(b.length, start + length));
      if (out.length === 0) return OK;
      return vm.copyOut(out, ptrPtr, sizePtr) ? OK : INVALID_MEMORY_ACCESS;
    },
    proxy_register_shared_queue(namePtr, nameLen, tokenPtr) {
      const name = vm.readString(namePtr, nameLen);
      const root = vm.streams.has(vm.ctx()) ? vm.rootID : vm.ctx();
      let q = queues.get(name);
      if (!q) {
        q = { token: queues.size + 1, root, items: [] };
        queues.set(name, q);
        byToken.set(q.token, q);
      }
      q.root = root;
      vm.setU32(tokenPtr, q.token);
      return OK;
    },
    proxy_resolve_shared_queue(_vPtr, _vLen, namePtr, nameLen, tokenPtr) {
      const q = queues.get(vm.readString(namePtr, nameLen));
      if (!q) return NOT_FOUND;
      vm.setU32(tokenPtr, q.token);
      return OK;
    },
    proxy_enqueue_shared_queue(token, dataPtr, dataLen) {
      const q = byToken.get(token >>> 0);
      if (!q) return NOT_FOUND;
      q.items.push(vm.read(dataPtr, dataLen));
      if (!o.post) throw vm.fail("proxy_enqueue_shared_queue: this driver posts no proxy_on_queue_ready");
      o.post(() => vm.call("proxy_on_queue_ready", q.root, q.root, q.token));
      return OK;
    },
    proxy_dequeue_shared_queue(token, ptrPtr, sizePtr) {
      const q = byToken.get(token >>> 0);
      if (!q) return NOT_FOUND;
      if (q.items.length === 0) return EMPTY;
      return vm.copyOut(q.items.shift(), ptrPtr, sizePtr) ? OK : INVALID_MEMORY_ACCESS;
    },
    proxy_get_header_map_pairs(type, ptrPtr, sizePtr) {
      const m = headerMap(type);
      if (!m) return NOT_FOUND;
      return copyPairs(m, ptrPtr, sizePtr);
    },
    proxy_get_header_map_size(type, ptr) {
      const m = headerMap(type);
      if (!m) return NOT_FOUND;
      vm.setU32(ptr, wireOf(m).length);
      return OK;
    },
    proxy_get_header_map_value(type, kPtr, kLen, ptrPtr, sizePtr) {
      const m = headerMap(type);
      if (!m) return NOT_FOUND;
      const key = lower(kPtr, kLen);
      const hit = m.find(([k]) => k === key);
      if (!hit) return NOT_FOUND;
      return vm.copyOut(Buffer.from(hit[1]), ptrPtr, sizePtr) ? OK : INVALID_MEMORY_ACCESS;
    },
    proxy_add_header_map_value(type, kPtr, kLen, vPtr, vLen) {
      const m = headerMap(type);
      if (!m) return BAD_ARGUMENT;
      m.push([lower(kPtr, kLen), vm.readString(vPtr, vLen)]);
      return OK;
    },
    proxy_replace_header_map_value(type, kPtr, kLen, vPtr, vLen) {
      const m = headerMap(type);
      if (!m) return BAD_ARGUMENT;
      const key = lower(kPtr, kLen);
      const rest = m.filter(([k]) => k !== key);
      m.splice(0, m.length, ...rest, [key, vm.readString(vPtr, vLen)]);
      return OK;
    },
    proxy_remove_header_map_value(type, kPtr, kLen) {
      const m = headerMap(type);
      if (!m) return BAD_ARGUMENT;
      const key = lower(kPtr, kLen);
      m.splice(0, m.length, ...m.filter(([k]) => k !== key));
      return OK;
    },
    proxy_continue_stream(type) {
      const s = vm.stream();
      // Envoy answers Ok on the root context and nothing resumes.
      if (!s) throw vm.fail(`proxy_continue_stream(${type}) on context ${vm.ctx()}, not a stream: the request would stay paused`);
      if (type === 0) s.continued = true;
      return OK;
    },
    proxy_send_local_response(status, _dPtr, _dLen, bodyPtr, bodyLen, hPtr, hLen) {
      const s = vm.stream();
      if (!s) throw vm.fail(`proxy_send_local_response on context ${vm.ctx()}, not a stream`);
      if (!s.local) s.local = { status, headers: decodePairs(vm.read(hPtr, hLen)), body: vm.readString(bodyPtr, bodyLen) };
      return OK;
    },
    proxy_define_metric(type, namePtr, nameLen, idPtr) {
      if (type > 2) return BAD_ARGUMENT;
      const name = vm.readString(namePtr, nameLen);
      let id = [...vm.metrics].find(([, m]) => m.name === name && m.type === type)?.[0];
      if (id === undefined) {
        id = vm.metrics.size + 1;
        vm.metrics.set(id, { name, type, value: 0, count: 0 });
      }
      vm.setU32(idPtr, id);
      return OK;
    },
    proxy_increment_metric(id, offset) {
      const m = vm.metrics.get(id);
      if (!m || m.type === 2 || (m.type === 0 && offset < 0n)) return BAD_ARGUMENT;
      m.value += Number(offset);
      return OK;
    },
    proxy_record_metric(id, value) {
      const m = vm.metrics.get(id);
      if (!m) return NOT_FOUND;
      if (m.type === 2) m.count++;
      else if (m.type === 1 || Number(value) > m.value) m.value = Number(value);
      return OK;
    },
    proxy_get_metric(id, ptr) {
      const m = vm.metrics.get(id);
      if (!m || m.type === 2) return BAD_ARGUMENT;
      vm.setU64(ptr, m.value);
      return OK;
    },

    // Envoy's HTTP callout: made for the root context, answered with
    // proxy_on_http_call_response(root, token, headers, body size, 0).
    proxy_http_call(upPtr, upLen, hPtr, hLen, bPtr, bLen, _tPtr, _tLen, timeoutMs, tokenPtr) {
      const addr = o.httpClusters?.[vm.readString(upPtr, upLen)];
      const headers = decodePairs(vm.read(hPtr, hLen));
      if (!addr || ![":method", ":path", ":authority"].every((k) => headers.some(([n]) => n === k))) return BAD_ARGUMENT;
      const id = ++token;
      vm.setU32(tokenPtr, id);
      o.calloutStarted();
      (o.httpCall ?? httpCallout)(addr, headers, vm.read(bPtr, bLen), timeoutMs >>> 0, (res) => {
        vm.callResponse = res;
        if (res) vm.buffers.set(4, res.body);
        o.calloutDone("proxy_on_http_call_response", vm.rootID, id, res ? res.headers.length : 0, res ? res.body.length : 0, 0);
        vm.callResponse = null;
        vm.buffers.delete(4);
      });
      return OK;
    },

    // Higress's Redis callout: the query as RESP, the reply as raw RESP
    // in buffer 9, status 0, or status 1 and no bytes on a failure.
    proxy_redis_init(cPtr, cLen, uPtr, uLen, pPtr, pLen, timeoutMs) {
      const [name, query = ""] = vm.readString(cPtr, cLen).split("?");
      const cluster = o.redisClusters?.[name];
      if (!cluster) return BAD_ARGUMENT;
      const db = Number(new URLSearchParams(query).get("db") || 0);
      cluster.init(vm.readString(uPtr, uLen), vm.readString(pPtr, pLen), db, timeoutMs >>> 0);
      return OK;
    },
    proxy_redis_call(cPtr, cLen, qPtr, qLen, tokenPtr) {
      const cluster = o.redisClusters?.[vm.readString(cPtr, cLen).split("?")[0]];
      if (!cluster || qLen === 0) return BAD_ARGUMENT;
      const id = ++token;
      vm.setU32(tokenPtr, id);
      o.calloutStarted();
      cluster.call(vm.read(qPtr, qLen), (err, reply) => {
        if (err) o.onHostLog(`redis call ${id} failed: ${err.message}`);
        if (reply) vm.buffers.set(9, reply);
        o.calloutDone("proxy_on_redis_call_response", vm.rootID, id, err ? REDIS_STATUS_FAILED : 0, reply ? reply.length : 0);
        vm.buffers.delete(9);
      });
      return OK;
    },
  });
  return fns;
}

// encodePairs serializes header pairs the proxy-wasm way: a u32 count,
// a (key size, value size) u32 pair per entry, then each key and value
// followed by a NUL byte, all little-endian.
// wireOf is encodePairs(pairs), kept while the pairs hold the same strings:
// Envoy keeps a header map as bytes and only copies them out, so a host
// that encoded JS strings on every read would charge the guest for it.
const wires = new WeakMap(); // pairs -> { keys, values, bytes }
export function wireOf(pairs) {
  const w = wires.get(pairs);
  if (w && w.keys.length === pairs.length && pairs.every(([k, v], i) => k === w.keys[i] && v === w.values[i])) return w.bytes;
  const bytes = encodePairs(pairs);
  wires.set(pairs, { keys: pairs.map(([k]) => k), values: pairs.map(([, v]) => v), bytes });
  return bytes;
}

export function encodePairs(pairs) {
  let size = 4 + 8 * pairs.length;
  for (const [k, v] of pairs) size += Buffer.byteLength(k) + Buffer.byteLength(v) + 2;
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32LE(pairs.length, 0);
  let off = 4 + 8 * pairs.length;
  pairs.forEach(([k, v], i) => {
    const kl = out.write(k, off);
    out[off + kl] = 0;
    off += kl + 1;
    const vl = out.write(v, off);
    out[off + vl] = 0;
    off += vl + 1;
    out.writeUInt32LE(kl, 4 + 8 * i);
    out.writeUInt32LE(vl, 8 + 8 * i);
  });
  return out;
}

export function decodePairs(b) {
  if (b.length === 0) return [];
  const n = b.readUInt32LE(0);
  let off = 4 + 8 * n;
  const out = [];
  for (let i = 0; i < n; i++) {
    const kl = b.readUInt32LE(4 + 8 * i), vl = b.readUInt32LE(8 + 8 * i);
    const k = b.toString("utf8", off, off + kl);
    off += kl + 1;
    const v = b.toString("utf8", off, off + vl);
    off += vl + 1;
    out.push([k, v]);
  }
  return out;
}
