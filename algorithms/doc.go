// Package algorithms builds the calls of the rate limiter's Lua (package
// lua: a Redis Functions library, one function per operation, and the
// same code as one script for EVALSHA), parses their replies, and holds a
// pure Go reference model of every algorithm.
//
// Four rate-limit algorithms are offered:
//
//   - SlidingLog: an exact sliding window kept as a sorted set with one
//     member per admission, carrying its weight (its cost). Memory is
//     O(admissions in the window) per key.
//   - SlidingCounter: an approximate sliding window from two weighted fixed
//     windows. Memory is O(1) per key; for limits such as 1,000,000/minute.
//   - Funnel: a leaky bucket computed as GCRA, with the semantics of
//     redis-cell's CL.THROTTLE. A token bucket maps onto it (see TokenBucket).
//   - CalendarWindow: a fixed window that is a calendar period, an hour,
//     day, week or month of local time in an IANA zone (Calendar). The
//     proxy sends the bounds of three periods around its clock, from each
//     zone's current rule (zones.go); Redis's clock picks the one it is in.
//
// One more limits the requests in flight:
//
//   - Concurrency: at most L requests at once per key, kept as a sorted set
//     of slots. A request acquires a slot at admission and frees it with a
//     Release once it ends; a slot never released expires after the
//     limit's maximum duration, so a proxy that dies leaks nothing for
//     long.
//
// One call of the library's decide (AppendCall) decides any mix of limits
// and choices for one request, all-or-nothing: if any limit denies,
// nothing is charged. One plain limit, and a throttled funnel alone in its
// call, take short paths in the Lua (lua/short.lua), which pay for
// themselves; TestEachShapeOfCallTakesItsPath pins what each shape of
// call sends and which path it takes.
// Time comes from Redis TIME inside the call, so every proxy shares one
// clock, and the reply carries that time so a test can replay the same
// sequence through the Model.
//
// Costs known only once the response ends (LLM tokens) take two calls. At
// admission each limit either reserves an estimate (Check.Cost) or checks
// only (Check.CheckOnly: decided as a cost of 1, charged nothing). Once the
// real cost is known, one call of the library's settle settles every limit
// (Settle, AppendSettle): it charges what the reservation missed or refunds
// what it overcharged. A settle never denies and may overdraw: the debt
// denies later requests until it clears, and decisions report it as no
// Remaining and the true RetryAfter. A concurrency slot is released by
// the same call.
package algorithms
