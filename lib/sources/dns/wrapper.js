'use strict';

// What happens at the app's dns.lookup call and at its callback: the wrappers of dns.lookup and
// dns.promises.lookup, and putting them in the dns module (and taking them out). The figures are
// kept elsewhere: a wrapper only calls its tracker when a lookup starts, ends or is abandoned.
//
// net, http, https, fetch (undici) and dgram all read dns.lookup from the dns module at call
// time, so wrapping dns.lookup and dns.promises.lookup covers them; syncBuiltinESMExports() makes
// `import { lookup } from 'node:dns'` see the wrapper too. Calls that never reach getaddrinfo (an
// IP literal, an empty name) are not lookups and are not tracked.
//
// The wrappers must be invisible to the app: the same return values, the same synchronous throws
// for bad arguments, the same length, name and own symbols (dns.lookup's customPromisifyArgs makes
// util.promisify(dns.lookup) resolve { address, family }), and no change to how a rejection nobody
// handles is reported. The tracker runs inside the app's call, so each call of it is guarded: a
// failure there is reported and the lookup goes on untimed. The guards are written out where the
// tracker is called, not through a helper: the wrappers run per lookup, often in V8's interpreter
// or baseline code, where each call costs a few hundred instructions. Invalid arguments make Node throw
// synchronously: that is no lookup, so it is not tracked.

// module.constructor is the CommonJS Module class that require('module') returns, without loading
// the public module builtin (and, on Node 20, the ESM loader) in the preload.
const { syncBuiltinESMExports } = typeof /** @type {any} */ (module.constructor).syncBuiltinESMExports === 'function'
  ? /** @type {typeof import('module')} */ (module.constructor)
  : require('module');
const { reportError } = require('../../core/errors');

/**
 * What a wrapper calls. started() returns the lookup's context, handed back to record() or
 * abandoned(); each is called as a method of the tracker. A context is reused from lookup to
 * lookup (one lookup at a time) and has a `reactions` field, null at first, that the promise
 * wrapper keeps its reactions in (the context's for its life).
 * @typedef {object} LookupTracker
 * @property {(hostname: string) => { reactions: object | null }} started a lookup is about to go to the original
 * @property {(ctx: any, err: Error | null) => void} record it called back (or settled)
 * @property {(ctx: any) => void} abandoned the original threw: there will be no callback
 */

/**
 * The part of the dns module that is wrapped.
 * @typedef {{ lookup: Function, lookupService?: Function, promises?: { lookup: Function } }} DnsModule
 */

/** dns.lookup and dns.promises.lookup replaced by their wrappers, until restore(). */
class DnsWrappers {
  #dns;
  #lookup;
  #wrapped;
  #promises;
  #promisesLookup;
  #wrappedPromises;

  /**
   * Wraps dns.lookup and dns.promises.lookup in place.
   * @param {DnsModule} dns the dns module
   * @param {LookupTracker} tracker
   */
  constructor(dns, tracker) {
    this.#dns = dns;
    this.#lookup = dns.lookup;
    this.#wrapped = wrapCallbackLookup(this.#lookup, tracker);
    dns.lookup = this.#wrapped;
    const promises = (this.#promises = dns.promises);
    this.#promisesLookup = promises && promises.lookup;
    this.#wrappedPromises = this.#promisesLookup && wrapPromiseLookup(this.#promisesLookup, tracker);
    if (this.#wrappedPromises) promises.lookup = this.#wrappedPromises;
    syncBuiltinESMExports();
  }

  /** @returns {Function} dns.lookup as it was before the wrapper */
  get original() {
    return this.#lookup;
  }

  /**
   * Puts the originals back unless someone wrapped over us; then our wrapper stays in their chain
   * and just passes calls through.
   */
  restore() {
    const dns = this.#dns;
    if (dns.lookup === this.#wrapped) dns.lookup = this.#lookup;
    if (this.#wrappedPromises && this.#promises.lookup === this.#wrappedPromises) this.#promises.lookup = this.#promisesLookup;
    syncBuiltinESMExports();
  }
}

// net is loaded at the first lookup, not by the preload (it costs ~2 ms to load).
let isIP = null;

// The last hostname isLookupOf() found to be a name: most lookups repeat it, and the wrappers
// then ask no more (a symbol at first, which no hostname equals).
/** @type {unknown} */
let lastName = Symbol('none yet');

function isLookupOf(hostname) {
  if (typeof hostname !== 'string' || hostname === '') return false;
  // An IPv4 literal starts with a digit and an IPv6 one has a colon (net.isIPv4/isIPv6): other
  // names skip net.isIP, whose IPv6 regular expression is a large part of the wrapper's cost. An
  // IPv6 literal starts with a hex digit or a colon: a name starting with another character (g-z,
  // say) needs no search for a colon either.
  const c = hostname.charCodeAt(0) | 0x20; // lower-cased if a letter
  if (!(c > 0x66 && c <= 0x7a) && !((c < 48 || c > 57) && !hostname.includes(':'))) {
    if (isIP === null) isIP = require('net').isIP;
    if (isIP(hostname) !== 0) return false;
  }
  lastName = hostname;
  return true;
}

/**
 * dns.lookup, timed. Lookups go through the original, with the app's arguments and `this`.
 * @param {Function} original
 * @param {LookupTracker} tracker
 * @returns {Function}
 */
function wrapCallbackLookup(original, tracker) {
  const lookup = function lookup(hostname, options, callback) {
    const cb = typeof options === 'function' ? options : callback;
    if (typeof cb !== 'function' || (hostname !== lastName && !isLookupOf(hostname))) return Reflect.apply(original, this, arguments);
    let ctx;
    try {
      ctx = tracker.started(hostname);
    } catch (err) {
      reportError('sampler:dns', err);
    }
    if (ctx === undefined) return Reflect.apply(original, this, arguments);
    // Recorded once, should the original call back twice (the record is reused by then). The
    // callback is made here, not in callTracked() (as the service wrapper's is): made one call
    // deeper, more of each lookup survives V8's scavenges (the figures are in commits d225c44 and b8dfd6f).
    let pending = true;
    const done = function (err) {
      if (pending) {
        pending = false;
        try {
          tracker.record(ctx, err);
        } catch (e) {
          reportError('sampler:dns', e);
        }
      }
      return Reflect.apply(cb, this, arguments);
    };
    // The app's arguments with its callback replaced, as many as it passed. Read for their count
    // and handed on whole only, the arguments object is one optimized code never makes (V8 passes
    // them on from the frame), where writing the callback into it made one each lookup (72 bytes).
    const n = arguments.length;
    try {
      if (n === 2) return callFunction(original, this, hostname, done);
      if (n === 3) return typeof options === 'function' ? callFunction(original, this, hostname, done, callback) : callFunction(original, this, hostname, options, done);
      spare.original = original;
      spare.at = typeof options === 'function' ? 1 : 2;
      spare.done = done;
      return Reflect.apply(withSpareCallback, this, arguments);
    } catch (err) {
      if (pending) {
        pending = false;
        abandon(tracker, ctx);
      }
      throw err;
    }
  };
  return lookAlike(lookup, original);
}

// fn.call(self, ...args) whatever fn's own `call` is, with no array (Node's primordials' uncurryThis).
const callFunction = Function.prototype.call.bind(Function.prototype.call);

// More than three arguments (dns.lookup takes three): the callback at spare.at replaced by
// spare.done, in a copy of them, then the original called with them all. Set just before the
// call, read at its start.
const spare = { original: /** @type {Function | null} */ (null), at: 0, done: /** @type {Function | null} */ (null) };
function withSpareCallback(...args) {
  const original = /** @type {Function} */ (spare.original);
  args[spare.at] = spare.done;
  spare.original = spare.done = null;
  return Reflect.apply(original, this, args);
}

/**
 * dns.promises.lookup, timed. Returns a promise derived from the original's: it settles the same
 * way one tick later, and when it rejects and nobody handles it, Node reports that unhandled
 * rejection exactly as it would have reported the original's (uvscope's handler sits on the
 * original promise, never on the one the caller holds).
 * @param {Function} original
 * @param {LookupTracker} tracker
 * @returns {Function}
 */
function wrapPromiseLookup(original, tracker) {
  const lookup = function lookup(hostname) {
    if (hostname !== lastName && !isLookupOf(hostname)) return Reflect.apply(original, this, arguments);
    let ctx;
    try {
      ctx = tracker.started(hostname);
    } catch (err) {
      reportError('sampler:dns', err);
    }
    if (ctx === undefined) return Reflect.apply(original, this, arguments);
    let promise;
    try {
      promise = Reflect.apply(original, this, arguments);
    } catch (err) {
      abandon(tracker, ctx);
      throw err;
    }
    let r = ctx.reactions;
    if (!r) r = ctx.reactions = reactions(tracker, ctx);
    return promise.then(r.fulfilled, r.rejected);
  };
  return lookAlike(lookup, original);
}

/**
 * What a derived promise does when the original settles: record the lookup (guarded), then settle
 * as the original did. Made once per context and kept on it (contexts are reused from lookup to
 * lookup, one promise at a time): no closures per lookup.
 * @param {LookupTracker} tracker
 * @param {object} ctx
 * @returns {{ fulfilled: (value: any) => any, rejected: (err: any) => never }}
 */
function reactions(tracker, ctx) {
  return {
    fulfilled: (value) => {
      try {
        tracker.record(ctx, null);
      } catch (e) {
        reportError('sampler:dns', e);
      }
      return value;
    },
    rejected: (err) => {
      try {
        tracker.record(ctx, err);
      } catch (e) {
        reportError('sampler:dns', e);
      }
      throw err;
    },
  };
}

// The wrapper takes the original's length, name and own symbols.
function lookAlike(wrapper, original) {
  for (const key of ['length', 'name']) {
    const d = Object.getOwnPropertyDescriptor(original, key);
    if (d) Object.defineProperty(wrapper, key, d);
  }
  for (const sym of Object.getOwnPropertySymbols(original)) {
    Object.defineProperty(wrapper, sym, Object.getOwnPropertyDescriptor(original, sym));
  }
  return wrapper;
}

/**
 * dns.lookupService(address, port, callback), seen by the tracker as an own lookup is (the agent's
 * own getnameinfo: the threadpool's dns probe): started at the call, recorded at the callback.
 * @param {Function} original
 * @param {LookupTracker} tracker
 * @returns {Function}
 */
function wrapCallbackService(original, tracker) {
  return function lookupService(address, port, callback) {
    let ctx;
    try {
      ctx = tracker.started(address);
    } catch (err) {
      reportError('sampler:dns', err);
    }
    if (ctx === undefined) return Reflect.apply(original, this, arguments);
    return callTracked(original, this, [address, port, callback], 2, tracker, ctx);
  };
}

/**
 * Calls the original with args whose callback (at cbIndex) records ctx at its first call: once,
 * should the original call back twice (the record is reused by then). If the original throws there
 * was no lookup after all: ctx is abandoned, and a callback the original still makes is the
 * caller's alone.
 */
function callTracked(original, self, args, cbIndex, tracker, ctx) {
  const cb = args[cbIndex];
  let pending = true;
  args[cbIndex] = function (err) {
    if (pending) {
      pending = false;
      try {
        tracker.record(ctx, err);
      } catch (e) {
        reportError('sampler:dns', e);
      }
    }
    return Reflect.apply(cb, this, arguments);
  };
  try {
    return Reflect.apply(original, self, args);
  } catch (err) {
    if (pending) {
      pending = false;
      abandon(tracker, ctx);
    }
    throw err;
  }
}

// tracker.abandoned(ctx), guarded.
function abandon(tracker, ctx) {
  try {
    tracker.abandoned(ctx);
  } catch (err) {
    reportError('sampler:dns', err);
  }
}

module.exports = { DnsWrappers, wrapCallbackLookup, wrapCallbackService };
