'use strict';

// What threadpool-saturated (lib/findings/rules/threadpool-saturated.js) says once its gate
// passed: who holds the pool, the summary, the evidence, the advice and the impact. Loaded then,
// not with the rule: most processes never hold their pool, and this code would be kept in V8's
// heap for nothing.

const { windowSeconds } = require('../window');
const { poolWait, probeWait } = require('../pool');
const { availableCores } = require('../cpu');
const { typeName, jobName, threadsUse, tracedJobs, busyThreads, lookupTimes } = require('./pool');
const { ms, pct, round } = require('../../core/format');

// What lowers each kind's cost on the pool, for the advice.
const COST_ADVICE = Object.freeze({
  pbkdf2: 'its iterations (cost is linear in them)',
  scrypt: 'its cost parameter N (memory and time are linear in N)',
  zlib: 'the compression level, or compress once and cache the result',
  generateKeyPair: 'how often keys are generated (generate once and reuse)',
});

/**
 * The finding over the window, its gate passed.
 * @param {any[]} window the window of interval summaries
 * @returns {import('../rule').RuleResult}
 */
function found(window) {
  const hot = window.filter((s) => s.poolHeld);
  const last = window[window.length - 1];
  const dnsWaits = window.map((s) => probeWait(s.pool, 'dns')).filter((w) => w !== null);
  const peak = (kind) => Math.max(...window.map((s) => s.pool.pending[kind] || 0));
  const f = {
    window,
    hot,
    size: last.pool.size,
    slots: last.pool.slots,
    maxPoolWait: Math.max(...hot.map(poolWait)),
    maxDnsWait: dnsWaits.length ? Math.max(...dnsWaits) : null,
    peakDns: peak('dns'),
    peakFs: peak('fs'),
    lookups: lookupTimes(window),
    jobs: tracedJobs(window),
    cores: availableCores(last.cpuBudget),
    busy: busyThreads(hot),
  };
  const holder = whoHolds(f);
  const fsJobs = f.jobs.byKind.get('fs');
  return {
    summary: summaryOf(f, holder, fsJobs),
    evidence: evidenceOf(f, holder, fsJobs),
    advice: adviceOf(f, holder),
    impact: impactOf(window, f.lookups, fsJobs),
  };
}

// The holder: what the tracer saw most of; without it, what the work Node lists can tell.
function whoHolds({ hot, size, slots, peakFs, busy, jobs }) {
  // Without the tracer, pending is all that is known of dns and fs, and pending work may be
  // waiting rather than running. fs alone enough to fill every thread: fs holds it. dns and fs
  // together unable to fill it even if all of it ran: something Node does not list holds it.
  const most = (pick) => hot.filter(pick).length > hot.length / 2;
  const fsFills = most((s) => s.pool.pending.fs >= size);
  const knownCannotFill = most((s) => Math.min(s.pool.pending.dns, slots) + s.pool.pending.fs < size);
  // Threads on a CPU or ready for one most of the time are not waiting on a disk or a socket.
  const computing = busy && busy.available && busy.computing + (busy.runnable || 0) >= 0.75 * size;
  const traced = jobs.holder;
  if (traced) return { traced, computing, kind: traced.kind, what: traced.package ? jobName(traced) : `${traced.kind} (${typeName(traced.type)})` };
  if (fsFills && !computing) return { traced, computing, kind: 'fs', what: `fs work (up to ${peakFs} fs requests pending)` };
  if (knownCannotFill || computing) return { traced, computing, kind: 'unlisted', what: 'work Node does not list (async crypto such as pbkdf2 or scrypt, zlib, or a native addon\'s uv_queue_work)' };
  return { traced, computing, kind: 'undetermined', what: `work other than DNS: the ${peakFs} fs requests pending, if they are slow, or work Node does not list (async crypto, zlib, addons)` };
}

function summaryOf(f, { traced, computing, kind, what }, fsJobs) {
  const { window, hot, size, slots, maxPoolWait, maxDnsWait, peakDns, peakFs, lookups, busy } = f;
  const behind = [];
  if (maxDnsWait !== null) behind.push(`dns.lookup waited up to ${ms(maxDnsWait)} for a thread${peakDns > 0 ? ` (up to ${peakDns} lookups pending${lookups.maxSeconds !== null ? `, the slowest took ${ms(lookups.maxSeconds)}` : ''})` : ''}`);
  if (kind === 'undetermined') {
    // fs is a suspect here, not a bystander
  } else if (kind !== 'fs' && fsJobs && fsJobs.completed > 0) behind.push(`fs calls took ${ms(fsJobs.seconds / fsJobs.completed)} on average, submission to callback`);
  else if (kind !== 'fs' && peakFs > 0) behind.push(`up to ${peakFs} fs requests were pending`);
  if (traced) {
    return `The threadpool is held by ${what}: ${inFlight(traced.peakPending, size)}${pct(traced.share)} of the time non-DNS jobs spent on the pool (submission to callback)${traced.routes[0] ? `, submitted while serving ${traced.routes[0].method} ${traced.routes[0].route}` : ''}. A job waited up to ${ms(maxPoolWait)} for a thread; ${behind.join('; ') || 'other work waited behind it'}. Not DNS: lookups can hold at most ${slots} of the ${size} threads.`;
  }
  return `The threadpool is held by ${what}: a job waited up to ${ms(maxPoolWait)} for any of the ${size} threads in ${hot.length} of ${window.length} intervals${kind === 'unlisted' && !computing ? `, while the work Node lists (at most ${Math.min(peakDns, slots)} lookups running, ${peakFs} fs requests) could not fill them` : ''}${busy && busy.available ? `; ${round(busy.computing + (busy.runnable || 0))} of ${size} pool threads were on a CPU or waiting for one` : ''}. ${behind.length ? `Behind it, ${behind.join('; ')}. ` : ''}Not DNS: lookups can hold at most ${slots} of the ${size} threads.`;
}

function evidenceOf(f, { traced, kind }, fsJobs) {
  return {
    intervals: f.hot.length,
    windowIntervals: f.window.length,
    threadpoolSize: f.size,
    dnsSlots: f.slots,
    cpuCores: f.cores,
    maxPoolWaitSeconds: f.maxPoolWait,
    holder: traced
      ? {
        kind: traced.kind,
        type: traced.type,
        name: jobName(traced),
        package: traced.package,
        share: round(traced.share, 3),
        peakPending: traced.peakPending,
        completed: traced.completed,
        meanSeconds: traced.completed > 0 ? traced.seconds / traced.completed : null,
        maxSeconds: traced.maxSeconds,
        callers: traced.callers.slice(0, 5),
        routes: traced.routes.slice(0, 5),
      }
      : { kind, type: null, name: null },
    busyThreads: f.busy,
    tracer: f.jobs.tracer,
    waitingBehind: {
      dns: { maxProbeWaitSeconds: f.maxDnsWait, peakPending: f.peakDns, lookups: f.lookups.count, maxLookupSeconds: f.lookups.maxSeconds },
      fs: { peakPending: f.peakFs, completed: fsJobs ? fsJobs.completed : null, meanSeconds: fsJobs && fsJobs.completed > 0 ? fsJobs.seconds / fsJobs.completed : null },
    },
  };
}

// The tracer knows only the jobs submitted since it armed: a peak below the pool size is a floor.
function inFlight(peak, size) {
  if (peak >= size) return `up to ${peak} jobs in flight for ${size} threads, `;
  if (peak > 0) return `at least ${peak} jobs in flight at once (the tracer does not count jobs submitted before it armed), `;
  return '';
}

function adviceOf({ size, cores, window, peakFs, busy }, { traced: holder, kind }) {
  const out = [];
  // Whether the holder's threads computed: crypto and zlib always do; an addon's may wait on
  // threads of its own (sharp's on libvips's), which only busy threads tell (Node 22+).
  const use = holder ? threadsUse(busy, Math.min(holder.peakPending, size)) : 'unknown';
  const mayWait = holder && holder.kind === 'other' && use === 'unknown';
  if (holder && holder.kind !== 'fs') {
    const name = jobName(holder);
    const mean = holder.completed > 0 ? holder.seconds / holder.completed : null;
    const perSecond = holder.completed / windowSeconds(window, (s) => s.pool.tracer && s.pool.tracer.armed);
    const where = holder.callers[0] ? ` (called from ${holder.callers[0].caller}${holder.routes[0] ? ` for ${holder.routes[0].method} ${holder.routes[0].route}` : ''})` : '';
    const took = (each) => `${each} took ${mean !== null ? ms(mean) : 'an unknown time'} from submission to callback (waiting included)${perSecond > 0 ? `, ${round(perSecond)} a second` : ''}.`;
    const who = holder.package || name;
    const from = holder.callers[0] ? ` (from ${holder.callers[0].caller}${holder.routes[0] ? ` for ${holder.routes[0].method} ${holder.routes[0].route}` : ''}; a queue such as p-limit in front of it)` : ' (a queue such as p-limit in front of it)';
    const notCpu = `worker_threads would not help. Give the pool more threads to wait with (${largerPool(holder.peakPending, size)}), make fewer concurrent calls into ${who}${from}, or lower ${who}'s own concurrency setting (sharp: sharp.concurrency(n))`;
    if (use === 'waiting') {
      out.push(`${name} holds the pool's threads without computing: ${round(busy.computing + (busy.runnable || 0), 2)} of the ${Math.min(holder.peakPending, size)} threads it held were on a CPU or waiting for one, so its jobs wait on something else (the addon's own threads, a lock, I/O) and ${notCpu}. ${took(`Each ${who} job`)}`);
    } else if (mayWait) {
      out.push(`Whether ${who}'s jobs compute or wait on the pool's threads cannot be told here (${busy && !busy.available && busy.reason ? busy.reason : 'busy pool threads not read'}). If they compute, move them off the threadpool to worker_threads sized to the ${cores} CPUs the process may use. If they wait (an addon that hands its work to threads of its own, as sharp does to libvips's), ${notCpu}. ${took(`Each ${who} job`)}`);
    } else {
      const subject = holder.package ? `${holder.package}'s work` : name;
      out.push(`Move ${subject}${where} off the threadpool: run it in worker_threads (a pool of workers sized to the ${cores} CPUs the process may use, e.g. with piscina, calling the synchronous variant there), so lookups and fs calls keep their threads. ${took(holder.package ? `Each ${who} job` : `Each ${name}`)}`);
      const cost = COST_ADVICE[name];
      if (cost) out.push(`Or lower ${name}'s cost: ${cost}. Halving it halves the CPU time each job holds a thread.`);
    }
  } else if (kind === 'fs') {
    out.push(`Limit how many fs calls run at once (a queue such as p-limit in front of them, or streams instead of many concurrent readFile calls): up to ${peakFs} fs requests were pending for ${size} threads, and every lookup and crypto or zlib call waits behind them. Check the disk or network file system's latency.`);
  } else {
    out.push('Find the work: set UVSCOPE_TRACER=on (or leave it at auto, which arms it while the pool is held) to have the job kind, type, call sites and HTTP routes in this finding. Suspects: crypto.pbkdf2/scrypt/generateKeyPair/randomBytes with a callback, zlib calls with a callback or streams, and addons (bcrypt, argon2, sharp, sqlite3, canvas).');
    if (kind === 'undetermined') out.push(`If the ${peakFs} pending fs requests are slow (a network file system, a busy disk), limit how many run at once (a queue such as p-limit).`);
    out.push(`Move CPU-heavy work to worker_threads (sized to the ${cores} CPUs the process may use) or lower its cost (pbkdf2 iterations, scrypt N, compression level), so lookups and fs calls keep their threads.`);
  }
  // The pool that gives the holder's peak concurrency its own threads and leaves today's pool to
  // the rest. Not the peak of everything pending: lookups and fs calls pile up because they
  // starve, and would not be in flight at once with threads free.
  const holderPeak = holder ? holder.peakPending : kind === 'fs' ? peakFs : 0;
  if (holderPeak >= size) {
    const name = holder ? jobName(holder) : 'fs';
    let cpu = 'It does not make the fs calls themselves faster.';
    if (use === 'waiting') cpu = `${holder.package || name}'s jobs barely use a CPU, so their threads cost the app little CPU.`;
    else if (mayWait) cpu = `If the jobs compute, more threads than the ${cores} CPUs the process may use only share the CPU.`;
    else if (holder && holder.kind !== 'fs') cpu = `CPU-bound jobs on more threads than the ${cores} CPUs the process may use only share the CPU, so each ${holder.package ? `${holder.package} job` : name} takes longer.`;
    out.push(`A larger pool only helps the work waiting behind it: UV_THREADPOOL_SIZE=${Math.min(1024, holderPeak + size)} would give each of the ${holderPeak} ${name} jobs in flight at the peak a thread and leave today's ${size} to lookups and fs calls. ${cpu}`);
  } else {
    out.push(`A larger pool (UV_THREADPOOL_SIZE above ${size}) lets lookups and fs calls find a thread while the unlisted work runs, if that work does not grow to fill it; CPU-bound work on more threads than the ${cores} CPUs the process may use only shares the CPU.`);
  }
  return out;
}

// The pool that gives a holder's peak its own threads and leaves today's pool to the rest.
function largerPool(peak, size) {
  return `UV_THREADPOOL_SIZE=${Math.min(1024, Math.max(peak, size) + size)}`;
}

// What the held pool cost in the window: the time the app's lookups spent in flight (waiting for
// a thread, almost all of it, behind a held pool) and the fs calls' time from submission to
// callback where the tracer measured it. Host figures are merged across intervals in the window
// (lib/findings/window.js), so this is over the whole window, not only the held intervals.
function impactOf(window, lookups, fsJobs) {
  let seconds = lookups.seconds;
  let requests = lookups.count;
  if (fsJobs) {
    seconds += fsJobs.seconds;
    requests += fsJobs.completed;
  }
  const perSecond = seconds / windowSeconds(window);
  return { secondsPerSecond: perSecond, requests, score: perSecond };
}

module.exports = { found };
