'use strict';

// The tracer's job accounting: which provider types are threadpool work, the jobs in flight, and
// per type the figures of an interval (completed, seconds, sampled callers and routes) and a
// cumulative duration histogram.

const { Histogram } = require('../../core/histogram');
const { JOB_DURATION_BUCKETS } = require('./metrics');
const { captureCaller, capturePackageCaller } = require('../../core/callers');
const { published } = require('../../core/channels');
const { POOL_PROVIDERS, NOT_POOL } = require('./providers');

const jobEnd = published.threadpoolJobEnd;

// Provider types by kind (providers.js); anything in neither list counts as `other`, keeping its name.
/** @type {Map<string, string>} */
const KIND_OF_TYPE = new Map(Object.entries(POOL_PROVIDERS).map(([type, { kind }]) => [type, kind]));
const NOT_POOL_TYPES = new Set(NOT_POOL);

// Distinct `other` type names kept (addons); more are counted as `_other`. Longer names are cut
// to MAX_OTHER_TYPE_LENGTH characters (an addon's resource name is any string it likes).
const MAX_OTHER_TYPES = 20;
const MAX_OTHER_TYPE_LENGTH = 100;
// Stack captures per interval beyond the first job of each type (a capture costs microseconds).
const CALLER_SAMPLES_PER_INTERVAL = 50;
const MAX_CALLERS = 20;
const MAX_ROUTES_PER_TYPE = 20;
// Jobs followed at once (an addon resource that never calls back stays until disarm).
const MAX_TRACKED = 100000;
const OTHER = '_other';
// Addon resource names that say nothing of the addon: node-addon-api's AsyncWorker default
// (sharp, and most addons built on it, keep it) and an empty one. Such work is named by the
// package that submitted it (its first frame under node_modules): `sharp (generic)`.
const SAYS_NOTHING = new Set(['', 'generic']);
// Stack captures per interval for such work (each job's package is read from its stack); past
// them a job goes with the last package seen for its name.
const PACKAGE_CAPTURES_PER_INTERVAL = 200;

/**
 * The kind of threadpool work of an async_hooks provider type.
 * @param {string} type an async_hooks provider type
 * @returns {string|null} 'dns', 'fs', 'crypto', 'zlib' or 'other'; null: not threadpool work
 */
function kindOf(type) {
  return KIND_OF_TYPE.get(type) || (NOT_POOL_TYPES.has(type) ? null : 'other');
}

/**
 * Jobs in flight and the figures per provider type. A job is counted (pending, callers, routes)
 * when submitted, and its duration recorded at the `before` of its callback; a callback whose job
 * was not seen starting is ignored, so pending never counts jobs it did not see start.
 */
class JobBook {
  #jobs = new Map(); // asyncId -> { start: bigint, series, caller, route, counted }
  #zlibInFlight = new Map(); // asyncId -> { start, series } (write in flight on that handle)
  #zlibHandles = new Map(); // asyncId -> { caller, route } of a ZLIB handle seen created
  #series = new Map(); // type -> per-type figures
  #otherTypes = 0;
  #dropped = 0;
  #callerBudget = CALLER_SAMPLES_PER_INTERVAL;
  #packageBudget = PACKAGE_CAPTURES_PER_INTERVAL;
  /** @type {Map<string, { pkg: string|null, caller: string }>} */
  #lastPackage = new Map(); // an addon's resource name that says nothing -> the last package seen submitting it
  /** @type {{ update(inFlight: boolean): void }|null} */
  #callbacks = null; // lean mode's CallbackSwitch (lib/sources/threadpool/modes.js)
  #hrtime;
  #routes;
  #gone;

  /**
   * @param {object} options
   * @param {() => bigint} options.hrtime monotonic ns clock
   * @param {{ current(): ({ method: string, route: string }|null) }} options.routes the route now
   * @param {(asyncId: number) => void} options.onCollected an addon job's resource was collected
   */
  constructor({ hrtime, routes, onCollected }) {
    this.#hrtime = hrtime;
    this.#routes = routes;
    // An addon's async work deleted without ever calling back has no `before`; only a destroy hook
    // would see it, and one costs on every tick object (and on Node 20/22 every promise). The work
    // holds its resource object until deleted, so once V8 collects the resource the job is gone.
    this.#gone = typeof FinalizationRegistry === 'function' ? new FinalizationRegistry(onCollected) : null;
  }

  /** @returns {number} jobs not followed because MAX_TRACKED were in flight */
  get dropped() {
    return this.#dropped;
  }

  /** @param {{ update(inFlight: boolean): void }|null} callbacks told when jobs come and go */
  watchWith(callbacks) {
    this.#callbacks = callbacks;
  }

  /**
   * A ZLIB handle created: one async resource for every write of its stream, so a job is a write
   * (see write()); the caller and route of its creation are kept for its writes.
   */
  openHandle(asyncId, type, kind) {
    const s = this.#seriesFor(type, kind);
    if (this.#zlibHandles.size >= MAX_TRACKED) this.#zlibHandles.delete(this.#zlibHandles.keys().next().value);
    this.#zlibHandles.set(asyncId, { caller: this.#sampleCaller(s), route: this.#routes.current() });
  }

  /**
   * A job submitted (not counted yet: see count()).
   * @returns {object|undefined} the job, undefined when too many are in flight
   */
  submit(asyncId, type, kind) {
    if (this.#jobs.size >= MAX_TRACKED) {
      this.#dropped++;
      return undefined;
    }
    let s;
    let caller;
    if (kind === 'other' && SAYS_NOTHING.has(type.trim().toLowerCase())) {
      const by = this.#packageOf(type);
      s = this.#seriesFor(by.pkg === null ? type : `${by.pkg} (${type.trim() || 'unnamed'})`, kind, by.pkg);
      caller = by.caller;
    } else {
      s = this.#seriesFor(type, kind);
      caller = this.#sampleCaller(s);
    }
    const job = { start: this.#hrtime(), series: s, caller, route: this.#routes.current(), counted: false };
    this.#jobs.set(asyncId, job);
    if (this.#callbacks !== null) this.#changed();
    return job;
  }

  /** Count a submitted job as pending, with its caller and route. */
  count(job) {
    job.counted = true;
    job.series.pending++;
    this.#attribute(job.series, job.caller, job.route);
  }

  /**
   * Watch an addon job's resource: once collected, onCollected(asyncId) comes.
   * @param {object} resource
   * @param {number} asyncId
   */
  watchResource(resource, asyncId) {
    if (this.#gone && resource && typeof resource === 'object') this.#gone.register(resource, asyncId);
  }

  /**
   * A crypto job's run() returned. The job object also serves the *Sync functions (run() returns
   * [err, result] at once and no callback comes): such a run is no job; otherwise it counts now.
   * @param {number} asyncId
   * @param {boolean} sync run() returned a result (or threw)
   */
  ran(asyncId, sync) {
    const job = this.#jobs.get(asyncId);
    if (!job || job.counted) return;
    if (sync) {
      this.#jobs.delete(asyncId);
      if (this.#callbacks !== null) this.#changed();
    } else this.count(job);
  }

  /** A zlib write submitted: one job until that handle's next `before`. */
  write(asyncId) {
    if (this.#zlibInFlight.has(asyncId)) return;
    const s = this.#seriesFor('ZLIB', 'zlib');
    const created = this.#zlibHandles.get(asyncId);
    s.pending++;
    this.#zlibInFlight.set(asyncId, { start: this.#hrtime(), series: s });
    if (this.#callbacks !== null) this.#changed();
    if (created) this.#attribute(s, created.caller, created.route);
    else this.#attribute(s, undefined, this.#routes.current());
  }

  /** The `before` of a callback: the job of that async id, if any, is done. */
  finish(asyncId) {
    let job = this.#jobs.get(asyncId);
    if (job) {
      this.#jobs.delete(asyncId);
      if (this.#callbacks !== null) this.#changed();
      if (!job.counted) return;
    } else if ((job = this.#zlibInFlight.get(asyncId))) {
      this.#zlibInFlight.delete(asyncId);
      if (this.#callbacks !== null) this.#changed();
    } else return;
    const seconds = Number(this.#hrtime() - job.start) / 1e9;
    const s = job.series;
    s.pending--;
    s.completed++;
    s.seconds += seconds;
    if (seconds > s.maxSeconds) s.maxSeconds = seconds;
    s.histogram.observe(seconds);
    if (jobEnd.hasSubscribers) jobEnd.publish({ kind: s.kind, type: s.type, seconds });
  }

  /** An addon job whose resource was collected before its callback: no longer pending, no duration. */
  forget(asyncId) {
    const job = this.#jobs.get(asyncId);
    if (!job) return;
    this.#jobs.delete(asyncId);
    if (this.#callbacks !== null) this.#changed();
    if (job.counted) job.series.pending--;
  }

  /** @returns {Map<string, number>} pending jobs by kind */
  pendingByKind() {
    const out = new Map();
    for (const s of this.#series.values()) out.set(s.kind, (out.get(s.kind) || 0) + s.pending);
    return out;
  }

  /**
   * Figures per type for this interval (completed, seconds, callers and routes are reset) and the
   * cumulative duration histograms.
   */
  collect() {
    const list = [];
    const histograms = [];
    for (const s of this.#series.values()) {
      if (s.histogram.count > 0) histograms.push({ kind: s.kind, type: s.type, histogram: s.histogram.snapshot() });
      if (s.pending === 0 && s.completed === 0 && s.callers.size === 0) continue;
      list.push({
        kind: s.kind, type: s.type, package: s.pkg, pending: s.pending, completed: s.completed, seconds: s.seconds, maxSeconds: s.maxSeconds,
        callers: [...s.callers].map(([caller, c]) => ({ caller, count: c.count })).sort((a, b) => b.count - a.count),
        routes: [...s.routes.values()].map((r) => ({ ...r })).sort((a, b) => b.count - a.count),
      });
      s.completed = 0;
      s.seconds = 0;
      s.maxSeconds = 0;
      s.callers.clear();
      s.routes.clear();
      s.seen = false;
    }
    this.#callerBudget = CALLER_SAMPLES_PER_INTERVAL;
    this.#packageBudget = PACKAGE_CAPTURES_PER_INTERVAL;
    return { jobs: list.sort((a, b) => b.seconds - a.seconds || b.pending - a.pending), histograms };
  }

  /** Disarmed: forget every job in flight (what is submitted while disarmed is never counted). */
  clear() {
    this.#jobs.clear();
    this.#zlibInFlight.clear();
    this.#zlibHandles.clear();
    for (const s of this.#series.values()) s.pending = 0;
  }

  #changed() {
    this.#callbacks.update(this.#jobs.size > 0 || this.#zlibInFlight.size > 0);
  }

  // The package that submitted work whose name says nothing, and the app's call into it: from the
  // job's stack while the interval's budget lasts, else the last one seen for that name.
  #packageOf(type) {
    let by = this.#lastPackage.get(type);
    if (this.#packageBudget > 0 || by === undefined) {
      this.#packageBudget--;
      by = capturePackageCaller();
      this.#lastPackage.set(type, by);
    }
    return by;
  }

  #seriesFor(type, kind, pkg = null) {
    if (kind === 'other' && type.length > MAX_OTHER_TYPE_LENGTH) type = type.slice(0, MAX_OTHER_TYPE_LENGTH);
    let s = this.#series.get(type);
    if (!s) {
      if (kind === 'other' && type !== OTHER && this.#otherTypes >= MAX_OTHER_TYPES) return this.#seriesFor(OTHER, 'other');
      if (kind === 'other') this.#otherTypes++;
      s = {
        kind, type, pkg, pending: 0, completed: 0, seconds: 0, maxSeconds: 0,
        histogram: new Histogram(JOB_DURATION_BUCKETS), callers: new Map(), routes: new Map(), seen: false,
      };
      this.#series.set(type, s);
    }
    return s;
  }

  #attribute(s, caller, route) {
    if (caller !== undefined) {
      let c = s.callers.get(caller);
      if (!c && s.callers.size < MAX_CALLERS) s.callers.set(caller, (c = { count: 0 }));
      if (c) c.count++;
    }
    if (route) {
      const key = `${route.method} ${route.route}`;
      let r = s.routes.get(key);
      if (!r && s.routes.size < MAX_ROUTES_PER_TYPE) s.routes.set(key, (r = { method: route.method, route: route.route, count: 0 }));
      if (r) r.count++;
    }
  }

  // The first job of each type in an interval, then CALLER_SAMPLES_PER_INTERVAL more of any type.
  #sampleCaller(s) {
    if (!s.seen) {
      s.seen = true;
      return captureCaller();
    }
    if (this.#callerBudget > 0) {
      this.#callerBudget--;
      return captureCaller();
    }
    return undefined;
  }
}

module.exports = { JobBook, kindOf };
