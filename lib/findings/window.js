'use strict';

// The window the rules read: one summary per sampling interval (the figures of the snapshot that
// the rules need, kept small, and the interval's signals, lib/findings/signals.js), per-hostname
// figures merged into 5 s buckets, and the helpers the rules share over it.

const { findPoint } = require('../snapshot/snapshot');
const { summarizePool, POOL_CELLS } = require('./pool');
const { CPU_FIGURES, CpuFigures, cpuFigures } = require('./cpu');
const { defineSignals } = require('./signals');
const { Columns, defineColumns } = require('../core/columns');
const { compactHosts, NO_HOSTS } = require('./hosts');
const { intervalBlocks } = require('./blockers');

/**
 * One interval's figures, as the rules read them.
 * @param {{ time: number, points: readonly object[], details: object }} sample
 * @param {{ time: number, points: readonly object[] }|null} previous what the last interval kept (its probe waits)
 * @param {number} previousTime the last interval's time (or the engine's start)
 * @param {object|null} [into] a summary that has left the window, overwritten rather than a new
 *   one made: at a 100 ms interval the window holds 600 summaries, each kept for 60 s, so a new
 *   one per interval is 10 objects a second that all survive scavenges (and make V8 grow its
 *   young generation)
 * @param {import('./hosts').HostPool} [spare] compact host figures that left the window, reused by compactHosts
 * @param {Columns} [cells] the window's columns (windowColumns()), where a new summary's numbers
 *   go; without, a summary has columns of its own
 */
function summarizeInterval(sample, previous, previousTime, into = null, spare = null, cells = undefined) {
  const value = (name, attrs = {}) => {
    const p = findPoint(sample.points, name, attrs);
    return p ? p.value : undefined;
  };
  const waitNow = findPoint(sample.points, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': 'dns' });
  const waitBefore = previous && findPoint(previous.points, 'nodejs.uv.threadpool.queue_wait', { 'nodejs.uv.threadpool.queue': 'dns' });
  const waitCount = waitNow ? waitNow.histogram.count - (waitBefore ? waitBefore.histogram.count : 0) : 0;
  const waitSum = waitNow ? waitNow.histogram.sum - (waitBefore ? waitBefore.histogram.sum : 0) : 0;
  const probeStuck = value('uvscope.probe.in_flight', { 'nodejs.uv.threadpool.queue': 'dns' }) || 0;
  const seconds = Math.max(0.001, (sample.time - previousTime) / 1000);
  const s = into || new Summary(cells || windowColumns(1));
  if (into && spare) spare.release(into.hosts);
  s.time = sample.time;
  s.seconds = seconds;
  s.size = value('nodejs.uv.threadpool.size');
  s.slots = value('nodejs.uv.threadpool.dns_slots');
  s.pendingDns = (value('nodejs.uv.threadpool.pending', { 'nodejs.uv.threadpool.kind': 'dns' }) || 0) - probeStuck;
  s.queuedDns = Math.max(0, (value('nodejs.uv.threadpool.queued', { 'nodejs.uv.threadpool.kind': 'dns' }) || 0) - probeStuck);
  s.probeStuck = probeStuck;
  s.dnsWaitMean = waitCount > 0 ? waitSum / waitCount : null;
  s.delayMax = value('nodejs.eventloop.delay.max');
  // the share of the interval the loop was busy (the signals' loopLate, the CPU figures)
  s.utilization = value('nodejs.eventloop.utilization');
  s.cpuBudget = value('process.cpu.budget'); // CPUs the process may use (lib/sources/cpu.js)
  s.delayP99 = value('nodejs.eventloop.delay.p99');
  // The share of its runnable time the main thread spent on a CPU rather than waiting for one:
  // on an overloaded host or under a CPU quota the loop is late without the app blocking it.
  s.loopCpuShare = cpuShare(sample.details.eventloop);
  s.loopBlockedOnCpu = sample.details.eventloop && typeof sample.details.eventloop.blockedOnCpuMaxSeconds === 'number' ? sample.details.eventloop.blockedOnCpuMaxSeconds : null;
  // The first interval holds the app's and the agent's startup (modules loaded synchronously
  // before anything is served): its loop delay is not a blocked service.
  s.startup = previous === null;
  s.hosts = compactHosts(sample.details.dns, spare);
  // the interval's blocks of the loop and what ran in them (lib/findings/blockers.js), or null
  s.blocks = intervalBlocks(sample.details.blockers, into && into.blocks);
  s.pool = summarizePool(sample, previous, seconds, into && into.pool, s.cells, s.at + SUMMARY_FIGURES.length);
  cpuFigures(sample, s);
  s.hostsSince = undefined;
  // worked out by the engine (signals.js deriveSignals()) once the summary is made
  s.signals = 0;
  s.loopBlocked = 0;
  s.loud = 0;
  return s;
}

// The numbers of an interval, kept in the window's columns (lib/core/columns.js: a
// Float64Array allocated once for the window, not a heap number per figure per summary), read and
// written as properties.
const SUMMARY_FIGURES = ['time', 'seconds', 'size', 'slots', 'pendingDns', 'queuedDns', 'probeStuck', 'dnsWaitMean',
  'delayMax', 'utilization', 'cpuBudget', 'delayP99', 'loopCpuShare', 'loopBlockedOnCpu', 'loopBlocked'];
// A row: the summary's figures, the pool's (its probes' waits), its CPU figures.
const ROW = SUMMARY_FIGURES.length + POOL_CELLS + CPU_FIGURES.length;

/**
 * Columns for a window of rows summaries.
 * @param {number} rows
 */
function windowColumns(rows) {
  return new Columns(rows, ROW);
}

// Every field from the start (own is the engine's), so that every summary has one shape;
// SUMMARY_FIGURES are accessors on the prototype (summarizeInterval() sets every one), and so are
// the boolean signals (bits of `signals`: s.poolHeld, s.cpuStarvedPool, ...).
class Summary {
  /** @param {Columns} cells */
  constructor(cells) {
    this.cells = cells;
    this.at = cells.row();
    this.startup = false;
    /** @type {object[]} */
    this.hosts = NO_HOSTS;
    /** @type {any} */
    this.pool = null;
    /** @type {import('./blockers').IntervalBlocks | null} */
    this.blocks = null;
    this.cpu = new CpuFigures(cells, this.at + SUMMARY_FIGURES.length + POOL_CELLS);
    /** @type {number|undefined} */
    this.hostsSince = undefined;
    /** @type {any} */
    this.own = null;
    // The interval's boolean signals, a bit each (lib/findings/signals.js).
    this.signals = 0;
    // The rules with quiet() this interval is not quiet for, a bit each (the engine's).
    this.loud = 0;
  }
}
defineColumns(Summary.prototype, SUMMARY_FIGURES);
defineSignals(Summary.prototype);

function cpuShare(eventloop) {
  if (!eventloop || typeof eventloop.mainThreadCpuSeconds !== 'number' || typeof eventloop.mainThreadWaitSeconds !== 'number') return null;
  const runnable = eventloop.mainThreadCpuSeconds + eventloop.mainThreadWaitSeconds;
  return runnable > 0 ? eventloop.mainThreadCpuSeconds / runnable : null;
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

module.exports = { summarizeInterval, windowColumns, windowSeconds, aggregate, topHosts };
