'use strict';

// One hostname's figures in the DNS sampler: counts since the start, the figures of the current
// interval, sampled callers and recent lookups, and the details object that hands them to the
// snapshot (sealed, updated in place at each sample).

const { RecentLookups, RECENT_MAX } = require('./recent');

// Distinct callers kept per hostname.
const MAX_CALLERS = 20;
// A name's first lookups whose callers are all captured (within the budget beyond the first; see
// names.js for the sampling policy).
const CALLER_FIRST = 8;

/** @type {DnsHostDetails['callers']} */
const NO_CALLERS = Object.freeze([]);

/**
 * One hostname's figures (snapshot.details.dns.hosts[]). Interval figures cover the time since the
 * last sample; totals and callers since the start.
 * @typedef {object} DnsHostDetails
 * @property {string} name the hostname, lower-cased (or _other beyond maxNames)
 * @property {number} lookups lookups started in the interval
 * @property {number} errors lookups that failed in the interval
 * @property {number} seconds sum of the durations of lookups that ended in the interval
 * @property {number} endedLookups lookups that ended in the interval: what seconds,
 *   queueWaitSeconds and resolveSeconds are summed over (a lookup can start in one interval and
 *   end in another, so lookups is not)
 * @property {number} queueWaitSeconds the part of them spent waiting for a DNS slot
 * @property {number} resolveSeconds the rest: resolving
 * @property {number} queuedLookups those that waited for a slot at all
 * @property {number} recentLookups lookups that ended in the recent window (60 s by default)
 * @property {number | null} p50 median duration over the recent window (null without lookups)
 * @property {number | null} p99 99th percentile over the recent window
 * @property {number | null} stddev standard deviation over the recent window
 * @property {number | null} mean mean over the recent window
 * @property {import('./recent').TailFigures | null} tail the lookups at or above p99
 * @property {number} maxSeconds longest of them
 * @property {number} duplicates lookups started while another of the same name was in flight
 * @property {number} maxInFlight most lookups of this name in flight at once
 * @property {number} timeouts lookups that waited for at least one resolv.conf timeout
 * @property {number} inFlight lookups in flight now
 * @property {number} totalLookups lookups started since the start
 * @property {ReadonlyArray<{ caller: string, count: number, seconds: number }>} callers sampled calling frames
 *   ('pkg' or 'file:line'), most frequent first
 */

/** The figures of one hostname (or of _other), for the sampler's life. */
class NameFigures {
  #name;
  #lookups = 0;
  #inFlight = 0;
  // Lookups to go before the next one whose caller is captured (Names#sampledCaller sets it).
  #untilCapture = 0;
  /** @type {Map<string, CallerCount>} by caller */
  #callers = new Map();
  /** @type {DnsHostDetails['callers']} the details' list: its entries are updated in place (see callerList) */
  #callerList = NO_CALLERS;
  // A caller's count or time changed since the list was last brought up to date.
  #callersChanged = false;
  /** @type {Map<string, import('./names').DnsSeries>} the name's series, by error type */
  #series = new Map();
  // The success series ('' error type) and the queue-wait histogram, kept here as well so that a
  // lookup that succeeds looks up no Map for them (finished()).
  /** @type {import('./names').DnsSeries | undefined} */
  #ok = undefined;
  /** @type {{ histogram: import('../../core/histogram').Histogram, point: object | null } | null} */
  #queueWait = null;
  #interval = newInterval(0);
  #recent;
  /** @type {DnsHostDetails | null} */
  #details = null;

  /**
   * @param {string} name
   * @param {number} recentMs how far back percentiles reach
   */
  constructor(name, recentMs) {
    this.#name = name;
    this.#recent = new RecentLookups(RECENT_MAX, recentMs);
  }

  /** @returns {string} the hostname, lower-cased, or _other */
  get name() {
    return this.#name;
  }

  /**
   * The next capture comes after this many lookups.
   * @param {number} lookups
   */
  captureGap(lookups) {
    this.#untilCapture = lookups;
  }

  /**
   * @param {string} errorType
   * @param {import('./names').DnsSeries} series
   */
  addSeries(errorType, series) {
    this.#series.set(errorType, series);
    if (errorType === '') this.#ok = series;
  }

  /**
   * A lookup starts: counted, and its caller captured when due (names.js's policy): the name's
   * first lookup always; each of its first CALLER_FIRST, and then each one whose gap (set by
   * captureGap()) has passed, within the budget Names#sampledCaller keeps (a due capture left
   * without budget stays due). Its caller is counted now (a backlog may hold it for long), timed
   * when it ends.
   * @param {import('./names').Names} names
   * @returns {string | null} the caller captured for it, or null
   */
  started(names) {
    let caller = null;
    const n = this.#lookups;
    if (n < CALLER_FIRST) {
      if (n === 0) caller = names.firstCaller();
      else if (names.callerBudget > 0) caller = names.sampledCaller(this);
    } else {
      let until = this.#untilCapture;
      if (until > 0) this.#untilCapture = --until;
      if (until === 0 && names.callerBudget > 0) caller = names.sampledCaller(this);
    }
    const i = this.#interval;
    const inFlight = this.#inFlight + 1;
    if (inFlight > 1) i.duplicates++;
    this.#inFlight = inFlight;
    if (inFlight > i.maxInFlight) i.maxInFlight = inFlight;
    if (caller !== null) {
      let c = this.#callers.get(caller);
      if (!c && this.#callers.size < MAX_CALLERS) this.#callers.set(caller, (c = { count: 0, seconds: 0, entry: Object.seal({ caller, count: 0, seconds: 0 }) }));
      if (c) {
        c.count++;
        this.#callersChanged = true;
      }
    }
    this.#lookups = n + 1;
    i.lookups++;
    return caller;
  }

  /** A lookup started and then abandoned (the original threw): as if it never started. */
  abandoned() {
    this.#inFlight--;
    this.#lookups--;
    this.#interval.lookups--;
  }

  /** A lookup called back after the sampler closed: no longer in flight, not recorded. */
  ended() {
    this.#inFlight--;
  }

  /**
   * A lookup called back: no longer in flight, its duration in its series (by error type) and its
   * wait in the name's queue-wait histogram, both in the interval's figures and the recent
   * lookups, and its duration added to its caller's. One call per lookup: the series and the
   * queue-wait histogram are kept on the name (names gives them at its first lookup of each).
   * @param {number} seconds from call to callback
   * @param {number} waited the part spent waiting for a DNS slot
   * @param {string} errorType '' for a success
   * @param {boolean} failed
   * @param {string | null} caller what started() returned
   * @param {import('./names').Names} names
   */
  finished(seconds, waited, errorType, failed, caller, names) {
    this.#inFlight--;
    let s = errorType === '' ? this.#ok : this.#series.get(errorType);
    if (s === undefined) s = names.addSeries(this, errorType);
    s.histogram.observe(seconds);
    let w = this.#queueWait;
    if (w === null) w = this.#queueWait = names.queueWaitOf(this.#name);
    w.histogram.observe(waited);
    const i = this.#interval;
    i.endedLookups++;
    i.seconds += seconds;
    i.queueWaitSeconds += waited;
    if (waited > 0) i.queuedLookups++;
    i.resolveSeconds += seconds - waited;
    this.#recent.add(Date.now(), seconds, waited);
    if (seconds > i.maxSeconds) i.maxSeconds = seconds;
    if (failed) i.errors++;
    if (caller !== null) {
      const c = this.#callers.get(caller);
      if (c) {
        c.seconds += seconds;
        this.#callersChanged = true;
      }
    }
  }

  /** The lookup just recorded waited for a resolver timeout. */
  timedOut() {
    this.#interval.timeouts++;
  }

  /** @returns {DnsHostDetails} the name's details object, the same for its life */
  get details() {
    return this.#details || (this.#details = newDetails(this.#name));
  }

  /**
   * Writes the figures of the interval, the totals and the recent lookups' statistics into the
   * details object.
   * @param {number} since where the recent window starts (ms since the epoch)
   */
  updateDetails(since) {
    const i = this.#interval;
    const d = this.details;
    d.lookups = i.lookups;
    d.errors = i.errors;
    d.seconds = i.seconds;
    d.endedLookups = i.endedLookups;
    d.queueWaitSeconds = i.queueWaitSeconds;
    d.resolveSeconds = i.resolveSeconds;
    d.queuedLookups = i.queuedLookups;
    this.#recent.stats(since, d);
    d.maxSeconds = i.maxSeconds;
    d.duplicates = i.duplicates;
    d.maxInFlight = i.maxInFlight;
    d.timeouts = i.timeouts;
    d.inFlight = this.#inFlight;
    d.totalLookups = this.#lookups;
    if (this.#callersChanged || this.#callerList.length !== this.#callers.size) {
      this.#callerList = callerList(this.#callers, this.#callerList);
      this.#callersChanged = false;
    }
    d.callers = this.#callerList;
  }

  /**
   * A new interval in place: one interval object per name for its life, and no temporary per name
   * per sample either.
   */
  endInterval() {
    const i = this.#interval;
    i.lookups = i.errors = i.seconds = i.endedLookups = i.queueWaitSeconds = i.resolveSeconds = i.queuedLookups = 0;
    i.maxSeconds = i.duplicates = i.timeouts = 0;
    i.maxInFlight = this.#inFlight;
  }
}

function newInterval(inFlight) {
  return { lookups: 0, errors: 0, seconds: 0, endedLookups: 0, queueWaitSeconds: 0, resolveSeconds: 0, queuedLookups: 0, maxSeconds: 0, duplicates: 0, maxInFlight: inFlight, timeouts: 0 };
}

/**
 * @typedef {{ count: number, seconds: number, entry: { caller: string, count: number, seconds: number } }} CallerCount
 * a caller's running figures, and its entry in the details' list (as of the last sample)
 */

// The callers of a hostname, most frequent first (in the order they first came among equals).
// The list and its entries are sealed (the agent's deepFreeze leaves them as they are) and updated
// in place at a sample after a sampled lookup of the name changed them (about one in 16 lookups,
// at most 20 a second in all); a new list only when a caller is added (at most MAX_CALLERS a
// name). Frozen copies made anew at each change would live until the name's next change, seconds
// apart, and so survive V8's scavenges.
function callerList(callers, list) {
  const out = list.length === callers.size ? list : Object.seal(new Array(callers.size).fill(null));
  let i = 0;
  callers.forEach((c) => {
    c.entry.count = c.count;
    c.entry.seconds = c.seconds;
    out[i++] = c.entry;
  });
  return out.sort(byCountDescending);
}

const byCountDescending = (a, b) => b.count - a.count;

// A name's details for its life (updateDetails() updates it in place): sealed, so that the agent's
// deepFreeze leaves it writable, and with every field from the start (mean is null, not absent,
// while the name has no recent lookup: RecentLookups#stats() writes null then). The statistics
// start as numbers, not null: updateDetails() writes them before the details are handed out, and V8
// keeps a field that has only held numbers as a double in place, where one that started as null
// takes a new heap number at each store (four a name a sample, alive until the name's next sample:
// survivors of scavenges at 200 lookups a second over 50 names).
function newDetails(name) {
  return Object.seal({
    name, lookups: 0, errors: 0, seconds: 0, endedLookups: 0, queueWaitSeconds: 0, resolveSeconds: 0, queuedLookups: 0,
    recentLookups: 0, p50: 0, p99: 0, stddev: 0, tail: null,
    maxSeconds: 0, duplicates: 0, maxInFlight: 0, timeouts: 0, inFlight: 0, totalLookups: 0, callers: NO_CALLERS, mean: 0,
  });
}

module.exports = { NameFigures };
