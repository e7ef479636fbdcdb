'use strict';

// The threadpool figures only a finding's text reads (lib/findings/found/*.js, the exit report):
// job type names (lib/findings/job-types.js), the tracer's jobs over the window, busy threads,
// the lookups' times. Loaded with the first finding that needs them; the figures every sample
// needs are in lib/findings/pool.js.

const { round } = require('../../core/format');
const { typeName } = require('../job-types');

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
      const acc = byKey.get(key) || { kind: j.kind, type: j.type, package: j.package || null, seconds: 0, completed: 0, peakPending: 0, maxSeconds: 0, callers: new Map(), routes: new Map() };
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
 * A traced job type's name for a person: the package and "addon work" for an addon's work whose
 * resource name said nothing (the tracer named it by the package that submitted it), else the API
 * a developer calls (typeName).
 * @param {{ type: string, package?: string|null }} job
 * @returns {string}
 */
function jobName(job) {
  return job.package ? `${job.package} (addon work)` : typeName(job.type);
}

// Below this share of the threads a holder held on a CPU or waiting for one, its jobs mostly wait
// on something else (an addon's own threads, a lock, I/O): held, not computing.
const COMPUTING_SHARE = 0.5;

/**
 * Whether the threads a holder held were computing: 'computing', 'waiting' (held but mostly off
 * a CPU) or 'unknown' (busy threads not read: Node 20, not Linux).
 * @param {ReturnType<typeof busyThreads>} busy the held intervals' busy threads
 * @param {number} held threads the holder held (its peak in flight, at most the pool's size)
 * @returns {'computing'|'waiting'|'unknown'}
 */
function threadsUse(busy, held) {
  if (!busy || !busy.available || !(held > 0)) return 'unknown';
  return busy.computing + (busy.runnable || 0) < COMPUTING_SHARE * held ? 'waiting' : 'computing';
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
 * Lookups started in the window, their seconds (call to callback) and the longest one that
 * completed; cpu-starved's and threadpool-saturated's text read them.
 * @param {readonly object[]} window interval summaries
 */
function lookupTimes(window) {
  let count = 0;
  let seconds = 0;
  let max = null;
  for (const s of window) {
    for (const h of s.hosts || []) {
      count += h.lookups || 0;
      seconds += h.seconds || 0;
      if (h.maxSeconds > 0) max = Math.max(max || 0, h.maxSeconds);
    }
  }
  return { count, seconds, maxSeconds: max };
}

module.exports = { typeName, jobName, threadsUse, tracedJobs, busyThreads, lookupTimes };
