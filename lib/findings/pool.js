'use strict';

// The threadpool figures the rules read. Two probes launched together after each sample tell who
// holds the pool (lib/sources/threadpool/sampler.js): the work probe (a 1-byte crypto.randomFill)
// waits only when no thread is free at all; the dns probe (getnameinfo of 127.0.0.1) also waits
// for one of the (size+1)/2 DNS slots. DNS work can hold at most the DNS slots, so a work probe
// that waits means the rest of the pool is held by other work, and then lookups wait behind that
// work, not behind each other.

const os = require('os');
const { findPoint } = require('../snapshot/snapshot');
const { round } = require('../core/format');

/** Provider types (Node's src/async_wrap.h) as the API a developer calls. */
const TYPE_NAMES = Object.freeze({
  PBKDF2REQUEST: 'pbkdf2',
  SCRYPTREQUEST: 'scrypt',
  RANDOMBYTESREQUEST: 'randomBytes/randomFill',
  RANDOMPRIMEREQUEST: 'generatePrime',
  CHECKPRIMEREQUEST: 'checkPrime',
  KEYPAIRGENREQUEST: 'generateKeyPair',
  KEYGENREQUEST: 'generateKey',
  HKDFREQUEST: 'hkdf',
  DERIVEBITSREQUEST: 'webcrypto deriveBits',
  SIGNREQUEST: 'sign/verify (webcrypto)',
  HASHREQUEST: 'digest (webcrypto)',
  HMACREQUEST: 'hmac (webcrypto)',
  CIPHERREQUEST: 'encrypt/decrypt (webcrypto)',
  KEYEXPORTREQUEST: 'exportKey (webcrypto)',
  ZLIB: 'zlib',
  FSREQCALLBACK: 'fs (callbacks)',
  FSREQPROMISE: 'fs.promises',
  GETADDRINFOREQWRAP: 'dns.lookup',
  GETNAMEINFOREQWRAP: 'dns.lookupService',
});

/**
 * A readable name for a job type as the tracer reports it.
 * @param {string} type provider type (PBKDF2REQUEST) or an addon's resource name
 */
function typeName(type) {
  return TYPE_NAMES[String(type).toUpperCase()] || String(type);
}

/**
 * The threadpool figures of one interval that the findings need, from the snapshot's points and,
 * when the threadpool sampler gives them, its details (probe waits, busy threads, the tracer).
 * Waits are in seconds; a wait is null when the probe gave no reading in the interval.
 * @param {{ points: readonly object[], details: object }} sample
 * @param {{ points: readonly object[] }|null} previous
 * @param {number} seconds length of the interval
 * @param {object|null} [into] the figures of a summary that left the window, overwritten (with
 *   their pending, probe and tracer parts) rather than new ones made
 */
function summarizePool(sample, previous, seconds, into = null) {
  const details = (sample.details && sample.details.threadpool) || {};
  const value = (name, attrs = {}) => {
    const p = findPoint(sample.points, name, attrs);
    return p ? p.value : undefined;
  };
  const probe = (queue, out) => {
    const fromDetails = details.probes && details.probes[queue];
    if (fromDetails) {
      const waits = [fromDetails.maxWaitSeconds, fromDetails.inFlightSeconds].filter((w) => typeof w === 'number' && w > 0);
      return probeFigures(out, waits.length ? Math.max(...waits) : (fromDetails.maxWaitSeconds === 0 ? 0 : null), fromDetails.inFlightSeconds > 0);
    }
    // Without details: the mean of the probes completed in the interval, or, for a probe still in
    // flight at sampling time, at least the interval (it was launched right after the last sample).
    const attrs = { 'nodejs.uv.threadpool.queue': queue };
    const now = findPoint(sample.points, 'nodejs.uv.threadpool.queue_wait', attrs);
    if (!now) return probeFigures(out, null, false);
    const before = previous && findPoint(previous.points, 'nodejs.uv.threadpool.queue_wait', attrs);
    const count = now.histogram.count - (before ? before.histogram.count : 0);
    const sum = now.histogram.sum - (before ? before.histogram.sum : 0);
    const stuck = (value('uvscope.probe.in_flight', attrs) || 0) > 0;
    const waits = [];
    if (count > 0) waits.push(sum / count);
    if (stuck) waits.push(seconds);
    return probeFigures(out, waits.length ? Math.max(...waits) : null, stuck);
  };
  const pending = (kind) => value('nodejs.uv.threadpool.pending', { 'nodejs.uv.threadpool.kind': kind });
  const probeIn = (queue) => value('uvscope.probe.in_flight', { 'nodejs.uv.threadpool.queue': queue }) || 0;
  const tracer = details.tracer || null;
  const pool = into || { size: undefined, slots: undefined, pending: null, work: null, dns: null, busy: null, tracer: null };
  pool.size = details.size || value('nodejs.uv.threadpool.size');
  pool.slots = details.dnsSlots || value('nodejs.uv.threadpool.dns_slots');
  // the app's own work: the agent's probes are taken out
  const p = pool.pending || (pool.pending = { dns: 0, fs: 0, crypto: 0, zlib: 0, other: 0 });
  p.dns = Math.max(0, (pending('dns') || 0) - probeIn('dns'));
  p.fs = pending('fs') || 0;
  p.crypto = pending('crypto') || 0; // the tracer does not count the agent's own probes
  p.zlib = pending('zlib') || 0;
  p.other = pending('other') || 0;
  pool.work = probe('work', pool.work);
  pool.dns = probe('dns', pool.dns);
  pool.busy = details.busy ? keptBusy(details.busy, into && into.busy) : null;
  if (tracer) {
    const t = pool.tracer || { mode: undefined, armed: false, armedSince: null, jobs: NO_JOBS };
    t.mode = tracer.mode;
    t.armed = Boolean(tracer.armed);
    t.armedSince = tracer.armedSince || null;
    t.jobs = Array.isArray(tracer.jobs) ? (tracer.jobs.length ? tracer.jobs : NO_JOBS) : NO_JOBS;
    pool.tracer = t;
  } else {
    pool.tracer = null;
  }
  return pool;
}

const NO_JOBS = Object.freeze([]);

// The busy-thread reading (details.threadpool.busy, a new object each sample) copied into the one
// of a summary that left the window when both have the same fields in the same order, else into a
// new object: the summary keeps it for 60 s, and the sampler's own would all survive scavenges.
function keptBusy(busy, kept) {
  if (typeof busy !== 'object') return busy;
  let out = kept;
  if (out) {
    const a = Object.keys(busy);
    const b = Object.keys(out);
    if (a.length !== b.length) out = null;
    for (let i = 0; out !== null && i < a.length; i++) if (a[i] !== b[i]) out = null;
  }
  if (!out) out = {};
  for (const k in busy) out[k] = busy[k];
  return out;
}

// A probe's { wait, stuck }, in out when given.
function probeFigures(out, wait, stuck) {
  if (out === null) return { wait, stuck };
  out.wait = wait;
  out.stuck = stuck;
  return out;
}

/**
 * How long a job waited for any free thread in this interval, beyond what the event loop's own
 * delay explains (a blocked loop runs every callback late), or null without a reading.
 * @param {{ pool: ReturnType<typeof summarizePool>, delayMax?: number, seconds: number }} s
 */
function poolWait(s) {
  if (!s.pool || s.pool.work.wait === null) return null;
  const loop = s.delayMax || 0;
  // A probe still in flight while the loop was blocked for most of the interval says nothing.
  if (s.pool.work.stuck && loop >= s.seconds / 2) return 0;
  return Math.max(0, s.pool.work.wait - loop);
}

/**
 * Whether no thread was free in this interval: the work probe waited at least limit seconds.
 * @param {object} s an interval summary (lib/findings/window.js) with s.pool
 * @param {Readonly<Record<string, number>>} lim the limits (poolWaitS)
 */
function poolHeld(s, lim) {
  const w = poolWait(s);
  return w !== null && w >= lim.poolWaitS;
}

/**
 * Tracer jobs summed over the intervals it was armed: seconds and completions add up, the
 * pending figure is a peak, callers and routes are counted per interval and added. The holder is
 * the non-DNS job type with the most pool time (a job still in flight counts too).
 * @param {readonly object[]} window interval summaries (lib/findings/window.js)
 */
function tracedJobs(window) {
  const byKey = new Map();
  let armedIntervals = 0;
  let tracer = null;
  for (const s of window) {
    const t = s.pool && s.pool.tracer;
    if (!t) continue;
    tracer = { mode: t.mode, armed: t.armed, armedSince: t.armedSince, armedIntervals: 0 };
    if (!t.armed && t.jobs.length === 0) continue;
    armedIntervals++;
    for (const j of t.jobs) {
      const key = `${j.kind}\u0000${j.type}`;
      const acc = byKey.get(key) || { kind: j.kind, type: j.type, seconds: 0, completed: 0, peakPending: 0, maxSeconds: 0, callers: new Map(), routes: new Map() };
      acc.seconds += j.seconds || 0;
      acc.completed += j.completed || 0;
      acc.peakPending = Math.max(acc.peakPending, j.pending || 0);
      acc.maxSeconds = Math.max(acc.maxSeconds, j.maxSeconds || 0);
      for (const c of j.callers || []) acc.callers.set(c.caller, (acc.callers.get(c.caller) || 0) + c.count);
      for (const r of j.routes || []) {
        const k = `${r.method} ${r.route}`;
        const prev = acc.routes.get(k) || { method: r.method, route: r.route, count: 0 };
        prev.count += r.count;
        acc.routes.set(k, prev);
      }
      byKey.set(key, acc);
    }
  }
  if (tracer) tracer.armedIntervals = armedIntervals;
  const all = [...byKey.values()].map((j) => ({
    ...j,
    callers: [...j.callers].map(([caller, count]) => ({ caller, count })).sort((a, b) => b.count - a.count),
    routes: [...j.routes.values()].sort((a, b) => b.count - a.count),
  }));
  // The holder's share of the time non-DNS jobs spent on the pool: lookups hold at most the DNS
  // slots, and behind a held pool their time is waiting, not holding.
  const total = all.filter((j) => j.kind !== 'dns').reduce((a, j) => a + j.seconds, 0);
  const byKind = new Map();
  for (const j of all) {
    const k = byKind.get(j.kind) || { kind: j.kind, seconds: 0, completed: 0, peakPending: 0 };
    k.seconds += j.seconds;
    k.completed += j.completed;
    k.peakPending += j.peakPending;
    byKind.set(j.kind, k);
  }
  // The holder: the non-DNS type with the most pool time (a job still in flight counts too).
  const candidates = all.filter((j) => j.kind !== 'dns' && (j.seconds > 0 || j.peakPending > 0))
    .sort((a, b) => b.seconds - a.seconds || b.peakPending - a.peakPending);
  const holder = candidates[0] ? { ...candidates[0], share: total > 0 ? candidates[0].seconds / total : 0 } : null;
  return { holder, byKind, tracer };
}

/**
 * Mean pool threads on a CPU (computing) and ready for one (runnable) over the given intervals.
 * @param {readonly object[]} hot interval summaries with s.pool
 */
function busyThreads(hot) {
  const readings = hot.map((s) => s.pool.busy).filter(Boolean);
  if (readings.length === 0) return null;
  const available = readings.filter((b) => b.available);
  if (available.length === 0) return { available: false, reason: readings[readings.length - 1].reason };
  const mean = (pick) => round(available.reduce((a, b) => a + (pick(b) || 0), 0) / available.length, 2);
  const withRunnable = available.filter((b) => typeof b.runnable === 'number');
  return {
    available: true,
    threads: available[available.length - 1].threads,
    computing: mean((b) => b.computing),
    runnable: withRunnable.length ? mean((b) => b.runnable) : null,
  };
}

/**
 * Lookups started in the window and the longest one that completed (call to callback).
 * @param {readonly object[]} window interval summaries
 */
function lookupTimes(window) {
  let count = 0;
  let max = null;
  for (const s of window) {
    for (const h of s.hosts || []) {
      count += h.lookups || 0;
      if (h.maxSeconds > 0) max = Math.max(max || 0, h.maxSeconds);
    }
  }
  return { count, maxSeconds: max };
}

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

/**
 * What cpu-starved keeps of each sample (seconds in the interval): the main thread's time on a
 * CPU and waiting for one (its schedstat), the whole process's CPU time, the loop's utilization
 * and the CPU budget. Nulls where the platform does not tell.
 * @param {{ points: readonly object[], details: any }} sample
 * @param {object} [kept] what this returned for an interval that left the window, overwritten
 */
function cpuFigures(sample, kept) {
  const el = (sample.details && sample.details.eventloop) || {};
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const elu = findPoint(sample.points, 'nodejs.eventloop.utilization');
  const budget = cpuBudget(sample.points);
  // Numbers to start with (see newSummary in window.js: a field that holds only numbers keeps them
  // in place rather than a new heap number each store); every field is set below.
  const out = kept || { mainCpu: 0, mainWait: 0, processCpu: 0, utilization: 0, budget: 0, budgetFrom: 'cores' };
  out.mainCpu = num(el.mainThreadCpuSeconds);
  out.mainWait = num(el.mainThreadWaitSeconds);
  out.processCpu = num(el.processCpuSeconds);
  out.utilization = elu ? num(elu.value) : null;
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
  const b = s.pool && s.pool.busy;
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

module.exports = { typeName, summarizePool, poolWait, poolHeld, tracedJobs, busyThreads, lookupTimes, availableCores, cpuBudget, cpuFigures, cpuStarved, poolCpuWaitShare };
