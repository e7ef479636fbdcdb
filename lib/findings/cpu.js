'use strict';

// The CPU figures the findings read: the CPUs the process may use (budgetOf(), availableCores())
// and an interval's CPU figures (cpuFigures(): the summary's `cpu`, which the signals' cpu-starved
// test reads, lib/findings/signals.js).

const os = require('os');
const { findPoint } = require('../snapshot/snapshot');
const { defineColumns } = require('../core/columns');

/** @typedef {import('../core/columns').Columns} Columns */

// Cells of a summary's row after the pool's figures (lib/findings/window.js): its CPU figures.
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
function budgetOf(points) {
  const p = findPoint(points, 'process.cpu.budget');
  if (p && typeof p.value === 'number' && p.value > 0) return { cpus: p.value, from: 'metric' };
  return { cpus: availableCores(), from: 'cores' };
}

// An interval's CPU figures (the summary's `cpu`): CPU_FIGURES in cells of the window's columns
// (the summary's row), budgetFrom a field.
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
 * An interval's CPU figures (seconds in the interval), into its summary's `cpu`: the main
 * thread's time on a CPU and waiting for one (its schedstat), the whole process's CPU time in the
 * interval, the loop's utilization (the summary's, as a number or null) and the CPU budget. Nulls
 * where the platform does not tell.
 * @param {{ points: readonly object[], details: any }} sample
 * @param {{ cpu: CpuFigures, utilization?: number }} summary the interval's summary (window.js)
 */
function cpuFigures(sample, summary) {
  const el = (sample.details && sample.details.eventloop) || {};
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const budget = budgetOf(sample.points);
  /** @type {any} */
  const out = summary.cpu;
  out.mainCpu = num(el.mainThreadCpuSeconds);
  out.mainWait = num(el.mainThreadWaitSeconds);
  out.processCpu = num(el.processCpuSeconds);
  out.utilization = num(summary.utilization);
  out.budget = budget.cpus;
  out.budgetFrom = budget.from;
}

module.exports = { CPU_FIGURES, CpuFigures, availableCores, budgetOf, cpuFigures };
