'use strict';

// The DNS sampler: every dns.lookup the app makes, timed from call to callback. It ties together
// the wrappers (wrapper.js: the app's call and callback), the DNS-slot model (slots.js: each
// lookup's wait for a slot) and the figures by hostname (names.js, name-figures.js, recent.js).
// The sampler is created in the preload, with its wrappers in place; the model and the figures
// load at the first lookup (the app's or the agent's own), so a process that never looks up a
// name never loads them (bench/startup.js).

const dnsModule = require('dns');
const { dnsSlots, UV_THREADPOOL_SIZE } = require('../../core/libuv');
const { readSetting } = require('../../core/setting');
const { reportError } = require('../../core/errors');
const { published } = require('../../core/channels');
const { injectFault, faultsOn } = require('../../core/faults');
const { DnsWrappers, wrapCallbackLookup, wrapCallbackService } = require('./wrapper');

// The clock of a lookup's end, as slots.js's of its start: process.hrtime.bigint(), read once,
// kept as a number of nanoseconds (slots.js says why).
const hrtimeBigInt = process.hrtime.bigint;

// How far back percentiles reach by default.
const RECENT_MS = 60000;

// Per-lookup events (lib/core/channels.js) for exporters that record each lookup and for tracer
// integrations. Published only when someone subscribes.
const { dnsLookupStart: startChannel, dnsLookupEnd: endChannel } = published;

/**
 * What the first lookup makes (loadModel()): the figures by name, the DNS-slot model and the
 * records lookups in flight are kept in.
 * @typedef {object} Model
 * @property {import('./names').Names} names
 * @property {import('./slots').SlotModel} slots
 * @property {import('./slots').LookupRecords<import('./names').AppLookup>} appRecords the app's lookups
 * @property {import('./slots').LookupRecords<import('./slots').SlotLookup>} ownRecords the agent's own
 * @property {number} timeoutFloorS the shortest lookup that can have waited for a resolver timeout
 */

/**
 * Loads names.js and slots.js and makes the model: at the first lookup.
 * @param {{ maxNames: number, recentMs: number, resolver: () => { timeout: number } | null, env?: NodeJS.ProcessEnv }} options
 * @returns {Model}
 */
function loadModel({ maxNames, recentMs, resolver, env }) {
  const { Names, AppLookup, TIMEOUT_FLOOR_S } = require('./names');
  const { SlotModel, SlotLookup, LookupRecords } = require('./slots');
  return {
    names: new Names({ maxNames, recentMs, resolver }),
    slots: new SlotModel(() => dnsSlots(readSetting(UV_THREADPOOL_SIZE, env))),
    appRecords: new LookupRecords(() => new AppLookup()),
    ownRecords: new LookupRecords(() => new SlotLookup(), 16),
    timeoutFloorS: TIMEOUT_FLOOR_S,
  };
}

/**
 * The tracker of the app's lookups (wrapper.js calls it at each lookup's start and end): each
 * lookup counted for its name, offered to subscribers, given a slot (or queued for one) in the
 * model, and at its callback timed into its name's figures. Written for the lookup's path: few
 * calls and property loads per lookup, since it runs inside the app's call and callback, often in
 * V8's interpreter or baseline code.
 */
class AppLookups {
  #model;
  // The model's parts, from the first lookup on (#load()).
  /** @type {import('./names').Names} */
  #names = /** @type {any} */ (null);
  /** @type {import('./slots').SlotModel} */
  #slots = /** @type {any} */ (null);
  /** @type {import('./slots').LookupRecords<import('./names').AppLookup>} */
  #records = /** @type {any} */ (null);
  // Null until the model loads: a field that only ever held numbers is a double field in V8, which
  // the interpreter boxes into a new heap number at each load (16 bytes a lookup); one that held
  // null keeps the number's object and loads it as it is.
  /** @type {number} */
  #timeoutFloorS = /** @type {any} */ (null);
  // The last hostname looked up and the figures it counts in: the same name again finds them
  // without Names#hostFor()'s Map (a hostname counts in the same figures for the sampler's life,
  // _other included: names are never dropped).
  #lastHostname = '';
  /** @type {import('./name-figures').NameFigures | null} */
  #lastHost = null;
  inFlight = 0;
  active = true;

  /** @param {() => Model} model the sampler's model, made at its first call */
  constructor(model) {
    this.#model = model;
  }

  /**
   * An app lookup starts, inside the app's call. The first one loads the model, before its start
   * is read: loading is not counted in its duration.
   * @param {string} hostname
   * @returns {import('./names').AppLookup}
   */
  started(hostname) {
    if (faultsOn) injectFault('dns:started');
    if (this.#names === null) this.#load();
    const names = this.#names;
    let host = this.#lastHost;
    if (host === null || hostname !== this.#lastHostname) {
      host = names.hostFor(hostname);
      this.#lastHost = host;
      this.#lastHostname = hostname;
    }
    const ctx = this.#slots.take(this.#records);
    ctx.hostname = hostname;
    ctx.host = host;
    ctx.caller = host.started(names);
    if (startChannel.hasSubscribers) {
      try {
        startChannel.publish({ hostname, inFlight: this.inFlight });
      } catch (e) {
        reportError('sampler:dns', e);
      }
    }
    this.inFlight++;
    return ctx;
  }

  /**
   * The original threw: no lookup after all.
   * @param {import('./names').AppLookup} ctx
   */
  abandoned(ctx) {
    if (!ctx.live) return;
    const host = /** @type {import('./name-figures').NameFigures} */ (ctx.host);
    // The record holds nothing of this lookup when it goes back for the next (as in record()).
    ctx.hostname = '';
    ctx.host = null;
    ctx.caller = null;
    this.#slots.abandon(ctx, this.#records);
    this.inFlight--;
    host.abandoned();
  }

  /**
   * An app lookup called back: its slot goes to the next and its record back (after what it holds
   * is read), and (until close()) its duration and wait are recorded for its name and published.
   * @param {import('./names').AppLookup} ctx
   * @param {Error | null} err
   */
  record(ctx, err) {
    if (!ctx.live) return;
    const now = Number(hrtimeBigInt());
    const { hostname, caller, start } = ctx;
    const host = /** @type {import('./name-figures').NameFigures} */ (ctx.host);
    const seconds = (now - start) / 1e9;
    const wait = ctx.waitedS;
    // The record holds nothing of this lookup when it goes back for the next: no app string or
    // caller kept alive by an idle record through V8's scavenges.
    ctx.hostname = '';
    ctx.host = null;
    ctx.caller = null;
    this.#slots.release(ctx, now, this.#records);
    this.inFlight--;
    try {
      if (faultsOn) injectFault('dns:record');
      if (!this.active) {
        host.ended();
        return;
      }
      const waited = wait < seconds ? wait : seconds;
      const errorType = err ? String(/** @type {any} */ (err).code || err.name || 'Error') : '';
      host.finished(seconds, waited, errorType, err ? true : false, caller, this.#names);
      if (seconds >= this.#timeoutFloorS) this.#names.timeouts(host, seconds);
      if (endChannel.hasSubscribers) endChannel.publish({ hostname, name: host.name, errorType, seconds, queueWaitSeconds: waited });
    } catch (e) {
      reportError('sampler:dns', e);
    }
  }

  #load() {
    const model = this.#model();
    this.#names = model.names;
    this.#slots = model.slots;
    this.#records = model.appRecords;
    this.#timeoutFloorS = model.timeoutFloorS;
  }
}

/**
 * snapshot.details.dns
 * @typedef {object} DnsDetails
 * @property {number} inFlight app lookups in flight now
 * @property {number | null} dnsSlots the DNS slots of libuv's pool (null before the first lookup)
 * @property {import('./name-figures').DnsHostDetails[]} hosts
 */

/**
 * The DNS sampler (the Sampler contract of lib/sources/index.js). Each lookup is split into its
 * wait for a DNS slot and its resolving (slots.js): the app's lookups come through the wrappers
 * and are counted; the agent's own (threadpool probe, exporters) through ownLookup, which takes
 * its slot in the model without being counted.
 */
class DnsSampler {
  /** @type {Model | null} made at the first lookup */
  #parts = null;
  #wrappers;
  #ownLookup;
  #ownLookupService;
  #app;

  /** @param {NonNullable<Parameters<typeof createDnsSampler>[0]>} options */
  constructor(options) {
    const settings = { maxNames: options.maxNames || 100, recentMs: options.recentMs || RECENT_MS, resolver: options.resolver || (() => null), env: options.env };
    const model = () => this.#parts || (this.#parts = loadModel(settings));
    this.#app = new AppLookups(model);
    this.#wrappers = new DnsWrappers(options.dns || dnsModule, this.#app);
    const own = ownTracker(model);
    this.#ownLookup = wrapCallbackLookup(this.#wrappers.original, own);
    const dns = options.dns || dnsModule;
    this.#ownLookupService = wrapCallbackService((...args) => dns.lookupService(...args), own);
  }

  /** @returns {string} also the key of its details in snapshot.details */
  get name() {
    return 'dns';
  }

  /**
   * dns.lookup for the agent's own lookups (threadpool probe, exporters): not counted as the
   * app's, but seen by the DNS-slot model, since they hold a slot like any other lookup.
   * @returns {Function}
   */
  get ownLookup() {
    return this.#ownLookup;
  }

  /**
   * dns.lookupService for the agent's own getnameinfo (the threadpool's dns probe): not counted,
   * but seen by the DNS-slot model (a getnameinfo holds a DNS slot as a getaddrinfo does).
   * @returns {Function}
   */
  get ownLookupService() {
    return this.#ownLookupService;
  }

  /** @returns {number} app lookups started and not yet called back */
  get inFlight() {
    return this.#app.inFlight;
  }

  /**
   * The lookup-duration and queue-wait histograms by name: the same points, updated in place.
   * @returns {object[]}
   */
  sample() {
    return this.#parts ? this.#parts.names.points() : NONE;
  }

  /**
   * Per-hostname figures for the interval since the last endInterval(), with totals and sampled
   * callers; each lookup's time split into queueWaitSeconds (waiting for a DNS slot) and
   * resolveSeconds; p50, p99 and standard deviation of lookup durations over the recent window,
   * and what the slowest 1 % (the tail) spent waiting and resolving. Plain JSON for the snapshot
   * and the findings; no side effect.
   * @returns {DnsDetails}
   */
  details() {
    const parts = this.#parts;
    if (!parts) return { inFlight: this.#app.inFlight, dnsSlots: null, hosts: NONE };
    const hosts = parts.names.details();
    return { inFlight: this.#app.inFlight, dnsSlots: parts.slots.size, hosts };
  }

  /** Start a new interval: per-hostname interval figures and the caller budget start over. */
  endInterval() {
    if (this.#parts) this.#parts.names.endInterval();
  }

  /** Stops counting and puts dns.lookup and dns.promises.lookup back. */
  close() {
    this.#app.active = false;
    this.#wrappers.restore();
  }
}

// Before the first lookup: no points, no names (frozen, as the snapshot freezes what it holds).
/** @type {any[]} */
const NONE = /** @type {any} */ (Object.freeze([]));

// The agent's own lookups: they hold DNS slots like any other, so the model sees them, but they
// are not the app's and are counted nowhere. A live context means the model was made.
/** @param {() => Model} model */
function ownTracker(model) {
  return {
    started: () => {
      const { ownRecords, slots } = model();
      return slots.take(ownRecords);
    },
    record: (ctx) => {
      if (!ctx.live) return;
      const { ownRecords, slots } = model();
      try {
        slots.release(ctx, Number(hrtimeBigInt()), ownRecords);
      } catch (e) {
        reportError('sampler:dns', e);
      }
    },
    abandoned: (ctx) => {
      if (!ctx.live) return;
      const { ownRecords, slots } = model();
      slots.abandon(ctx, ownRecords);
    },
  };
}

/**
 * Every dns.lookup the app makes, timed from call to callback, by hostname and error code, with
 * per-hostname rates, concurrent duplicates, resolver-timeout counts and sampled callers.
 * dns.lookup and dns.promises.lookup are wrapped from this call on, until close().
 *
 * @param {object} [options]
 * @param {import('./wrapper').DnsModule} [options.dns] the dns module (injectable for tests)
 * @param {number} [options.maxNames] distinct hostnames kept as labels; the rest count as _other
 * @param {() => { timeout: number } | null} [options.resolver] the resolv.conf in force
 * @param {NodeJS.ProcessEnv} [options.env] where UV_THREADPOOL_SIZE is read at the first lookup
 *   (process.env by default, through lib/agent/options.js)
 * @param {number} [options.recentMs] how far back percentiles reach (default 60 s)
 * @returns {DnsSampler}
 */
function createDnsSampler(options = {}) {
  return new DnsSampler(options);
}

module.exports = { createDnsSampler };
