'use strict';

const os = require('os');
const { findPoint } = require('../snapshot/snapshot');

// Who holds the threadpool. Two probes launched together after each sample tell the cases apart
// (lib/sources/threadpool/sampler.js): the work probe (a 1-byte crypto.randomFill) waits only when no
// thread is free at all; the dns probe (getaddrinfo of localhost) also waits for one of the
// (size+1)/2 DNS slots. DNS work can hold at most the DNS slots, so a work probe that waits means
// the rest of the pool is held by other work, and then lookups wait behind that work, not behind
// each other.

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

// What lowers each kind's cost on the pool, for the advice.
const COST_ADVICE = Object.freeze({
  pbkdf2: 'its iterations (cost is linear in them)',
  scrypt: 'its cost parameter N (memory and time are linear in N)',
  zlib: 'the compression level, or compress once and cache the result',
  generateKeyPair: 'how often keys are generated (generate once and reuse)',
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
 */
function summarizePool(sample, previous, seconds) {
  const details = (sample.details && sample.details.threadpool) || {};
  const value = (name, attrs = {}) => {
    const p = findPoint(sample.points, name, attrs);
    return p ? p.value : undefined;
  };
  const probe = (queue) => {
    const fromDetails = details.probes && details.probes[queue];
    if (fromDetails) {
      const waits = [fromDetails.maxWaitSeconds, fromDetails.inFlightSeconds].filter((w) => typeof w === 'number' && w > 0);
      return { wait: waits.length ? Math.max(...waits) : (fromDetails.maxWaitSeconds === 0 ? 0 : null), stuck: fromDetails.inFlightSeconds > 0 };
    }
    // Without details: the mean of the probes completed in the interval, or, for a probe still in
    // flight at sampling time, at least the interval (it was launched right after the last sample).
    const attrs = { 'nodejs.uv.threadpool.queue': queue };
    const now = findPoint(sample.points, 'nodejs.uv.threadpool.queue_wait', attrs);
    if (!now) return { wait: null, stuck: false };
    const before = previous && findPoint(previous.points, 'nodejs.uv.threadpool.queue_wait', attrs);
    const count = now.histogram.count - (before ? before.histogram.count : 0);
    const sum = now.histogram.sum - (before ? before.histogram.sum : 0);
    const stuck = (value('uvscope.probe.in_flight', attrs) || 0) > 0;
    const waits = [];
    if (count > 0) waits.push(sum / count);
    if (stuck) waits.push(seconds);
    return { wait: waits.length ? Math.max(...waits) : null, stuck };
  };
  const pending = (kind) => value('nodejs.uv.threadpool.pending', { 'nodejs.uv.threadpool.kind': kind });
  const probeIn = (queue) => value('uvscope.probe.in_flight', { 'nodejs.uv.threadpool.queue': queue }) || 0;
  const tracer = details.tracer || null;
  return {
    size: details.size || value('nodejs.uv.threadpool.size'),
    slots: details.dnsSlots || value('nodejs.uv.threadpool.dns_slots'),
    // the app's own work: the agent's probes are taken out
    pending: {
      dns: Math.max(0, (pending('dns') || 0) - probeIn('dns')),
      fs: pending('fs') || 0,
      crypto: pending('crypto') || 0, // the tracer does not count the agent's own probes
      zlib: pending('zlib') || 0,
      other: pending('other') || 0,
    },
    work: probe('work'),
    dns: probe('dns'),
    busy: details.busy || null,
    tracer: tracer && {
      mode: tracer.mode,
      armed: Boolean(tracer.armed),
      armedSince: tracer.armedSince || null,
      jobs: Array.isArray(tracer.jobs) ? tracer.jobs : [],
    },
  };
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
 * @param {object} s an interval summary (lib/findings/engine.js) with s.pool
 * @param {{ poolWaitS: number }} lim
 */
function poolHeld(s, lim) {
  const w = poolWait(s);
  return w !== null && w >= lim.poolWaitS;
}

/**
 * threadpool-saturated: no thread was free for a job, in enough consecutive intervals, and DNS
 * (which can hold only its slots) is not what held the pool. Names the holder: with the tracer
 * armed, the job kind and type with the most pool time, its call sites and routes; without it,
 * fs when the fs work Node lists can fill the threads, and otherwise the work Node does not list.
 * @param {readonly object[]} window interval summaries (lib/findings/engine.js), oldest first
 * @param {{ poolWaitS: number, poolSaturatedIntervals: number }} lim
 */
function threadpoolSaturated(window, lim) {
  const held = window.map((s) => Boolean(s.pool) && poolHeld(s, lim));
  // A held pool holds for a while: a run of consecutive intervals. A host short of CPU (other
  // processes, a CPU quota) delays the probe's thread now and then, in single intervals.
  if (longestRun(held) < lim.poolSaturatedIntervals) return null;
  const hot = window.filter((s, i) => held[i]);
  const last = window[window.length - 1];
  const size = last.pool.size;
  const slots = last.pool.slots;
  const maxPoolWait = Math.max(...hot.map(poolWait));
  const dnsWaits = window.map((s) => s.pool.dns.wait).filter((w) => w !== null);
  const maxDnsWait = dnsWaits.length ? Math.max(...dnsWaits) : null;
  const peak = (kind) => Math.max(...window.map((s) => s.pool.pending[kind] || 0));
  const peakDns = peak('dns');
  const peakFs = peak('fs');
  const lookups = lookupTimes(window);
  const jobs = tracedJobs(window);
  const cores = availableCores();

  // Without the tracer, pending is all that is known of dns and fs, and pending work may be
  // waiting rather than running. fs alone enough to fill every thread: fs holds it. dns and fs
  // together unable to fill it even if all of it ran: something Node does not list holds it.
  const most = (pick) => hot.filter(pick).length > hot.length / 2;
  const fsFills = most((s) => s.pool.pending.fs >= size);
  const knownCannotFill = most((s) => Math.min(s.pool.pending.dns, slots) + s.pool.pending.fs < size);
  const busy = busyThreads(hot);
  // Threads on a CPU or ready for one most of the time are not waiting on a disk or a socket.
  const computing = busy && busy.available && busy.computing + (busy.runnable || 0) >= 0.75 * size;
  const holder = jobs.holder;
  let kind;
  let what;
  if (holder) {
    kind = holder.kind;
    what = `${holder.kind} (${typeName(holder.type)})`;
  } else if (fsFills && !computing) {
    kind = 'fs';
    what = `fs work (up to ${peakFs} fs requests pending)`;
  } else if (knownCannotFill || computing) {
    kind = 'unlisted';
    what = 'work Node does not list (async crypto such as pbkdf2 or scrypt, zlib, or a native addon\'s uv_queue_work)';
  } else {
    kind = 'undetermined';
    what = `work other than DNS: the ${peakFs} fs requests pending, if they are slow, or work Node does not list (async crypto, zlib, addons)`;
  }
  const behind = [];
  if (maxDnsWait !== null) behind.push(`dns.lookup waited up to ${ms(maxDnsWait)} for a thread${peakDns > 0 ? ` (up to ${peakDns} lookups pending${lookups.maxSeconds !== null ? `, the slowest took ${ms(lookups.maxSeconds)}` : ''})` : ''}`);
  const fsJobs = jobs.byKind.get('fs');
  if (kind === 'undetermined') {
    // fs is a suspect here, not a bystander
  } else if (kind !== 'fs' && fsJobs && fsJobs.completed > 0) behind.push(`fs calls took ${ms(fsJobs.seconds / fsJobs.completed)} on average, submission to callback`);
  else if (kind !== 'fs' && peakFs > 0) behind.push(`up to ${peakFs} fs requests were pending`);

  const summary = holder
    ? `The threadpool is held by ${what}: ${inFlight(holder.peakPending, size)}${pct(holder.share)} of the time non-DNS jobs spent on the pool (submission to callback)${holder.routes[0] ? `, submitted while serving ${holder.routes[0].method} ${holder.routes[0].route}` : ''}. A job waited up to ${ms(maxPoolWait)} for a thread; ${behind.join('; ') || 'other work waited behind it'}. Not DNS: lookups can hold at most ${slots} of the ${size} threads.`
    : `The threadpool is held by ${what}: a job waited up to ${ms(maxPoolWait)} for any of the ${size} threads in ${hot.length} of ${window.length} intervals${kind === 'unlisted' && !computing ? `, while the work Node lists (at most ${Math.min(peakDns, slots)} lookups running, ${peakFs} fs requests) could not fill them` : ''}${busy && busy.available ? `; ${round(busy.computing + (busy.runnable || 0))} of ${size} pool threads were on a CPU or waiting for one` : ''}. ${behind.length ? `Behind it, ${behind.join('; ')}. ` : ''}Not DNS: lookups can hold at most ${slots} of the ${size} threads.`;

  return {
    id: 'threadpool-saturated',
    severity: maxPoolWait >= 1 ? 'critical' : 'warning',
    summary,
    evidence: {
      intervals: hot.length,
      windowIntervals: window.length,
      threadpoolSize: size,
      dnsSlots: slots,
      cpuCores: cores,
      maxPoolWaitSeconds: maxPoolWait,
      holder: holder
        ? {
          kind: holder.kind,
          type: holder.type,
          name: typeName(holder.type),
          share: round(holder.share, 3),
          peakPending: holder.peakPending,
          completed: holder.completed,
          meanSeconds: holder.completed > 0 ? holder.seconds / holder.completed : null,
          maxSeconds: holder.maxSeconds,
          callers: holder.callers.slice(0, 5),
          routes: holder.routes.slice(0, 5),
        }
        : { kind, type: null, name: null },
      busyThreads: busy,
      tracer: jobs.tracer,
      waitingBehind: {
        dns: { maxProbeWaitSeconds: maxDnsWait, peakPending: peakDns, lookups: lookups.count, maxLookupSeconds: lookups.maxSeconds },
        fs: { peakPending: peakFs, completed: fsJobs ? fsJobs.completed : null, meanSeconds: fsJobs && fsJobs.completed > 0 ? fsJobs.seconds / fsJobs.completed : null },
      },
    },
    advice: advice({ holder, kind, size, cores, window, peakFs }),
    impact: impactOf(window, fsJobs),
  };
}

// The tracer knows only the jobs submitted since it armed: a peak below the pool size is a floor.
function inFlight(peak, size) {
  if (peak >= size) return `up to ${peak} jobs in flight for ${size} threads, `;
  if (peak > 0) return `at least ${peak} jobs in flight at once (the tracer does not count jobs submitted before it armed), `;
  return '';
}

function advice({ holder, kind, size, cores, window, peakFs }) {
  const out = [];
  if (holder && holder.kind !== 'fs') {
    const name = typeName(holder.type);
    const mean = holder.completed > 0 ? holder.seconds / holder.completed : null;
    const perSecond = holder.completed / windowSeconds(window, (s) => s.pool.tracer && s.pool.tracer.armed);
    const where = holder.callers[0] ? ` (called from ${holder.callers[0].caller}${holder.routes[0] ? ` for ${holder.routes[0].method} ${holder.routes[0].route}` : ''})` : '';
    out.push(`Move ${name}${where} off the threadpool: run it in worker_threads (a pool of workers sized to the ${cores} CPU cores, e.g. with piscina, calling the synchronous variant there), so lookups and fs calls keep their threads. Each ${name} took ${mean !== null ? ms(mean) : 'an unknown time'} from submission to callback (waiting included)${perSecond > 0 ? `, ${round(perSecond)} a second` : ''}.`);
    const cost = COST_ADVICE[name];
    if (cost) out.push(`Or lower ${name}'s cost: ${cost}. Halving it halves the CPU time each job holds a thread.`);
  } else if (kind === 'fs') {
    out.push(`Limit how many fs calls run at once (a queue such as p-limit in front of them, or streams instead of many concurrent readFile calls): up to ${peakFs} fs requests were pending for ${size} threads, and every lookup and crypto or zlib call waits behind them. Check the disk or network file system's latency.`);
  } else {
    out.push('Find the work: set UVSCOPE_TRACER=on (or leave it at auto, which arms it while the pool is held) to have the job kind, type, call sites and HTTP routes in this finding. Suspects: crypto.pbkdf2/scrypt/generateKeyPair/randomBytes with a callback, zlib calls with a callback or streams, and addons (bcrypt, argon2, sharp, sqlite3, canvas).');
    if (kind === 'undetermined') out.push(`If the ${peakFs} pending fs requests are slow (a network file system, a busy disk), limit how many run at once (a queue such as p-limit).`);
    out.push(`Move CPU-heavy work to worker_threads (sized to the ${cores} CPU cores) or lower its cost (pbkdf2 iterations, scrypt N, compression level), so lookups and fs calls keep their threads.`);
  }
  // The pool that gives the holder's peak concurrency its own threads and leaves today's pool to
  // the rest. Not the peak of everything pending: lookups and fs calls pile up because they
  // starve, and would not be in flight at once with threads free.
  const holderPeak = holder ? holder.peakPending : kind === 'fs' ? peakFs : 0;
  if (holderPeak >= size) {
    const name = holder ? typeName(holder.type) : 'fs';
    const suggested = Math.min(1024, holderPeak + size);
    out.push(`A larger pool only helps the work waiting behind it: UV_THREADPOOL_SIZE=${suggested} would give each of the ${holderPeak} ${name} jobs in flight at the peak a thread and leave today's ${size} to lookups and fs calls. ${holder && holder.kind !== 'fs' ? `CPU-bound jobs on more threads than the ${cores} CPU cores only share the CPU, so each ${name} takes longer.` : 'It does not make the fs calls themselves faster.'}`);
  } else {
    out.push(`A larger pool (UV_THREADPOOL_SIZE above ${size}) lets lookups and fs calls find a thread while the unlisted work runs, if that work does not grow to fill it; CPU-bound work on more threads than the ${cores} cores only shares the CPU.`);
  }
  return out;
}

/**
 * Whether this interval's DNS queueing is the DNS slots' own limit: lookups wait while a thread
 * outside the slots was free (the work probe did not wait). When the rest of the pool is held,
 * lookups wait behind that work instead and threadpool-saturated says so.
 * @param {object} s an interval summary (lib/findings/engine.js) with s.pool
 * @param {{ poolWaitS: number }} lim
 */
function dnsSlotsAreTheLimit(s, lim) {
  return !poolHeld(s, lim);
}

// What the held pool cost in the window: the time the app's lookups spent in flight (waiting for
// a thread, almost all of it, behind a held pool) and the fs calls' time from submission to
// callback where the tracer measured it. Host figures are merged across intervals in the window
// (lib/findings/engine.js), so this is over the whole window, not only the held intervals.
function impactOf(window, fsJobs) {
  let seconds = 0;
  let requests = 0;
  for (const s of window) {
    for (const h of s.hosts || []) {
      seconds += h.seconds || 0;
      requests += h.lookups || 0;
    }
  }
  if (fsJobs) {
    seconds += fsJobs.seconds;
    requests += fsJobs.completed;
  }
  const perSecond = seconds / windowSeconds(window, () => true);
  return { secondsPerSecond: perSecond, requests, score: perSecond };
}

// Tracer jobs summed over the intervals it was armed: seconds and completions add up, the
// pending figure is a peak, callers and routes are counted per interval and added.
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

function longestRun(flags) {
  let best = 0;
  let run = 0;
  for (const f of flags) {
    run = f ? run + 1 : 0;
    best = Math.max(best, run);
  }
  return best;
}

// Mean pool threads on a CPU (computing) and ready for one (runnable) over the hot intervals.
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

// Lookups started in the window and the longest one that completed (call to callback).
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

function windowSeconds(window, pick) {
  return Math.max(0.001, window.filter(pick).reduce((a, s) => a + s.seconds, 0));
}

function availableCores() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

function ms(seconds) {
  return seconds >= 1 ? `${seconds.toFixed(2)} s` : `${Math.round(seconds * 1000)} ms`;
}

function pct(x) {
  return `${Math.round(x * 100)} %`;
}

function round(x, digits = 1) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

module.exports = { summarizePool, poolWait, poolHeld, dnsSlotsAreTheLimit, threadpoolSaturated, typeName };
