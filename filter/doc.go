// Package filter is the rate-limit filter's request logic, in pure Go: it
// takes the plugin configuration package config parses, matches each
// request against the rules, builds their Redis keys (package keyspace),
// decides every limit that applies in one script call (package
// algorithms) and either admits the request, with rate-limit headers on
// its response, or answers it locally. It does not import the
// proxy-wasm SDK: package proxyhost adapts the SDK to the two host
// interfaces below, and the tests drive the filter natively with fakes
// against a real Redis.
//
// # Request flow
//
// One Plugin is the filter in one VM (one Envoy worker); it holds one
// policy per configuration (the top level's, then one per _rules_ entry).
// A Stream serves one HTTP request, under one policy.
//
//  1. Stream.OnRequestHeaders picks the policy (a _rules_ entry's may
//     replace the top level's), matches every rule, and builds each
//     matching rule's key from the request (a jsonrpc rule's, one per
//     distinct key of its body's calls). A missing key part skips the
//     rule, shares one key, or denies the request (on_missing_key); a key
//     the deny cache holds, or a cost above a limit's capacity, is denied
//     at once, with no Redis call.
//  2. The limits of the enforced rules share one call, those of the shadow
//     rules another, those of the on_limit degrade rules a third (with
//     redis.cluster_mode, each rule has its own). Each
//     call is one FCALL of the library's decide (EVALSHA with
//     redis.command: evalsha), sent through the proxy's Redis callout or,
//     with the webdis transport, an HTTP callout; the stream pauses.
//     With redis.nodes (a Redis Cluster, a Webdis per node), each call
//     goes to the Webdis of its slot's master (cluster_route.go).
//  3. Plugin.OnRedisReply (Plugin.OnHTTPReply for Webdis) hands each reply
//     to the owner of its callout, found in one table (callout.go), which
//     reads it through one decode chain (with evalsha, falling back to
//     EVAL on -NOSCRIPT). A call that
//     fails, or is overdue at Plugin.OnTick, counts as a failure;
//     consecutive failures open the circuit breaker (one per node with
//     redis.nodes). Redis Cluster's -MOVED sends the call again at once
//     to the new owner; -ASK, -TRYAGAIN and -CLUSTERDOWN on the 10 ms tick
//     until its redis.timeout (cluster_retry.go).
//  4. When the last call is done, the stream decides: a block key first,
//     then the tightest denying limit, then, if an enforced call failed,
//     the failure mode (under failure_mode: local, the VM first decides
//     each failed call itself: local.go, its states in package localstate).
//     A degrade call's denial only marks the request degraded: it goes on
//     with the rule's request header (degrade.go). It resumes the request,
//     or sends the local reply (rejected_status, or failure_status when
//     Redis failed and failure_mode is deny).
//  5. Stream.OnResponseHeaders adds the rate-limit headers to an admitted
//     response; Stream.OnDone hands the stream back for reuse. A stream
//     with a response_cost rule or concurrency slots is followed to its
//     response's end, where it settles and releases (response.go,
//     concurrency.go), or to OnDone, however it ends.
//
// Stream.HoldUntilAdmitted answers body and trailers callbacks meanwhile:
// they must not release the paused headers before the decision. A request
// a body-reading rule matches is decided at its body's end instead
// (request_body.go): its headers go on, and its body is held; unless an
// on_limit degrade rule matches too, whose header must be set before the
// proxy routes: then its headers wait for the body (degrade.go).
//
// # The request path as steps
//
// Each policy compiles its rules into steps when it is configured
// (steps.go): per rule, the steps its configuration needs, and their
// union for the policy. A request visits only its policy's and its
// rules' steps, in this order, each in its phase of the stream:
//
//   - request headers: quota (the endpoint's request), usage ask, body
//     wait; then, per rule: match, calls (a jsonrpc rule's: its body read
//     as JSON-RPC calls once per request, each charged call keyed and
//     costed, equal keys merged with their costs summed, then per
//     distinct key the deny cache, capacity and call), key, reserve (a
//     response_cost rule's reservation, priced), cost, deny cache,
//     capacity, lease, call;
//   - the Redis reply: fallback (under failure_mode: local), verdict,
//     near limit, degrade, throttle;
//   - the response: headers, near header, settle (response_cost and
//     concurrency), and at the stream's end concurrency's release.
//
// A rule with one limit keyed on a header compiles to match, key, deny
// cache, call, verdict, near limit and headers. A step with per-request
// state keeps it in its own struct, beside its code (degradeState,
// nearState, reserveState, leaseState, slotState, delayState,
// responseState, bodyWaitState, rpcState, quotaState): a Stream holds a pointer to
// each, nil until a request of a policy with the step needs it, then
// recycled with the stream. Stream itself keeps the core: the VM, the
// policy, the host, the request, the calls and the verdict.
//
// # The host interface
//
// PluginHost (host.go) is what a Plugin needs of the proxy: dispatch a
// Redis or HTTP callout, log, read the clock, and make metrics. StreamHost
// acts on one request: its peer address and properties, resume, send a
// local reply, add a response header, set the decision property. A host whose Redis client needs
// proxy_redis_init also implements RedisInitializer (redis_link.go). Every
// callback of a VM runs on one thread, so nothing here locks.
//
// # Where things live
//
// Packages below filter, none of which imports it:
//
//   - config: Config and its types, Parse (each error naming its field,
//     "rules[1].limits[0].window: must be > 0", with one fixture per error
//     in config/testdata/invalid), ParseOverride, the bound on the limits
//     one request may carry (config.MaxRequestLimits) and the metric-name
//     rules.
//   - keyspace: the Redis key space, as the filter writes it and
//     ratelimitctl reads it: a part's encoding, RuleKey, the keys that
//     extend a rule key, Peek, which reads a key's state uncharged (several
//     keys in one call: AppendPeeks), and
//     Debt, which reads how far past their limits its limits are; and
//     AppendQuotaJSON, the quota endpoint's answer.
//   - usage: a response's usage, read from a JSON body or an event stream
//     as it passes, through gzip when the upstream compressed it (a field
//     not a count makes it missing whole); a preset's tokens per kind, and
//     the model and service tier the response names.
//   - price: a price table per model, and a response's tokens (and server
//     tool requests) turned into an integer cost in a named unit
//     (micro-dollars), times its service tier's multiplier, exactly.
//   - webdis: the Webdis codec (request headers, JSON replies).
//   - jsonrpc: JSON-RPC reading (a body's calls), cost tables and
//     formulas per method or tool, and error objects.
//   - clusterslot: Redis Cluster's key slots (Slot, as CLUSTER KEYSLOT),
//     the slot map (Map) read from CLUSTER NODES (ParseNodes), each
//     listed node's other address form (Aliases), and the cluster's
//     error replies (ParseError: MOVED, ASK, TRYAGAIN,
//     CLUSTERDOWN), for redis.nodes.
//   - pathnorm: a request's path normalized, as rules match it and keys
//     hold it, and a query component decoded (QueryUnescape).
//   - ipaddr: client IP addresses read, masked and printed as net/netip
//     does, normalized (IPv4-mapped is IPv4, no zone), without linking
//     netip, whose init slows a VM's start; the client an
//     X-Forwarded-For chain names past trusted hops.
//   - headermap: a header map as proxy_get_header_map_pairs returns it,
//     read in place: entries, a header's first or joined values, a cookie.
//   - localstate: the limit states a VM decides from under failure_mode:
//     local, bounded, and ranked so that a state that still denies is
//     never pushed out by a new key.
//   - jwt: a bearer token's payload, decoded unverified, and its claims.
//   - redisfail: why a call to Redis failed (the proxy refused the
//     callout, proxy_redis_init failed, the wrong user, a Webdis status,
//     a Redis Cluster slot that stayed migrating or down, and the node it
//     went to) and what each failure means for an operator.
//   - decision: the decision line, ratelimit.decision, an access log
//     prints: which rule and limit decided, how, why and from where.
//   - headerparts: a rule's rate-limit header pieces per tier (the
//     RateLimit-Policy value, each limit's quoted name and quota) and its
//     tiers as the script's choices, rendered once per policy.
//   - hotkey: the sketch that finds a tick's hot keys, in fixed memory.
//   - filtertest: the fake proxy the tests (here and in e2e) drive.
//
// The files of package filter, besides this doc.go:
//
//   - Host: host.go (PluginHost, StreamHost, and the types they share;
//     the optional interfaces sit beside their users: RedisInitializer in
//     redis_link.go, ResponseReader in response.go, RootCaller in
//     settle.go, Ticker in throttle.go); log.go (a log that says one
//     thing at most once per period).
//   - The VM and its policies: plugin.go (Plugin, the VM: the Redis side,
//     the streams, the throttle, the tick's periodic work, and the
//     policies); policy.go (one configuration's state: rule metrics,
//     rendered headers, deny cache, circuit breaker, local limiter,
//     leases); match_rules.go (picks a request's Higress _rules_ entry).
//   - Streams: stream.go (one request's lifecycle, its core state and
//     its steps' states); steps.go (the steps a policy and each rule
//     compile to); evaluate.go (the rule loop: match, key, cost, what is
//     answered without Redis, the calls); jsonrpc_calls.go (a jsonrpc
//     rule's step: the calls read once, each call's key and cost, merged
//     per key in first-appearance order, bounded by max_keys).
//   - Requests: request.go reads headers (package headermap), query (decoded by
//     pathnorm.QueryUnescape, as url.QueryUnescape does), cookies and the client
//     address (package ipaddr), the path normalized (package pathnorm),
//     and matches a rule's match; identity.go reads JWT claims (of a verified
//     token, else the bearer token's payload, package jwt) and stream
//     properties; request_body.go waits for the request body when a rule
//     reads it (a body key part, match.body, a reservation), holding it
//     until the decision, reads its fields as the upstream will
//     (jsonbound.ReadBody, Lookup: the last of duplicate keys), and denies
//     a body it cannot read so (on_unreadable_body).
//   - Keys: keys.go builds a rule's key, "<prefix>{<rule>|<parts>}", from
//     a request, with package keyspace's encoding; each limit's key and
//     the block key extend it, and its braces hold the Redis Cluster hash
//     tag. A rule with call parts keys each call
//     "<prefix>{<rule>|<request parts>}|<call parts>}": the tag holds the
//     request's parts only, so one caller's calls share a slot.
//   - Calls: call.go gathers a request's limits into calls (which rules
//     share one, and their keys and checks); choice.go adds a rule's
//     tiers and overrides as the script's choices and reads its picks;
//     call_reply.go sends a call, takes its reply, and counts its failure
//     (the circuit breaker of the node it went to).
//   - Redis Cluster (redis.nodes): cluster_route.go routes each callout
//     (call, settle, epoch read, quota read) to its slot's node by the
//     VM's slot map, and reads -MOVED (the map fixed, the callout sent
//     again at once, at most 3 times), -ASK, -TRYAGAIN and -CLUSTERDOWN;
//     cluster_load.go loads the map with CLUSTER NODES through the nodes'
//     Webdis in turn (at the first tick, after a move or a node's failure,
//     every slot_map_refresh, and every 5 s to a node down for the
//     VM's health); cluster_retry.go holds the callouts to send again from
//     the tick (after 10 ms, doubling to 100 ms), and keeps the tick fast
//     while any waits, a map load is wanted, or the throttle holds a
//     request.
//   - Redis: transport.go is the transport interface and its two
//     implementations (the Redis callout, Webdis: one per node with
//     redis.nodes); callout.go is the one
//     table of callouts awaiting a reply (calls, settles, the epoch read,
//     AUTH, ACL WHOAMI, the slot map load), the one reply path and overdue sweep, the one
//     decode chain (scriptReply) and the one -NOSCRIPT rule;
//     redis_link.go keeps Higress's Redis client initialised and
//     authenticated, and redis_identity.go checks with ACL WHOAMI that it
//     runs as the configured user and reports a library Redis lacks;
//     redis_health.go says, in one error line per 10 s and in the gauge
//     ratelimit.redis.healthy, that Redis cannot decide, why, and what
//     the failure mode does meanwhile (why: package redisfail), and says
//     when it decides again; a VM counts as healthy only once Redis
//     answered it, and the epoch read (epoch.go), sent on each tick
//     after which no decision was heard, is its probe.
//   - Decisions: decide.go turns the calls' results into a verdict, counts
//     it per rule and acts on it (a denial's reason names the local
//     reply's error); refusal.go answers a request refused for its own
//     content (a missing key part, a refused model, a cost above a
//     limit's capacity) with its rule's refusal_status and a body naming
//     what is wrong; headers.go renders RateLimit-Policy and RateLimit
//     (IETF draft 10) and the X-RateLimit-* headers from pieces each
//     policy renders once (package headerparts); decision.go tells the
//     proxy which rule and limit decided (the property
//     ratelimit.decision, for access logs, its line rendered by package
//     decision) and counts the admissions near a limit (near_limit),
//     whose warning header near.go renders; degrade.go admits a request a spent
//     on_limit degrade rule would have denied, with its request header
//     (RequestHeaderWriter).
//   - The quota endpoint (config.QuotaEndpoint): quota.go answers its
//     request, once admitted, instead of resuming it: it reads the
//     caller's keys in one peek (keyspace.PeekAt, AppendPeeks) and, for
//     spent limits, a settle of cost 0 that shows debt, and sends the
//     answer keyspace.AppendQuotaJSON renders.
//   - After the decision: response.go adds the headers and follows a
//     response_cost rule's response; money.go makes a usage rule's
//     reservation (output and input tokens), prices it and the response
//     at the dearest of the models in sight for a rule with a price
//     table, and charges the fallback "estimate"; encoding.go narrows
//     the request's Accept-Encoding to what the usage reader reads;
//     include_usage.go asks an OpenAI chat stream for its usage
//     (RequestBodyWriter);
//     settle.go sends the settle calls;
//     concurrency.go gives each request its slot id and releases its
//     slots however its stream ends.
//   - Run-time state: denycache.go remembers, per rule key and policy,
//     what Redis denied until its Retry-After, with the RateLimit-Policy
//     of the denial that stored it (denystamp.go: shown to a request that
//     shares that denial's rules and keys); epoch.go brings operators'
//     changes to the deny caches and leases, reading the epoch each tick;
//     lease.go and lease_table.go
//     lease hot keys' units to a VM (batches, holds, give-backs; the
//     per-policy table; hot keys found by package hotkey); throttle.go holds
//     throttled streams (the fast tick); local.go decides under
//     failure_mode: local, with its limits scaled to the VM's share.
//   - Metrics: metrics.go; their names' rules are package config's.
//   - Untrusted JSON: a bearer token's payload (package jwt, decoded
//     once per request), a request body (request_body.go), a response body or
//     event (package usage) and a Webdis reply (package webdis) are
//     checked by package jsonbound, without recursion, before package
//     jsonvalue reads them: nested deeper than 64, a claim or usage is
//     missing, a request body is unreadable (denied, or its fields
//     missing), and a Webdis reply fails its call (nest_test.go).
package filter
