'use strict';

// The window the rules read: one summary per sampling interval (the figures of the snapshot that
// the rules need, kept small), per-hostname figures merged into 5 s buckets, and the helpers the
// rules share over it.

const { findPoint } = require('../snapshot/snapshot');
const { summarizePool } = require('./pool');

/**
 * One interval's figures, as the rules read them.
 * @param {{ time: number, points: readonly object[], details: object }} sample
 * @param {{ time: number, points: readonly object[] }|null} previous what the last interval kept (its probe waits)
 * @param {number} previousTime the last interval's time (or the engine's start)
 */
function summarize(sample, previous, previousTime) {
  const value = (name, attrs = {}) => {
    const p = findPoint(sample.points, name, attrs);
    return p ? p.value : undefined;
  };
  const waitNow = findPoint(sample.points, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': 'dns' });
  const waitBefore = previous && findPoint(previous.points, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': 'dns' });
  const waits = waitNow ? { count: waitNow.histogram.count - (waitBefore ? waitBefore.histogram.count : 0), sum: waitNow.histogram.sum - (waitBefore ? waitBefore.histogram.sum : 0) } : { count: 0, sum: 0 };
  const probeStuck = value('uvscope.probe.in_flight', { 'nodejs.uv.threadpool.queue': 'dns' }) || 0;
  const seconds = Math.max(0.001, (sample.time - previousTime) / 1000);
  return {
    time: sample.time,
    seconds,
    size: value('nodejs.uv.threadpool.size'),
    slots: value('nodejs.uv.threadpool.dns_slots'),
    pendingDns: (value('nodejs.uv.threadpool.pending', { 'nodejs.uv.threadpool.kind': 'dns' }) || 0) - probeStuck,
    queuedDns: Math.max(0, (value('nodejs.uv.threadpool.queued', { 'nodejs.uv.threadpool.kind': 'dns' }) || 0) - probeStuck),
    probeStuck,
    dnsWaitMean: waits.count > 0 ? waits.sum / waits.count : null,
    delayMax: value('nodejs.eventloop.delay.max'),
    cpuBudget: value('process.cpu.budget'), // CPUs the process may use (lib/sources/cpu.js)
    delayP99: value('nodejs.eventloop.delay.p99'),
    // The share of its runnable time the main thread spent on a CPU rather than waiting for one:
    // on an overloaded host or under a CPU quota the loop is late without the app blocking it.
    loopCpuShare: cpuShare(sample.details.eventloop),
    loopBlockedOnCpu: sample.details.eventloop && typeof sample.details.eventloop.blockedOnCpuMaxSeconds === 'number' ? sample.details.eventloop.blockedOnCpuMaxSeconds : null,
    // The first interval holds the app's and the agent's startup (modules loaded synchronously
    // before anything is served): its loop delay is not a blocked service.
    startup: previous === null,
    hosts: compactHosts(sample.details.dns),
    // The hostnames whose recent lookups have a tail (dns-tail-latency reads the latest only).
    tails: tailHosts(sample.details.dns),
    pool: summarizePool(sample, previous, seconds),
  };
}

// Per-hostname figures in the window are merged into at most HOST_BUCKETS buckets (5 s each over
// 60 s): the latest summary of a bucket carries the bucket's sums (and the largest per-interval
// figures), the earlier ones none. Rules sum and take maxima over the window, so they see the same
// figures as without buckets, and memory per hostname does not grow with the number of
// intervals. A bucket leaves the window with its latest interval, so host figures cover the last
// 60 to 65 s.
const HOST_BUCKETS = 12;
// Per-interval counts and sums of a hostname's details, added up when intervals merge; max* fields
// take the largest; any other number is a figure of the moment and takes the latest.
const SUMMED = new Set(['lookups', 'errors', 'seconds', 'duplicates', 'timeouts', 'queueWaitSeconds', 'resolveSeconds', 'queuedLookups', 'intervals', 'noCacheSeconds', 'noCacheQueueWait']);
const NO_HOSTS = Object.freeze([]);

/**
 * Merge the latest summary's hostnames into the bucket of the one before, while that bucket is
 * younger than bucketMs; the earlier summary then keeps none.
 * @param {object[]} window interval summaries, oldest first
 * @param {number} bucketMs
 */
function mergeHosts(window, bucketMs) {
  const summary = window[window.length - 1];
  const prev = window.length > 1 ? window[window.length - 2] : null;
  if (!prev || prev.hostsSince === undefined || summary.time - prev.hostsSince >= bucketMs) {
    summary.hostsSince = summary.time;
    return;
  }
  summary.hostsSince = prev.hostsSince;
  const byName = mergeMap;
  for (let i = 0; i < prev.hosts.length; i++) byName.set(prev.hosts[i].name, prev.hosts[i]);
  for (let i = 0; i < summary.hosts.length; i++) {
    const h = summary.hosts[i];
    const m = byName.get(h.name);
    if (!m) {
      byName.set(h.name, h);
      continue;
    }
    for (const k in h) {
      if (typeof h[k] !== 'number') continue;
      if (SUMMED.has(k)) m[k] = (m[k] || 0) + h[k];
      else if (k.startsWith('max')) m[k] = Math.max(m[k] || 0, h[k]);
      else m[k] = h[k]; // a figure of the moment (inFlight, totalLookups, ...): the latest
    }
  }
  const merged = [];
  byName.forEach((h) => merged.push(h));
  byName.clear();
  summary.hosts = merged;
  prev.hosts = NO_HOSTS;
}

// mergeHosts' index by name, emptied after each use: one Map for the engine's life rather than
// one (with a table per kept hostname) per sample.
const mergeMap = new Map();

// What the rules read of a hostname's interval, for the hostnames active in it: the window holds
// these, merged (mergeHosts), not the snapshot's full details with callers (~20 KB per kept
// hostname over a 60 s window at a 1 s interval).
function compactHosts(dns) {
  const out = [];
  const hosts = (dns && dns.hosts) || [];
  // Index loops: this runs once a sample over every hostname, where for...of makes an iterator
  // result per hostname.
  for (let i = 0; i < hosts.length; i++) {
    const h = hosts[i];
    if (!isActive(h)) continue;
    // What the rules read; add a field here to read it.
    out.push({
      name: h.name, lookups: h.lookups, duplicates: h.duplicates, maxDuplicates: h.duplicates, maxInFlight: h.maxInFlight, timeouts: h.timeouts, maxSeconds: h.maxSeconds,
      // each lookup's split (impact of threadpool-dns-saturated) and dns-no-cache's cost (zeroed
      // where other work held the pool), intervals with lookups (its sustained repetition)
      seconds: h.seconds || 0, queueWaitSeconds: h.queueWaitSeconds || 0, queuedLookups: h.queuedLookups || 0,
      noCacheSeconds: h.seconds || 0, noCacheQueueWait: h.queueWaitSeconds || 0, intervals: h.lookups > 0 ? 1 : 0,
    });
  }
  return out;
}

/**
 * Whether a hostname did anything in the interval.
 * @param {{ lookups: number, duplicates: number, timeouts: number, maxInFlight: number, maxSeconds: number }} h
 */
function isActive(h) {
  return h.lookups > 0 || h.duplicates > 0 || h.timeouts > 0 || h.maxInFlight > 0 || h.maxSeconds > 0;
}

// Hostnames whose recent lookups (the sampler's last 60 s) have a p99 above the median: the
// sample's own (frozen) host details, not copies, since only the latest summary keeps them and
// the latest snapshot holds them anyway.
function tailHosts(dns) {
  return ((dns && dns.hosts) || []).filter((h) => h.recentLookups > 0 && h.p50 !== null && h.p99 > h.p50);
}

function cpuShare(eventloop) {
  if (!eventloop || typeof eventloop.mainThreadCpuSeconds !== 'number' || typeof eventloop.mainThreadWaitSeconds !== 'number') return null;
  const runnable = eventloop.mainThreadCpuSeconds + eventloop.mainThreadWaitSeconds;
  return runnable > 0 ? eventloop.mainThreadCpuSeconds / runnable : null;
}

/**
 * The longest block of an interval, less the time the main thread waited for a CPU (an
 * overloaded host is not the app's block); 0 below the limits. Where the thread's wait is known
 * (Linux), the lateness less all the interval's wait; else scaled by the interval's CPU share.
 * @param {object} s an interval summary
 * @param {Readonly<Record<string, number>>} lim the limits (eventLoopBlockedS, eventLoopP99S)
 * @returns {number} seconds
 */
function blockedInInterval(s, lim) {
  if (s.startup) return 0;
  let max;
  let p99;
  if (typeof s.loopBlockedOnCpu === 'number') {
    max = s.loopBlockedOnCpu;
    p99 = Math.min(s.delayP99 || 0, s.loopBlockedOnCpu);
  } else {
    const share = s.loopCpuShare === null || s.loopCpuShare === undefined ? 1 : s.loopCpuShare;
    max = (s.delayMax || 0) * share;
    p99 = (s.delayP99 || 0) * share;
  }
  return max >= lim.eventLoopBlockedS || p99 >= lim.eventLoopP99S ? max : 0;
}

/**
 * The seconds the window covers (of the intervals pick keeps), at least 1 ms.
 * @param {readonly object[]} window
 * @param {(s: object) => boolean} [pick]
 */
function windowSeconds(window, pick) {
  let sum = 0;
  for (let i = 0; i < window.length; i++) if (!pick || pick(window[i])) sum += window[i].seconds || 0;
  return Math.max(0.001, sum);
}

/**
 * A per-host figure summed over the window, largest first (names whose sum is 0 left out).
 * @param {readonly object[]} window
 * @param {(h: object) => number} pick
 * @returns {{ name: string, value: number }[]}
 */
function aggregate(window, pick) {
  const sums = new Map();
  // Index loops: this runs every sample over every kept name.
  for (let w = 0; w < window.length; w++) {
    const hosts = window[w].hosts;
    for (let i = 0; i < hosts.length; i++) {
      const v = pick(hosts[i]);
      if (v) sums.set(hosts[i].name, (sums.get(hosts[i].name) || 0) + v); // zeros would be filtered out below
    }
  }
  if (sums.size === 0) return [];
  return [...sums].filter(([, v]) => v > 0).map(([name, value]) => ({ name, value })).sort((a, b) => b.value - a.value);
}

/**
 * The hostnames with the most of a figure over the window, as { name, lookups }.
 * @param {readonly object[]} window
 * @param {(h: object) => number} pick
 */
function topHosts(window, pick) {
  return aggregate(window, pick).map((h) => ({ name: h.name, lookups: h.value }));
}

module.exports = { summarize, mergeHosts, isActive, blockedInInterval, windowSeconds, aggregate, topHosts, HOST_BUCKETS };
