// Package wasmhost is a proxy-wasm host built on wazero. It runs a compiled
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
// this package's own minimal RESP reader, through a model of Higress's Redis
// client (redis.go). A cluster name in RedisClusters pointing at a node of a
// Redis Cluster gets -MOVED and -ASK back, as Higress does;
// Config.RedisClusterProxy puts a cluster-aware proxy in between (Envoy's
// redis_proxy, modelled in redis_proxy.go), which routes each call by its
// first key's slot and follows MOVED and ASK.
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
//   - A callback that returns Pause stops all iteration, as ABI 0.2's
//     Pause becomes StopAllIterationAndWatermark in Envoy: no body or
//     trailer callback is delivered until the stream continues. With
//     Config.AllowOnHeadersStopIteration, Pause from the request headers
//     is StopIteration instead: the body and trailers go on to the guest
//     while the headers wait, and Continue from them sends all on.
//   - A stream ends with proxy_on_log, proxy_on_done, proxy_on_delete; with
//     Config.DeferredLog, as with HTTP/3's deferred access logging,
//     proxy_on_log comes after proxy_on_delete, when the guest's context is
//     gone.
//   - The response streams, as in Envoy (respstream.go). Its headers go
//     through proxy_on_response_headers (end_of_stream only when the
//     upstream said there is no body: Content-Length 0, HEAD, 204, 304)
//     and, if the guest continues, to the client at once. Each chunk of
//     the body, as a read of the upstream returns it (16 KiB at most), is
//     one proxy_on_response_body(size, false); what the guest lets through
//     is written and flushed before the next chunk is read. The upstream's
//     end is a last proxy_on_response_body(size, true), size possibly 0,
//     or, when it sent trailers, proxy_on_response_trailers instead.
//   - A request body callback that returns Pause buffers the body: the
//     trailers' callback then reads it whole, as Envoy (>= 1.32) serves
//     the decoding buffer while buffering_request_body_.
//   - A body callback that returns Pause buffers (StopIterationAndBuffer):
//     the next callback sees the bytes so far and the new ones (Envoy >=
//     1.32, PR #36411), and continue_stream(Response) sends them on. A
//     guest that buffers more than MaxBodyBytes gets its stream reset
//     (response_payload_too_large). While proxy_on_response_headers is
//     paused, no body callback runs; the body waits, up to MaxBodyBytes,
//     then the upstream is no longer read (watermarks).
//   - An upstream that fails after its headers (connection dropped
//     mid-body) ends the stream with response.code_details
//     upstream_reset_after_response_started{connection_termination}: once
//     the headers went out, the client's stream is reset (a truncated
//     response; for HTTP/1.1, no terminating chunk) and the guest never
//     sees end_of_stream; while the guest still held the headers, the
//     client gets a 503 the guest does not see. proxy_on_log, _done and
//     _delete follow as for any stream.
//   - A client that goes away cancels the upstream request and ends the
//     stream (code_details downstream_remote_disconnect); before the
//     upstream's headers, the guest sees no response headers at all.
//   - A local reply sent before the response started goes through the
//     filter's own response callbacks, as Envoy sends it through the encoder
//     filter chain, with content-type and content-length set. Sent while
//     the response headers are still held (in or after
//     proxy_on_response_headers), it replaces the response without
//     callbacks; once they went out, it resets the stream, as a stream
//     left paused past PauseTimeout or a failed VM does.
//   - Content-length is passed to the client as the guest left it: a guest
//     that changes the body's length must remove it in
//     proxy_on_response_headers, or the client gets a broken response, as
//     from Envoy (the host logs a warning).
//   - UpstreamTimeout bounds the wait for the upstream's response headers
//     only; a body may stream for as long as it takes. Envoy's route
//     timeout (15 s by default) runs to the end of the response and would
//     reset a longer stream; Istio turns it off by default (timeout 0),
//     which is what this models once the headers are in.
//   - Callouts are made from the root context and answered on it; the guest
//     switches to a stream with proxy_set_effective_context, which fails
//     (BadArgument) once the stream is gone.
//   - Counters only increase (an increment <= 0 is BadArgument); metrics and
//     shared data are shared by all VMs of a Host.
//   - Properties are encoded as Envoy encodes them (integers as 8 bytes).
//   - Config.Routes stands for Envoy's route table (route.go): a route
//     matches a path prefix and, optionally, a header's presence, and
//     gives the stream its route_name and cluster_name (on which Higress's
//     matchRules, _rules_, match) and its upstream (Route.Upstream). Until
//     the request headers go on, the route follows them, as Envoy clears
//     its route cache when a wasm filter changes a request header; when
//     they go on (Continue, continue_stream, or with StopIteration the
//     body after them), the router picks it for good: a later change of a
//     header (which the guest can no longer make here) changes neither the
//     properties nor the upstream. There are no virtual hosts.
//   - Config.StreamInfo stands for the filters before the guest's and for
//     TLS (streaminfo.go): the stream's dynamic metadata is served under
//     metadata.filter_metadata, walked and serialized as Envoy does
//     (context.cc getProperty, serializeValue: a Struct's numbers as 8-byte
//     doubles, maps and lists as pairs, a null as SerializationFailure,
//     the whole message as protobuf), and connection.mtls,
//     uri_san_peer_certificate and the other TLS attributes follow the
//     peer certificate it gives. xds.route_name, xds.cluster_name and
//     xds.route_metadata (Envoy >= 1.33), and route_metadata, come from
//     Config.Routes.
//   - source.address is the downstream address Envoy's connection manager
//     picks, and the guest sees x-forwarded-for as it rewrites it
//     (conn_manager_utility.cc, mutateRequestHeaders), per
//     Config.UseRemoteAddress, XffNumTrustedHops and SkipXffAppend:
//     "ip:port", "[v6]:port", port 0 when taken from x-forwarded-for;
//     repeated x-forwarded-for headers joined into one with ",". With
//     UseRemoteAddress, x-request-id is replaced and x-forwarded-proto too
//     unless hops are trusted, as for Envoy's edge requests.
//   - Config.NormalizePath, MergeSlashes and EscapedSlashes rewrite, reject
//     (400) or redirect (307) the path before any filter runs, as the
//     connection manager's settings of those names do (pathnorm.go).
//   - Higress's Redis client (higress-group/envoy: context.cc redisInit and
//     redisCall, async_client_impl.cc, raw_client_impl.cc), per VM and
//     cluster name: proxy_redis_init is BadArgument for a cluster not known
//     (yet; Host.AddRedisCluster adds one), replaces credentials, timeout
//     and the "?db=&buffer_flush_timeout=&max_buffer_size_before_flush="
//     options, and closes the connection unless they are unchanged (since
//     higress #4086). A client no init configured uses no credentials, no
//     database and a 1 s timeout; Host.RebuildRedisCluster resets a client
//     so, as a cluster update does. One pipelined connection sends AUTH and
//     SELECT first and drops their replies, so a refused password shows as
//     -NOAUTH replies with status 0. Writes wait in a buffer until it holds
//     max_buffer_size_before_flush bytes (1024) or buffer_flush_timeout (3
//     ms) has passed. One timer covers the connect (5 s, Envoy's default
//     connect_timeout), then the oldest pending call, re-armed at each
//     reply; when it fires, or the connection fails, every pending call
//     fails at once with status 1 and no bytes. A timeout of 0 fails every
//     call, as in Envoy. Replies, -MOVED and -ASK included, reach the guest
//     raw with status 0. Host.RedisClientStats counts connections,
//     timeouts, writes, inits and dropped replies.
//   - Loading (abi_versions.go, wasi.go; proxy-wasm-cpp-host src/wasm.cc,
//     src/exports.cc, src/v8/v8.cc): the module must export a
//     proxy_abi_version_*, the first in its export section wins, and only
//     the "env" functions cpp-host links for that version exist
//     (proxy_get_log_level only for 0.2.1; proxy_continue_request and
//     _response, proxy_get_configuration, proxy_clear_route_cache only for
//     0.1.0). WASI is cpp-host's, under "wasi_snapshot_preview1" and
//     "wasi_unstable", per Config.CppHost: before 94091cd (the default;
//     Envoy 1.33 to 1.38) 18 functions, poll_oneoff and
//     fd_fdstat_set_flags answer ENOSYS; from 94091cd on, every WASI
//     function (mostly stubs) and a poll_oneoff that returns at once with
//     no events. No files (path_open is ENOENT), no arguments, the
//     environment of Config.Env, fds 1 and 2 into the logs, real clocks
//     and randomness; proc_exit logs and returns. An import the version
//     lacks, or with another signature, fails Compile or Start with
//     V8::link's message.
//   - Restricted calls (restricted.go): while _initialize (then main or
//     __main_void) runs, and while the host runs proxy_on_memory_allocate,
//     any host call off cpp-host's allow-list traps ("restricted_callback")
//     and fails the VM. Go's runtime idles into poll_oneoff once a timer
//     was set (a first crypto/rand read sets one): under ENOSYS it then
//     throws at its next garbage collection, and a Go panic never prints
//     its message (golang/go#78513). Host.WASICalls counts WASI calls.
//   - Start runs the plugin's start callbacks on a throwaway canary VM
//     first (WasmHandleBase::canary), logged as VM CanaryVM and dropped
//     without proxy_on_done; a canary failure fails Start. The last VM to
//     register a shared queue receives its notifications.
//
// # Deviations
//
//   - The request body is not streamed: it is read whole first and
//     delivered in one proxy_on_request_body call (end of stream set), and
//     capped (MaxBodyBytes). The response body is streamed. The upstream
//     request starts only once the whole request has passed the guest:
//     when the guest continues the headers and holds the body, Envoy's
//     router has already started it (the headers may reach the upstream),
//     here nothing reaches it until the body goes on.
//   - Response streaming is a model of Envoy's, not its timing: a chunk is
//     what one read returns (Envoy's HTTP/1 codec may merge or split them
//     otherwise), the next chunk is read only once the last was written
//     to the client (Envoy reads ahead up to its buffer limits), and
//     headers and a first chunk that arrive together still go out in two
//     writes. Envoy's stream idle timeout (5 min) is not modelled: an
//     upstream that stalls mid-body holds the stream until the client
//     leaves. Trailers reach an HTTP/1.1 client, where Envoy drops them
//     unless enable_trailers is set.
//   - Header order: pseudo-headers first, then the client's headers sorted by
//     name (net/http does not keep the wire order), then x-forwarded-for,
//     x-forwarded-proto and x-request-id when the connection manager adds
//     them. No x-envoy-* headers are added (nor x-envoy-external-address);
//     only x-forwarded-for is joined when repeated, where Envoy joins every
//     inline header. Every request counts as external (Envoy >= 1.33 with no
//     internal_address_config); original_ip_detection_extensions, trusted
//     CIDRs and IPv6 scope ids in x-forwarded-for are not modelled.
//   - Redis: a cluster has one host (Envoy's load balancer may spread calls
//     over several, one connection each); replies read together reach the
//     guest as separate loop events, where Envoy decodes them in one
//     dispatcher event (the calls one close fails do go together); outlier
//     detection, cluster stats and tracing spans are not modelled. The cluster proxy of
//     RedisClusterProxy forwards every command, where redis_proxy supports
//     a fixed list (Config.RedisProxyFaithful refuses the others as it
//     does), has a 2 s op timeout, and reloads its slot map after every
//     failed call (redis_proxy after failure_refresh_threshold of them).
//   - A trap in the guest fails the VM: the streams it serves, now and later,
//     get 500 (Envoy answers 503, fails open, or with failure_policy
//     FAIL_RELOAD recreates the VM for the next stream; Higress's Envoy
//     always recreates it). The host never recreates a VM.
//   - WASI and loading: each fd_write is split into lines (Envoy logs each
//     write as one line); V8's 1 GiB memory cap and its compilation are not
//     modelled (wazero compiles ahead of time); the WASI functions cpp-host
//     marks restricted by capability_restriction_config are not modelled;
//     Higress's cpp-host fork (cde187a, Higress >= 2.1.1) is taken to
//     behave as CppHost94091cd, unchecked. A WASI command's _start is not
//     run.
//   - A stream left paused for Config.PauseTimeout is answered with 504, or
//     reset if its response started, and counted (Host.StuckStreams);
//     Envoy would wait for its stream timeouts. A body callback that
//     pauses while more body is still to come is not timed: the next chunk
//     calls the guest again.
//   - A continue_stream made during the very callback that returns Pause
//     counts as Continue.
//   - proxy_close_stream closes the client's connection without a response.
//   - A proxy_http_call with no timeout gives up after a minute.
//   - Malformed serialized header maps from the guest are BadArgument, where
//     proxy-wasm-cpp-host silently reads them as empty.
//   - Config.RedisFallback serves Redis cluster names no one configured,
//     where Envoy answers BadArgument. Config.AccessLog writes one line per
//     request in a fixed format (accesslog.go), where Envoy's is configured.
//   - Path normalization models Chromium's canonicalizer in its main
//     lines only (pathnorm.go); a "#" in the path is rejected only while
//     one of the path settings is on.
package wasmhost
