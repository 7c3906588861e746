// Package algorithms holds the rate-limit algorithms as one atomic Redis
// script, the Go code that builds its arguments and parses its reply, and a
// pure Go reference model of every algorithm.
//
// Three algorithms are offered:
//
//   - SlidingLog: an exact sliding window kept as a sorted set of admission
//     times. Memory is O(limit) per key.
//   - SlidingCounter: an approximate sliding window from two weighted fixed
//     windows. Memory is O(1) per key; for limits such as 1,000,000/minute.
//   - Funnel: a leaky bucket computed as GCRA, with the semantics of
//     redis-cell's CL.THROTTLE. A token bucket maps onto it (see TokenBucket).
//
// One EVALSHA decides any mix of limits for one request, all-or-nothing: if
// any limit denies, nothing is charged. Time comes from Redis TIME inside the
// script, so every proxy shares one clock, and the reply carries that time so
// a test can replay the same sequence through the Model.
package algorithms
