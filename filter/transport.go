package filter

import (
	"errors"
	"fmt"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/webdis"
)

// webdisCalls is what the webdis transport keeps across calls: the
// request headers, and buffers for the replies.
type webdisCalls struct {
	headers [][2]string
	reply   []byte // the JSON reply turned back into RESP
	ints    []int64
}

// sendCall dispatches a call's command over the configured transport,
// framed for it.
func (p *Plugin) sendCall(c *call) (uint32, error) {
	return p.dispatchFramed(c.command(p.framing(), p.invoke(c.eval)))
}

// invoke is how a command names the library's code: FCALL, or with
// redis.command evalsha, EVALSHA, then EVAL once -NOSCRIPT was seen.
func (p *Plugin) invoke(eval bool) algorithms.Invoke {
	switch {
	case p.cfg.Redis.Command == algorithms.FCall:
		return algorithms.FCall
	case eval:
		return algorithms.Eval
	}
	return algorithms.EvalSHA
}

// framing is how the configured transport frames a script call.
func (p *Plugin) framing() algorithms.Framing {
	if p.webdis == nil {
		return algorithms.RESP
	}
	return algorithms.WebdisPath
}

// dispatchFramed sends a script call framed as p.framing() says.
func (p *Plugin) dispatchFramed(cmd []byte) (uint32, error) {
	if p.webdis == nil {
		return p.host.DispatchRedis(cmd)
	}
	return p.host.DispatchHTTP(p.cfg.Redis.Cluster, p.webdis.headers, cmd, p.cfg.Redis.Timeout)
}

// OnHTTPReply delivers Webdis's response to a callout: its HTTP status (0
// when the call failed or timed out) and its JSON body.
func (p *Plugin) OnHTTPReply(calloutID uint32, status int, body []byte) {
	c := p.pending[calloutID]
	var err error
	switch {
	case c == nil && p.settles.inFlight[calloutID] == nil && !p.isEpochReply(calloutID), p.webdis == nil:
	case status != 200:
		err = fmt.Errorf("webdis answered HTTP %d", status)
		if status == 0 {
			err = errors.New("webdis call failed or timed out")
		}
	default:
		if ints, ok := webdis.Ints(p.webdis.ints[:0], body); ok {
			p.webdis.ints = ints
			p.onReply(calloutID, true, nil, ints)
			return
		}
		p.webdis.reply, err = webdis.Reply(p.webdis.reply[:0], body)
	}
	if err != nil {
		if c != nil {
			c.failure = err.Error()
		}
		p.OnRedisReply(calloutID, false, nil)
		return
	}
	if p.webdis != nil {
		body = p.webdis.reply
	}
	p.OnRedisReply(calloutID, true, body)
}
