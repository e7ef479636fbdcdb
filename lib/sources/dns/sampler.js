'use strict';

const dnsModule = require('dns');
const { syncBuiltinESMExports } = require('module');
const { Histogram } = require('../../core/histogram');
const { DNS_BUCKETS } = require('./metrics');
const { QUEUE_WAIT_BUCKETS } = require('../threadpool/metrics');
const { dnsSlots, UV_THREADPOOL_SIZE } = require('../../core/libuv');
const { readSetting } = require('../../core/setting');
const { reportError } = require('../../core/errors');
const { captureCaller } = require('../../core/callers');
const { published } = require('../../core/channels');
const { injectFault } = require('../../core/faults');

const OTHER = '_other';

// Stack captures for caller attribution per sampling interval, beyond the first lookup of each
// name: bounds the cost at any lookup rate (a capture costs some microseconds).
const CALLER_SAMPLES_PER_INTERVAL = 20;
// Distinct callers kept per hostname.
const MAX_CALLERS = 20;
// A lookup this close to k x the resolv.conf timeout waited for k resolver timeouts.
const TIMEOUT_EARLY_S = 0.05;
const TIMEOUT_LATE_S = 0.5;
// Recent lookups kept per hostname for percentiles (p50, p99, standard deviation).
const RECENT_MS = 60000;
const RECENT_MAX = 2048;

// Per-lookup events (lib/core/channels.js) for exporters that record each lookup and for tracer
// integrations. Published only when someone subscribes.
const { dnsLookupStart: startChannel, dnsLookupEnd: endChannel } = published;

/**
 * Every dns.lookup the app makes, timed from call to callback, by hostname and error code, with
 * per-hostname rates, concurrent duplicates, resolver-timeout counts and sampled callers.
 *
 * net, http, https, fetch (undici) and dgram all read dns.lookup from the dns module at call
 * time, so wrapping dns.lookup and dns.promises.lookup covers them; syncBuiltinESMExports() makes
 * `import { lookup } from 'node:dns'` see the wrapper too. Calls that never reach getaddrinfo (an
 * IP literal, an empty name) are not lookups and are not counted.
 *
 * @param {object} [options]
 * @param {object} [options.dns] the dns module (injectable for tests)
 * @param {number} [options.maxNames] distinct hostnames kept as labels; the rest count as _other
 * @param {() => { timeout: number } | null} [options.resolver] the resolv.conf in force
 * @param {NodeJS.ProcessEnv} [options.env] where UV_THREADPOOL_SIZE is read at the first lookup
 *   (process.env by default, through lib/core/setting.js)
 * @param {number} [options.recentMs] how far back percentiles reach (default 60 s)
 *
 * Each lookup is split into its wait for a DNS slot and its resolving. libuv runs getaddrinfo
 * FIFO on at most (size+1)/2 threads (src/threadpool.c, slow I/O), and every lookup in the
 * process passes through here: the app's through the wrappers, the agent's own (threadpool
 * probe, exporters) through ownLookup, which takes its slot without being counted. So a model of
 * the slots replayed from starts and callbacks gives each lookup the moment it got a slot: at its
 * call when a slot was free, else at the callback that freed the slot it took. The callback runs
 * when the loop gets to it, after the slot really came free: a busy loop moves that lateness from
 * the next lookup's resolving into its waiting (at most the event-loop delay of the moment).
 */
function createDnsSampler(options = {}) {
  const dns = options.dns || dnsModule;
  const maxNames = options.maxNames || 100;
  const resolver = options.resolver || (() => null);
  const series = new Map(); // `${name}\0${errorType}` -> { name, errorType, histogram }
  const hosts = new Map(); // name -> per-hostname statistics
  const queueWaits = new Map(); // name -> Histogram of the wait for a DNS slot
  const recentMs = options.recentMs || RECENT_MS;
  // What sample() and details() hand out: the same arrays until a series or a name is added.
  let pointList = [];
  let hostList = [];
  const slots = createSlotModel(() => dnsSlots(readSetting(UV_THREADPOOL_SIZE, options.env)));
  let inFlight = 0;
  let active = true;
  let callerBudget = CALLER_SAMPLES_PER_INTERVAL;

  function hostFor(hostname) {
    let name = hostname.toLowerCase();
    let host = hosts.get(name);
    if (!host) {
      if (hosts.size >= maxNames) {
        name = OTHER;
        host = hosts.get(OTHER);
      }
      if (!host) {
        host = newHost(name, recentMs);
        hosts.set(name, host);
      }
    }
    return host;
  }

  function started(hostname) {
    injectFault('dns:started');
    const host = hostFor(hostname);
    const ctx = { hostname, host, start: process.hrtime.bigint(), began: null, caller: null };
    if (host.inFlight > 0) host.interval.duplicates++;
    host.inFlight++;
    if (host.inFlight > host.interval.maxInFlight) host.interval.maxInFlight = host.inFlight;
    if (host.lookups === 0 || callerBudget > 0) {
      if (host.lookups !== 0) callerBudget--;
      // Counted when the lookup starts (a backlog may hold it for long); timed when it ends.
      let c = host.callers.get((ctx.caller = captureCaller()));
      if (!c && host.callers.size < MAX_CALLERS) host.callers.set(ctx.caller, (c = { count: 0, seconds: 0 }));
      if (c) {
        c.count++;
        host.callerList = null;
      }
    }
    host.lookups++;
    host.interval.lookups++;
    if (startChannel.hasSubscribers) {
      try {
        startChannel.publish({ hostname, inFlight });
      } catch (e) {
        reportError('sampler:dns', e);
      }
    }
    inFlight++;
    slots.submit(ctx);
    return ctx;
  }

  function abandoned(ctx) {
    slots.abandon(ctx);
    inFlight--;
    ctx.host.inFlight--;
    ctx.host.lookups--;
    ctx.host.interval.lookups--;
  }

  function record(ctx, err) {
    try {
      const now = process.hrtime.bigint();
      slots.done(ctx, now);
      inFlight--;
      injectFault('dns:record');
      const { host } = ctx;
      host.inFlight--;
      if (!active) return;
      const seconds = Number(now - ctx.start) / 1e9;
      const waited = Math.min(seconds, Number(ctx.began - ctx.start) / 1e9);
      const errorType = err ? String(err.code || err.name || 'Error') : '';
      // Per host by error type: no key string built per lookup (it showed in profiles).
      let s = host.series.get(errorType);
      if (!s) {
        const key = `${host.name}\u0000${errorType}`;
        s = series.get(key);
        if (!s) series.set(key, (s = { name: host.name, errorType, histogram: new Histogram(DNS_BUCKETS), point: null }));
        host.series.set(errorType, s);
      }
      s.histogram.observe(seconds);
      let w = queueWaits.get(host.name);
      if (!w) queueWaits.set(host.name, (w = { histogram: new Histogram(QUEUE_WAIT_BUCKETS), point: null }));
      w.histogram.observe(waited);
      host.interval.seconds += seconds;
      host.interval.queueWaitSeconds += waited;
      if (waited > 0) host.interval.queuedLookups++;
      host.interval.resolveSeconds += seconds - waited;
      host.recent.add(Date.now(), seconds, waited);
      if (seconds > host.interval.maxSeconds) host.interval.maxSeconds = seconds;
      if (err) host.interval.errors++;
      const conf = resolver();
      if (conf && resolverTimeouts(seconds, conf.timeout) > 0) host.interval.timeouts++;
      if (ctx.caller !== null) {
        const c = host.callers.get(ctx.caller);
        if (c) {
          c.seconds += seconds;
          host.callerList = null;
        }
      }
      if (endChannel.hasSubscribers) endChannel.publish({ hostname: ctx.hostname, name: host.name, errorType, seconds, queueWaitSeconds: waited });
    } catch (e) {
      reportError('sampler:dns', e);
    }
  }

  const originalLookup = dns.lookup;
  const tracker = { record, started, abandoned };
  const wrappedLookup = wrapCallbackLookup(originalLookup, tracker);
  // The agent's own lookups: they hold DNS slots like any other, so the model sees them, but
  // they are not the app's and are counted nowhere.
  const ownLookup = wrapCallbackLookup(originalLookup, {
    started: () => {
      const ctx = { start: process.hrtime.bigint(), began: null };
      slots.submit(ctx);
      return ctx;
    },
    record: (ctx) => {
      try {
        slots.done(ctx, process.hrtime.bigint());
      } catch (e) {
        reportError('sampler:dns', e);
      }
    },
    abandoned: (ctx) => slots.abandon(ctx),
  });
  dns.lookup = wrappedLookup;

  const promises = dns.promises;
  const originalPromisesLookup = promises && promises.lookup;
  const wrappedPromisesLookup = originalPromisesLookup && wrapPromiseLookup(originalPromisesLookup, tracker);
  if (wrappedPromisesLookup) promises.lookup = wrappedPromisesLookup;
  syncBuiltinESMExports();

  return {
    name: 'dns',
    /**
     * dns.lookup for the agent's own lookups (threadpool probe, exporters): not counted as the
     * app's, but seen by the DNS-slot model, since they hold a slot like any other lookup.
     */
    ownLookup,
    /** App lookups started and not yet called back. */
    get inFlight() {
      return inFlight;
    },
    sample() {
      // One point per series for its life, frozen, whose histogram is the series' live view
      // (Histogram#view: updated in place here, at the sample): a snapshot holds no new object per
      // kept name, so nothing per name lives from one sample to the next and survives V8's
      // scavenges in between (that grew the young generation, bench/dns-names-memory.js). The
      // list is the same array until a series is added (series are never removed).
      // forEach rather than for...of over the Maps: code that runs once a second stays in V8's
      // interpreter, where for...of makes an iterator result per entry.
      if (pointList.length !== series.size + queueWaits.size) {
        pointList = [];
        series.forEach((s) => pointList.push(s.point || (s.point = livePoint('dns.lookup.duration', s.histogram, { 'dns.question.name': s.name, 'error.type': s.errorType }))));
        queueWaits.forEach((w, name) => pointList.push(w.point || (w.point = livePoint('nodejs.dns.lookup.queue_wait', w.histogram, { 'dns.question.name': name }))));
      }
      series.forEach((s) => s.histogram.view());
      queueWaits.forEach((w) => w.histogram.view());
      return pointList;
    },
    /**
     * Per-hostname figures for the interval since the last endInterval(), with totals and sampled
     * callers; each lookup's time split into queueWaitSeconds (waiting for a DNS slot) and
     * resolveSeconds; p50, p99 and standard deviation of lookup durations over the recent window,
     * and what the slowest 1 % (the tail) spent waiting and resolving. Plain JSON for the snapshot
     * and the findings; no side effect.
     * @returns {DnsDetails}
     */
    details() {
      // One details object per name for its life, updated in place (sealed; see sample()). The
      // list is the same array until a name is added (names are never removed).
      if (hostList.length !== hosts.size) {
        hostList = [];
        hosts.forEach((host) => hostList.push(host.details || (host.details = newDetails(host.name))));
      }
      const now = Date.now();
      hosts.forEach((host) => {
        const i = host.interval;
        const d = host.details;
        d.lookups = i.lookups;
        d.errors = i.errors;
        d.seconds = i.seconds;
        d.queueWaitSeconds = i.queueWaitSeconds;
        d.resolveSeconds = i.resolveSeconds;
        d.queuedLookups = i.queuedLookups;
        host.recent.stats(now - recentMs, d);
        d.maxSeconds = i.maxSeconds;
        d.duplicates = i.duplicates;
        d.maxInFlight = i.maxInFlight;
        d.timeouts = i.timeouts;
        d.inFlight = host.inFlight;
        d.totalLookups = host.lookups;
        d.callers = host.callerList || (host.callerList = callerList(host.callers));
      });
      return { inFlight, dnsSlots: slots.size, hosts: hostList };
    },
    /** Start a new interval: per-hostname interval figures and the caller budget start over. */
    endInterval() {
      hosts.forEach((host) => resetInterval(host.interval, host.inFlight));
      callerBudget = CALLER_SAMPLES_PER_INTERVAL;
    },
    close() {
      active = false;
      // Put the originals back unless someone wrapped over us; then our wrapper stays in their
      // chain and just passes calls through.
      if (dns.lookup === wrappedLookup) dns.lookup = originalLookup;
      if (wrappedPromisesLookup && promises.lookup === wrappedPromisesLookup) promises.lookup = originalPromisesLookup;
      syncBuiltinESMExports();
    },
  };
}

// The callers of a hostname, most frequent first, frozen: the same list is handed out again until
// a sampled lookup of that name changes it (at most 20 a second in all), so a sample makes no new
// objects for the callers of most names.
function callerList(callers) {
  const out = [];
  callers.forEach((c, caller) => out.push(Object.freeze({ caller, count: c.count, seconds: c.seconds })));
  return Object.freeze(out.sort((a, b) => b.count - a.count));
}

// A new interval in place: one interval object per name for its life, and no temporary per name
// per sample either.
function resetInterval(i, inFlight) {
  i.lookups = i.errors = i.seconds = i.queueWaitSeconds = i.resolveSeconds = i.queuedLookups = 0;
  i.maxSeconds = i.duplicates = i.timeouts = 0;
  i.maxInFlight = inFlight;
}

// A series' point for its life: frozen, with its histogram's live view (updated at each sample).
function livePoint(name, histogram, attributes) {
  return Object.freeze({ name, attributes: Object.freeze(attributes), histogram: histogram.view() });
}

// A name's details for its life (details() updates it in place): sealed, so that the agent's
// deepFreeze leaves it writable, and with every field from the start (mean is null, not absent,
// while the name has no recent lookup).
function newDetails(name) {
  return Object.seal({
    name, lookups: 0, errors: 0, seconds: 0, queueWaitSeconds: 0, resolveSeconds: 0, queuedLookups: 0,
    recentLookups: 0, p50: null, p99: null, stddev: null, tail: null,
    maxSeconds: 0, duplicates: 0, maxInFlight: 0, timeouts: 0, inFlight: 0, totalLookups: 0, callers: NO_CALLERS, mean: null,
  });
}

const NO_CALLERS = Object.freeze([]);

/**
 * One hostname's figures (snapshot.details.dns.hosts[]). Interval figures cover the time since the
 * last sample; totals and callers since the start.
 * @typedef {object} DnsHostDetails
 * @property {string} name the hostname, lower-cased (or _other beyond maxNames)
 * @property {number} lookups lookups started in the interval
 * @property {number} errors lookups that failed in the interval
 * @property {number} seconds sum of the durations of lookups that ended in the interval
 * @property {number} maxSeconds longest of them
 * @property {number} duplicates lookups started while another of the same name was in flight
 * @property {number} maxInFlight most lookups of this name in flight at once
 * @property {number} timeouts lookups that waited for at least one resolv.conf timeout
 * @property {number} inFlight lookups in flight now
 * @property {number} totalLookups lookups started since the start
 * @property {{ caller: string, count: number, seconds: number }[]} callers sampled calling frames
 *   ('pkg' or 'file:line'), most frequent first
 */

/**
 * snapshot.details.dns
 * @typedef {object} DnsDetails
 * @property {number} inFlight app lookups in flight now
 * @property {DnsHostDetails[]} hosts
 */

function newHost(name, recentMs) {
  return { name, lookups: 0, inFlight: 0, callers: new Map(), callerList: null, series: new Map(), interval: newInterval(0), recent: createRecent(RECENT_MAX, recentMs), details: null };
}

function newInterval(inFlight) {
  return { lookups: 0, errors: 0, seconds: 0, queueWaitSeconds: 0, resolveSeconds: 0, queuedLookups: 0, maxSeconds: 0, duplicates: 0, maxInFlight: inFlight, timeouts: 0 };
}

/**
 * libuv's DNS slots replayed: lookups get a slot FIFO as slots free. A lookup gets `began` (an
 * hrtime bigint) when it takes a slot.
 * @param {() => number} sizeOf number of slots, read at the first lookup (after the app's
 *   top-level code may have set UV_THREADPOOL_SIZE, as libuv reads it when the pool starts)
 */
function createSlotModel(sizeOf) {
  let size = null;
  let running = 0;
  let queue = [];
  let head = 0;
  const model = {
    get size() {
      return size;
    },
    submit(ctx) {
      if (size === null) size = sizeOf();
      if (running < size) {
        running++;
        ctx.began = ctx.start;
      } else {
        queue.push(ctx);
      }
    },
    done(ctx, now) {
      if (ctx.began === null) {
        // Finished while the model had it queued: a slot came free that the model did not see
        // (a lookup from before the agent started). It ran; its wait is unknown, count none.
        ctx.began = ctx.start;
        model.abandon(ctx);
        return;
      }
      running--;
      while (running < size && head < queue.length) {
        const next = queue[head];
        // Let go of it: a taken entry kept until the queue is compacted (1024 and more) kept each
        // lookup's context alive through V8's scavenges.
        queue[head++] = null;
        if (!next) continue; // abandoned
        next.began = now;
        running++;
      }
      if (head > 1024 && head * 2 > queue.length) {
        queue = queue.slice(head);
        head = 0;
      }
    },
    abandon(ctx) {
      const at = queue.indexOf(ctx, head);
      if (at !== -1) queue[at] = null;
      else if (ctx.began !== null && running > 0) running--;
    },
  };
  return model;
}

/**
 * The most recent lookups of one hostname (time, duration, wait), for percentiles.
 * @param {number} max
 * @param {number} windowMs how far back stats() is asked to reach: older entries are overwritten
 *   before the buffer grows
 */
function createRecent(max, windowMs) {
  // One buffer of (time, duration, wait) triples, grown as lookups come (16, 32, ... max) and only
  // while the oldest entry is still in the window: a name looked up once a second keeps 64 entries
  // (1.5 KiB), not 2,048 (48 KiB) once it has been looked up for half an hour.
  let capacity = Math.min(16, max);
  let buf = new Float64Array(3 * capacity);
  let next = 0;
  let count = 0;
  // What the last stats() covered: while no lookup came and none of the lookups it counted left
  // the window, the figures it wrote are still right and it writes nothing.
  let fresh = false;
  let lastOldest = Infinity;
  // The tail's figures, one object for the name's life (handed out in its details while there are
  // recent lookups), updated in place.
  let tail = null;
  return {
    add(time, seconds, waited) {
      if (count === capacity && capacity < max && buf[3 * next] >= time - windowMs) {
        // Full, below max, and the oldest entry (the next to be overwritten) still counts: grow.
        // Entries 0..count-1 are in time order from `next` on; unrolled so that they keep places.
        const grown = new Float64Array(3 * Math.min(capacity * 2, max));
        grown.set(buf.subarray(3 * next));
        grown.set(buf.subarray(0, 3 * next), 3 * (capacity - next));
        buf = grown;
        next = capacity;
        capacity = grown.length / 3;
      }
      buf[3 * next] = time;
      buf[3 * next + 1] = seconds;
      buf[3 * next + 2] = waited;
      next = (next + 1) % capacity;
      if (count < capacity) count++;
      fresh = false;
    },
    /**
     * p50, p99, mean and standard deviation of lookups since `since`, and the tail's split, written
     * into `out` (a name's details: recentLookups, p50, p99, stddev, mean, tail).
     */
    stats(since, out) {
      if (fresh && lastOldest >= since) return;
      fresh = true;
      // The durations in the window, sorted in a scratch array shared by every name (no array
      // per name per sample: these are made every interval for every kept name).
      const sorted = scratch(count);
      let n = 0;
      let oldest = Infinity;
      for (let k = 0; k < count; k++) {
        if (buf[3 * k] < since) continue;
        sorted[n++] = buf[3 * k + 1];
        if (buf[3 * k] < oldest) oldest = buf[3 * k];
      }
      lastOldest = oldest;
      out.recentLookups = n;
      if (n === 0) {
        out.p50 = out.p99 = out.stddev = out.tail = out.mean = null;
        return;
      }
      heapSort(sorted, n);
      let sum = 0;
      for (let j = 0; j < n; j++) sum += sorted[j];
      const mean = sum / n;
      let sq = 0;
      for (let j = 0; j < n; j++) sq += (sorted[j] - mean) ** 2;
      const p99 = rank(sorted, n, 0.99);
      // The tail: every lookup at or above p99 (the slowest 1 %, at least one).
      let tn = 0;
      let tWait = 0;
      let tTotal = 0;
      for (let j = n - 1; j >= 0 && sorted[j] >= p99; j--) {
        tn++;
        tTotal += sorted[j];
      }
      for (let k = 0; k < count; k++) if (buf[3 * k] >= since && buf[3 * k + 1] >= p99) tWait += buf[3 * k + 2];
      if (tail === null) tail = Object.seal({ lookups: 0, meanSeconds: 0.5, queueWaitSeconds: 0.5, resolveSeconds: 0.5 });
      tail.lookups = tn;
      tail.meanSeconds = tTotal / tn;
      tail.queueWaitSeconds = tWait / tn;
      tail.resolveSeconds = (tTotal - tWait) / tn;
      out.p50 = rank(sorted, n, 0.5);
      out.p99 = p99;
      out.stddev = Math.sqrt(sq / n);
      out.tail = tail;
      out.mean = mean;
    },
  };
}

// Ascending, in place, a[0..n): TypedArray#sort copies the array (about 1 KB per name per sample
// at 60 lookups in the window), this allocates nothing.
function heapSort(a, n) {
  for (let i = (n >> 1) - 1; i >= 0; i--) siftDown(a, i, n);
  for (let end = n - 1; end > 0; end--) {
    const t = a[0];
    a[0] = a[end];
    a[end] = t;
    siftDown(a, 0, end);
  }
}

function siftDown(a, i, end) {
  for (;;) {
    let c = 2 * i + 1;
    if (c >= end) return;
    if (c + 1 < end && a[c + 1] > a[c]) c++;
    if (a[c] <= a[i]) return;
    const t = a[i];
    a[i] = a[c];
    a[c] = t;
    i = c;
  }
}

// The q-quantile of sorted[0..n) (nearest rank).
function rank(sorted, n, q) {
  return sorted[Math.min(n - 1, Math.ceil(q * n) - 1)];
}

// One scratch array for every name's stats(), grown to the largest window seen (at most RECENT_MAX).
let scratchArray = new Float64Array(16);
function scratch(size) {
  if (scratchArray.length < size) scratchArray = new Float64Array(Math.max(size, scratchArray.length * 2));
  return scratchArray;
}

/**
 * How many resolver timeouts a lookup of this duration waited for: k when it ended just after
 * k x timeout (glibc resends after each timeout), else 0.
 * @param {number} seconds
 * @param {number} timeout resolv.conf timeout in seconds
 */
function resolverTimeouts(seconds, timeout) {
  if (!(timeout > 0) || seconds < timeout - TIMEOUT_EARLY_S) return 0;
  const k = Math.round(seconds / timeout);
  return k >= 1 && seconds >= k * timeout - TIMEOUT_EARLY_S && seconds <= k * timeout + TIMEOUT_LATE_S ? k : 0;
}

// net is loaded at the first lookup, not by the preload (it costs ~2 ms to load).
let isIP = null;

function isLookupOf(hostname) {
  if (typeof hostname !== 'string' || hostname === '') return false;
  // An IPv4 literal starts with a digit and an IPv6 one has a colon (net.isIPv4/isIPv6): other
  // names skip net.isIP, whose IPv6 regular expression was a tenth of the wrapper's cost.
  const c = hostname.charCodeAt(0);
  if ((c < 48 || c > 57) && !hostname.includes(':')) return true;
  if (isIP === null) isIP = require('net').isIP;
  return isIP(hostname) === 0;
}

// The wrappers must be invisible to the app: the same return values, the same synchronous throws
// for bad arguments, the same length, name and own symbols (dns.lookup's customPromisifyArgs makes
// util.promisify(dns.lookup) resolve { address, family }), and no change to how a rejection nobody
// handles is reported. The bookkeeping (started/record/abandoned) runs inside the app's call, so
// each call of it is guarded: a failure there is reported and the lookup goes on untimed.
// Invalid arguments make Node throw synchronously: that is no lookup, so it is not counted.

/**
 * dns.lookup, timed. Lookups go through the original, with the app's arguments and `this`.
 * @param {Function} original
 * @param {{ started: Function, record: Function, abandoned: Function }} tracker
 */
function wrapCallbackLookup(original, tracker) {
  const lookup = function lookup(hostname, options, callback) {
    const cb = typeof options === 'function' ? options : callback;
    if (typeof cb !== 'function' || !isLookupOf(hostname)) return Reflect.apply(original, this, arguments);
    const ctx = guarded(tracker.started, hostname);
    if (ctx === undefined) return Reflect.apply(original, this, arguments);
    const done = function (err) {
      guarded(tracker.record, ctx, err);
      return Reflect.apply(cb, this, arguments);
    };
    const args = Array.prototype.slice.call(arguments);
    args[typeof options === 'function' ? 1 : 2] = done;
    try {
      return Reflect.apply(original, this, args);
    } catch (err) {
      guarded(tracker.abandoned, ctx);
      throw err;
    }
  };
  return lookAlike(lookup, original);
}

/**
 * dns.promises.lookup, timed. Returns a promise derived from the original's: it settles the same
 * way one tick later, and when it rejects and nobody handles it, Node reports that unhandled
 * rejection exactly as it would have reported the original's (uvscope's handler sits on the
 * original promise, never on the one the caller holds).
 * @param {Function} original
 * @param {{ started: Function, record: Function, abandoned: Function }} tracker
 */
function wrapPromiseLookup(original, tracker) {
  const lookup = function lookup(hostname) {
    if (!isLookupOf(hostname)) return Reflect.apply(original, this, arguments);
    const ctx = guarded(tracker.started, hostname);
    if (ctx === undefined) return Reflect.apply(original, this, arguments);
    let promise;
    try {
      promise = Reflect.apply(original, this, arguments);
    } catch (err) {
      guarded(tracker.abandoned, ctx);
      throw err;
    }
    return promise.then((value) => {
      guarded(tracker.record, ctx, null);
      return value;
    }, (err) => {
      guarded(tracker.record, ctx, err);
      throw err;
    });
  };
  return lookAlike(lookup, original);
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

// Calls the bookkeeping; never throws. undefined when it failed.
function guarded(fn, a, b) {
  try {
    return fn(a, b);
  } catch (err) {
    reportError('sampler:dns', err);
    return undefined;
  }
}

module.exports = { createDnsSampler, resolverTimeouts, OTHER, wrapCallbackLookup, wrapPromiseLookup };
