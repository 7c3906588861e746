package redisfail

import "strconv"

// SlotError: a Redis Cluster slot could not serve a call (redis.nodes):
// it stayed migrating or the cluster stayed down until the call's
// redis.timeout, it kept redirecting, or its node is not in redis.nodes.
// None of these ran the call, so none is sent again after it.
type SlotError struct {
	Slot int // -1 when not known (no redis.nodes: the proxy routes)
	Kind SlotErrorKind
	// Reply is the Redis error that named it (TRYAGAIN, ASK, CLUSTERDOWN,
	// MOVED), or for Unlisted the node's address.
	Reply string
}

// SlotErrorKind says why a slot could not serve a call.
type SlotErrorKind uint8

const (
	SlotMigrating SlotErrorKind = iota // -TRYAGAIN or -ASK until the deadline
	SlotDown                           // -CLUSTERDOWN until the deadline
	SlotRedirects                      // -MOVED more times than a call follows
	SlotUnlisted                       // owned by a node not in redis.nodes
	SlotMovedLate                      // -MOVED once redis.timeout had passed
)

func (e *SlotError) Error() string {
	s := "the slot"
	if e.Slot >= 0 {
		s = "slot " + strconv.Itoa(e.Slot)
	}
	switch e.Kind {
	case SlotMigrating:
		return s + " is migrating (" + e.Reply + ")"
	case SlotDown:
		return s + ": the cluster is down (" + e.Reply + ")"
	case SlotRedirects:
		return s + " still redirected after 3 moves (" + e.Reply + ")"
	case SlotMovedLate:
		return s + " moved when redis.timeout had passed (" + e.Reply + ")"
	}
	return s + " is served by node " + e.Reply + ", not in redis.nodes"
}

// describeSlot says what a SlotError means for an operator.
func describeSlot(e *SlotError, cause string) string {
	switch e.Kind {
	case SlotMigrating:
		return "held a migrating slot's call past redis.timeout" + cause + ": migrate slots in small batches (docs/redis.md)"
	case SlotDown:
		return "is down" + cause + ": the cluster lost a master with no replica promoted yet; ship cluster-require-full-coverage no"
	case SlotRedirects, SlotMovedLate:
		return "kept redirecting the call" + cause + ": the slot map is changing; it is reloaded"
	}
	return "has a node the filter does not know" + cause + ": add it to redis.nodes, with the cluster of its Webdis"
}

// NodeError names the Redis Cluster node (redis.nodes) a failed call
// went to: "redis-1:6379 through webdis-1".
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return "node " + e.Node + ": " + e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }
