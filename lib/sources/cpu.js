'use strict';

const { metricDef, NO_ATTRIBUTES } = require('./metric-def');

// The CPUs this process may use (a container's CPU quota, else its affinity mask) and, under a
// quota, the kernel's throttling of its cgroup (cpu.stat): every period (100 ms by default) the
// cgroup may run quota microseconds of CPU over all its threads; past that, its threads wait for the
// next period however idle the host is.

/** @type {readonly import('./metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('process.cpu.budget', 'gauge', '{cpu}', ['process.cpu.budget.source'],
    'CPUs this process may use: the cgroup CPU quota (cpu.max, cpu.cfs_quota_us / cpu.cfs_period_us; the smallest along the cgroup path) or the affinity mask, whichever is smaller; source says which (cgroup-v2, cgroup-v1, affinity).'),
  metricDef('container.cpu.periods', 'counter', '{period}', [],
    'CPU quota enforcement periods elapsed for the cgroup whose quota binds (cpu.stat nr_periods); absent without a quota.'),
  metricDef('container.cpu.throttled.periods', 'counter', '{period}', [],
    'Periods in which that cgroup used its whole quota and its threads were stopped until the next period (cpu.stat nr_throttled); absent without a quota.'),
  metricDef('container.cpu.throttled.time', 'counter', 's', [],
    'Time that cgroup\'s threads were throttled, summed over its CPUs (cpu.stat throttled_usec, v1 throttled_time); absent without a quota.'),
]);

/**
 * The CPU budget and, under a cgroup quota, its throttling counters.
 * @param {{ budget?: ReturnType<typeof import('./cpu-budget').createCpuBudget>, cpuUsage?: () => { user: number, system: number } }} [options]
 *   budget: a reader over a fixture tree (tests); cpuUsage: process.cpuUsage by default
 */
function createCpuSampler(options = {}) {
  // Loaded with the sampler, not with its declaration (the preload loads every declaration).
  const reader = options.budget || require('./cpu-budget').createCpuBudget();
  const cpuUsage = options.cpuUsage || (() => process.cpuUsage());
  let latest = null;
  return {
    name: 'cpu',
    sample() {
      const budget = reader.read();
      const stat = reader.stat(budget);
      const usage = cpuUsage();
      latest = {
        cpus: budget.cpus,
        quotaCpus: budget.quotaCpus,
        affinityCpus: budget.affinityCpus,
        source: budget.source,
        // cumulative: the process's CPU time (all its threads) and the cgroup's counters
        processCpuTotalSeconds: (usage.user + usage.system) / 1e6,
        throttling: stat,
      };
      /** @type {import('./index').RawPoint[]} */
      const out = [{ name: 'process.cpu.budget', attributes: { 'process.cpu.budget.source': budget.source }, value: budget.cpus }];
      if (budget.quotaCpus !== null && stat) {
        out.push(
          { name: 'container.cpu.periods', attributes: NO_ATTRIBUTES, value: stat.periods },
          { name: 'container.cpu.throttled.periods', attributes: NO_ATTRIBUTES, value: stat.throttledPeriods },
          { name: 'container.cpu.throttled.time', attributes: NO_ATTRIBUTES, value: stat.throttledSeconds },
        );
      }
      return out;
    },
    /** @returns {object|null} snapshot.details.cpu: the budget and the cumulative CPU figures of the latest sample */
    details() {
      return latest;
    },
    close() {},
  };
}

/** @type {import('./index').Source} */
const source = Object.freeze({
  name: 'cpu',
  settings: Object.freeze([]),
  metrics: METRICS,
  create: () => createCpuSampler(),
});

module.exports = { source, createCpuSampler };
