// host.mjs runs a proxy-wasm module in Node's V8 the way Envoy runs it
// (see vm.mjs), and drives HTTP streams through it, with the module's
// Redis calls carried to a real Redis or a real Webdis.
//
//   node --no-liftoff --wasm-max-mem-pages=16384 --stack-trace-limit=20 host.mjs SPEC.json
//
// SPEC: { wasm: path, plugin_config: string, redis_abi: bool (offer
// Higress's Redis callout), redis_clusters: {name: "host:port"},
// http_clusters: {name: "host:port"}, env: {NAME: value},
// properties: {"a.b": value}, concurrency: n,
// requests: [{headers: [[name, value]], source_address: "ip:port",
//   body: string, response: {headers: [[name, value]], chunks: [string]}}] }
//
// A request with a body has it in one proxy_on_request_body call, with
// end_of_stream, after its headers. An admitted request gets a response: by default a 200 of headers only;
// with response, its headers and then each chunk of its body in
// proxy_on_response_body, the last with end_of_stream. The run ends once
// every callout has been answered (settles of response costs included).
//
// stdout: one JSON object per line: {event: "start"}, one {event:
// "response"} per request (with decision: the filter state
// wasm.ratelimit.decision the module set, or null), then {event: "end"}. stderr: the module's logs
// and output. Exit status 1 on any trap, missing import, restricted call,
// host error, failed plugin start or stream left paused.

import { readFileSync } from "node:fs";
import { VM } from "./vm.mjs";
import { RedisCluster, closeCallouts } from "./callouts.mjs";

const LEVELS = ["trace", "debug", "info", "warn", "error", "critical"];
const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const say = (line) => process.stderr.write(line + "\n");

let vm = null;
let pendingCallouts = 0;
let ticker = null;
let gcCycles = 0;
const paused = new Set();
const redisClusters = Object.fromEntries(
  Object.entries(spec.redis_clusters ?? {}).map(([name, addr]) => [name, new RedisCluster(addr)]));

function finish(code, why) {
  if (why) say(`v8host: FAIL: ${why}`);
  if (vm) {
    vm.flushOutput();
    for (const f of vm.failures) say(`v8host: FAIL: ${f}`);
    if (vm.failures.length) code = 1;
  }
  clearInterval(ticker);
  for (const c of Object.values(redisClusters)) c.close();
  closeCallouts();
  process.exit(code);
}

process.on("uncaughtException", (err) => finish(1, `uncaught: ${err.stack || err}`));

const hooks = {
  onLog: (level, msg) => say(`wasm log ${LEVELS[level] ?? level}: ${msg}`),
  onOutput(fd, line) {
    if (fd === 2 && /^gc \d+ @/.test(line)) gcCycles++;
    say(`wasm fd${fd}: ${line}`);
  },
  onHostLog: (msg) => say(`v8host: ${msg}`),
  onTickPeriod(ms) {
    clearInterval(ticker);
    if (ms > 0) ticker = setInterval(() => guarded(() => vm.call("proxy_on_tick", vm.rootID, vm.rootID)), ms);
  },
  post(task) {
    pendingCallouts++;
    setImmediate(() => {
      pendingCallouts--;
      guarded(task);
    });
  },
  calloutStarted: () => pendingCallouts++,
  calloutDone(name, ...args) {
    pendingCallouts--;
    guarded(() => vm.call(name, vm.rootID, ...args));
  },
};

// guarded runs a VM call from a timer or an I/O callback; a trap ends the
// run, as a crashed VM serves nothing more.
function guarded(f) {
  try {
    f();
  } catch (err) {
    finish(1, err.recorded ? "" : `${err.stack || err}`);
  }
  settle();
}

// settle releases streams that were resumed or answered, and fails on a
// stream that nothing can resume any more.
function settle() {
  for (const s of paused) {
    if (s.local || s.continued) {
      paused.delete(s);
      s.release();
    } else if (pendingCallouts === 0) {
      finish(1, `stream ${s.id} left paused with no callout outstanding`);
    }
  }
}

async function request(r) {
  const id = vm.nextID++;
  const s = {
    id, continued: false, local: null, response: null,
    request: r.headers.map(([k, v]) => [k.toLowerCase(), v]),
    properties: { "source.address": r.source_address ?? "127.0.0.1:40000" },
  };
  vm.streams.set(id, s);
  vm.call("proxy_on_context_create", id, id, vm.rootID);
  let action = vm.call("proxy_on_request_headers", id, id, s.request.length, r.body === undefined ? 1 : 0);
  if (r.body !== undefined && !s.local) {
    s.requestBody = Buffer.from(r.body);
    action = vm.call("proxy_on_request_body", id, id, s.requestBody.length, 1);
  }
  if (action !== 0 && !s.local && !s.continued) {
    await new Promise((release) => {
      s.release = release;
      paused.add(s);
      settle();
    });
  }
  let result;
  if (s.local) {
    result = { status: s.local.status, local: true, headers: s.local.headers, body: s.local.body };
  } else {
    const chunks = (r.response?.chunks ?? []).map((c) => Buffer.from(c));
    s.response = r.response?.headers?.map(([k, v]) => [k.toLowerCase(), v]) ?? [[":status", "200"], ["content-type", "text/plain"]];
    const a = vm.call("proxy_on_response_headers", id, id, s.response.length, chunks.length ? 0 : 1);
    if (a !== 0) throw vm.fail(`proxy_on_response_headers returned ${a}, not Continue`);
    chunks.forEach((c, i) => {
      s.responseBody = c;
      const b = vm.call("proxy_on_response_body", id, id, c.length, i === chunks.length - 1 ? 1 : 0);
      if (b !== 0) throw vm.fail(`proxy_on_response_body returned ${b}, not Continue`);
    });
    s.responseBody = null;
    const status = Number(s.response.find(([k]) => k === ":status")?.[1] ?? 200);
    result = { status, local: false, headers: s.response };
  }
  result.memory_bytes = vm.memory.buffer.byteLength;
  result.decision = s.filterState?.["wasm.ratelimit.decision"]?.toString() ?? null;
  vm.call("proxy_on_log", id, id);
  vm.call("proxy_on_done", id, id);
  vm.call("proxy_on_delete", id, id);
  vm.streams.delete(id);
  return result;
}

// isLiftoff tells whether V8 compiled f with Liftoff; null without
// --allow-natives-syntax.
function isLiftoff(f) {
  try {
    return new Function("f", "return %IsLiftoffFunction(f)")(f);
  } catch {
    return null;
  }
}

async function main() {
  const t0 = performance.now();
  const module = new WebAssembly.Module(readFileSync(spec.wasm));
  const t1 = performance.now();
  vm = new VM(module, {
    env: Object.entries(spec.env ?? {}), redisABI: !!spec.redis_abi, properties: spec.properties,
    httpClusters: spec.http_clusters, redisClusters, ...hooks,
  });
  const ok = vm.start(spec.plugin_config ?? "");
  const t2 = performance.now();
  emit({ event: "start", ok, v8: process.versions.v8, abi: vm.abi, compile_ms: t1 - t0, start_ms: t2 - t1 });
  if (!ok) finish(1, "plugin start failed (proxy_on_configure returned false)");

  const requests = spec.requests ?? [];
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const index = next++;
      emit({ event: "response", index, ...(await request(requests[index])) });
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency ?? 1 }, worker));
  const t3 = performance.now();
  // Settles outlive their streams: wait for their replies.
  while (pendingCallouts > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  vm.flushOutput();
  vm.flushMetrics();
  emit({
    event: "end", requests: requests.length, requests_ms: t3 - t2, gc_cycles: gcCycles,
    poll_oneoff_calls: vm.pollOneoffCalls, memory_bytes: vm.memory.buffer.byteLength,
    liftoff: isLiftoff(vm.exports.proxy_on_request_headers),
    metrics: Object.fromEntries([...vm.metrics.values()].map((m) => [m.name, m.type === 2 ? m.count : m.value])),
  });
  finish(0);
}

main().catch((err) => finish(1, err.recorded ? "" : `${err.stack || err}`));
