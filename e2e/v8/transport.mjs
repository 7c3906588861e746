// transport.mjs: how bench.mjs answers a module's callouts.

import { RedisCluster, httpCallout } from "./callouts.mjs";

// Transport answers the module's calls: from the real servers while
// recording, then from the recorded reply of the call's phase ("decide"
// during the request, "settle" during the response), queued until the
// callback in progress returns (as a real proxy answers in a later event).
// What the VM posts (proxy_on_queue_ready) waits in the same queue.
export class Transport {
  constructor(m) {
    this.real = Object.fromEntries(Object.entries(m.redis_clusters ?? {}).map(([n, a]) => [n, new RedisCluster(a)]));
    this.recording = true;
    this.phase = "decide";
    this.replies = {}; // phase -> the phase's last reply: { redis: Buffer } or { http: response }
    this.queue = [];
    this.inFlight = 0;
    this.settled = null; // resolves when a recorded call completes
    this.calls = 0;
    const self = this;
    const recorded = () => {
      const r = self.replies[self.phase];
      if (!r) throw new Error(`a ${self.phase} call, but no ${self.phase} reply was recorded`);
      return r;
    };
    this.redisClusters = Object.fromEntries(Object.keys(this.real).map((name) => [name, {
      init: (...a) => self.real[name].init(...a),
      call(query, done) {
        self.calls++;
        if (!self.recording) {
          const r = recorded();
          return self.queue.push(() => done(null, r.redis));
        }
        const phase = self.phase;
        self.inFlight++;
        self.real[name].call(query, (err, reply) => {
          self.inFlight--;
          if (reply) self.replies[phase] = { redis: reply };
          done(err, reply);
          self.settled?.();
        });
      },
    }]));
    this.httpCall = (addr, headers, body, timeoutMs, done) => {
      self.calls++;
      if (!self.recording) {
        const r = recorded();
        return self.queue.push(() => done(r.http));
      }
      const phase = self.phase;
      self.inFlight++;
      httpCallout(addr, headers, body, timeoutMs, (res) => {
        self.inFlight--;
        if (res) self.replies[phase] = { http: res };
        done(res);
        self.settled?.();
      });
    };
  }

  drain() {
    while (this.queue.length) this.queue.shift()();
  }

  close() {
    for (const c of Object.values(this.real)) c.close();
  }
}
