'use strict';

// The DNS sampler's figures by hostname: the table of names (at most maxNames, the rest as
// _other), each name's counts, interval figures, sampled callers and recent lookups, and the
// points and details handed to the snapshot. Those are live: one object per series and per name
// for its life, updated in place at each sample, so a snapshot holds no new object per kept name
// and nothing per name lives from one sample to the next through V8's scavenges.

const { Histogram } = require('../../core/histogram');
const { DNS_BUCKETS } = require('./metrics');
const { QUEUE_WAIT_BUCKETS } = require('../threadpool/metrics');
const { SlotLookup } = require('./slots');

// The DNS sampler is created in the preload and loads this file at the first lookup; a name's
// figures (name-figures.js, recent.js) and the caller capture (core/callers.js) load at the app's
// first lookup (the agent's own lookups are counted under no name).
/** @type {typeof import('./name-figures').NameFigures | null} */
let NameFigures = null;
/** @type {typeof import('../../core/callers').captureCaller | null} */
let captureCaller = null;

// Both at once, from hostFor(), which the sampler calls before it reads a lookup's start time:
// loading them is not counted in the first lookup's duration.
function loadPerName() {
  ({ NameFigures } = require('./name-figures'));
  ({ captureCaller } = require('../../core/callers'));
}

/** Where the lookups of names beyond maxNames are counted. */
const OTHER = '_other';

// Which lookups get a stack capture for caller attribution (a capture costs some microseconds,
// about 20,000 instructions, and ~1 KB of short-lived objects). The first CALLER_FIRST (8) lookups of
// each name, then about one in CALLER_EVERY of its lookups (a random gap, so that callers taking
// turns are not aliased), and beyond a name's first lookup never more than CALLER_SAMPLES_PER_SECOND
// a second in all. The share of lookups captured is then the same at any lookup rate up to
// CALLER_EVERY x CALLER_SAMPLES_PER_SECOND a second and the cost bounded above it: a budget by the
// second alone captured every lookup of a slow process (an app under a profiler or valgrind, a
// name looked up a few times a second) and a fiftieth of a fast one's.
// CALLER_FIRST (8) is name-figures.js's, where the count of a name's lookups is.
const CALLER_EVERY = 16;
const CALLER_SAMPLES_PER_SECOND = 20;
// A lookup this close to k x the resolv.conf timeout waited for k resolver timeouts.
const TIMEOUT_EARLY_S = 0.05;
const TIMEOUT_LATE_S = 0.5;
// The shortest lookup that can have waited for one: resolv.conf's timeout is a whole number of
// seconds (resolver.js reads `timeout:N`), so at least 1 when it is above 0 (0: none counted).
const TIMEOUT_FLOOR_S = 1 - TIMEOUT_EARLY_S;

/**
 * The lookup durations of one name and error type ('' for success), and its point for its life.
 * @typedef {{ name: string, errorType: string, histogram: Histogram, point: object | null }} DnsSeries
 */

/**
 * An app lookup in flight: its name, the figures it counts in and its caller, with the model's
 * part (slots.js). One record is reused from lookup to lookup.
 */
class AppLookup extends SlotLookup {
  hostname = '';
  /** @type {import('./name-figures').NameFigures | null} */
  host = null;
  /** @type {string | null} */
  caller = null;
}

/** Every name looked up, its series (by error type) and its queue-wait histogram. */
class Names {
  #maxNames;
  #recentMs;
  #resolver;
  /** @type {Map<string, import('./name-figures').NameFigures>} by name */
  #hosts = new Map();
  /** @type {Map<string, DnsSeries>} by `${name}\0${errorType}` */
  #series = new Map();
  /** @type {Map<string, { histogram: Histogram, point: object | null }>} the wait for a DNS slot, by name */
  #queueWaits = new Map();
  // What points() and details() hand out: the same arrays until a series or a name is added.
  /** @type {object[]} */
  #pointList = [];
  /** @type {import('./name-figures').DnsHostDetails[]} */
  #hostList = [];
  // Captures left this second (read by NameFigures#started before it asks sampledCaller()).
  callerBudget = CALLER_SAMPLES_PER_SECOND;
  #budgetTime = Date.now();

  /**
   * @param {object} options
   * @param {number} options.maxNames distinct hostnames kept; the rest count as _other
   * @param {number} options.recentMs how far back percentiles reach
   * @param {() => { timeout: number } | null} options.resolver the resolv.conf in force
   */
  constructor({ maxNames, recentMs, resolver }) {
    this.#maxNames = maxNames;
    this.#recentMs = recentMs;
    this.#resolver = resolver;
  }

  /**
   * The figures a lookup of this hostname counts in: its own (lower-cased), or _other once
   * maxNames names are kept.
   * @param {string} hostname
   * @returns {import('./name-figures').NameFigures}
   */
  hostFor(hostname) {
    // Names are kept lower-cased: a hostname found as it is needs no toLowerCase() (most are
    // lower-case already).
    let host = this.#hosts.get(hostname);
    if (host !== undefined) return host;
    let name = hostname.toLowerCase();
    host = this.#hosts.get(name);
    if (!host) {
      if (this.#hosts.size >= this.#maxNames) {
        name = OTHER;
        host = this.#hosts.get(OTHER);
      }
      if (!host) {
        if (NameFigures === null) loadPerName();
        host = new NameFigures(name, this.#recentMs);
        this.#hosts.set(name, host);
      }
    }
    return host;
  }

  /**
   * The caller of a name's first lookup (NameFigures#started): always captured.
   * @returns {string}
   */
  firstCaller() {
    return /** @type {NonNullable<typeof captureCaller>} */ (captureCaller)();
  }

  /**
   * The caller of a lookup whose capture is due (NameFigures#started: one of a name's first
   * CALLER_FIRST lookups, or its gap has passed): captured within the budget of
   * CALLER_SAMPLES_PER_SECOND captures a second (endInterval() refills it), the name's next
   * capture then about CALLER_EVERY lookups later (a random gap).
   * @param {import('./name-figures').NameFigures} host
   * @returns {string | null} the caller captured, or null (no budget left)
   */
  sampledCaller(host) {
    if (!(this.callerBudget > 0)) return null;
    this.callerBudget--;
    host.captureGap(1 + Math.floor(Math.random() * (2 * CALLER_EVERY - 1)));
    return /** @type {NonNullable<typeof captureCaller>} */ (captureCaller)();
  }

  /**
   * A lookup of this name that ended (NameFigures#finished recorded it) took at least
   * TIMEOUT_FLOOR_S: whether it waited for resolver timeouts. Shorter lookups cannot have (the
   * resolv.conf timeout is a whole number of seconds), and the sampler does not call this for them.
   * @param {import('./name-figures').NameFigures} host
   * @param {number} seconds from call to callback
   */
  timeouts(host, seconds) {
    const conf = this.#resolver();
    if (conf && resolverTimeouts(seconds, conf.timeout) > 0) host.timedOut();
  }

  /**
   * A name's series for one error type, found once by its key and then kept with the name
   * (NameFigures#finished asks for it at the name's first lookup of that type): no key string is
   * built per lookup (it showed in profiles).
   * @param {import('./name-figures').NameFigures} host
   * @param {string} errorType
   * @returns {DnsSeries}
   */
  addSeries(host, errorType) {
    const key = `${host.name}\u0000${errorType}`;
    let s = this.#series.get(key);
    if (!s) this.#series.set(key, (s = { name: host.name, errorType, histogram: new Histogram(DNS_BUCKETS), point: null }));
    host.addSeries(errorType, s);
    return s;
  }

  /**
   * A name's queue-wait series, found once by its name and then kept with the name.
   * @param {string} name
   * @returns {{ histogram: Histogram, point: object | null }}
   */
  queueWaitOf(name) {
    let w = this.#queueWaits.get(name);
    if (!w) this.#queueWaits.set(name, (w = { histogram: new Histogram(QUEUE_WAIT_BUCKETS), point: null }));
    return w;
  }

  /**
   * One point per series for its life, frozen, whose histogram is the series' live view
   * (Histogram#view, updated in place here). The list is the same array until a series is added
   * (series are never removed). forEach rather than for...of over the Maps: code that runs once a
   * second stays in V8's interpreter, where for...of makes an iterator result per entry.
   * @returns {object[]} the sampler's points
   */
  points() {
    if (this.#pointList.length !== this.#series.size + this.#queueWaits.size) {
      const list = (this.#pointList = []);
      this.#series.forEach((s) => list.push(s.point || (s.point = livePoint('dns.lookup.duration', s.histogram, { 'dns.question.name': s.name, 'error.type': s.errorType }))));
      this.#queueWaits.forEach((w, name) => list.push(w.point || (w.point = livePoint('nodejs.dns.lookup.queue_wait', w.histogram, { 'dns.question.name': name }))));
    }
    this.#series.forEach(updateView);
    this.#queueWaits.forEach(updateView);
    return this.#pointList;
  }

  /**
   * Every name's details, updated in place (one sealed object per name for its life). The list is
   * the same array until a name is added (names are never removed).
   * @returns {import('./name-figures').DnsHostDetails[]}
   */
  details() {
    if (this.#hostList.length !== this.#hosts.size) {
      const list = (this.#hostList = []);
      this.#hosts.forEach((host) => list.push(host.details));
    }
    const since = Date.now() - this.#recentMs;
    this.#hosts.forEach((host) => host.updateDetails(since));
    return this.#hostList;
  }

  /**
   * Start a new interval: every name's interval figures start over, and the caller budget is
   * refilled by the time elapsed (CALLER_SAMPLES_PER_SECOND a second, never above that): full
   * again after a 1 s interval, a tenth of it after 100 ms.
   */
  endInterval() {
    this.#hosts.forEach(endInterval);
    const now = Date.now();
    const refill = (CALLER_SAMPLES_PER_SECOND * Math.max(0, now - this.#budgetTime)) / 1000;
    this.callerBudget = Math.min(CALLER_SAMPLES_PER_SECOND, this.callerBudget + refill);
    this.#budgetTime = now;
  }
}

function updateView(s) {
  s.histogram.view();
}

function endInterval(host) {
  host.endInterval();
}

// A series' point for its life: frozen, with its histogram's live view (updated at each sample).
function livePoint(name, histogram, attributes) {
  return Object.freeze({ name, attributes: Object.freeze(attributes), histogram: histogram.view() });
}

/**
 * How many resolver timeouts a lookup of this duration waited for: k when it ended just after
 * k x timeout (glibc resends after each timeout), else 0.
 * @param {number} seconds
 * @param {number} timeout resolv.conf timeout in seconds
 * @returns {number}
 */
function resolverTimeouts(seconds, timeout) {
  if (!(timeout > 0) || seconds < timeout - TIMEOUT_EARLY_S) return 0;
  const k = Math.round(seconds / timeout);
  return k >= 1 && seconds >= k * timeout - TIMEOUT_EARLY_S && seconds <= k * timeout + TIMEOUT_LATE_S ? k : 0;
}

module.exports = { Names, AppLookup, resolverTimeouts, TIMEOUT_FLOOR_S };
