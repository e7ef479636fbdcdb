'use strict';

// The CPU figures the findings read: the CPUs the process may use (cpuBudget(), availableCores())
// and cpu-starved's figures of an interval (cpuFigures(), cpuStarved()), next to the pool's
// (lib/findings/pool.js), whose busy threads cpuStarved() reads.

const os = require('os');
const { findPoint } = require('../snapshot/snapshot');
const { defineColumns } = require('../core/columns');
const { busyNow } = require('./pool');

/** @typedef {import('../core/columns').Columns} Columns */

// Cells of a summary's row after the pool's figures (lib/findings/window.js): cpu-starved's.
const CPU_FIGURES = ['mainCpu', 'mainWait', 'processCpu', 'utilization', 'budget'];

/**
 * The whole CPUs to size a pool of CPU-bound threads to: the process's CPU budget
 * (process.cpu.budget: a container's CPU quota or the affinity mask), at least 1; the host's
 * CPUs when the snapshot has no budget.
 * @param {number|undefined} [budget] process.cpu.budget of the latest sample
 */
function availableCores(budget) {
  if (typeof budget === 'number' && budget > 0) return Math.max(1, Math.floor(budget));
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/**
 * The CPUs this process may use: the metric process.cpu.budget where a source gives it (the
 * cgroup's quota or the affinity mask), else the cores os.availableParallelism() counts.
 * @param {readonly object[]} points a snapshot's points
 * @returns {{ cpus: number, from: 'metric'|'cores' }}
 */
function cpuBudget(points) {
  const p = findPoint(points, 'process.cpu.budget');
  if (p && typeof p.value === 'number' && p.value > 0) return { cpus: p.value, from: 'metric' };
  return { cpus: availableCores(), from: 'cores' };
}

// cpu-starved's figures of an interval: CPU_FIGURES in cells of the window's columns (the
// summary's row), budgetFrom a field.
class CpuFigures {
  /**
   * @param {Columns} cells
   * @param {number} at the cell of mainCpu
   */
  constructor(cells, at) {
    this.cells = cells;
    this.at = at;
    this.budgetFrom = 'cores';
  }
}
defineColumns(CpuFigures.prototype, CPU_FIGURES);

/**
 * What cpu-starved keeps of each sample (seconds in the interval): the main thread's time on a
 * CPU and waiting for one (its schedstat), the whole process's CPU time, the loop's utilization
 * (the summary's: window.js summarize() read it) and the CPU budget. Nulls where the platform
 * does not tell.
 * @param {{ points: readonly object[], details: any }} sample
 * @param {object|undefined} kept what this returned for an interval that left the window, overwritten
 * @param {{ cells: Columns, cpuAt: number, utilization?: number }} summary the interval's summary
 *   (window.js): its figures go to its row's cells (summary.cpuAt)
 */
function cpuFigures(sample, kept, summary) {
  const el = (sample.details && sample.details.eventloop) || {};
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const budget = cpuBudget(sample.points);
  const out = kept || new CpuFigures(summary.cells, summary.cpuAt);
  out.mainCpu = num(el.mainThreadCpuSeconds);
  out.mainWait = num(el.mainThreadWaitSeconds);
  out.processCpu = num(el.processCpuSeconds);
  out.utilization = num(summary.utilization);
  out.budget = budget.cpus;
  out.budgetFrom = budget.from;
  return out;
}

const NOT_STARVED = Object.freeze({ pool: false, loop: false });

/**
 * Whether the app's pool threads or its main thread spent a large share of this interval waiting
 * for a CPU because of the app's own threads (cpu-starved's limits; see its docs for why these).
 * pool (Node 22+, named pool threads): runnable threads on average, milliseconds per wait (not
 * wake-ups), and the app's threads wanting more CPUs than the budget (by a margin, or by a larger
 * one while the process used less than its share of the budget). loop (every major): the main
 * thread waited a share of the interval, more than it ran, while the process used most of its CPU
 * budget (a host busy with other work is not the app starving itself).
 * @param {object} s an interval summary (lib/findings/window.js) with s.own['cpu-starved']
 * @param {Readonly<Record<string, number>>} lim
 * @returns {{ pool: boolean, loop: boolean }}
 */
function cpuStarved(s, lim) {
  const c = s.own && s.own['cpu-starved'];
  if (!c || s.startup || !(s.seconds > 0)) return NOT_STARVED;
  const main = c.mainCpu !== null && c.mainWait !== null ? (c.mainCpu + c.mainWait) / s.seconds : 0;
  // The app uses its CPUs: a host busy with other work leaves the app less than its budget.
  const usesBudget = c.processCpu === null || c.processCpu / s.seconds >= lim.cpuStarvedBudgetShare * c.budget;
  const b = busyNow(s.pool);
  // Threads wanting a CPU (on one or waiting) beyond the budget: the app's own doing when it also
  // uses its budget, or when they are so many that no other load explains them.
  const demand = b && b.available && typeof b.runnable === 'number' ? b.computing + b.runnable + main - c.budget : -Infinity;
  const pool = demand >= (usesBudget ? lim.cpuStarvedDemandMargin : lim.cpuStarvedDemandAlone)
    && b.runnable >= lim.cpuStarvedThreads
    && (b.meanWaitSeconds || 0) >= lim.cpuStarvedWaitS;
  const loop = usesBudget && c.processCpu !== null && c.mainWait !== null && c.mainCpu !== null
    && c.mainWait / s.seconds >= lim.cpuStarvedLoopShare
    && c.mainWait >= lim.cpuStarvedLoopRatio * c.mainCpu;
  return pool || loop ? { pool, loop } : NOT_STARVED;
}

/**
 * The share of their runnable time pool threads spent waiting for a CPU in an interval, where
 * the kernel tells (Node 22+), else null.
 * @param {{ available: boolean, computing?: number, runnable?: number|null }|null|undefined} busy details.threadpool.busy
 * @returns {number|null}
 */
function poolCpuWaitShare(busy) {
  if (!busy || !busy.available || typeof busy.runnable !== 'number') return null;
  const total = (busy.computing || 0) + busy.runnable;
  return total > 0 ? busy.runnable / total : 0;
}

module.exports = { CPU_FIGURES, availableCores, cpuBudget, cpuFigures, cpuStarved, poolCpuWaitShare };
