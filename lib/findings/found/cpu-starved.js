'use strict';

// What cpu-starved (lib/findings/rules/cpu-starved.js) says once its gate passed: the figures,
// the summary, the evidence and the advice. Loaded then, not with the rule: most processes are
// never starved, and this code would be kept in V8's heap for nothing.

const { windowSeconds } = require('../window');
const { typeName, tracedJobs, lookupTimes } = require('./pool');
const { probeWait } = require('../pool');
const { ms, pct, round } = require('../../core/format');
const { loopTakersText } = require('./blockers');

// What lowers each kind's CPU on the pool, for the advice.
const COST_ADVICE = Object.freeze({
  zlib: 'lower the compression level (zlib\'s default is 6; levels 1 to 4 cost a fraction of level 9 for a slightly larger output), or compress once and cache the output',
  pbkdf2: 'lower its iterations (its CPU is linear in them) or cache what it derives',
  scrypt: 'lower its cost parameter N (CPU and memory are linear in it)',
  generateKeyPair: 'generate keys once and reuse them',
});

/**
 * The finding over the window, its gate passed.
 * @param {object[]} window the window of interval summaries
 * @param {object[]} hot the starved intervals
 * @param {object[]} poolHot those where pool threads waited
 * @returns {import('../rule').RuleResult}
 */
function found(window, hot, poolHot) {
  const f = figuresOf(window, hot, poolHot);
  return {
    summary: summaryOf(f),
    evidence: evidenceOf(f),
    advice: adviceOf(f),
    impact: { secondsPerSecond: f.lost, requests: f.lookups.count, score: f.lost },
  };
}

function figuresOf(window, hot, poolHot) {
  const cpu = (s) => s.cpu; // the interval's CPU figures (lib/findings/cpu.js)
  const last = cpu(window[window.length - 1]);
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
  const mainWait = perSecond((s) => cpu(s).mainWait);
  const mainCpu = perSecond((s) => cpu(s).mainCpu);
  const processCpu = hot.some((s) => cpu(s).processCpu !== null) ? perSecond((s) => cpu(s).processCpu) : null;
  let lost = 0; // thread-seconds spent waiting for a CPU in the starved intervals
  for (const s of hot) lost += (cpu(s).mainWait || 0) + (s.pool && s.pool.busy && s.pool.busy.available ? (s.pool.busy.runnable || 0) * s.seconds : 0);
  const jobs = tracedJobs(window);
  const probeWaits = hot.map((s) => s.pool && probeWait(s.pool, 'work')).filter((w) => typeof w === 'number');
  return {
    window, hot, poolHot, pool, mainWait, mainCpu, processCpu, budget: last.budget, budgetFrom: last.budgetFrom,
    utilization: hot.some((s) => cpu(s).utilization !== null) ? sum(hot, (s) => cpu(s).utilization) / hot.length : null,
    demand: pool.available ? pool.computing + pool.runnable + mainCpu + mainWait : null,
    maxDelay: Math.max(0, ...hot.map((s) => s.delayMax || 0)),
    // the agent's work probe (an fs.access of '/', microseconds of CPU): submission to callback
    maxProbeWait: probeWaits.length ? Math.max(...probeWaits) : null,
    jobs,
    fsJobs: jobs.byKind.get('fs'),
    lookups: lookupsOf(window),
    lost: lost / windowSeconds(window),
  };
}

// The app's lookups over the window: how many, their mean and slowest time (call to callback).
function lookupsOf(window) {
  const t = lookupTimes(window);
  return { count: t.count, meanSeconds: t.count > 0 ? t.seconds / t.count : null, maxSeconds: t.count > 0 ? t.maxSeconds || 0 : null };
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
  out.push(`the event loop's own JavaScript, ${round(f.mainCpu, 2)} of a CPU${f.utilization !== null ? ` (utilization ${pct(f.utilization)}, waiting for a CPU included)` : ''}${loopTakersText(f.window, (s) => s.cpuStarved)}`);
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

module.exports = { found };
