package filter

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"github.com/redisrate/envoy-redis-ratelimit/jsonbound"
	"github.com/tidwall/gjson"

	"github.com/redisrate/envoy-redis-ratelimit/algorithms"
	"github.com/redisrate/envoy-redis-ratelimit/redisproto"
)

// Webdis takes a command as the body of a POST: its arguments joined by "/",
// each percent-encoded:
//
//	FCALL/ratelimit_<v>_decide/2/rl%3A%7Bapi%7Calice%7D%3Ablock/.../1
//
// Every byte outside A-Z a-z 0-9 - _ ~ is encoded, "." included, so no
// argument can end the command early or pick an output format. The reply is
// Webdis's JSON, {"FCALL":[...]}, which webdisReply turns back into RESP:
// Webdis 0.1.9's raw (RESP) output mangles arrays of integers.
func appendWebdisBody(dst []byte, dec *redisproto.Decoder, cmd []byte) ([]byte, error) {
	v, _, err := dec.Decode(cmd)
	if err != nil {
		return dst, err
	}
	args, err := v.Array()
	if err != nil {
		return dst, err
	}
	const hex = "0123456789ABCDEF"
	for i, a := range args {
		b, err := a.Bytes()
		if err != nil {
			return dst, fmt.Errorf("argument %d: %w", i, err)
		}
		if i > 0 {
			dst = append(dst, '/')
		}
		for _, c := range b {
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '~' {
				dst = append(dst, c)
			} else {
				dst = append(dst, '%', hex[c>>4], hex[c&15])
			}
		}
	}
	return dst, nil
}

// webdisReply appends to dst the RESP form of a Webdis JSON reply: numbers
// become integers, strings bulk strings, null a null bulk string, arrays
// arrays, and Webdis's error form [false, "message"] an error reply.
func webdisReply(dst, body []byte) ([]byte, error) {
	if !jsonbound.Valid(body) {
		return dst, errors.New("webdis: reply is not JSON")
	}
	var v gjson.Result
	n := 0
	gjson.ParseBytes(body).ForEach(func(_, val gjson.Result) bool {
		v, n = val, n+1
		return true
	})
	if n != 1 {
		return dst, errors.New("webdis: reply is not a one-command object")
	}
	if arr := v.Array(); v.IsArray() && len(arr) == 2 && arr[0].Type == gjson.False && arr[1].Type == gjson.String {
		return redisproto.AppendError(dst, arr[1].Str), nil
	}
	return appendJSONValue(dst, v, 0)
}

func appendJSONValue(dst []byte, v gjson.Result, depth int) ([]byte, error) {
	switch {
	case depth > 4:
		return dst, errors.New("webdis: reply nested too deep")
	case v.IsArray():
		arr := v.Array()
		dst = redisproto.AppendArrayLen(dst, len(arr))
		var err error
		for _, e := range arr {
			if dst, err = appendJSONValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case v.Type == gjson.Number:
		n, err := strconv.ParseInt(v.Raw, 10, 64)
		if err != nil {
			return dst, fmt.Errorf("webdis: number %s is not an integer", v.Raw)
		}
		return redisproto.AppendInt(dst, n), nil
	case v.Type == gjson.String:
		return redisproto.AppendBulkString(dst, v.Str), nil
	case v.Type == gjson.Null:
		return redisproto.AppendNullBulk(dst), nil
	}
	return dst, fmt.Errorf("webdis: unexpected JSON %s", v.Raw)
}

// webdisHeaders are the request headers of every call to Webdis.
func webdisHeaders(r *RedisConfig) [][2]string {
	h := [][2]string{{":method", "POST"}, {":path", r.Path}, {":authority", r.Authority},
		{"content-type", "text/plain"}}
	if r.Username != "" || r.Password != "" {
		auth := base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
		h = append(h, [2]string{"authorization", "Basic " + auth})
	}
	return h
}

type webdisCalls struct {
	headers [][2]string
	encoder redisproto.Decoder // reads back the RESP command to re-encode it
	body    []byte
	reply   []byte // the JSON reply turned back into RESP
	ints    []int64
}

// webdisInts reads the script's usual reply as Webdis renders it,
// {"FCALL":[1,-2,...]}, appending its integers to dst. ok is false for
// anything else (an error, other JSON), which webdisReply handles.
func webdisInts(dst []int64, body []byte) ([]int64, bool) {
	i := 0
	if len(body) < 2 || body[0] != '{' || body[1] != '"' {
		return dst, false
	}
	for i = 2; i < len(body) && 'A' <= body[i] && body[i] <= 'Z'; i++ {
	}
	if i+3 > len(body) || body[i] != '"' || body[i+1] != ':' || body[i+2] != '[' {
		return dst, false
	}
	i += 3
	for {
		v, next, ok := algorithms.ParseIntAt(body, i, ',', 0)
		if !ok {
			if v, next, ok = algorithms.ParseIntAt(body, i, ']', '}'); !ok {
				return dst, false
			}
			dst = append(dst, v)
			for ; next < len(body) && (body[next] == '\n' || body[next] == '\r' || body[next] == ' '); next++ {
			}
			return dst, next == len(body)
		}
		dst = append(dst, v)
		i = next
	}
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

// send dispatches one RESP command over the configured transport.
func (p *Plugin) send(cmd []byte) (uint32, error) {
	if p.webdis == nil {
		return p.host.DispatchRedis(cmd)
	}
	w := p.webdis
	var err error
	if w.body, err = appendWebdisBody(w.body[:0], &w.encoder, cmd); err != nil {
		return 0, err
	}
	return p.host.DispatchHTTP(p.cfg.Redis.Cluster, w.headers, w.body, p.cfg.Redis.Timeout)
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
		if ints, ok := webdisInts(p.webdis.ints[:0], body); ok {
			p.webdis.ints = ints
			p.onReply(calloutID, true, nil, ints)
			return
		}
		p.webdis.reply, err = webdisReply(p.webdis.reply[:0], body)
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
