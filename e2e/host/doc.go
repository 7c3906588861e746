// Package host is a proxy-wasm host built on wazero. It runs a compiled
// proxy-wasm filter (.wasm) the way Envoy does, so that the filter can be
// tested end to end on machines that cannot run Envoy.
//
// A Host serves real HTTP on a loopback port. Every request becomes an HTTP
// context in one of several Wasm VMs (one per "worker", as in Envoy), passes
// through the guest's request callbacks, is forwarded to a real upstream when
// the guest lets it through, and comes back through the response callbacks.
// Callouts are real too: proxy_http_call makes an HTTP request, and the Redis
// callout ABI of Higress's Envoy build (proxy_redis_init, proxy_redis_call,
// proxy_on_redis_call_response) talks RESP to a real Redis over TCP, framed by
// this package's own minimal RESP reader. Config.RedisClusterNodes points a
// cluster name at a Redis Cluster instead: each call is routed by its first
// key's slot, as a cluster-aware proxy would, following MOVED and ASK.
//
// Each VM is entered by exactly one goroutine, its event loop. HTTP stream
// events, callout responses, ticks and queue notifications are all posted to
// that loop, so guest code never runs concurrently with itself.
//
// Typical use in a test:
//
//	mod, err := host.Compile(ctx, wasm) // once per test binary
//	h, err := host.Start(ctx, host.Config{
//		Module:        mod,
//		PluginConfig:  []byte(`{...}`),
//		Upstream:      upstream.URL,
//		RedisClusters: map[string]string{"redis": redisAddr},
//	})
//	defer h.Close()
//	resp, err := http.Get(h.URL() + "/path")
//
// # Envoy semantics kept
//
// The host follows Envoy (source/extensions/common/wasm/context.cc) and
// proxy-wasm-cpp-host (src/exports.cc) where practical, including some
// behaviour a filter can trip over:
//   - Request headers can be read and changed only until the request headers
//     phase ends (by Continue or proxy_continue_stream); after that, and so in
//     the response callbacks, a value read or a change is BadArgument and
//     proxy_get_header_map_pairs returns Ok with no pairs.
//   - continue_stream and send_local_response take effect when the guest call
//     returns; a local reply wins over the callback's return value, and a
//     second local reply returns Ok and is ignored (Envoy queues it, but the
//     first has ended the stream by then).
//   - A local reply sent before the response started goes through the
//     filter's own response callbacks, as Envoy sends it through the encoder
//     filter chain.
//   - Callouts are made from the root context and answered on it; the guest
//     switches to a stream with proxy_set_effective_context, which fails
//     (BadArgument) once the stream is gone.
//   - Counters only increase (an increment <= 0 is BadArgument); metrics and
//     shared data are shared by all VMs of a Host.
//   - Properties are encoded as Envoy encodes them (integers as 8 bytes).
//   - source.address is the downstream address Envoy's connection manager
//     picks, and the guest sees x-forwarded-for as it rewrites it
//     (conn_manager_utility.cc, mutateRequestHeaders), per
//     Config.UseRemoteAddress, XffNumTrustedHops and SkipXffAppend:
//     "ip:port", "[v6]:port", port 0 when taken from x-forwarded-for;
//     repeated x-forwarded-for headers joined into one with ",".
//
// # Deviations
//
//   - Bodies are not streamed: the whole request body is read first and
//     delivered in one proxy_on_request_body call (end of stream set); the
//     same holds for the response body. Bodies are capped (MaxBodyBytes).
//   - Header order: pseudo-headers first, then the client's headers sorted by
//     name (net/http does not keep the wire order), then x-forwarded-for,
//     x-forwarded-proto and x-request-id when the connection manager adds
//     them. No x-envoy-* headers are added (nor x-envoy-external-address);
//     only x-forwarded-for is joined when repeated, where Envoy joins every
//     inline header. Every request counts as external (Envoy >= 1.33 with no
//     internal_address_config); original_ip_detection_extensions, trusted
//     CIDRs and IPv6 scope ids in x-forwarded-for are not modelled.
//   - Redis calls on one VM may run on several connections at once, so their
//     responses may arrive in another order than the calls were made; Envoy
//     pipelines them on one connection, with write buffering this host does
//     not imitate. Every failure (refused, timeout, AUTH or SELECT error,
//     protocol error) is status 1 (NetworkError) with no bytes.
//   - A trap in the guest fails the VM: the streams it serves, now and later,
//     get 500 (Envoy answers 503 or fails open, per the plugin's policy).
//   - A stream left paused for Config.PauseTimeout is answered with 504 and
//     counted (Host.StuckStreams); Envoy would wait for its stream timeouts.
//   - A continue_stream made during the very callback that returns Pause
//     counts as Continue.
//   - proxy_close_stream closes the client's connection without a response.
//   - A proxy_http_call with no timeout gives up after a minute.
//   - Malformed serialized header maps from the guest are BadArgument, where
//     proxy-wasm-cpp-host silently reads them as empty.
package host
