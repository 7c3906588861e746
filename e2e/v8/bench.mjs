// bench.mjs measures proxy-wasm modules in V8 as Envoy runs them (see
// vm.mjs), side by side in one process: CPU per request, host calls per
// request, linear memory and start-up per VM.
//
//   node --no-liftoff --wasm-max-mem-pages=16384 --stack-trace-limit=20 bench.mjs SPEC.json
//
// SPEC: { modules: [{ name, wasm, redis_abi, redis_clusters, http_clusters,
//   configs: { <scenario>: plugin config } }], headers: [[name, value]],
//   requests: per turn, rounds, warmup, memory_requests, startup_vms,
//   startup_only: a module's name, to time only its start-up }
//
// Each module gets one VM per scenario. The scenario's Redis (or Webdis)
// reply is first recorded from the real server: the first reply for
// "admitted", the first denial for the others. Then every call is answered
// at once with that reply, so the figures are the module's and the host's
// work, not the network's. In each round, for each scenario, the modules
// take turns of `requests` requests; the medians are reported. A module
// without configs (the no-op) runs its one VM in every scenario; one
// without a config for a scenario skips it.
//
// Start-up is timed in a process of its own (startup_only): V8 caches a
// module's compiled code for the life of the process.
//
// stdout: one JSON object, the results; exit status 1 on any failure.

import { readFileSync } from "node:fs";
import { VM } from "./vm.mjs";
import { RedisCluster, httpCallout, closeCallouts } from "./callouts.mjs";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const SCENARIOS = ["admitted", "denied", "cached"];
const say = (line) => process.stderr.write(line + "\n");

// Transport answers the module's calls: from the real servers while
// recording, then from the recorded reply, queued until the request's
// callback returns (as a real proxy answers in a later event).
class Transport {
  constructor(m) {
    this.real = Object.fromEntries(Object.entries(m.redis_clusters ?? {}).map(([n, a]) => [n, new RedisCluster(a)]));
    this.recording = true;
    this.last = null; // the last reply: { redis: Buffer } or { http: response }
    this.queue = [];
    this.inFlight = 0;
    this.settled = null; // resolves when a recorded call completes
    this.calls = 0;
    const self = this;
    this.redisClusters = Object.fromEntries(Object.keys(this.real).map((name) => [name, {
      init: (...a) => self.real[name].init(...a),
      call(query, done) {
        self.calls++;
        if (!self.recording) return self.queue.push(() => done(null, self.last.redis));
        self.inFlight++;
        self.real[name].call(query, (err, reply) => {
          self.inFlight--;
          if (reply) self.last = { redis: reply };
          done(err, reply);
          self.settled?.();
        });
      },
    }]));
    this.httpCall = (addr, headers, body, timeoutMs, done) => {
      self.calls++;
      if (!self.recording) return self.queue.push(() => done(self.last.http));
      self.inFlight++;
      httpCallout(addr, headers, body, timeoutMs, (res) => {
        self.inFlight--;
        if (res) self.last = { http: res };
        done(res);
        self.settled?.();
      });
    };
  }

  close() {
    for (const c of Object.values(this.real)) c.close();
  }
}

function newVM(module, m, transport, timing = false) {
  return new VM(module, {
    env: Object.entries(m.env ?? {}), redisABI: !!m.redis_abi, httpClusters: m.http_clusters, redisClusters: transport.redisClusters,
    httpCall: transport.httpCall, timing,
    onLog: (level, msg) => level >= 3 && say(`${m.name}: wasm log ${level}: ${msg}`),
    onOutput: (fd, line) => say(`${m.name}: wasm fd${fd}: ${line}`),
    onHostLog: (msg) => say(`${m.name}: ${msg}`),
    onTickPeriod: () => {}, // no ticks: calls never go overdue here
    calloutStarted: () => {},
    calloutDone: (name, ...args) => vm_call(transport.vm, name, ...args),
  });
}

const vm_call = (vm, name, ...args) => vm.call(name, vm.rootID, ...args);

// request runs one stream through vm: request headers, any calls answered
// from the queue, then the response headers unless it was answered
// locally. It returns the status.
function request(vm, transport, headers) {
  const id = vm.nextID++;
  const s = { id, continued: false, local: null, response: null, request: headers, properties: { "source.address": "10.0.0.1:40000" } };
  vm.streams.set(id, s);
  vm.call("proxy_on_context_create", id, id, vm.rootID);
  const action = vm.call("proxy_on_request_headers", id, id, headers.length, 1);
  while (transport.queue.length) transport.queue.shift()();
  let status = 200;
  if (s.local) {
    status = s.local.status;
  } else {
    if (action !== 0 && !s.continued) throw vm.fail(`stream ${id} left paused`);
    s.response = [[":status", "200"], ["content-type", "text/plain"]];
    vm.call("proxy_on_response_headers", id, id, s.response.length, 1);
  }
  vm.call("proxy_on_log", id, id);
  vm.call("proxy_on_done", id, id);
  vm.call("proxy_on_delete", id, id);
  vm.streams.delete(id);
  return status;
}

// record sends requests through the real server until one gets the
// scenario's outcome, so that its reply is the one replayed.
async function record(vm, transport, scenario) {
  for (let i = 0; i < 10; i++) {
    transport.last = null;
    const id = vm.nextID++;
    const s = { id, continued: false, local: null, response: null, request: spec.headers, properties: { "source.address": "10.0.0.1:40000" } };
    vm.streams.set(id, s);
    vm.call("proxy_on_context_create", id, id, vm.rootID);
    vm.call("proxy_on_request_headers", id, id, spec.headers.length, 1);
    // A -NOSCRIPT reply is followed by the EVAL: wait for the last call.
    while (transport.inFlight > 0) await new Promise((resolve) => (transport.settled = resolve));
    if (!s.local) {
      s.response = [[":status", "200"]];
      vm.call("proxy_on_response_headers", id, id, 1, 1);
    }
    for (const cb of ["proxy_on_log", "proxy_on_done", "proxy_on_delete"]) vm.call(cb, id, id);
    vm.streams.delete(id);
    const admitted = !s.local;
    if (transport.last && (scenario === "admitted") === admitted) return;
  }
  throw new Error(`${scenario}: no recorded reply gave the scenario's outcome`);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : 0;
}

// startup times fresh VMs: the first of a newly compiled module, then
// more of the same compiled module (Envoy's worker VMs share its code).
function startup(m, config) {
  const bytes = readFileSync(m.wasm);
  const t0 = performance.now();
  const module = new WebAssembly.Module(bytes);
  const compileMs = performance.now() - t0;
  const vms = [];
  for (let i = 0; i < spec.startup_vms; i++) {
    const transport = new Transport(m);
    const t1 = performance.now();
    const vm = newVM(module, m, transport);
    transport.vm = vm;
    const t2 = performance.now();
    const ok = vm.start(config ?? "");
    const t3 = performance.now();
    if (!ok) throw new Error(`${m.name}: plugin start failed`);
    vms.push({ instantiate_ms: t2 - t1, start_ms: t3 - t2, ...vm.startMs });
    transport.close();
  }
  return { compile_ms: compileMs, vms };
}

async function main() {
  if (spec.startup_only) {
    // A fresh process: V8 caches compiled code per isolate.
    const m = spec.modules.find((x) => x.name === spec.startup_only);
    process.stdout.write(JSON.stringify({ startup: startup(m, m.configs?.admitted) }) + "\n");
    return;
  }
  const results = { v8: process.versions.v8, node: process.versions.node, flags: process.execArgv, modules: {} };
  const runs = []; // { m, scenario, vm, transport }
  for (const m of spec.modules) {
    const module = new WebAssembly.Module(readFileSync(m.wasm));
    const r = (results.modules[m.name] = { scenarios: {}, memory: {}, startup: null });
    for (const scenario of SCENARIOS) {
      const config = m.configs?.[scenario];
      if (config === undefined && scenario !== "admitted") {
        if (!m.configs) runs.push({ m, scenario, shared: runs.find((x) => x.m === m) });
        continue;
      }
      const transport = new Transport(m);
      const vm = newVM(module, m, transport);
      transport.vm = vm;
      if (!vm.start(config ?? "")) throw new Error(`${m.name} ${scenario}: plugin start failed`);
      if (scenario === "admitted") r.memory.after_start = vm.memory.buffer.byteLength;
      if (config !== undefined) await record(vm, transport, scenario);
      transport.recording = false;
      for (let i = 0; i < spec.warmup; i++) request(vm, transport, spec.headers);
      if (scenario === "admitted") r.memory.after_warmup = vm.memory.buffer.byteLength;
      runs.push({ m, scenario, vm, transport, served: spec.warmup });
    }
  }

  // Rounds: the modules take turns within each scenario.
  const samples = new Map(); // run -> [{cpu_us, host, guest, statuses}]
  for (let round = 0; round < spec.rounds; round++) {
    for (const scenario of SCENARIOS) {
      for (const run of runs.filter((x) => x.scenario === scenario)) {
        const { vm, transport } = run.shared ?? run;
        const statuses = {};
        const [h0, g0, c0] = [vm.hostCalls, vm.guestCalls, transport.calls];
        const cpu0 = process.cpuUsage();
        const wall0 = performance.now();
        for (let i = 0; i < spec.requests; i++) {
          const st = request(vm, transport, spec.headers);
          statuses[st] = (statuses[st] ?? 0) + 1;
        }
        const wallMs = performance.now() - wall0;
        const cpu = process.cpuUsage(cpu0);
        (run.shared ?? run).served += spec.requests;
        const n = spec.requests;
        if (!samples.has(run)) samples.set(run, []);
        samples.get(run).push({
          cpu_us: (cpu.user + cpu.system) / n, wall_us: (wallMs * 1000) / n, host_calls: (vm.hostCalls - h0) / n,
          guest_calls: (vm.guestCalls - g0) / n, redis_calls: (transport.calls - c0) / n, statuses,
        });
      }
    }
  }
  for (const [run, s] of samples) {
    const statuses = {};
    for (const x of s) for (const [k, v] of Object.entries(x.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
    results.modules[run.m.name].scenarios[run.scenario] = {
      cpu_us: median(s.map((x) => x.cpu_us)), cpu_us_rounds: s.map((x) => x.cpu_us),
      wall_us: median(s.map((x) => x.wall_us)),
      host_calls: median(s.map((x) => x.host_calls)), guest_calls: median(s.map((x) => x.guest_calls)),
      redis_calls: median(s.map((x) => x.redis_calls)), statuses,
    };
  }

  // The guest's own part: a timed VM per module, admitted requests.
  for (const run of runs.filter((x) => x.scenario === "admitted")) {
    const { m } = run;
    const transport = new Transport(m);
    const vm = newVM(new WebAssembly.Module(readFileSync(m.wasm)), m, transport, true);
    transport.vm = vm;
    vm.start(m.configs?.admitted ?? "");
    if (m.configs?.admitted !== undefined) await record(vm, transport, "admitted");
    transport.recording = false;
    for (let i = 0; i < spec.warmup; i++) request(vm, transport, spec.headers);
    vm.guestMs = vm.hostMs = 0;
    for (let i = 0; i < spec.requests; i++) request(vm, transport, spec.headers);
    const n = spec.requests;
    Object.assign(results.modules[m.name].scenarios.admitted, {
      guest_us: ((vm.guestMs - vm.hostMs) * 1000) / n, in_host_us: (vm.hostMs * 1000) / n,
    });
    transport.close();
  }

  // Memory: the admitted VM serves up to memory_requests in all.
  for (const run of runs.filter((x) => x.scenario === "admitted")) {
    const t = performance.now();
    for (; run.served < spec.memory_requests; run.served++) request(run.vm, run.transport, spec.headers);
    const mem = results.modules[run.m.name].memory;
    mem.requests = run.served;
    mem.after_requests = run.vm.memory.buffer.byteLength;
    mem.wall_ms = performance.now() - t;
    mem.metrics = Object.fromEntries([...run.vm.metrics.values()].map((x) => [x.name, x.type === 2 ? x.count : x.value]));
    for (const f of run.vm.failures) throw new Error(`${run.m.name}: ${f}`);
  }

  for (const run of runs) run.transport?.close();
  closeCallouts();
  process.stdout.write(JSON.stringify(results) + "\n");
}

main().then(() => process.exit(0), (err) => {
  say(`bench: FAIL: ${err.stack || err}`);
  process.exit(1);
});
