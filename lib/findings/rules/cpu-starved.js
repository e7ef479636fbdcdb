'use strict';

const { defineRule } = require('../rule');
const throttled = require('./cpu-throttled');
const { windowSeconds } = require('../window');
const { typeName, tracedJobs, cpuFigures, cpuStarved } = require('../pool');
const { ms, pct, round } = require('../../core/format');

// What lowers each kind's CPU on the pool, for the advice.
const COST_ADVICE = Object.freeze({
  zlib: 'lower the compression level (zlib\'s default is 6; levels 1 to 4 cost a fraction of level 9 for a slightly larger output), or compress once and cache the output',
  pbkdf2: 'lower its iterations (its CPU is linear in them) or cache what it derives',
  scrypt: 'lower its cost parameter N (CPU and memory are linear in it)',
  generateKeyPair: 'generate keys once and reuse them',
});

/**
 * cpu-starved: the app's own threads want more CPUs than it has, and its pool threads (Node 22+)
 * or its main thread spend a large share of the window waiting for one. Names what waited (the
 * lookups, fs calls and the loop's lateness) and what takes the CPU (the tracer's job kinds,
 * types, callers and routes; the loop's own JavaScript).
 */
module.exports = defineRule({
  id: 'cpu-starved',
  limits: {
    cpuStarvedThreads: 0.5, // pool threads waiting for a CPU, on average over an interval
    cpuStarvedWaitS: 0.001, // ...per wait (run_delay per arrival): milliseconds are contention, microseconds wake-ups
    cpuStarvedDemandMargin: 0.5, // the app's threads (pool + loop) want at least the CPU budget plus this
    cpuStarvedDemandAlone: 1.5, // ...or plus this, while the process uses less than cpuStarvedBudgetShare of its budget
    cpuStarvedLoopShare: 0.3, // the main thread waited for a CPU this share of the interval
    cpuStarvedLoopRatio: 2, // ...and at least this many times as long as it ran
    cpuStarvedBudgetShare: 0.6, // the loop only while the process used this share of its CPU budget
    cpuStarvedIntervals: 4, // in at least this many of some twice as many consecutive intervals
  },
  docs: {
    means: 'the app\'s threads want more CPUs than it has: pool jobs (lookups, fs, crypto, zlib) and the event loop wait for a CPU, not for a thread or the network',
    fires: (l) => `in ${l.cpuStarvedIntervals}+ of ${2 * l.cpuStarvedIntervals} consecutive intervals (a sustained pattern; one odd interval does not break it, a burst of fewer does not make it), either (Node 22+, named pool threads, \`/proc/self/task/<tid>/schedstat\`) pool threads were ${l.cpuStarvedThreads}+ threads on average ready to run but waiting for a CPU, at ${ms(l.cpuStarvedWaitS)}+ per wait (a wake-up waits microseconds even with a CPU free; a thread behind others on a run queue waits a scheduler slice, milliseconds), while the pool's busy threads and the main thread (on a CPU or waiting for one) wanted the CPU budget + ${l.cpuStarvedDemandMargin} CPUs or more, + ${l.cpuStarvedDemandAlone} while the process used under ${pct(l.cpuStarvedBudgetShare)} of its budget (more threads want a CPU than there are: the app starves itself; on a host busy with other work a light thread's waits inflate this sum, one busy thread's cannot exceed 1); or (every major) the main thread waited for a CPU ${pct(l.cpuStarvedLoopShare)}+ of the interval and ${l.cpuStarvedLoopRatio}x+ as long as it ran (one thread busy beside the loop on one CPU makes it wait about a quarter of the time: not starved), while the process used ${pct(l.cpuStarvedBudgetShare)}+ of its CPU budget (process.cpuUsage(): a host busy with other work leaves the app less, and is not the app starving itself). The CPU budget is the metric \`process.cpu.budget\` where a source gives it (a cgroup quota, the affinity mask), else \`os.availableParallelism()\`. Not while a CPU quota throttled the process in the window (cpu-throttled fires instead: the quota is the cause and its finding names it)`,
    impact: 'the time pool threads and the main thread spent waiting for a CPU (thread-seconds per second of the window); `requests`: the lookups in the window',
    advice: 'what waited (lookups\' mean and slowest time, fs calls, the loop\'s wait and lateness) and what takes the CPU: the tracer\'s job kind, type, call sites and HTTP routes for pool work, the loop\'s own CPU for JavaScript; on Node 20 (pool threads not named) what cannot be told apart. Advice: CPU work on fewer threads than the CPU budget (worker_threads sized to it), a lower compression level or cached output, fewer pbkdf2 iterations, or more CPU',
    example: 'the lab\'s `starve` incident (zlib level 9 in short jobs for 16 clients on a pool of 4, pinned to one CPU; Node 24, on a loaded machine): "Pool threads wait for a CPU: on average 2.76 of 4 threads were ready to run but waited for one (7.4 ms per wait: threads short of a CPU, not wake-ups) while 0.56 computed, in 11 of 17 intervals; the app\'s pool and loop wanted 4.1 CPUs and it has 1 CPU (os.availableParallelism()). The CPU goes to zlib (zlib) jobs on the pool: 100 % of the time non-DNS jobs spent there, ... called from examples/incidents/apps/compress-app.js:32 while serving GET /export; ..."',
  },
  interval: cpuFigures,
  evaluate(window, lim, context) {
    // A sustained pattern: half or more of some stretch of twice that many intervals (an odd
    // interval, when another process took the CPU for a moment, does not break it). This gate
    // runs every sample, a loop that allocates nothing; the figures only once it passes.
    if (starvedInStretch(window, lim, 2 * lim.cpuStarvedIntervals) < lim.cpuStarvedIntervals) return null;
    const flags = window.map((s) => cpuStarved(s, lim));
    const hit = flags.map((f) => f.pool || f.loop);
    // A CPU quota that throttled the process explains the waits (a throttled thread waits on the
    // run queue): cpu-throttled names the quota, what used the CPU and the limit that covers it.
    if (throttled.evaluate(window, lim, context) !== null) return null;
    const f = figuresOf(window, window.filter((s, i) => hit[i]), window.filter((s, i) => flags[i].pool));
    return {
      summary: summaryOf(f),
      evidence: evidenceOf(f),
      advice: adviceOf(f),
      impact: { secondsPerSecond: f.lost, requests: f.lookups.count, score: f.lost },
    };
  },
});

function figuresOf(window, hot, poolHot) {
  const own = (s) => s.own['cpu-starved'];
  const last = own(window[window.length - 1]);
  const seconds = hot.reduce((a, s) => a + s.seconds, 0);
  const sum = (list, pick) => list.reduce((a, s) => a + (pick(s) || 0), 0);
  const perSecond = (pick) => sum(hot, pick) / seconds;
  const busy = poolHot.length ? poolHot : hot.filter((s) => s.pool && s.pool.busy && s.pool.busy.available);
  const poolSeconds = sum(busy, (s) => s.seconds);
  const poolMean = (pick) => (poolSeconds > 0 ? sum(busy, (s) => pick(s.pool.busy) * s.seconds) / poolSeconds : null);
  const lastBusy = [...window].reverse().map((s) => s.pool && s.pool.busy).find(Boolean) || null;
  // The kernel adds a wait to run_delay when it ends: one that spans two readings counts in the
  // second, which can then show more threads waiting than there are; capped at the threads.
  const waiting = (b) => Math.min(b.runnable || 0, Math.max(0, b.threads - b.computing));
  const pool = busy.length
    ? { available: true, threads: busy[busy.length - 1].pool.busy.threads, computing: round(poolMean((b) => b.computing), 2), runnable: round(poolMean(waiting), 2), meanWaitSeconds: poolMean((b) => b.meanWaitSeconds || 0) }
    : { available: false, reason: lastBusy && !lastBusy.available ? lastBusy.reason : 'no busy-thread figures' };
  const mainWait = perSecond((s) => own(s).mainWait);
  const mainCpu = perSecond((s) => own(s).mainCpu);
  const processCpu = hot.some((s) => own(s).processCpu !== null) ? perSecond((s) => own(s).processCpu) : null;
  let lost = 0; // thread-seconds spent waiting for a CPU in the starved intervals
  for (const s of hot) lost += (own(s).mainWait || 0) + (s.pool && s.pool.busy && s.pool.busy.available ? (s.pool.busy.runnable || 0) * s.seconds : 0);
  const jobs = tracedJobs(window);
  const probeWaits = hot.map((s) => s.pool && s.pool.work.wait).filter((w) => typeof w === 'number');
  return {
    window, hot, poolHot, pool, mainWait, mainCpu, processCpu, budget: last.budget, budgetFrom: last.budgetFrom,
    utilization: hot.some((s) => own(s).utilization !== null) ? sum(hot, (s) => own(s).utilization) / hot.length : null,
    demand: pool.available ? pool.computing + pool.runnable + mainCpu + mainWait : null,
    maxDelay: Math.max(0, ...hot.map((s) => s.delayMax || 0)),
    // the agent's work probe (a 1-byte randomFill, microseconds of CPU): submission to callback
    maxProbeWait: probeWaits.length ? Math.max(...probeWaits) : null,
    jobs,
    fsJobs: jobs.byKind.get('fs'),
    lookups: lookupsOf(window),
    lost: lost / windowSeconds(window),
  };
}

// The app's lookups over the window: how many, their mean and slowest time (call to callback).
function lookupsOf(window) {
  let count = 0;
  let seconds = 0;
  let max = 0;
  for (const s of window) {
    for (const h of s.hosts || []) {
      count += h.lookups || 0;
      seconds += h.seconds || 0;
      max = Math.max(max, h.maxSeconds || 0);
    }
  }
  return { count, meanSeconds: count > 0 ? seconds / count : null, maxSeconds: count > 0 ? max : null };
}

function budgetText(f) {
  return `${round(f.budget, 2)} CPU${f.budget === 1 ? '' : 's'} (${f.budgetFrom === 'metric' ? 'process.cpu.budget: the cgroup quota or affinity mask' : 'os.availableParallelism()'})`;
}

// What waited: the lookups, the fs calls the tracer timed, the loop.
function waitedText(f) {
  const out = [];
  if (f.lookups.count > 0) out.push(`lookups took ${ms(f.lookups.meanSeconds)} on average, up to ${ms(f.lookups.maxSeconds)} (${f.lookups.count} in the window, call to callback: a pool thread that gets no CPU resolves nothing, however fast the answer)`);
  if (f.fsJobs && f.fsJobs.completed > 0) out.push(`fs calls took ${ms(f.fsJobs.seconds / f.fsJobs.completed)} on average, submission to callback`);
  out.push(`the event loop waited for a CPU ${pct(f.mainWait)} of the time, so every request and timer ran late (delay up to ${ms(f.maxDelay)})`);
  return out.join('; ');
}

// What takes the CPU: the tracer's holder on the pool, the loop's own JavaScript, the rest.
function takersText(f) {
  const out = [];
  const h = f.jobs.holder;
  if (h) {
    const where = `${h.callers[0] ? `, called from ${h.callers[0].caller}` : ''}${h.routes[0] ? ` while serving ${h.routes[0].method} ${h.routes[0].route}` : ''}`;
    out.push(`${h.kind} (${typeName(h.type)}) jobs on the pool: ${pct(h.share)} of the time non-DNS jobs spent there, ${h.completed} done${h.completed > 0 ? `, ${ms(h.seconds / h.completed)} each from submission to callback` : ''}${where}`);
  } else if (f.pool.available) {
    out.push(`pool work the tracer did not see (it arms while the pool is full; UVSCOPE_TRACER=on names the kind, callers and routes): ${round(f.pool.computing, 2)} pool threads computing on average`);
  }
  out.push(`the event loop's own JavaScript, ${round(f.mainCpu, 2)} of a CPU${f.utilization !== null ? ` (utilization ${pct(f.utilization)}, waiting for a CPU included)` : ''}`);
  return out.join('; ');
}

function summaryOf(f) {
  const { hot, window, pool, poolHot } = f;
  if (poolHot.length > 0) {
    return `Pool threads wait for a CPU: on average ${round(pool.runnable, 2)} of ${pool.threads} threads were ready to run but waited for one (${round(pool.meanWaitSeconds * 1000, 1)} ms per wait: threads short of a CPU, not wake-ups) while ${round(pool.computing, 2)} computed, in ${poolHot.length} of ${window.length} intervals; the app's pool and loop wanted ${round(f.demand, 1)} CPUs and it has ${budgetText(f)}. The CPU goes to ${takersText(f)}. What waited: ${waitedText(f)}.`;
  }
  const others = f.processCpu !== null ? Math.max(0, f.processCpu - f.mainCpu) : null;
  const rest = pool.available
    ? `pool threads computed ${round(pool.computing, 2)} and waited ${round(pool.runnable, 2)} on average`
    : `it went to the threadpool (zlib, async crypto, addons), worker_threads or V8's own threads (GC, compiler): ${pool.reason}, so which of these cannot be told apart, nor how long pool jobs waited for a CPU${f.maxProbeWait !== null ? ` (the agent's probe, a job of microseconds, took up to ${ms(f.maxProbeWait)} from submission to callback, waiting for a thread and a CPU alike)` : ''}`;
  return `The event loop waits for a CPU: it waited ${pct(f.mainWait)} of the time, ${round(f.mainWait / Math.max(f.mainCpu, 1e-6), 1)} times as long as it ran, in ${hot.length} of ${window.length} intervals, while the process used ${f.processCpu !== null ? round(f.processCpu, 2) : '?'} of its ${budgetText(f)}: the app's own threads keep the CPU busy. The CPU goes to ${takersText(f)}${others !== null ? `; the other ${round(others, 2)} CPU ran on threads other than the loop: ${rest}` : ''}. What waited: ${waitedText(f)}.`;
}

function evidenceOf(f) {
  const h = f.jobs.holder;
  return {
    intervals: f.hot.length,
    poolIntervals: f.poolHot.length,
    windowIntervals: f.window.length,
    cpuBudget: { cpus: f.budget, from: f.budgetFrom },
    demandCpus: f.demand !== null ? round(f.demand, 2) : null,
    processCpus: f.processCpu !== null ? round(f.processCpu, 3) : null,
    poolThreads: f.pool,
    maxProbeWaitSeconds: f.maxProbeWait,
    mainThread: { waitShare: round(f.mainWait, 3), cpus: round(f.mainCpu, 3), utilization: f.utilization !== null ? round(f.utilization, 3) : null, maxDelaySeconds: f.maxDelay },
    holder: h ? { kind: h.kind, type: h.type, name: typeName(h.type), share: round(h.share, 3), completed: h.completed, meanSeconds: h.completed > 0 ? h.seconds / h.completed : null, callers: h.callers.slice(0, 5), routes: h.routes.slice(0, 5) } : null,
    tracer: f.jobs.tracer,
    waited: {
      lookups: f.lookups,
      fs: f.fsJobs ? { completed: f.fsJobs.completed, meanSeconds: f.fsJobs.completed > 0 ? f.fsJobs.seconds / f.fsJobs.completed : null } : null,
    },
  };
}

function adviceOf(f) {
  const out = [];
  const h = f.jobs.holder;
  const cpus = Math.max(1, Math.floor(f.budget));
  const workers = Math.max(1, cpus - 1);
  const sizing = `worker_threads sized to the CPU budget (${workers} worker${workers === 1 ? '' : 's'} for ${budgetText(f)}${cpus > 1 ? ', leaving the event loop a CPU' : ''}; e.g. piscina with maxThreads ${workers}), calling the synchronous variant there`;
  if (h) {
    const name = typeName(h.type);
    const where = h.callers[0] ? ` (called from ${h.callers[0].caller}${h.routes[0] ? ` for ${h.routes[0].method} ${h.routes[0].route}` : ''})` : '';
    out.push(`Run ${name}${where} on fewer threads than CPUs: on the pool it runs on up to ${f.pool.available ? f.pool.threads : 'all the'} threads at once, more than the ${budgetText(f)}, and every lookup and fs call waits for a CPU behind it. Move it to ${sizing}, so pool threads get a CPU when they have work.`);
    const cost = COST_ADVICE[name];
    if (cost) out.push(`Or spend less CPU on it: ${cost}.`);
  } else {
    out.push(`Find the CPU work: UVSCOPE_TRACER=on names the pool's job kinds, call sites and routes. Keep CPU-bound work (compression, hashing, image resizing) on fewer threads than CPUs: ${sizing}.`);
  }
  if (f.mainCpu >= 0.5) out.push(`The loop's own JavaScript uses ${round(f.mainCpu, 2)} of a CPU: move CPU-heavy JavaScript (large JSON, templating) to worker_threads too, or split it into chunks that yield.`);
  out.push(`Or give the app more CPU: ${f.demand !== null ? `its pool and loop wanted ${round(f.demand, 1)} CPUs` : `the process used ${f.processCpu !== null ? round(f.processCpu, 2) : 'all'} of its CPUs`} and it has ${budgetText(f)}.`);
  if (!f.pool.available) out.push(`Pool threads' own waits for a CPU are not known here (${f.pool.reason}); on Node 22+ uvscope reads them per thread and tells pool jobs from the other threads.`);
  return out;
}

function isStarved(s, lim) {
  const c = cpuStarved(s, lim);
  return c.pool || c.loop;
}

// The most starved intervals in any stretch of `span` consecutive ones, in a loop that allocates
// nothing.
function starvedInStretch(window, lim, span) {
  let best = 0;
  let count = 0;
  for (let i = 0; i < window.length; i++) {
    if (isStarved(window[i], lim)) count++;
    if (i >= span && isStarved(window[i - span], lim)) count--;
    if (count > best) best = count;
  }
  return best;
}
