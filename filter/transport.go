package filter

import (
	"errors"
	"time"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/filter/config"
	"github.com/redisrate/envoy-redis-ratelimit/filter/redisfail"
	"github.com/redisrate/envoy-redis-ratelimit/filter/webdis"
)

// transport carries the script calls to Redis: the proxy's Redis callout
// (redis.transport: redis_abi) or Webdis over an HTTP callout (webdis).
// Every call of a VM goes through the one transport its configuration
// names (every _rules_ entry has the same redis object).
type transport interface {
	// framing is how a script call is framed for this transport.
	framing() algorithms.Framing
	// send dispatches a command framed as framing says to node (an index
	// into redis.nodes, 0 without them), returning its callout id; a
	// Webdis callout waits at most timeout for its reply (0: redis.timeout).
	send(node int, cmd []byte, timeout time.Duration) (uint32, error)
	// streamBound reports whether a reply reaches only a stream context
	// that still exists: the SDK drops the reply to an HTTP callout made
	// by a stream whose context has gone. Settles, sent as a stream ends,
	// then go from the root context (see Plugin.settle).
	streamBound() bool
}

func newTransport(cfg *config.Config, host PluginHost) transport {
	r := &cfg.Redis
	if r.Transport == config.TransportWebdis {
		t := &webdisTransport{host: host, timeout: r.Timeout}
		if len(r.Nodes) == 0 {
			t.clusters = []string{r.Cluster}
			t.headers = [][][2]string{webdis.Headers(r.Path, r.Authority, r.Username, r.Password)}
		}
		for _, n := range r.Nodes {
			t.clusters = append(t.clusters, n.Cluster)
			t.headers = append(t.headers, webdis.Headers(r.Path, n.Authority, r.Username, r.Password))
		}
		return t
	}
	return &abiTransport{host: host}
}

// abiTransport sends RESP through the proxy's Redis callout.
type abiTransport struct{ host PluginHost }

func (*abiTransport) framing() algorithms.Framing { return algorithms.RESP }
func (t *abiTransport) send(_ int, cmd []byte, _ time.Duration) (uint32, error) {
	return t.host.DispatchRedis(cmd)
}
func (*abiTransport) streamBound() bool { return false }

// webdisTransport sends a command as a Webdis path over an HTTP callout;
// it keeps the cluster and request headers of each node's Webdis (one
// without redis.nodes), and buffers for the replies.
type webdisTransport struct {
	host     PluginHost
	clusters []string
	timeout  time.Duration
	headers  [][][2]string
	resp     []byte // the JSON reply turned back into RESP
	ints     []int64
}

func (*webdisTransport) framing() algorithms.Framing { return algorithms.WebdisPath }
func (t *webdisTransport) send(node int, cmd []byte, timeout time.Duration) (uint32, error) {
	if timeout <= 0 {
		timeout = t.timeout
	}
	// The host passes whole milliseconds, and Envoy reads 0 as no timeout.
	timeout = max(timeout, time.Millisecond)
	return t.host.DispatchHTTP(t.clusters[node], t.headers[node], cmd, timeout)
}
func (*webdisTransport) streamBound() bool { return true }

// sendCall dispatches a call's command to node over the configured
// transport, framed for it, to be answered within timeout (0: redis.timeout).
func (p *Plugin) sendCall(c *call, node int, timeout time.Duration) (uint32, error) {
	return p.tr.send(node, c.command(p.tr.framing(), p.invoke(c.eval)), timeout)
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

// OnHTTPReply delivers Webdis's response to a callout: its HTTP status (0
// when the call failed or timed out) and its JSON body. Over the Redis
// ABI there are none.
func (p *Plugin) OnHTTPReply(calloutID uint32, status int, body []byte) {
	w, isWebdis := p.tr.(*webdisTransport)
	a := p.callouts.byID[calloutID]
	if !isWebdis || a == nil {
		return
	}
	if l, isLoad := a.(*slotLoad); isLoad {
		l.onHTTP(p, status, body)
		return
	}
	a.onReply(p, w.reply(status, body))
}

var errWebdisFailed = errors.New("webdis call failed or timed out")

// reply reads Webdis's response: the script's integers when it is the
// flat array the script returns, else the JSON turned back into RESP.
func (t *webdisTransport) reply(status int, body []byte) scriptReply {
	switch status {
	case 200:
	case 0:
		return scriptReply{failure: errWebdisFailed}
	default:
		return scriptReply{failure: redisfail.WebdisFailure(status, body)}
	}
	if ints, ok := webdis.Ints(t.ints[:0], body); ok {
		t.ints = ints
		return scriptReply{ok: true, ints: ints}
	}
	var err error
	if t.resp, err = webdis.Reply(t.resp[:0], body); err != nil {
		return scriptReply{failure: err}
	}
	return scriptReply{ok: true, resp: t.resp}
}
