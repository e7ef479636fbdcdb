'use strict';

const { defineRule, counterMoved } = require('../rule');
const { findPoint } = require('../../snapshot/snapshot');

/**
 * cpu-throttled: the kernel throttled the process's cgroup in a large share of its CPU quota's
 * periods: its threads, the event loop's among them, stopped until the next period however idle
 * the host was.
 */
module.exports = defineRule({
  id: 'cpu-throttled',
  limits: {
    // kube-prometheus' CPUThrottlingHigh alerts at 25 % of periods throttled: below that, bursts
    // (a GC, a cold cache) that the quota absorbs within a few periods.
    cpuThrottledShare: 0.25,
    // ...over at least this many periods (2 s of activity at the default 100 ms period): periods
    // count only while the cgroup has work, so an idle app's handful are no pattern.
    cpuThrottledMinPeriods: 20,
  },
  docs: {
    means: 'the container\'s CPU quota throttled the process: every thread, the event loop\'s included, stopped until the next period',
    fires: (l) => `the cgroup whose quota binds (\`cpu.stat\`) was throttled in ${Math.round(l.cpuThrottledShare * 100)} %+ of its periods over the window, counting ${l.cpuThrottledMinPeriods}+ periods (periods count only while the cgroup has work; the first sample's counters are the baseline, so startup is left out)`,
    impact: 'the seconds per second the main thread waited for a CPU (its schedstat run-queue wait, which includes throttled time) where known, else the throttled time per second over the CPUs of the affinity mask',
    advice: 'the CPU the process used against its quota and what used it (the loop\'s own CPU and utilization, with what ran in its blocks where the capture named it, pool threads computing where Node names them), a CPU limit that covers the demand (the CPU used plus the throttled time per second: a lower bound, since a quota hides the rest), less work on the loop and the pool, and pools sized to the budget, not the host\'s cores',
    example: 'the lab\'s `throttled` incident (a 0.5 CPU quota on a 2-CPU host, requests that render for 10 ms on the loop and gzip 1 MiB on the pool): "The container\'s CPU quota (0.5 CPU of a 2-CPU host) throttled the process in 85 % of 53 periods (5.3 s): its threads stopped for 2.61 s in all, the event loop up to 134 ms at a time. The process used 0.48 CPU of its 0.5 CPU, 0.08 CPU of it JavaScript on the event loop (...), 0.4 CPU other threads (...)."',
  },
  interval(sample) {
    const value = (name) => {
      const p = findPoint(sample.points, name);
      return p ? p.value : undefined;
    };
    const periods = value('container.cpu.periods');
    const cpu = sample.details && sample.details.cpu;
    if (periods === undefined || !cpu || typeof cpu.quotaCpus !== 'number') return null;
    const loop = sample.details.eventloop || {};
    const budget = findPoint(sample.points, 'process.cpu.budget');
    return {
      budget: budget ? budget.value : cpu.cpus,
      quotaCpus: cpu.quotaCpus,
      affinityCpus: cpu.affinityCpus,
      periods,
      throttledPeriods: value('container.cpu.throttled.periods'),
      throttledSeconds: value('container.cpu.throttled.time'),
      processCpuTotalSeconds: cpu.processCpuTotalSeconds,
      loopCpuSeconds: typeof loop.mainThreadCpuSeconds === 'number' ? loop.mainThreadCpuSeconds : null,
      loopWaitSeconds: typeof loop.mainThreadWaitSeconds === 'number' ? loop.mainThreadWaitSeconds : null,
      utilization: value('nodejs.eventloop.utilization'),
      moved: true, // until enter() compares it with the reading before
    };
  },
  // Whether a period was throttled since the reading before (quiet() reads it).
  ...counterMoved('cpu-throttled', 'throttledPeriods'),
  // Nothing to fire on: no period throttled since the reading before (a window of such readings
  // has no throttled period, which the limits need).
  quiet: (s, lim) => lim.cpuThrottledShare > 0 && lim.cpuThrottledMinPeriods > 0 && (!s.own['cpu-throttled'] || !s.own['cpu-throttled'].moved),
  evaluate(window, lim) {
    // The gate, every sample: the first and the last intervals with cgroup figures, found in a
    // loop that allocates nothing; the figures only once the quota throttled.
    let first = null;
    let last = null;
    let count = 0;
    for (let i = 0; i < window.length; i++) {
      const o = window[i].own['cpu-throttled'];
      if (!o) continue;
      if (first === null) first = o;
      last = o;
      count++;
    }
    if (count < 2) return null;
    const periods = last.periods - first.periods;
    const throttled = last.throttledPeriods - first.throttledPeriods;
    if (periods < lim.cpuThrottledMinPeriods || throttled < lim.cpuThrottledShare * periods) return null;
    // What it says (lib/findings/found/cpu-throttled.js) loads the first time the gate passes.
    return require('../found/cpu-throttled').found(window, first, last, periods, throttled);
  },
});
