'use strict';

// An interval's signals: each judgement about an interval, made once, here, as its summary enters
// the window (the engine calls deriveSignals()), and handed on by name. Rules read them from the
// summary (s.poolHeld, s.loopBlocked, s.cpuStarvedPool, ...); the snapshot carries the latest
// interval's (snapshot.signals, snapshotSignals()), which the text report and the page read. A
// new rule about an interval (what blocked the loop, a listen queue that overflowed) reads these
// rather than testing the figures again with numbers of its own.
//
//   poolHeld           no thread was free: the work probe waited poolWaitS beyond the loop's delay
//                      (lib/core/pool-held.js: the threadpool sampler arms its tracer on the same test)
//   loopBlocked        seconds the loop was blocked in the interval, beyond the main thread's wait
//                      for a CPU; 0 below eventLoopBlockedS (max) and eventLoopP99S (p99)
//   loopWasBlocked     loopBlocked > 0 (a bit: reading the seconds from the window's columns
//                      makes a heap number each time, and the gates run every sample)
//   loopRanLate        the delay max or p99 crossed those limits, before the CPU wait is taken out
//   dnsQueued          lookups queued for a DNS slot while a thread outside the slots was free
//   poolThreadsStarved pool threads waited for a CPU (lib/core/cpu-wait.js: the sampler's test too)
//   cpuStarvedPool     ...and the app's threads wanted more CPUs than its budget
//   cpuStarvedLoop     the main thread waited for a CPU a large share of the interval, the process
//                      using most of its budget
//   callbackWait       the lookups' discount: the loop's longest delay times its busy share, what a
//                      callback waits for the loop at most (dns-no-cache's cost model takes it out)

const { POOL_THREADS_STARVED, poolThreadsStarved, poolCpuWaitShare } = require('../core/cpu-wait');
const { POOL_HELD, poolHeld } = require('../core/pool-held');
const { poolWait, busyNow } = require('./pool');

/**
 * The limits the signals read, declared here once; each is documented with the rule that is
 * about it (signalLimits()), and overridable by name in the engine's limits.
 */
const SIGNAL_LIMITS = Object.freeze({
  ...POOL_HELD, // poolWaitS: the work probe waited this long for any thread beyond the loop's delay: the pool is held
  dnsWaitS: 0.02, // the dns probe waited this long for a DNS slot: lookups are queueing
  eventLoopBlockedS: 0.1, // one delay this long
  eventLoopP99S: 0.05, // or an interval p99 this long (both beyond the time the main thread waited for a CPU)
  ...POOL_THREADS_STARVED,
  cpuStarvedDemandMargin: 0.5, // the app's threads (pool + loop) want at least the CPU budget plus this
  cpuStarvedDemandAlone: 1.5, // ...or plus this, while the process uses less than cpuStarvedBudgetShare of its budget
  cpuStarvedLoopShare: 0.3, // the main thread waited for a CPU this share of the interval
  cpuStarvedLoopRatio: 2, // ...and at least this many times as long as it ran
  cpuStarvedBudgetShare: 0.6, // the loop only while the process used this share of its CPU budget
});

/**
 * Some of the signals' limits, for the declaration of the rule whose docs cite them.
 * @param {...keyof typeof SIGNAL_LIMITS} names
 * @returns {Record<string, number>}
 */
function signalLimits(...names) {
  /** @type {Record<string, number>} */
  const out = {};
  for (const n of names) out[n] = SIGNAL_LIMITS[n];
  return out;
}

// A summary's boolean signals, one bit each in its `signals` field.
const POOL_HELD_BIT = 1;
const POOL_THREADS_STARVED_BIT = 2;
const CPU_STARVED_POOL = 4;
const CPU_STARVED_LOOP = 8;
const LOOP_BLOCKED = 16;
const LOOP_LATE = 32;
const DNS_QUEUED = 64;

/**
 * Work out an interval's signals and keep them in its summary (its `signals` bits and its
 * loopBlocked cell). Called once per interval, as the summary enters the window.
 * @param {any} s an interval summary (lib/findings/window.js)
 * @param {any} lim the engine's limits (LIMITS, with SIGNAL_LIMITS among them)
 */
function deriveSignals(s, lim) {
  let bits = 0;
  if (s.pool) {
    if (poolHeld(poolWait(s), lim)) bits |= POOL_HELD_BIT;
    if (poolThreadsStarved(busyNow(s.pool), lim)) bits |= POOL_THREADS_STARVED_BIT;
  }
  const starved = cpuStarved(s, lim, (bits & POOL_THREADS_STARVED_BIT) !== 0);
  if (starved === 1 || starved === 3) bits |= CPU_STARVED_POOL;
  if (starved >= 2) bits |= CPU_STARVED_LOOP;
  if (dnsQueued(s, lim, (bits & POOL_HELD_BIT) !== 0)) bits |= DNS_QUEUED;
  const blocked = blockedInInterval(s, lim);
  if (blocked > 0) bits |= LOOP_BLOCKED;
  if ((s.delayMax || 0) >= lim.eventLoopBlockedS || (s.delayP99 || 0) >= lim.eventLoopP99S) bits |= LOOP_LATE;
  s.signals = bits;
  s.loopBlocked = blocked;
}

/**
 * Define the boolean signals as getters of a summary's prototype.
 * @param {object} proto
 */
function defineSignals(proto) {
  const bit = (name, b) => Object.defineProperty(proto, name, {
    get() {
      return (this.signals & b) !== 0;
    },
    enumerable: true,
  });
  bit('poolHeld', POOL_HELD_BIT);
  bit('poolThreadsStarved', POOL_THREADS_STARVED_BIT);
  bit('cpuStarvedPool', CPU_STARVED_POOL);
  bit('cpuStarvedLoop', CPU_STARVED_LOOP);
  bit('loopWasBlocked', LOOP_BLOCKED);
  bit('loopRanLate', LOOP_LATE);
  bit('dnsQueued', DNS_QUEUED);
  Object.defineProperty(proto, 'cpuStarved', {
    get() {
      return (this.signals & (CPU_STARVED_POOL | CPU_STARVED_LOOP)) !== 0;
    },
    enumerable: true,
  });
}

/**
 * Lookups queued for a DNS slot in an interval: lookups queued at the sample, and the dns probe
 * still in flight (unless the loop was blocked for half the interval) or waited dnsWaitS beyond the
 * loop's own delay (a blocked loop delays the probe's callback and keeps finished lookups counted
 * as pending until their callbacks run: only a wait beyond it is queueing). Only while the rest of
 * the pool is free: when no thread is (poolHeld), lookups wait behind other work.
 * @param {any} s an interval summary
 * @param {any} lim the limits (dnsWaitS)
 * @param {boolean} held the interval's poolHeld
 */
function dnsQueued(s, lim, held) {
  if (held || !(s.queuedDns > 0)) return false;
  const loop = s.delayMax || 0;
  const stuck = s.probeStuck && loop < s.seconds / 2;
  const waited = s.dnsWaitMean !== null && s.dnsWaitMean >= lim.dnsWaitS + loop;
  return Boolean(stuck || waited);
}

/**
 * The longest block of an interval, less the time the main thread waited for a CPU (an
 * overloaded host is not the app's block); 0 below the limits, and in the first interval (the
 * app's and the agent's startup). Where the thread's wait is known (Linux), the lateness less all
 * the interval's wait; else scaled by the interval's CPU share.
 * @param {any} s an interval summary
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
 * Whether the app's pool threads or its main thread spent a large share of this interval waiting
 * for a CPU because of the app's own threads (see cpu-starved's docs for why these limits): 0
 * neither, 1 the pool, 2 the loop, 3 both. pool (Node 22+, named pool threads): the pool threads
 * starved (poolThreadsStarved), and the app's threads wanting more CPUs than the budget (by a
 * margin, or by a larger one while the process used less than its share of the budget). loop
 * (every major): the main thread waited a share of the interval, more than it ran, while the
 * process used most of its CPU budget (a host busy with other work is not the app starving itself).
 * @param {any} s an interval summary, with its CPU figures (s.cpu)
 * @param {Readonly<Record<string, number>>} lim
 * @param {boolean} threadsStarved the interval's poolThreadsStarved
 * @returns {0|1|2|3}
 */
function cpuStarved(s, lim, threadsStarved) {
  const c = s.cpu;
  if (!c || s.startup || !(s.seconds > 0)) return 0;
  const main = c.mainCpu !== null && c.mainWait !== null ? (c.mainCpu + c.mainWait) / s.seconds : 0;
  // The app uses its CPUs: a host busy with other work leaves the app less than its budget.
  const usesBudget = c.processCpu === null || c.processCpu / s.seconds >= lim.cpuStarvedBudgetShare * c.budget;
  let pool = false;
  if (threadsStarved) {
    // Threads wanting a CPU (on one or waiting) beyond the budget: the app's own doing when it
    // also uses its budget, or when they are so many that no other load explains them.
    const b = busyNow(s.pool);
    pool = b.computing + b.runnable + main - c.budget >= (usesBudget ? lim.cpuStarvedDemandMargin : lim.cpuStarvedDemandAlone);
  }
  const loop = usesBudget && c.processCpu !== null && c.mainWait !== null && c.mainCpu !== null
    && c.mainWait / s.seconds >= lim.cpuStarvedLoopShare
    && c.mainWait >= lim.cpuStarvedLoopRatio * c.mainCpu;
  return /** @type {0|1|2|3} */ ((pool ? 1 : 0) + (loop ? 2 : 0));
}

/**
 * The share of the interval the loop was busy (its utilization; busy throughout where the sample
 * does not tell).
 * @param {{ utilization?: unknown }} s an interval summary
 * @returns {number}
 */
function busyShare(s) {
  const u = s.utilization;
  return typeof u === 'number' && u >= 0 && u <= 1 ? u : 1;
}

/**
 * The longest a lookup's callback waited for the loop in the interval, at most: the loop's
 * longest delay times its busy share (an answer that came while the loop was idle ran at once).
 * @param {any} s an interval summary
 * @returns {number} seconds
 */
function callbackWait(s) {
  return (s.delayMax || 0) * busyShare(s);
}

/**
 * The latest interval's signals as the snapshot carries them (snapshot.signals), for the text
 * report, the page and anything else that reads a snapshot: plain data, a new object per sample.
 * @param {any} s the latest interval summary
 * @returns {import('../snapshot/snapshot').Signals}
 */
function snapshotSignals(s) {
  const busy = s.pool ? busyNow(s.pool) : null;
  return {
    poolHeld: s.poolHeld,
    poolWaitSeconds: s.pool ? poolWait(s) : null,
    poolThreadsStarved: s.poolThreadsStarved,
    poolCpuWaitShare: poolCpuWaitShare(busy),
    cpuStarvedPool: s.cpuStarvedPool,
    cpuStarvedLoop: s.cpuStarvedLoop,
    loopBlockedSeconds: s.loopBlocked,
    loopRanLate: s.loopRanLate,
    callbackWaitSeconds: callbackWait(s),
  };
}

module.exports = { SIGNAL_LIMITS, signalLimits, deriveSignals, defineSignals, blockedInInterval, busyShare, callbackWait, snapshotSignals };
