package wasmhost

import (
	"strings"
	"time"
)

// Callouts: proxy_http_call and Higress's Redis calls. Both are made on the
// root context, run on their own goroutine, and are answered on the VM's
// loop with the root context's id, as in Envoy; a guest that wants to act on
// a stream calls proxy_set_effective_context itself. A callout that outlives
// the stream that made it is answered all the same.

// calloutResponse is an HTTP call's response while the guest reads it.
type calloutResponse struct {
	headers  *headerMap
	body     []byte
	trailers *headerMap
	failed   bool // reset or network failure: delivered as 0 headers, 0 bytes
}

// hHTTPCall follows Envoy's Context::httpCall: an unknown cluster, or headers
// without :method, :path or :authority, are BadArgument. A zero timeout
// means none; this host then still gives up after maxHTTPCallTimeout.
func hHTTPCall(v *vm, a args) uint32 {
	cluster, ok1 := v.readString(a.u32(0), a.u32(1))
	hdrs, ok2 := v.read(a.u32(2), a.u32(3))
	body, ok3 := v.read(a.u32(4), a.u32(5))
	trls, ok4 := v.read(a.u32(6), a.u32(7))
	idPtr := a.u32(9)
	if !ok1 || !ok2 || !ok3 || !ok4 || !v.writeU32(idPtr, 0) {
		return statusInvalidMemoryAccess
	}
	headers, err1 := decodePairs(hdrs)
	trailers, err2 := decodePairs(trls)
	if err1 != nil || err2 != nil {
		return statusBadArgument
	}
	addr, known := v.h.cfg.HTTPClusters[cluster]
	if !known {
		v.h.hostLog(v.index, LogWarn, "proxy_http_call: unknown cluster %q", cluster)
		return statusBadArgument
	}
	req := httpCallRequest{addr: addr, headers: newHeaderMap(headers), body: body, trailers: trailers}
	for _, k := range []string{":method", ":path", ":authority"} {
		if _, ok := req.headers.get(k); !ok {
			return statusBadArgument
		}
	}
	req.timeout = time.Duration(a.u32(8)) * time.Millisecond
	if req.timeout <= 0 || req.timeout > maxHTTPCallTimeout {
		req.timeout = maxHTTPCallTimeout
	}
	v.httpCallSeq += 4
	id := v.httpCallSeq
	if !v.writeU32(idPtr, id) {
		return statusInvalidMemoryAccess
	}
	v.callouts.Add(1)
	go func() {
		defer v.callouts.Done()
		res := v.h.doHTTPCall(v.ctx, req)
		v.post(func() { v.httpCallDone(id, res) })
	}()
	return statusOK
}

const maxHTTPCallTimeout = time.Minute

func (v *vm) httpCallDone(id uint32, res *calloutResponse) {
	if v.failed != nil {
		return
	}
	var nh, nb, nt int
	if !res.failed {
		v.httpResp = res
		nh, nb, nt = res.headers.len(), len(res.body), res.trailers.len()
	}
	v.call("proxy_on_http_call_response", v.fn.httpCallResponse, v.rootID,
		uint64(v.rootID), uint64(id), uint64(nh), uint64(nb), uint64(nt))
	v.httpResp = nil
}

// hRedisInit follows Higress's Context::redisInit: BadArgument when the
// cluster (the name before "?") is not known (yet); otherwise the
// cluster's client on this VM takes the credentials, the timeout and the
// options ("?db=N&buffer_flush_timeout=..."), closing its connections
// unless they are the ones in place (redis.go).
func hRedisInit(v *vm, a args) uint32 {
	cluster, ok1 := v.readString(a.u32(0), a.u32(1))
	user, ok2 := v.readString(a.u32(2), a.u32(3))
	pass, ok3 := v.readString(a.u32(4), a.u32(5))
	if !ok1 || !ok2 || !ok3 {
		return statusInvalidMemoryAccess
	}
	name, cfg := parseRedisCluster(cluster)
	if !v.h.knowsRedis(name) {
		v.h.hostLog(v.index, LogWarn, "proxy_redis_init: unknown cluster %q", name)
		return statusBadArgument
	}
	cfg.username, cfg.password = user, pass
	cfg.timeout = time.Duration(a.u32(6)) * time.Millisecond
	c := v.redis[name]
	if c == nil {
		c = v.newRedisClient(name)
		v.redis[name] = c
	}
	c.init(cfg)
	return statusOK
}

// hRedisCall sends one RESP query on the cluster's pipelined connection.
// Status 0 and the raw reply (possibly an error reply such as -NOAUTH or
// -MOVED) arrive in proxy_on_redis_call_response; a closed connection or a
// timeout arrives as status 1 and no bytes. A cluster no init configured
// uses Envoy's defaults: no credentials, no database, a 1 s timeout.
func hRedisCall(v *vm, a args) uint32 {
	cluster, ok1 := v.readString(a.u32(0), a.u32(1))
	query, ok2 := v.read(a.u32(2), a.u32(3))
	idPtr := a.u32(4)
	if !ok1 || !ok2 || !v.writeU32(idPtr, 0) {
		return statusInvalidMemoryAccess
	}
	name, _, _ := strings.Cut(cluster, "?")
	if !v.h.knowsRedis(name) {
		v.h.hostLog(v.index, LogWarn, "proxy_redis_call: unknown cluster %q", name)
		return statusBadArgument
	}
	if len(query) == 0 {
		return statusBadArgument
	}
	if v.fn.redisCallResponse == nil && !v.warnedNoRedisExport {
		v.warnedNoRedisExport = true
		v.h.hostLog(v.index, LogWarn, "guest calls proxy_redis_call but does not export proxy_on_redis_call_response")
	}
	v.redisCallSeq += 4
	id := v.redisCallSeq
	if !v.writeU32(idPtr, id) {
		return statusInvalidMemoryAccess
	}
	v.h.countRedisCall(name)
	if v.benchRedis != nil {
		v.benchRedis(id, name, query)
		return statusOK
	}
	c := v.redis[name]
	if c == nil {
		c = v.newRedisClient(name)
		v.redis[name] = c
	}
	c.send(append([]byte(nil), query...), func(reply []byte, err error) {
		if v.depth > 0 { // inside a guest call: Envoy defers the callback
			v.post(func() { v.redisCallDone(id, name, reply, err) })
			return
		}
		v.redisCallDone(id, name, reply, err)
	})
	return statusOK
}

func (v *vm) redisCallDone(id uint32, cluster string, reply []byte, err error) {
	if v.failed != nil {
		return
	}
	status := redisStatusOK
	if err != nil {
		v.h.hostLog(v.index, LogWarn, "redis call %d to %s failed: %v", id, cluster, err)
		status, reply = redisStatusNetworkError, nil
	}
	v.redisResp = reply
	v.call("proxy_on_redis_call_response", v.fn.redisCallResponse, v.rootID,
		uint64(v.rootID), uint64(id), uint64(status), uint64(len(reply)))
	v.redisResp = nil
}
