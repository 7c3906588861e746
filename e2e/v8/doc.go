// Package v8 runs both builds of the filter in a second engine, V8, the
// one Envoy uses, through Node.js: host.mjs is a minimal proxy-wasm host
// with proxy-wasm-cpp-host's WASI set and allow-lists, V8 flags as Envoy
// sets them (--no-liftoff), and the module's Redis calls carried to a real
// redis-server (Higress's Redis callout) or a real Webdis (HTTP callouts).
// The tests fail on any trap, missing import, restricted call or Go runtime
// throw. They need node on PATH (Debian's nodejs; .ci/run installs it).
// BenchmarkV8 (bench.mjs, answering callouts from recorded replies in
// transport.mjs and streaming responses from sse.mjs) measures the builds
// beside a no-op module, the baseline release and, when built (make peer),
// Higress's own rate-limit plugin, and judges issue 31's goals (the guard).
package v8
