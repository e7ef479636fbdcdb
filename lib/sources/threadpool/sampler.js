'use strict';

const { dnsSlots: slotsFor, UV_THREADPOOL_SIZE } = require('../../core/libuv');
const { readSetting } = require('../../core/setting');
const { Histogram } = require('../../core/histogram');
const { QUEUE_WAIT_BUCKETS } = require('./metrics');
const { reportError } = require('../../core/errors');
const { poolThreadsStarved } = require('../../core/cpu-wait');
const { waitBeyondLoop } = require('../../core/pool-held');
const { NO_ATTRIBUTES, attributesOf } = require('../metric-def');
const { createTracer } = require('./tracer');
const { createPoolThreads } = require('./pool-threads');
const { ownRequestStarted, ownRequestEnded } = require('../resources');
const perfHooks = require('perf_hooks');

// What Node shows of threadpool work through process.getActiveResourcesInfo(). Async crypto
// (pbkdf2, scrypt, randomFill, keygen...), zlib and user addons' uv_queue_work are not listed
// there; fs.promises.readFile on recent Node reads through FSReqPromise only between chunks.
const DNS_TYPES = Object.freeze(['GetAddrInfoReqWrap', 'GetNameInfoReqWrap']);
const FS_TYPES = Object.freeze(['FSReqCallback', 'FSReqPromise']);
// A probe that waited this long says the pool is contended: probe again at the next sample.
const CONTENDED_WAIT_S = 0.005;
// Busy pool threads (mean threads computing or runnable) above which the pool has work; a probe's
// own job is a fraction of a millisecond a second.
const BUSY_THREADS = 0.05;

/**
 * Threadpool size, DNS slots, pending and queued work, and queue wait measured by probes.
 *
 * Probes run one at a time per queue, launched right after a sample, so a sample sees the
 * probe only when it is stuck (and says so in uvscope.probe.in_flight). They run only when the
 * pool may make them wait (see probesDue): a probe of an idle pool reads no wait and costs a
 * pool job and a loop wake-up each (the dns one, a getaddrinfo, most of an idle agent's
 * threadpool cost). The size is read from
 * UV_THREADPOOL_SIZE at the first sample, after the app's top-level code may have set it, and the
 * first probe (which starts the pool) comes after that read, so the agent never fixes the pool
 * size before the app does.
 *
 * @param {object} [options]
 * @param {NodeJS.ProcessEnv} [options.env] where UV_THREADPOOL_SIZE is read (process.env by default)
 * @param {Function} [options.lookupService] dns.lookupService-compatible (the agent passes its own,
 *   which the DNS sampler's slot model sees)
 * @param {string} [options.probeAddress] an address getnameinfo answers locally (from /etc/hosts)
 * @param {(done: (err?: Error|null) => void) => void} [options.workJob] submits one job on the
 *   general queue and calls done at its callback (tests); by default an fs.access of '/'
 * @param {object} [options.tracer] tracer settings ({ mode, thresholdMs, windowMs, cooldownMs });
 *   see lib/sources/threadpool/tracer.js
 * @param {{ read(): object, close?(): void }} [options.poolThreads] busy pool threads (lib/sources/threadpool/pool-threads.js)
 */
function createThreadpoolSampler(options = {}) {
  // The dns probe is a getnameinfo of 127.0.0.1 (a job that takes a DNS slot, as a getaddrinfo
  // does), not a dns.lookup: that runs net.isIP on its name, whose IPv6 regular expression V8
  // compiles to hundreds of KB an app looking up no name would pay for the probe alone.
  // lookupService checks its address with the IPv4 expression only.
  const lookupService = options.lookupService || require('dns').lookupService;
  const probeAddress = options.probeAddress || '127.0.0.1';
  // The work probe is an fs.access of '/': an fs request goes to the pool's general queue as async
  // crypto does (only getaddrinfo and getnameinfo are slow I/O), and fs is loaded in every app,
  // where crypto (OpenSSL) would cost an app that does not use it megabytes of RSS. access is not
  // one of the calls libuv may hand to io_uring instead of the pool. Node lists it (FSReqCallback)
  // while in flight: the request is counted as uvscope's own (lib/sources/resources.js) and left
  // out of what the samplers report.
  const workJob = options.workJob || (fsReadAllowed('/') ? fsAccessJob(require('fs').access) : randomFillJob());
  let size;
  let dnsSlots;
  let closed = false;
  const tracer = createTracer(options.tracer || {});
  const poolThreads = options.poolThreads || createPoolThreads();
  let last = null; // what details() shows: figures of the latest sample

  const probes = {
    dns: createProbe('probe:dns', (done) => lookupService(probeAddress, 0, done)),
    work: workJob ? createProbe('probe:work', workJob) : null,
  };

  return {
    name: 'threadpool',
    sample(tick) {
      if (size === undefined) {
        size = readSetting(UV_THREADPOOL_SIZE, options.env);
        dnsSlots = slotsFor(size);
      }
      const pending = pendingJobs(tick.resources, tracer.pendingByKind());
      const out = poolPoints(size, dnsSlots, pending);
      const { probeFigures, waitSeconds, heldSeconds } = probePoints(probes, out);
      const busy = busyPoints(poolThreads, out);
      const seen = tracer.collect();
      for (const h of seen.histograms) {
        out.push({ name: 'nodejs.uv.threadpool.job.duration', attributes: { 'nodejs.uv.threadpool.kind': h.kind, 'nodejs.uv.threadpool.job.type': h.type }, histogram: h.histogram });
      }
      out.push({ name: 'uvscope.tracer.armed', attributes: NO_ATTRIBUTES, value: seen.state.armed ? 1 : 0 });
      last = {
        size, dnsSlots, pending, probes: probeFigures, busy,
        tracer: { ...seen.state, thresholdSeconds: tracer.thresholdSeconds, jobs: seen.jobs },
      };
      // Arming takes effect from the next interval: this one's figures stay what was seen. Armed
      // on the premise of the pool findings: a probe waited for a thread beyond the loop's own
      // delay (lib/core/pool-held.js, the signal poolHeld's test: a blocked loop with the pool
      // idle makes every probe late, and arms nothing), or every thread busy, on a CPU or waiting
      // for one, or pool threads starved of a CPU (lib/core/cpu-wait.js: cpu-starved names the
      // jobs the tracer sees).
      const poolFull = busy.available && (busy.computing + (busy.runnable || 0) >= size - 0.25 || poolThreadsStarved(busy));
      tracer.consider({ waitSeconds: heldSeconds, poolFull });
      // Launched once the whole sample is done: an exporter that loads its library at the first
      // sample (the standalone OTLP SDK: 100s of ms on a busy machine) must not be taken for a
      // wait of the pool.
      const due = probesDue(pending, busy, waitSeconds);
      if (!closed && (due.dns || due.work)) {
        setImmediate(() => {
          if (closed) return;
          if (due.dns) tracer.untraced(() => probes.dns.launch());
          if (due.work && probes.work) tracer.untraced(() => probes.work.launch());
        });
      }
      return out;
    },
    /** @returns {object|null} snapshot.details.threadpool: the latest sample's size, dnsSlots, pending, probes, busy and tracer figures */
    details() {
      return last;
    },
    /** The tracer (tests, benchmarks). */
    tracer,
    close() {
      closed = true;
      tracer.close();
      if (typeof poolThreads.close === 'function') poolThreads.close();
    },
  };
}

/**
 * Which probes are worth launching after this sample. Both while the pool has work: jobs Node
 * lists are pending, the last probes waited, or pool threads were busy. The dns probe (a
 * getaddrinfo) only then: every job that takes a DNS slot is one Node lists
 * (GetAddrInfoReqWrap, GetNameInfoReqWrap), and a pool full of other work shows in the work
 * probe's wait first. Where busy threads cannot be read (libuv before 1.50 does not name them:
 * Node 20) the work probe (an fs.access) still runs at every sample, as work Node does not
 * list (crypto, zlib, addons) can fill the pool. A pool that has not started (named threads, none
 * yet) has no queue: the agent does not start it.
 * @param {Record<string, number>} pending
 * @param {object} busy a pool-threads reading
 * @param {number} waitSeconds the interval's longest probe wait (or a stuck probe's)
 * @returns {{ dns: boolean, work: boolean }}
 */
function probesDue(pending, busy, waitSeconds) {
  let listed = false;
  for (const kind in pending) if (pending[kind] > 0) listed = true;
  const busyThreads = busy.available && busy.computing + (busy.runnable || 0) >= BUSY_THREADS;
  if (listed || waitSeconds >= CONTENDED_WAIT_S || busyThreads) return { dns: true, work: true };
  return { dns: false, work: !busy.available && busy.workers !== 0 };
}

/**
 * The work probe's job: an fs.access of '/' (fs.access as the agent found it, before the app
 * could patch it), counted as uvscope's own FSReqCallback while in flight.
 * @param {Function} access
 * @returns {(done: (err?: Error|null) => void) => void}
 */
function fsAccessJob(access) {
  return (done) => {
    access('/', (err) => {
      ownRequestEnded(FS_PROBE_TYPE);
      done(err);
    });
    ownRequestStarted(FS_PROBE_TYPE);
  };
}

const FS_PROBE_TYPE = 'FSReqCallback';

// Whether the process may read path: false only under Node's permission model without that read
// (fs.access then fails at once with ERR_ACCESS_DENIED, no pool job).
function fsReadAllowed(path) {
  const permission = /** @type {any} */ (process).permission;
  try {
    return !permission || typeof permission.has !== 'function' || permission.has('fs.read', path);
  } catch {
    return true;
  }
}

// The work probe where the fs one cannot run (the permission model denies reading '/'): a 1-byte
// crypto.randomFill, crypto loaded at its first launch; none in a Node built without crypto.
function randomFillJob() {
  if (!process.versions.openssl) return null;
  let randomFill = null;
  return (done) => (randomFill || (randomFill = require('crypto').randomFill))(Buffer.allocUnsafe(1), done);
}

/**
 * A probe: one job at a time, its submit-to-callback time recorded in a histogram, and the part
 * of it the loop spent idle (heldSeconds): an idle loop wakes for a finished job, so while it was
 * idle the job was still waiting for a thread (or running); a blocked loop delays the callback
 * of a job that found a thread at once, and adds nothing to it (lib/core/pool-held.js).
 * @param {string} component
 * @param {(done: (err?: Error|null) => void) => void} run
 * @param {() => number} [loopIdleMs] the loop's idle time so far, in ms (performance.nodeTiming.idleTime)
 */
function createProbe(component, run, loopIdleMs = nodeIdleMs) {
  const histogram = new Histogram(QUEUE_WAIT_BUCKETS);
  let inFlight = false;
  let start = 0n;
  let idleAtStart = 0;
  let maxWait = 0;
  let maxHeld = 0;
  return {
    histogram,
    get inFlight() {
      return inFlight;
    },
    /**
     * Longest completed wait since the last call, how long the probe in flight has waited, and the
     * longest of either the loop spent idle.
     */
    takeInterval() {
      const inFlightSeconds = inFlight ? Number(process.hrtime.bigint() - start) / 1e9 : 0;
      const heldNow = inFlight ? waitBeyondLoop({ wait: inFlightSeconds, idle: idleSince(loopIdleMs, idleAtStart) }) || 0 : 0;
      const figures = { maxWaitSeconds: maxWait, inFlightSeconds, heldSeconds: Math.max(maxHeld, heldNow) };
      maxWait = 0;
      maxHeld = 0;
      return figures;
    },
    launch() {
      if (inFlight) return;
      inFlight = true;
      start = process.hrtime.bigint();
      idleAtStart = loopIdleMs();
      try {
        run((err) => {
          inFlight = false;
          if (err) reportError(component, err);
          else {
            const seconds = Number(process.hrtime.bigint() - start) / 1e9;
            histogram.observe(seconds);
            if (seconds > maxWait) maxWait = seconds;
            const held = waitBeyondLoop({ wait: seconds, idle: idleSince(loopIdleMs, idleAtStart) }) || 0;
            if (held > maxHeld) maxHeld = held;
          }
        });
      } catch (err) {
        inFlight = false;
        reportError(component, err);
      }
    },
  };
}

// The loop's idle time so far in ms (libuv's, from the loop's start; 0 before it, as in a
// process that cannot tell, where a probe's wait then counts as the loop's).
function nodeIdleMs() {
  return perfHooks.performance.nodeTiming.idleTime;
}

// Seconds the loop was idle since `at` (ms of loopIdleMs()).
function idleSince(loopIdleMs, at) {
  const ms = loopIdleMs() - at;
  return ms > 0 ? ms / 1000 : 0;
}

/**
 * Pending jobs by kind: what Node lists for dns and fs and, while the tracer is armed, what it saw.
 * @param {Map<string, number>} resources process.getActiveResourcesInfo() counted by type
 * @param {Map<string, number>|null} traced the tracer's pending jobs by kind (null: disarmed)
 * @returns {Record<string, number>}
 */
function pendingJobs(resources, traced) {
  const listed = { dns: sum(resources, DNS_TYPES), fs: sum(resources, FS_TYPES) };
  // While armed the tracer counts every job it saw start; jobs from before arming are not
  // known to it, so for dns and fs (which Node lists) the larger of the two lower bounds wins.
  const pending = { dns: listed.dns, fs: listed.fs };
  if (traced) {
    pending.dns = Math.max(listed.dns, traced.get('dns') || 0);
    pending.fs = Math.max(listed.fs, traced.get('fs') || 0);
    for (const kind of ['crypto', 'zlib', 'other']) pending[kind] = traced.get(kind) || 0;
  }
  return pending;
}

/** Size, DNS slots, pending and queued jobs as metric points. */
function poolPoints(size, dnsSlots, pending) {
  // libuv lets at most dnsSlots threads run slow I/O (getaddrinfo/getnameinfo); fs work can
  // use any thread. This is a lower bound for DNS when fs work holds every thread.
  const dnsRunning = Math.min(pending.dns, dnsSlots);
  const fsRunning = Math.min(pending.fs, size - dnsRunning);
  /** @type {Array<{ name: string, attributes: Record<string, string>, value?: number, histogram?: object }>} */
  const out = [
    { name: 'nodejs.uv.threadpool.size', attributes: NO_ATTRIBUTES, value: size },
    { name: 'nodejs.uv.threadpool.dns_slots', attributes: NO_ATTRIBUTES, value: dnsSlots },
  ];
  // for...in, not Object.entries(): no array per kind (this runs every sample).
  for (const kind in pending) {
    out.push({ name: 'nodejs.uv.threadpool.pending', attributes: KIND(kind), value: pending[kind] });
  }
  out.push(
    { name: 'nodejs.uv.threadpool.queued', attributes: KIND('dns'), value: pending.dns - dnsRunning },
    { name: 'nodejs.uv.threadpool.queued', attributes: KIND('fs'), value: pending.fs - fsRunning },
  );
  return out;
}

/**
 * Each probe's state and queue wait histogram pushed to out; the interval's figures, longest wait
 * and longest wait beyond the loop's delay returned.
 */
function probePoints(probes, out) {
  const probeFigures = {};
  let waitSeconds = 0;
  let heldSeconds = 0;
  for (const queue in probes) {
    const probe = probes[queue];
    if (!probe) continue;
    out.push({ name: 'uvscope.probe.in_flight', attributes: QUEUE(queue), value: probe.inFlight ? 1 : 0 });
    out.push({ name: 'nodejs.uv.threadpool.queue_wait', attributes: QUEUE(queue), histogram: probe.histogram.snapshot() });
    const figures = probe.takeInterval();
    probeFigures[queue] = figures;
    waitSeconds = Math.max(waitSeconds, figures.maxWaitSeconds, figures.inFlightSeconds);
    heldSeconds = Math.max(heldSeconds, figures.heldSeconds);
  }
  return { probeFigures, waitSeconds, heldSeconds };
}

/** Busy pool threads (lib/sources/threadpool/pool-threads.js) pushed to out where known; the reading returned. */
function busyPoints(poolThreads, out) {
  let busy;
  try {
    busy = poolThreads.read();
  } catch (err) {
    reportError('sampler:threadpool', err);
    busy = { available: false, reason: 'reading /proc failed' };
  }
  if (busy.available) {
    out.push({ name: 'nodejs.uv.threadpool.busy', attributes: STATE('computing'), value: busy.computing });
    if (busy.runnable !== null) out.push({ name: 'nodejs.uv.threadpool.busy', attributes: STATE('runnable'), value: busy.runnable });
  }
  return busy;
}

function sum(counts, types) {
  let n = 0;
  for (let i = 0; i < types.length; i++) n += counts.get(types[i]) || 0;
  return n;
}

// The points' attributes, one frozen object per kind, queue and thread state (fixed sets).
const KIND = attributesOf('nodejs.uv.threadpool.kind');
const QUEUE = attributesOf('nodejs.uv.threadpool.queue');
const STATE = attributesOf('nodejs.uv.threadpool.thread.state');

module.exports = { createThreadpoolSampler, DNS_TYPES, FS_TYPES, _internal: { probesDue, createProbe } };
