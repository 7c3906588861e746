package host

import (
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

// hRedisInit configures a Redis cluster for this VM: credentials, timeout
// and the db from a "?db=N" suffix. Connections are made lazily; AUTH and
// SELECT are sent on each new connection. Re-initializing drops the idle
// connections, as Higress's client does.
func hRedisInit(v *vm, a args) uint32 {
	cluster, ok1 := v.readString(a.u32(0), a.u32(1))
	user, ok2 := v.readString(a.u32(2), a.u32(3))
	pass, ok3 := v.readString(a.u32(4), a.u32(5))
	if !ok1 || !ok2 || !ok3 {
		return statusInvalidMemoryAccess
	}
	name, db, err := parseRedisCluster(cluster)
	if err != nil {
		v.h.hostLog(v.index, LogWarn, "proxy_redis_init: %v", err)
		return statusBadArgument
	}
	if !v.h.knowsRedis(name) {
		v.h.hostLog(v.index, LogWarn, "proxy_redis_init: unknown cluster %q", name)
		return statusBadArgument
	}
	if old := v.redis[name]; old != nil {
		old.close()
	}
	timeout := time.Duration(a.u32(6)) * time.Millisecond
	v.redis[name] = v.newRedisClient(name, redisConfig{username: user, password: pass, db: db, timeout: timeout})
	return statusOK
}

// hRedisCall sends one RESP query. Status 0 and the raw reply (possibly an
// error reply) arrive in proxy_on_redis_call_response; a network error or a
// timeout arrives as status 1 and no bytes. A call on a cluster that was
// never initialized uses no credentials, db 0 and a 1 s timeout.
func hRedisCall(v *vm, a args) uint32 {
	cluster, ok1 := v.readString(a.u32(0), a.u32(1))
	query, ok2 := v.read(a.u32(2), a.u32(3))
	idPtr := a.u32(4)
	if !ok1 || !ok2 || !v.writeU32(idPtr, 0) {
		return statusInvalidMemoryAccess
	}
	name, _, err := parseRedisCluster(cluster)
	if err != nil {
		return statusBadArgument
	}
	if !v.h.knowsRedis(name) {
		v.h.hostLog(v.index, LogWarn, "proxy_redis_call: unknown cluster %q", name)
		return statusBadArgument
	}
	if len(query) == 0 {
		return statusBadArgument
	}
	c := v.redis[name]
	if c == nil {
		c = v.newRedisClient(name, redisConfig{})
		v.redis[name] = c
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
	v.callouts.Add(1)
	go func() {
		defer v.callouts.Done()
		reply, err := c.do(v.ctx, query)
		v.post(func() { v.redisCallDone(id, name, reply, err) })
	}()
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
