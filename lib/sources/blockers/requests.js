'use strict';

// The HTTP requests a block may have served, for its route (blockers/capture.js): the last few
// requests that started (http.server.request.start) and whose body ended (an 'end' listener added
// at the start, one shared function: no allocation per request), each when (hrtime ns), method and
// url. A block whose stack runs in the server's request handler served the request that started
// last before it; one whose stack runs from a request body's end (the app's 'end' handler, after
// ours) served the request whose body ended last. Only while the capture is on.

const RING = 16;

class Ring {
  at = 0;
  times = new Float64Array(RING);
  /** @type {(string | null)[]} */
  methods = new Array(RING).fill(null);
  /** @type {(string | null)[]} */
  urls = new Array(RING).fill(null);

  /** @param {{ method?: string, url?: string }} req */
  add(req) {
    const i = this.at++ % RING;
    this.times[i] = Number(process.hrtime.bigint());
    this.methods[i] = req.method || null;
    this.urls[i] = req.url || null;
  }

  /** The route of the last one before `ns` ('POST /import'), or null. */
  routeBefore(ns) {
    let best = -1;
    for (let i = 0; i < RING && i < this.at; i++) {
      if (this.times[i] <= ns && (best < 0 || this.times[i] > this.times[best])) best = i;
    }
    const url = best < 0 ? null : this.urls[best];
    if (typeof url !== 'string') return null;
    try {
      const { routeOf } = require('../threadpool/routes');
      const r = routeOf(this.methods[best], url);
      return `${r.method} ${r.route}`;
    } catch {
      return null;
    }
  }
}

class Requests {
  started = new Ring();
  bodyEnded = new Ring();
  #onStart;
  #subscribed = false;

  constructor() {
    const bodyEnded = this.bodyEnded;
    /** @this {any} the request */
    function onEnd() {
      bodyEnded.add(this);
    }
    this.#onStart = (m) => {
      const req = m && m.request;
      if (!req) return;
      this.started.add(req);
      if (typeof req.on === 'function') req.on('end', onEnd);
    };
    require('diagnostics_channel').subscribe('http.server.request.start', this.#onStart);
    this.#subscribed = true;
  }

  /**
   * The route a block served: `via` 'handler' (its stack ran in the request handler) or 'body'
   * (from a body's end), at `ns` (hrtime ns, a moment inside the block).
   * @param {string | null} via
   * @param {number} ns
   */
  route(via, ns) {
    if (via === 'handler') return this.started.routeBefore(ns);
    if (via === 'body') return this.bodyEnded.routeBefore(ns);
    return null;
  }

  close() {
    if (this.#subscribed) require('diagnostics_channel').unsubscribe('http.server.request.start', this.#onStart);
    this.#subscribed = false;
  }
}

module.exports = { Requests };
