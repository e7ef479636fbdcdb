'use strict';

// What cpu-throttled (lib/findings/rules/cpu-throttled.js) says once its gate passed (the quota
// throttled the process): the figures, the summary, the evidence and the advice. Loaded then, not
// with the rule: most processes have no quota, or one that does not throttle them.

const { ms, pct, round } = require('../../core/format');
const { loopTakersText } = require('./blockers');

const cpus = (n) => `${round(n, 2)} CPU`;

/**
 * The finding over the window, its gate passed.
 * @param {object[]} window the window of interval summaries
 * @param {any} first the first interval's own figures (the rule's interval())
 * @param {any} last the last interval's
 * @param {number} periods the periods between them
 * @param {number} throttled the throttled periods between them
 * @returns {import('../rule').RuleResult}
 */
function found(window, first, last, periods, throttled) {
  const kept = window.filter((s) => s.own['cpu-throttled']);
  const after = kept.slice(1); // the intervals the deltas cover
  const seconds = Math.max(0.001, (kept[kept.length - 1].time - kept[0].time) / 1000);
  const f = figures(after, seconds, first, last, periods, throttled);
  const host = `${round(last.affinityCpus, 2)}-CPU host`;
  const lateness = f.maxDelaySeconds > 0 ? `, the event loop up to ${ms(f.maxDelaySeconds)} at a time` : '';
  return {
    summary: `The container's CPU quota (${cpus(last.quotaCpus)} of a ${host}) throttled the process in ${pct(throttled / periods)} of ${periods} periods (${round(seconds, 1)} s): its threads stopped for ${round(f.throttledSeconds, 2)} s in all${lateness}. ${usedBy(f, last, loopTakersText(after, () => true))}`,
    evidence: {
      quotaCpus: last.quotaCpus,
      budgetCpus: last.budget,
      affinityCpus: last.affinityCpus,
      periods,
      throttledPeriods: throttled,
      throttledShare: round(throttled / periods, 3),
      throttledSeconds: round(f.throttledSeconds, 4),
      windowSeconds: round(seconds, 3),
      processCpuPerSecond: round(f.processCpu, 3),
      loopCpuPerSecond: f.loopCpu === null ? null : round(f.loopCpu, 3),
      loopWaitSeconds: f.loopWait === null ? null : round(f.loopWait, 4),
      loopUtilization: f.utilization === null ? null : round(f.utilization, 3),
      poolComputing: f.poolComputing === null ? null : round(f.poolComputing, 3),
      maxDelaySeconds: round(f.maxDelaySeconds, 4),
    },
    advice: adviceOf(f, last),
    impact: {
      secondsPerSecond: f.lost,
      score: f.lost,
    },
  };
}

// What the window's intervals tell: throttled time, the process's CPU per second, the loop's CPU,
// wait and utilization, pool threads computing, the loop's worst delay, and the time lost.
function figures(after, seconds, first, last, periods, throttled) {
  const own = after.map((s) => s.own['cpu-throttled']);
  const sum = (pick) => {
    const known = own.map(pick).filter((v) => typeof v === 'number');
    return known.length === own.length ? known.reduce((a, v) => a + v, 0) : null;
  };
  const mean = (vals) => (vals.length ? vals.reduce((a, v) => a + v, 0) / vals.length : null);
  const loopCpuSeconds = sum((o) => o.loopCpuSeconds);
  const loopWait = sum((o) => o.loopWaitSeconds);
  const throttledSeconds = last.throttledSeconds - first.throttledSeconds;
  const busy = after.map((s) => s.pool && s.pool.busy).filter((b) => b && b.available);
  // The main thread's run-queue wait includes its throttled time; without it, throttled time is
  // summed over the CPUs the cgroup ran on, so per CPU of the mask is an estimate of the loop's.
  const lost = loopWait !== null ? loopWait / seconds : throttledSeconds / seconds / Math.max(1, last.affinityCpus);
  return {
    periods,
    throttled,
    seconds,
    throttledSeconds,
    processCpu: (last.processCpuTotalSeconds - first.processCpuTotalSeconds) / seconds,
    loopCpu: loopCpuSeconds === null ? null : loopCpuSeconds / seconds,
    loopWait,
    utilization: mean(own.map((o) => o.utilization).filter((v) => typeof v === 'number')),
    poolComputing: busy.length ? mean(busy.map((b) => b.computing)) : null,
    maxDelaySeconds: Math.max(0, ...after.map((s) => s.delayMax || 0)),
    lost: Math.min(1, lost),
  };
}

// Who used the quota: the process against it, and the loop's (with what ran in its blocks, where
// the capture named it) and the pool's share of that.
function usedBy(f, last, loopTakers) {
  const parts = [`The process used ${cpus(f.processCpu)} of its ${cpus(last.quotaCpus)}`];
  if (f.loopCpu !== null) {
    parts.push(`${cpus(f.loopCpu)} of it JavaScript on the event loop (utilization ${pct(f.utilization || 0)}, the time it was stopped included)${loopTakers}`);
    const rest = Math.max(0, f.processCpu - f.loopCpu);
    parts.push(f.poolComputing !== null
      ? `${cpus(rest)} other threads, with ${round(f.poolComputing, 2)} pool threads computing on average`
      : `${cpus(rest)} other threads (the libuv pool, GC, worker_threads: this Node version does not tell them apart)`);
  } else if (f.poolComputing !== null) {
    parts.push(`${round(f.poolComputing, 2)} pool threads computing on average`);
  }
  let text = parts.join(', ') + '.';
  if (f.processCpu < 0.5 * last.quotaCpus) text += ' Less than half the quota on average: either its work comes in bursts that spend each period\'s quota early (several threads at once), or other processes in the same cgroup use the rest.';
  return text;
}

function adviceOf(f, last) {
  // Under a quota the process cannot show its demand; its CPU plus the time its CPUs' run queues
  // were held back with work on them (throttled time is summed per CPU) bounds it from below.
  const demand = f.processCpu + f.throttledSeconds / f.seconds;
  const limit = Math.max(last.quotaCpus + 0.5, Math.ceil(demand * 2) / 2);
  const pool = Math.max(1, Math.floor(last.budget));
  return [
    `Raise the container's CPU limit: throttled in ${pct(f.throttled / f.periods)} of periods, the process wants more than its ${cpus(last.quotaCpus)}; it used ${cpus(f.processCpu)} and was held back ${round(f.throttledSeconds / f.seconds, 2)} s per second, so it would have used at least ${cpus(demand)}: a limit of ${cpus(limit)} or more (Kubernetes resources.limits.cpu: ${limit * 1000}m), or no CPU limit with a CPU request.`,
    'Or do less CPU work: cache what is computed again and again, lower a compression level, move CPU-heavy handlers out of the request path.',
    `Size pools of CPU-bound threads to the ${cpus(last.budget)} budget (process.cpu.budget), not the host's ${round(last.affinityCpus, 2)} CPUs that os.availableParallelism() and os.cpus() report: worker_threads pools of ${pool}, and UV_THREADPOOL_SIZE no larger than CPU-bound pool work needs; more busy threads than the quota only reach the throttle sooner in each period.`,
  ];
}

module.exports = { found };
