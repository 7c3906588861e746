// bench.mjs measures proxy-wasm modules in V8 as Envoy runs them (see
// vm.mjs), side by side in one process: CPU per request, host calls per
// request, linear memory (per scenario's VM after its rounds, and the
// admitted VM's after start, warm-up and memory_requests) and start-up per VM.
//
//   node --no-liftoff --wasm-max-mem-pages=16384 --stack-trace-limit=20 bench.mjs SPEC.json
//
// SPEC: { modules: [{ name, wasm, redis_abi, higress_wasi, redis_clusters, http_clusters,
//   configs: { <scenario>: plugin config, llm_plain: plugin config } }],
//   headers: [[name, value]], requests: per module, scenario and round,
//   rounds, slice: requests per turn (all of them if unset), headline:
//   [scenario], headline_rounds: those scenarios' rounds, warmup,
//   memory_requests, startup_vms,
//   streams: { <scenario>: { events, chunk, prompt_tokens, completion_tokens } },
//   scan: { bytes, chunks: [size], requests, rounds, warmup, prompt_tokens,
//     completion_tokens },
//   bodies: { <scenario>: { headers: [[name, value]], body } },
//   startup_only: a module's name, to time only its start-up,
//   scenarios: [scenario], to run only those (and admitted) }
//
// Each module gets one VM per scenario. The scenario's Redis (or Webdis)
// replies are first recorded from the real server: the first reply for
// "admitted", the first denial for "denied" and "cached", and for a
// scenario with a stream, the decision that admits it and the settle that
// follows its response (when its cost differs from the reservation). Then
// every call is answered at once with the recorded reply of its phase
// (decision or settle), so the figures are the module's and the host's
// work, not the network's. In each round, for each scenario, the modules
// take turns of `slice` requests until each has served `requests`; the
// medians over rounds are reported, and each round's figure
// (cpu_us_rounds), so that two builds compare round by round. A module
// without configs (the no-op) runs its one VM in every scenario; one
// without a config for a scenario skips it.
//
// A scenario with a request body (bodies.<scenario>) sends its own
// headers without end_of_stream, then, unless they were answered locally,
// the body in one proxy_on_request_body call with end_of_stream (Envoy
// delivers it to a filter whose headers went on, or once they resume),
// then answers its calls.
//
// A scenario with a stream (streams.<scenario>) answers each admitted
// request with a text/event-stream response: OpenAI chat completion chunk
// events, then the usage event and [DONE], in proxy_on_response_body calls
// of `chunk` bytes, the last with end_of_stream.
//
// scan measures what reading such a stream costs per MiB of body: each
// module's "llm" config (a response_cost rule: the filter reads every
// chunk) against its "llm_plain" config (the same rule without
// response_cost: the stream is released at the response headers, and a
// chunk costs the callback only), for each chunk size, with requests of
// `bytes` of stream whose usage equals the reservation (no settle). CPU is
// the process's over the body callbacks only; guest µs, from a timed VM,
// is the guest's own part of it.
//
// Start-up is timed in a process of its own (startup_only): V8 caches a
// module's compiled code for the life of the process.
//
// stdout: one JSON object, the results; exit status 1 on any failure.

import { readFileSync } from "node:fs";
import { VM } from "./vm.mjs";
import { closeCallouts } from "./callouts.mjs";
import { Transport } from "./transport.mjs";
import { streamResponse } from "./sse.mjs";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const ALL_SCENARIOS = ["admitted", "denied", "cached", "tiered", "leased", "held", "llm", "llm_exact", "llm_priced", "body_key", "jsonrpc_batch"];
// spec.scenarios, when set, runs those alone ("admitted" always runs: it
// starts each module's VMs).
const SCENARIOS = spec.scenarios ? ALL_SCENARIOS.filter((x) => x === "admitted" || spec.scenarios.includes(x)) : ALL_SCENARIOS;
// Scenarios whose requests are admitted with no response to follow.
const ADMITTED = new Set(["admitted", "tiered", "leased", "held", "body_key", "jsonrpc_batch"]);
// A request a throttle holds (the module set its tick fast) is let through
// at a tick with the guest's clock moved this far forward: beyond the
// held scenario's max_delay, so that its time has come.
const HOLD_ADVANCE_MS = 101;
const STREAMS = spec.streams ?? {};
const say = (line) => process.stderr.write(line + "\n");
// requestOf is a scenario's request: { headers, body (a Buffer, or none) }.
const BODIES = Object.fromEntries(Object.entries(spec.bodies ?? {}).map(([sc, r]) => [sc, { headers: r.headers, body: Buffer.from(r.body) }]));
const requestOf = (scenario) => BODIES[scenario] ?? { headers: spec.headers };

function newVM(module, m, transport, timing = false) {
  return new VM(module, {
    env: Object.entries(m.env ?? {}), redisABI: !!m.redis_abi, higressWASI: !!m.higress_wasi, httpClusters: m.http_clusters, redisClusters: transport.redisClusters,
    httpCall: transport.httpCall, timing,
    onLog: (level, msg) => level >= 3 && say(`${m.name}: wasm log ${level}: ${msg}`),
    onOutput: (fd, line) => say(`${m.name}: wasm fd${fd}: ${line}`),
    onHostLog: (msg) => say(`${m.name}: ${msg}`),
    onTickPeriod: () => {}, // no ticks: calls never go overdue here
    post: (task) => transport.queue.push(task),
    calloutStarted: () => {},
    calloutDone: (name, ...args) => vm_call(transport.vm, name, ...args),
  });
}

const vm_call = (vm, name, ...args) => vm.call(name, vm.rootID, ...args);

const RESPONSES = Object.fromEntries(Object.entries(STREAMS).map(([sc, def]) => [sc, streamResponse(def, def.chunk)]));

// respond runs an admitted stream's response: headers only, or headers
// and body chunks. meter, if given, adds the body callbacks' CPU (µs),
// guest and in-host time (ms, from a timed VM) and chunks.
function respond(vm, transport, s, response, meter) {
  const id = s.id;
  transport.phase = "settle";
  if (!response) {
    s.response = [[":status", "200"], ["content-type", "text/plain"]];
    vm.call("proxy_on_response_headers", id, id, s.response.length, 1);
    return;
  }
  s.response = response.headers.slice();
  vm.call("proxy_on_response_headers", id, id, s.response.length, 0);
  const n = response.chunks.length;
  const c0 = meter && process.cpuUsage(), g0 = vm.guestMs, h0 = vm.hostMs, k0 = vm.hostCalls;
  for (let i = 0; i < n; i++) {
    s.responseBody = response.chunks[i];
    vm.call("proxy_on_response_body", id, id, s.responseBody.length, i === n - 1 ? 1 : 0);
  }
  s.responseBody = null;
  if (meter) {
    const c = process.cpuUsage(c0);
    meter.cpu_us += c.user + c.system;
    meter.guest_ms += vm.guestMs - g0;
    meter.host_ms += vm.hostMs - h0;
    meter.host_calls += vm.hostCalls - k0;
    meter.chunks += n;
    meter.bytes += response.bytes;
  }
}

function newStream(vm, headers) {
  const id = vm.nextID++;
  const s = { id, continued: false, local: null, response: null, responseBody: null, request: headers, properties: { "source.address": "10.0.0.1:40000" } };
  vm.streams.set(id, s);
  vm.call("proxy_on_context_create", id, id, vm.rootID);
  return s;
}

function endStream(vm, s) {
  for (const cb of ["proxy_on_log", "proxy_on_done", "proxy_on_delete"]) vm.call(cb, s.id, s.id);
  vm.streams.delete(s.id);
}

// sendBody hands a stream its whole request body, with end_of_stream, and
// returns the body callback's action; s.continued then tells whether the
// stream resumed after it.
function sendBody(vm, s, body) {
  s.continued = false;
  s.requestBody = body;
  return vm.call("proxy_on_request_body", s.id, s.id, body.length, 1);
}

// request runs one stream through vm: request headers, any calls answered
// from the queue, its body if it has one and the calls it caused, then the
// response unless it was answered locally, and any calls (settles) it
// caused. It returns the status.
function request(vm, transport, req, response = null, meter = null) {
  const s = newStream(vm, req.headers);
  transport.phase = "decide";
  let action = vm.call("proxy_on_request_headers", s.id, s.id, req.headers.length, req.body ? 0 : 1);
  transport.drain();
  if (req.body && !s.local) {
    if (action !== 0 && !s.continued) throw vm.fail(`stream ${s.id}: headers left paused before the body`);
    action = sendBody(vm, s, req.body);
    transport.drain();
  }
  releaseHeld(vm, s);
  let status = 200;
  if (s.local) {
    status = s.local.status;
  } else {
    if (action !== 0 && !s.continued) throw vm.fail(`stream ${s.id} left paused (tick ${vm.tickPeriodMs} ms)`);
    respond(vm, transport, s, response, meter);
    transport.drain();
  }
  endStream(vm, s);
  return status;
}

// releaseHeld lets a request a throttle holds go on: the module holds it
// paused with its tick fast; the guest's clock moves past its time and a
// tick comes. It reports whether the request was held.
function releaseHeld(vm, s) {
  if (s.local || s.continued || vm.tickPeriodMs === 0 || vm.tickPeriodMs >= 1000) return false;
  vm.clockAheadMs += HOLD_ADVANCE_MS;
  vm.call("proxy_on_tick", vm.rootID, vm.rootID);
  return true;
}

// record sends requests through the real server until one gets the
// scenario's outcome, so that its replies are the ones replayed.
async function record(vm, transport, scenario, response = null) {
  const wait = async () => {
    // A -NOSCRIPT reply is followed by the EVAL: wait for the last call.
    for (;;) {
      transport.drain();
      if (transport.inFlight === 0) return;
      await new Promise((resolve) => (transport.settled = resolve));
    }
  };
  for (let i = 0; i < 30; i++) {
    transport.replies = {};
    const req = requestOf(scenario);
    const s = newStream(vm, req.headers);
    transport.phase = "decide";
    vm.call("proxy_on_request_headers", s.id, s.id, req.headers.length, req.body ? 0 : 1);
    await wait();
    if (req.body && !s.local) {
      sendBody(vm, s, req.body);
      await wait();
    }
    const held = releaseHeld(vm, s);
    if (!s.local) {
      respond(vm, transport, s, response);
      await wait();
    }
    endStream(vm, s);
    const admitted = !s.local;
    if (transport.replies.decide && (ADMITTED.has(scenario) || response !== null) === admitted && held === (scenario === "held")) return;
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
  const results = { v8: process.versions.v8, node: process.versions.node, flags: process.execArgv, modules: {}, streams: {} };
  for (const [sc, r] of Object.entries(RESPONSES)) results.streams[sc] = { bytes: r.bytes, chunks: r.chunks.length, chunk: STREAMS[sc].chunk };
  const runs = []; // { m, scenario, vm, transport }
  const compiled = new Map(); // module name -> WebAssembly.Module
  // ready makes a VM for config, records its replies and warms it up.
  const ready = async (m, scenario, config, response, warmup, timing = false) => {
    const transport = new Transport(m);
    const vm = newVM(compiled.get(m.name), m, transport, timing);
    transport.vm = vm;
    if (!vm.start(config ?? "")) throw new Error(`${m.name} ${scenario}: plugin start failed`);
    const afterStart = vm.memory.buffer.byteLength;
    if (config !== undefined) await record(vm, transport, scenario, response);
    transport.recording = false;
    for (let i = 0; i < warmup; i++) request(vm, transport, requestOf(scenario), response);
    return { vm, transport, afterStart };
  };
  for (const m of spec.modules) {
    compiled.set(m.name, new WebAssembly.Module(readFileSync(m.wasm)));
    const r = (results.modules[m.name] = { scenarios: {}, memory: {}, startup: null, scan: [] });
    for (const scenario of SCENARIOS) {
      const config = m.configs?.[scenario];
      if (scenario.startsWith("llm") && STREAMS[scenario] === undefined) continue;
      if (config === undefined && scenario !== "admitted") {
        if (!m.configs) runs.push({ m, scenario, shared: runs.find((x) => x.m === m) });
        continue;
      }
      const { vm, transport, afterStart } = await ready(m, scenario, config, RESPONSES[scenario] ?? null, spec.warmup);
      if (scenario === "admitted") {
        r.memory.after_start = afterStart;
        r.memory.after_warmup = vm.memory.buffer.byteLength;
      }
      runs.push({ m, scenario, vm, transport, served: spec.warmup });
    }
  }

  // Rounds: within each scenario, the modules take turns in slices of
  // `slice` requests (one turn of `requests` without it), the order
  // reversed every other slice, until each has served `requests`. A change
  // in the machine's load then falls on every module of the round alike,
  // and a round's ratio between two builds compares like with like. The
  // `headline` scenarios run `headline_rounds` rounds in all.
  const samples = new Map(); // run -> [{cpu_us, host, guest, statuses}]
  const slice = Math.min(spec.slice || spec.requests, spec.requests);
  const headline = new Set(spec.headline ?? []);
  for (let round = 0; round < Math.max(spec.rounds, spec.headline_rounds ?? 0); round++) {
    for (const scenario of SCENARIOS) {
      if (round >= spec.rounds && !headline.has(scenario)) continue;
      const response = RESPONSES[scenario] ?? null;
      const turns = runs.filter((x) => x.scenario === scenario).map((run) => {
        const { vm, transport } = run.shared ?? run;
        return { run, vm, transport, cpu_us: 0, wall_ms: 0, statuses: {}, h0: vm.hostCalls, g0: vm.guestCalls, c0: transport.calls,
          imports0: Object.entries(vm.importCalls).map(([k, v]) => [k, v.n]) };
      });
      for (let done = 0, k = 0; done < spec.requests; done += slice, k++) {
        const n = Math.min(slice, spec.requests - done);
        for (const t of k % 2 ? [...turns].reverse() : turns) {
          const cpu0 = process.cpuUsage();
          const wall0 = performance.now();
          for (let i = 0; i < n; i++) {
            const st = request(t.vm, t.transport, requestOf(scenario), response);
            t.statuses[st] = (t.statuses[st] ?? 0) + 1;
          }
          t.wall_ms += performance.now() - wall0;
          const cpu = process.cpuUsage(cpu0);
          t.cpu_us += cpu.user + cpu.system;
        }
      }
      for (const { run, vm, transport, cpu_us, wall_ms, statuses, h0, g0, c0, imports0 } of turns) {
        (run.shared ?? run).served += spec.requests;
        const n = spec.requests;
        if (!samples.has(run)) samples.set(run, []);
        samples.get(run).push({
          cpu_us: cpu_us / n, wall_us: (wall_ms * 1000) / n, host_calls: (vm.hostCalls - h0) / n,
          guest_calls: (vm.guestCalls - g0) / n, redis_calls: (transport.calls - c0) / n, statuses,
          by_import: Object.fromEntries(imports0.map(([k, v]) => [k, (vm.importCalls[k].n - v) / n]).filter(([, v]) => v > 0)),
        });
      }
    }
  }
  const metricsOf = (vm) => (vm.flushMetrics(), Object.fromEntries([...vm.metrics.values()].map((x) => [x.name, x.type === 2 ? x.count : x.value])));
  for (const [run, s] of samples) {
    const statuses = {};
    for (const x of s) for (const [k, v] of Object.entries(x.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
    const own = run.shared ?? run;
    results.modules[run.m.name].scenarios[run.scenario] = {
      cpu_us: median(s.map((x) => x.cpu_us)), cpu_us_rounds: s.map((x) => x.cpu_us),
      wall_us: median(s.map((x) => x.wall_us)),
      host_calls: median(s.map((x) => x.host_calls)), guest_calls: median(s.map((x) => x.guest_calls)),
      redis_calls: median(s.map((x) => x.redis_calls)), statuses, host_calls_by_import: s[s.length - 1].by_import,
      memory: own.vm.memory.buffer.byteLength,
      ...(run.scenario.startsWith("llm") && !run.shared ? { served: own.served, metrics: metricsOf(own.vm) } : {}),
    };
  }

  // The guest's own part: a timed VM per module and scenario, for
  // admitted requests and streams.
  for (const run of runs.filter((x) => (ADMITTED.has(x.scenario) || RESPONSES[x.scenario]) && x.m.configs)) {
    const { m, scenario } = run;
    const response = RESPONSES[scenario] ?? null;
    const { vm, transport } = await ready(m, scenario, m.configs?.[scenario], response, spec.warmup, true);
    vm.guestMs = vm.hostMs = 0;
    for (let i = 0; i < spec.requests; i++) request(vm, transport, requestOf(scenario), response);
    const n = spec.requests;
    Object.assign(results.modules[m.name].scenarios[scenario], {
      guest_us: ((vm.guestMs - vm.hostMs) * 1000) / n, in_host_us: (vm.hostMs * 1000) / n,
    });
    transport.close();
  }
  // The no-op module's one VM: its timed VM serves every scenario.
  for (const run of runs.filter((x) => x.scenario === "admitted" && !x.m.configs)) {
    const { m } = run;
    const { vm, transport } = await ready(m, "admitted", undefined, null, spec.warmup, true);
    for (const scenario of SCENARIOS) {
      const r = results.modules[m.name].scenarios[scenario];
      if (!r || (!ADMITTED.has(scenario) && !RESPONSES[scenario])) continue;
      const response = RESPONSES[scenario] ?? null;
      for (let i = 0; i < spec.warmup; i++) request(vm, transport, requestOf(scenario), response);
      vm.guestMs = vm.hostMs = 0;
      for (let i = 0; i < spec.requests; i++) request(vm, transport, requestOf(scenario), response);
      Object.assign(r, { guest_us: ((vm.guestMs - vm.hostMs) * 1000) / spec.requests, in_host_us: (vm.hostMs * 1000) / spec.requests });
    }
    transport.close();
  }

  if (spec.scan) await scan(results);

  // Memory: the admitted VM serves up to memory_requests in all.
  for (const run of runs.filter((x) => x.scenario === "admitted")) {
    const t = performance.now();
    for (; run.served < spec.memory_requests; run.served++) request(run.vm, run.transport, requestOf("admitted"));
    const mem = results.modules[run.m.name].memory;
    mem.requests = run.served;
    mem.after_requests = run.vm.memory.buffer.byteLength;
    mem.wall_ms = performance.now() - t;
    mem.metrics = metricsOf(run.vm);
  }
  for (const run of runs) for (const f of run.vm?.failures ?? []) throw new Error(`${run.m.name} ${run.scenario}: ${f}`);

  for (const run of runs) run.transport?.close();
  closeCallouts();
  process.stdout.write(JSON.stringify(results) + "\n");

  // scan: per module and chunk size, the stream through the "llm" config
  // (read and scanned) and the "llm_plain" config (callbacks only; the
  // no-op module's one VM too), taking turns in rounds; CPU from untimed
  // VMs, the guest's own part from timed ones.
  async function scan(results) {
    const sc = spec.scan;
    const jobs = [];
    for (const chunk of sc.chunks) {
      const response = streamResponse(sc, chunk);
      for (const m of spec.modules) {
        const kinds = m.configs ? [["scan", "llm"], ["plain", "llm_plain"]] : [["plain", undefined]];
        for (const [kind, name] of kinds) {
          if (m.configs && m.configs[name] === undefined) continue;
          const config = name && m.configs[name];
          const plain = await ready(m, "llm_exact", config, response, sc.warmup);
          const timed = await ready(m, "llm_exact", config, response, sc.warmup, true);
          jobs.push({ m, kind, chunk, response, plain, timed, samples: [], calls0: plain.transport.calls });
        }
      }
    }
    const fresh = () => ({ cpu_us: 0, guest_ms: 0, host_ms: 0, host_calls: 0, chunks: 0, bytes: 0 });
    for (let round = 0; round < sc.rounds; round++) {
      for (const j of jobs) {
        const meter = fresh();
        for (let i = 0; i < sc.requests; i++) {
          if (request(j.plain.vm, j.plain.transport, requestOf("llm_exact"), j.response, meter) !== 200) throw new Error(`${j.m.name} scan: not admitted`);
        }
        j.samples.push((meter.cpu_us * (1 << 20)) / meter.bytes);
        j.hostCallsPerChunk = meter.host_calls / meter.chunks;
      }
    }
    for (const j of jobs) {
      const meter = fresh();
      for (let i = 0; i < sc.requests; i++) request(j.timed.vm, j.timed.transport, requestOf("llm_exact"), j.response, meter);
      const perMiB = (1 << 20) / meter.bytes;
      results.modules[j.m.name].scan.push({
        kind: j.kind, chunk: j.chunk, bytes: j.response.bytes, chunks: j.response.chunks.length,
        cpu_us_per_mib: median(j.samples), cpu_us_per_mib_rounds: j.samples,
        guest_us_per_mib: (meter.guest_ms - meter.host_ms) * 1000 * perMiB, in_host_us_per_mib: meter.host_ms * 1000 * perMiB,
        host_calls_per_chunk: j.hostCallsPerChunk,
        redis_calls_per_request: (j.plain.transport.calls - j.calls0) / (sc.rounds * sc.requests),
      });
      for (const x of [j.plain, j.timed]) {
        for (const f of x.vm.failures) throw new Error(`${j.m.name} scan: ${f}`);
        x.transport.close();
      }
    }
  }
}

main().then(() => process.exit(0), (err) => {
  say(`bench: FAIL: ${err.stack || err}`);
  process.exit(1);
});
