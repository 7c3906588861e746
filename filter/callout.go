package filter

import (
	"errors"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/internal/format"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Every callout a VM makes, whatever it is for, is in one table by its
// callout id, and every reply (Plugin.OnRedisReply, Plugin.OnHTTPReply
// through the transport) goes to its owner through Plugin.onReply. The
// owners: a script call (*call), a settle (*settleCall), the epoch read
// (*epochPoll), and the link's AUTH and ACL WHOAMI (*authCallout,
// *whoamiCallout). Each removes its own entry when answered or overdue.

// awaiting is a callout's owner, waiting for its reply. Owners are
// recycled structs, so a callout allocates nothing.
type awaiting interface {
	// onReply takes the reply; vm is the Plugin the table belongs to.
	onReply(vm *Plugin, r scriptReply)
	// overdue gives up on the reply when it is overdue at now, in case a
	// host never answers; the sweep asks every entry on each slow tick.
	overdue(vm *Plugin, now time.Time)
}

// callouts is the VM's table of callouts awaiting a reply.
type callouts struct {
	byID map[uint32]awaiting
	// calls is how many entries are script calls: what Plugin.Pending and
	// the ratelimit.redis.pending gauge show.
	calls int
	// decoder and ints read the replies (scriptReply.values).
	decoder redisproto.Decoder
	ints    []int64
}

func (t *callouts) init() {
	t.byID = map[uint32]awaiting{}
	t.decoder.Limits = redisproto.Limits{MaxDepth: 4, MaxBulkLen: 1 << 16, MaxElements: maxReplyInts}
}

// maxReplyInts bounds the script's reply (algorithms.FromIntsCall): now
// and a header, then 5 integers per limit position, or 7 per position of
// a choice and up to 3 per choice (its pick, lease grant and throttle
// delay), so at most 10 per limit state; a request carries at most
// config.MaxBatchStates (a JSON-RPC batch's keys) or MaxRequestLimits.
const maxReplyInts = 2 + 10*max(config.MaxBatchStates, config.MaxRequestLimits)

func (t *callouts) add(id uint32, a awaiting) { t.byID[id] = a }
func (t *callouts) remove(id uint32)          { delete(t.byID, id) }

// OnRedisReply delivers the reply to a callout. ok is false on a network
// error or timeout, when reply is empty.
func (p *Plugin) OnRedisReply(calloutID uint32, ok bool, reply []byte) {
	p.onReply(calloutID, scriptReply{ok: ok, resp: reply})
}

// onReply hands a reply to the owner of its callout; a reply no one
// awaits (its stream ended, or the sweep gave up on it) is dropped.
func (p *Plugin) onReply(calloutID uint32, r scriptReply) {
	if a := p.callouts.byID[calloutID]; a != nil {
		a.onReply(p, r)
	}
}

// sweepCallouts gives up on the callouts overdue at now.
func (p *Plugin) sweepCallouts(now time.Time) {
	for _, a := range p.callouts.byID {
		a.overdue(p, now)
	}
}

// late reports whether a callout sent at sentAt is overdue at now: a
// second past the Redis timeout.
func (p *Plugin) late(sentAt, now time.Time) bool {
	return now.Sub(sentAt) > p.cfg.Redis.Timeout+time.Second
}

var (
	errCallFailed = errors.New("redis call failed or timed out")
	errNoReply    = errors.New("no reply from the host within the timeout")
)

// scriptReply is one reply to a callout, as a transport delivers it: the
// RESP bytes, or the integers when the transport read them itself
// (Webdis); ok is false when the call failed or timed out, and failure
// then says why, when the transport knows.
type scriptReply struct {
	ok      bool
	resp    []byte
	ints    []int64
	failure error
}

// values yields the script's integers: ints when given, else in place
// when resp is one flat array of integers (what the script returns),
// else decoded (an error reply, another shape, a gateway's bulk strings).
// A Redis error reply is returned as its *redisproto.Error, so that
// noScript can tell -NOSCRIPT apart. The integers are valid until the
// next reply.
func (r *scriptReply) values(t *callouts) ([]int64, error) {
	switch {
	case !r.ok:
		return nil, errCallFailed
	case r.ints != nil:
		return r.ints, nil
	}
	if ints, ok := t.flatInts(r.resp); ok {
		return ints, nil
	}
	v, used, err := t.decoder.Decode(r.resp)
	switch {
	case err != nil:
		return nil, err
	case used != len(r.resp):
		return nil, format.Errorf("%d trailing bytes after the reply", len(r.resp)-used)
	case v.Err() != nil:
		return nil, v.Err()
	case v.Kind == redisproto.KindInteger: // the epoch's
		t.ints = append(t.ints[:0], v.Int)
		return t.ints, nil
	}
	elems, err := v.Array()
	if err != nil || len(elems) < 1 {
		return nil, format.Errorf("%w: %s", algorithms.ErrUnexpectedReply, v.String())
	}
	t.ints = t.ints[:0]
	for i, e := range elems {
		n, err := algorithms.Integer(e)
		if err != nil {
			return nil, format.Errorf("%w: element %d of %s: %v", algorithms.ErrUnexpectedReply, i, v.String(), err)
		}
		t.ints = append(t.ints, n)
	}
	return t.ints, nil
}

// flatInts reads b into t.ints, in place, when it is the script's usual
// reply (algorithms.AppendFlatInts).
func (t *callouts) flatInts(b []byte) ([]int64, bool) {
	ints, ok := algorithms.AppendFlatInts(t.ints[:0], b, t.decoder.Limits.MaxElements)
	t.ints = ints
	return ints, ok
}

// noScript is the one -NOSCRIPT rule: a callout sent with EVALSHA that
// Redis answers -NOSCRIPT is sent with EVAL (the whole script) next, once;
// it reports whether that applies, and marks it in eval.
func noScript(eval *bool, err error) bool {
	var rerr *redisproto.Error
	if *eval || !errors.As(err, &rerr) || rerr.Prefix() != "NOSCRIPT" {
		return false
	}
	*eval = true
	return true
}
