'use strict';

// The HTTP route under which threadpool work is submitted. Routes are followed in bursts: from
// arming, and again at the first sample at least ROUTE_BURST_EVERY_MS after the last burst began,
// the tracer listens to http.server.request.start for the next ROUTE_REQUESTS_PER_BURST requests
// and until their responses have closed, then stops listening, so requests between bursts cost
// nothing for routes. Not once a sample: each subscribe and unsubscribe changes the channel
// object's prototype, which deoptimizes the HTTP server's parserOnIncoming.

const { subscribed } = require('../../core/channels');

const ROUTE_REQUESTS_PER_BURST = 100;
const ROUTE_BURST_EVERY_MS = 10000;
// Distinct routes kept; the rest count as _other.
const MAX_ROUTES = 50;
const OTHER = '_other';

/**
 * Route label of an HTTP request: method and path without query string, numeric/uuid/hex id
 * segments as :id, bounded.
 * @param {string} method
 * @param {string} url
 * @returns {{ method: string, route: string }}
 */
function routeOf(method, url) {
  let path = String(url || '/');
  const q = path.search(/[?#]/);
  if (q !== -1) path = path.slice(0, q);
  if (path.length > 200) path = path.slice(0, 200);
  path = path.replace(/\/(\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,})(?=\/|$)/gi, '/:id');
  return { method: String(method || 'GET'), route: path };
}

/**
 * The requests the tracer follows and the route of the current execution context.
 *
 * A followed request's connection loses its route when its response closes, and every request
 * start the tracer sees overwrites it, so a keep-alive connection never lends one request's route
 * to the next; a request from an earlier arming is ignored.
 */
class Routes {
  #lean;
  #now;
  #fail;
  /** @type {import('./modes').Carrier|null} */
  #carrier = null; // the mode's (lib/sources/threadpool/modes.js), set at the first arming
  /** @type {import('diagnostics_channel').Channel|null} */
  #channel = null;
  #labels = new Map(); // `${method} ${route}` -> kept label
  #armed = false;
  #armings = 0;
  #seenRequest = false;
  #quota = ROUTE_REQUESTS_PER_BURST; // requests still to follow in this burst
  #burstAt = -Infinity; // when the last burst began (now())
  #listening = false; // subscribed to http.server.request.start
  #followed = 0; // followed requests of this arming whose response has not closed

  /**
   * @param {object} options
   * @param {boolean} options.lean lean mode (lib/sources/threadpool/modes.js)
   * @param {() => number} options.now epoch ms clock
   * @param {(err: Error) => void} options.fail called with what a subscriber threw
   */
  constructor({ lean, now, fail }) {
    this.#lean = lean;
    this.#now = now;
    this.#fail = fail;
  }

  /**
   * Whether init passes the current request on to the resources it sees created: in lean mode
   * while a followed response is open, in classic mode once a request has been followed.
   */
  get watching() {
    return this.#lean ? this.#followed > 0 : this.#seenRequest;
  }

  /** init of a resource while watching (see above). */
  inherit(asyncId, resource) {
    this.#carrier.inherit(asyncId, resource);
  }

  /**
   * Start following requests (a burst from now).
   * @param {import('./modes').Carrier} carrier the mode's route carrier
   */
  arm(carrier) {
    this.#carrier = carrier;
    if (!this.#channel) this.#channel = require('diagnostics_channel').channel(subscribed.httpServerRequestStart);
    this.#burst();
    this.#armed = true;
    this.#armings++;
  }

  /** Stop listening and forget every request. */
  disarm() {
    if (this.#channel) {
      try {
        this.#listen(false);
      } catch {
        // unsubscribe of a subscriber that is gone cannot matter
      }
      this.#listening = false;
      this.#channel = null;
    }
    if (this.#carrier) {
      this.#carrier.disable();
      this.#carrier.reset();
    }
    this.#armed = false;
    this.#seenRequest = false;
    this.#followed = 0;
  }

  /** Called once per sample: a new burst once the last one's quota is used and its time is up. */
  burstIfDue() {
    // (A followed response that never closes keeps the tracer listening, never from a new burst.)
    if (this.#armed && this.#quota <= 0 && this.#now() - this.#burstAt >= ROUTE_BURST_EVERY_MS) this.#burst();
  }

  /**
   * The route of the request being served, if followed; its label is worked out only when
   * threadpool work is submitted under it (most requests submit none), then kept on it.
   * @returns {{ method: string, route: string }|null}
   */
  current() {
    if (!this.#seenRequest) return null;
    let request = this.#carrier.store();
    if (!request || request.window !== this.#armings) request = this.watching ? this.#carrier.find() : undefined;
    if (!request || request.window !== this.#armings) return null;
    if (request.label === undefined) request.label = this.#bounded(request.method, request.url);
    return request.label || null;
  }

  #onRequestStart = (message) => {
    try {
      const req = message && message.request;
      if (!this.#armed || !req) return;
      const carrier = this.#carrier;
      const at = carrier.here();
      const res = message.response;
      // Followed: one of the burst's requests, with a response that tells when it is over.
      if (this.#quota <= 0 || !res || typeof res.on !== 'function') {
        carrier.clear(at, this.#followed > 0);
        if (this.#quota <= 0 && this.#followed === 0) this.#listen(false);
        return;
      }
      this.#quota--;
      const request = { method: req.method, url: req.url, label: undefined, window: this.#armings };
      this.#seenRequest = true;
      carrier.set(at, request);
      this.#followed++;
      // A response emits 'close' once: on() spares once()'s wrapper.
      res.on('close', () => this.#followedDone(request, at));
    } catch (err) {
      this.#fail(err);
    }
  };

  // A followed request's response closed: its connection no longer lends the route to what comes
  // next on it (the tracer may not see the next request start). Once none is open, lean mode's
  // init stops looking resources up. A response of an earlier arming is ignored.
  #followedDone(request, at) {
    try {
      if (request.window !== this.#armings || this.#followed === 0) return;
      this.#carrier.release(at, request);
      if (--this.#followed > 0) return;
      this.#carrier.reset();
      if (this.#quota <= 0) this.#listen(false);
    } catch (err) {
      this.#fail(err);
    }
  }

  #burst() {
    this.#quota = ROUTE_REQUESTS_PER_BURST;
    this.#burstAt = this.#now();
    this.#listen(true);
  }

  #listen(on) {
    if (on === this.#listening || !this.#channel) return;
    if (on) this.#channel.subscribe(this.#onRequestStart);
    else this.#channel.unsubscribe(this.#onRequestStart);
    this.#listening = on;
  }

  #bounded(method, url) {
    const r = routeOf(method, url);
    const key = `${r.method} ${r.route}`;
    let kept = this.#labels.get(key);
    if (!kept) {
      if (this.#labels.size >= MAX_ROUTES) return { method: r.method, route: OTHER };
      kept = Object.freeze(r);
      this.#labels.set(key, kept);
    }
    return kept;
  }
}

module.exports = { Routes, routeOf };
