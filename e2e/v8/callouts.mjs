// The two ways the filter reaches Redis, carried to real servers:
// Higress's Redis callout (raw RESP over TCP, one pipelined connection per
// cluster, AUTH and SELECT sent on connect with their replies thrown away,
// as higress-group/envoy source/common/redis/async_client_impl.cc does)
// and Envoy's HTTP callout (a real HTTP request, here to Webdis).

import net from "node:net";
import http from "node:http";

// respEnd returns the offset just past the RESP2 reply that starts at i in
// b, or -1 while the reply is incomplete. It throws on a bad type byte.
export function respEnd(b, i) {
  if (i >= b.length) return -1;
  const nl = b.indexOf("\r\n", i);
  if (nl < 0) return -1;
  const type = String.fromCharCode(b[i]);
  const n = parseInt(b.toString("latin1", i + 1, nl), 10);
  let j = nl + 2;
  switch (type) {
    case "+": case "-": case ":":
      return j;
    case "$":
      if (n < 0) return j;
      return j + n + 2 <= b.length ? j + n + 2 : -1;
    case "*":
      for (let k = 0; k < n; k++) {
        if ((j = respEnd(b, j)) < 0) return -1;
      }
      return j;
    default:
      throw new Error(`redis: bad reply type byte 0x${b[i].toString(16)}`);
  }
}

// respCommand encodes a command as an array of bulk strings.
export function respCommand(...args) {
  const parts = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const v = Buffer.from(String(a));
    parts.push(Buffer.from(`$${v.length}\r\n`), v, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

// RedisCluster is one Higress Redis client: init sets credentials, db and
// timeout; call sends one query on a pipelined connection and calls back
// done(err, reply) in order. A timeout closes the connection and fails
// every call pending on it, as Higress's client does.
export class RedisCluster {
  constructor(addr) {
    this.addr = addr;
    this.config = { user: "", password: "", db: 0, timeoutMs: 1000 };
    this.conn = null;
  }

  init(user, password, db, timeoutMs) {
    this.config = { user, password, db, timeoutMs };
    if (this.conn) this.conn.fail(new Error("re-initialized"));
  }

  call(query, done) {
    if (!this.conn) this.conn = this.connect();
    this.conn.send(query, done);
  }

  connect() {
    const { user, password, db, timeoutMs } = this.config;
    const [host, port] = splitAddr(this.addr);
    const sock = net.createConnection({ host, port });
    const pending = []; // { done, timer } in send order; done is null for AUTH/SELECT
    let buf = Buffer.alloc(0);
    const conn = {
      send: (query, done) => {
        const timer = done && setTimeout(() => conn.fail(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
        pending.push({ done, timer });
        sock.write(query);
      },
      fail: (err) => {
        if (this.conn === conn) this.conn = null;
        sock.destroy();
        for (const p of pending.splice(0)) {
          clearTimeout(p.timer);
          if (p.done) p.done(err, null);
        }
      },
    };
    if (password) conn.send(user ? respCommand("AUTH", user, password) : respCommand("AUTH", password), null);
    if (db) conn.send(respCommand("SELECT", db), null);
    sock.on("data", (chunk) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      let end;
      try {
        while (pending.length && (end = respEnd(buf, 0)) >= 0) {
          const reply = Buffer.from(buf.subarray(0, end));
          buf = buf.subarray(end);
          const p = pending.shift();
          clearTimeout(p.timer);
          if (p.done) p.done(null, reply);
        }
      } catch (err) {
        conn.fail(err);
      }
    });
    sock.on("error", (err) => conn.fail(err));
    sock.on("close", () => conn.fail(new Error("connection closed")));
    return conn;
  }

  close() {
    if (this.conn) this.conn.fail(new Error("host shutting down"));
  }
}

const agent = new http.Agent({ keepAlive: true });

// httpCallout sends one request to addr and calls back done(response),
// where response is { headers, body } with ":status" first, or null when
// the stream was reset before any headers (Envoy's onFailure). A timeout
// or a refused connection comes back as the router's own reply, 504 or
// 503, as in Envoy.
export function httpCallout(addr, headers, body, timeoutMs, done) {
  const [host, port] = splitAddr(addr);
  const get = (k) => headers.find(([n]) => n === k)?.[1];
  const plain = headers.filter(([n]) => !n.startsWith(":"));
  let finished = false, timer = null;
  const finish = (res) => {
    if (!finished) {
      finished = true;
      clearTimeout(timer);
      done(res);
    }
  };
  const routerReply = (status, text) =>
    finish({ headers: [[":status", String(status)], ["content-length", String(text.length)], ["content-type", "text/plain"]], body: Buffer.from(text) });
  const outHeaders = { host: get(":authority") };
  for (const [n, v] of plain) outHeaders[n] = n in outHeaders ? `${outHeaders[n]}, ${v}` : v;
  const req = http.request({ agent, host, port, method: get(":method"), path: get(":path"), headers: outHeaders }, (res) => {
    const chunks = [];
    res.on("data", (c) => chunks.push(c));
    res.on("end", () => {
      const pairs = [[":status", String(res.statusCode)]];
      for (let i = 0; i < res.rawHeaders.length; i += 2) pairs.push([res.rawHeaders[i].toLowerCase(), res.rawHeaders[i + 1]]);
      finish({ headers: pairs, body: Buffer.concat(chunks) });
    });
    res.on("error", () => finish(null));
  });
  timer = setTimeout(() => {
    routerReply(504, "upstream request timeout");
    req.destroy();
  }, timeoutMs);
  req.on("error", (err) => {
    if (err.code === "ECONNREFUSED") routerReply(503, "upstream connect error or disconnect/reset before headers. reset reason: connection failure");
    else finish(null);
  });
  req.end(body);
}

export function closeCallouts() {
  agent.destroy();
}

function splitAddr(addr) {
  const i = addr.lastIndexOf(":");
  return [addr.slice(0, i), Number(addr.slice(i + 1))];
}
