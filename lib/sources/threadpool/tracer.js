'use strict';

// The threadpool tracer: an async_hooks hook that follows threadpool work from submission (init)
// to its callback (before) by provider type, armed only when needed. Its parts: job accounting
// (jobs.js), HTTP routes (routes.js), and the lean and classic modes by Node version (modes.js).

const asyncHooks = require('async_hooks');
const { reportError } = require('../../core/errors');
const { POOL_HELD, poolHeld } = require('../../core/pool-held');

// collect() before the first arming: no job seen (frozen, handed to every sample).
const NOTHING_SEEN = Object.freeze({ jobs: Object.freeze([]), histograms: Object.freeze([]) });

// jobs.js, routes.js and modes.js load when a tracer first arms: in auto mode (the default) most
// processes never do, and V8 keeps a loaded file's source and bytecode for the process's life.
/** @type {{ JobBook: typeof import('./jobs').JobBook, kindOf: typeof import('./jobs').kindOf, Routes: typeof import('./routes').Routes, createMode: typeof import('./modes').createMode, leanModeAvailable: typeof import('./modes').leanModeAvailable } | null} */
let parts = null;
function loadParts() {
  if (parts === null) {
    const { JobBook, kindOf } = require('./jobs');
    const { Routes } = require('./routes');
    const { createMode, leanModeAvailable } = require('./modes');
    parts = { JobBook, kindOf, Routes, createMode, leanModeAvailable };
  }
  return parts;
}

// For a tracer built without settings (the tests build one with only { mode }): the defaults of
// the tracer.* settings (lib/sources/threadpool/index.js), which the agent always passes.
const FALLBACK = Object.freeze({ mode: 'auto', thresholdMs: POOL_HELD.poolWaitS * 1000, windowMs: 10000, cooldownMs: 90000 });
const THREW = Symbol('threw');

/**
 * Modes: 'on' (armed from start), 'off' (never), 'auto' (armed by consider() when the pool looks
 * saturated, for windowMs, then off for at least cooldownMs). Jobs submitted while disarmed are
 * never counted: state is cleared on every disarm.
 *
 * zlib: a ZLIB handle is one async resource reused for every write of its stream (init once,
 * `before` once per completed write). A job runs from the handle's write() call (wrapped on the
 * binding's prototype while the tracer lives) to the `before` of that write's callback; a handle
 * has at most one write in flight. Crypto: a job counts once its run() returned without a result
 * (the same job object serves the *Sync functions).
 */
class Tracer {
  #mode;
  #thresholdSeconds;
  #windowMs;
  #cooldownMs;
  #now;
  #hrtime;
  #startedAt;
  /** @type {import('async_hooks').AsyncHook|null} */
  #hook = null;
  /** @type {import('./modes').Callbacks|null} */
  #callbacks = null; // lean mode's `before` hook switch
  #armed = false;
  /** @type {number|null} */
  #armedSince = null;
  #disarmedAt = -Infinity;
  #armings = 0;
  #armedMs = 0;
  #own = 0; // > 0 while uvscope submits its own probes
  #failed = false;
  #closed = false;
  /** @type {Array<[object, string, Function, Function]>} */
  #patched = []; // [prototype, method, original, wrapped]
  /** @type {import('./modes').Carrier|null} */
  #carrier = null; // the mode's route carrier
  /** @type {import('./routes').Routes|null} made at the first arming, as is #jobs */
  #routes = null;
  /** @type {import('./jobs').JobBook|null} */
  #jobs = null;

  /**
   * @param {object} [options]
   * @param {'auto'|'on'|'off'} [options.mode]
   * @param {number} [options.thresholdMs] auto: a probe's wait beyond the loop's delay that arms the tracer
   * @param {number} [options.windowMs] auto: how long it stays armed
   * @param {number} [options.cooldownMs] auto: minimum time disarmed before arming again
   * @param {() => number} [options.now] epoch ms clock (injectable for tests)
   * @param {() => bigint} [options.hrtime] monotonic ns clock read in the hooks (injectable for tests)
   */
  constructor(options = {}) {
    this.#mode = options.mode || FALLBACK.mode;
    this.#thresholdSeconds = (options.thresholdMs === undefined ? FALLBACK.thresholdMs : options.thresholdMs) / 1000;
    this.#windowMs = options.windowMs === undefined ? FALLBACK.windowMs : options.windowMs;
    this.#cooldownMs = options.cooldownMs === undefined ? FALLBACK.cooldownMs : options.cooldownMs;
    this.#now = options.now || Date.now;
    this.#hrtime = options.hrtime || process.hrtime.bigint;
    this.#startedAt = this.#now();
    if (this.#mode === 'on') this.#arm();
  }

  /** @returns {'auto'|'on'|'off'} */
  get mode() {
    return this.#mode;
  }

  /** @returns {number} auto: the probe wait (beyond the loop's delay) that arms the tracer */
  get thresholdSeconds() {
    return this.#thresholdSeconds;
  }

  /** @returns {boolean} */
  get armed() {
    return this.#armed;
  }

  /**
   * Auto mode: arm when the pool was held (a probe waited the threshold for a thread beyond the
   * loop's own delay: lib/core/pool-held.js, the test of the findings' signal poolHeld, whose limit
   * is the threshold's default) or every pool thread was busy; disarm after the window. Called
   * once per sample.
   * @param {{ waitSeconds: number, poolFull: boolean }} signal waitSeconds: the interval's longest
   *   probe wait beyond the loop's delay
   */
  consider(signal) {
    if (this.#mode !== 'auto' || this.#closed) return;
    const t = this.#now();
    if (this.#armed) {
      if (t - this.#armedSince >= this.#windowMs) this.#disarm();
      return;
    }
    if (t - this.#disarmedAt < this.#cooldownMs) return;
    if (poolHeld(signal.waitSeconds, { poolWaitS: this.#thresholdSeconds }) || signal.poolFull) this.#arm();
  }

  /**
   * Run fn with the tracer ignoring whatever it submits (uvscope's own probes).
   * @template T
   * @param {() => T} fn
   * @returns {T}
   */
  untraced(fn) {
    this.#own++;
    try {
      return fn();
    } finally {
      this.#own--;
    }
  }

  /** @returns {Map<string, number>|null} pending jobs by kind while armed, else null */
  pendingByKind() {
    return this.#armed && this.#jobs ? this.#jobs.pendingByKind() : null;
  }

  /**
   * Figures for this interval (completed, seconds, callers and routes are reset), the
   * cumulative duration histograms, and the arming state.
   */
  collect() {
    const t = this.#now();
    const seconds = (this.#armedMs + (this.#armed ? t - this.#armedSince : 0)) / 1000;
    const uptime = Math.max(0.001, (t - this.#startedAt) / 1000);
    // Never armed: no job seen, nothing to collect (what an empty JobBook returns).
    const { jobs, histograms } = this.#jobs ? this.#jobs.collect() : NOTHING_SEEN;
    if (this.#routes) this.#routes.burstIfDue();
    const state = {
      mode: this.#mode, armed: this.#armed, armedSince: this.#armedSince, armings: this.#armings,
      armedSeconds: seconds, armedShare: Math.min(1, seconds / uptime), dropped: this.#jobs ? this.#jobs.dropped : 0,
    };
    return { state, jobs, histograms };
  }

  /** Disarm and restore what was wrapped. */
  close() {
    this.#closed = true;
    this.#disarm();
    for (const [proto, method, original, wrapped] of this.#patched) if (proto[method] === wrapped) proto[method] = original;
    this.#patched.length = 0;
  }

  // The hooks: functions made once, called by Node for every resource (init) and, while armed,
  // every callback (before; in lean mode only while a job is in flight).
  #init = (asyncId, type, triggerAsyncId, resource) => {
    try {
      if (this.#own > 0) return;
      if (this.#routes.watching) this.#routes.inherit(asyncId, resource);
      // The resources of every request and tick first (pointer compares of Node's own strings).
      if (type === 'TickObject' || type === 'Timeout' || type === 'PROMISE' || type === 'Immediate') return;
      const kind = /** @type {NonNullable<typeof parts>} */ (parts).kindOf(type);
      if (kind === null) return;
      if (kind === 'other' && resource instanceof asyncHooks.AsyncResource) return; // JS code's own resources
      if (kind === 'zlib') {
        this.#patch(resource, 'write', this.#zlibWrite);
        this.#jobs.openHandle(asyncId, type, kind);
        return;
      }
      const job = this.#jobs.submit(asyncId, type, kind);
      if (job === undefined) return;
      if (kind === 'crypto') this.#patch(resource, 'run', this.#cryptoRun);
      else this.#jobs.count(job);
      if (kind === 'other') this.#jobs.watchResource(resource, asyncId);
    } catch (err) {
      this.#fail(err);
    }
  };

  #before = (asyncId) => {
    try {
      this.#jobs.finish(asyncId);
    } catch (err) {
      this.#fail(err);
    }
  };

  #cryptoRun = (handle, result) => {
    try {
      this.#jobs.ran(handle.getAsyncId(), Array.isArray(result) || result === THREW);
    } catch (err) {
      this.#fail(err);
    }
  };

  // A zlib write submitted while armed, not by uvscope.
  #zlibWrite = (handle, result) => {
    try {
      if (!this.#armed || this.#own > 0 || result === THREW) return;
      this.#jobs.write(handle.getAsyncId());
    } catch (err) {
      this.#fail(err);
    }
  };

  #forget = (asyncId) => {
    try {
      this.#jobs.forget(asyncId);
    } catch (err) {
      this.#fail(err);
    }
  };

  #fail = (err) => {
    if (this.#failed) return;
    this.#failed = true;
    reportError('tracer', err);
    this.#disarm();
  };

  // Wrap a method on the binding class's prototype (once per class, undone by close()): the
  // original runs first and its result is returned untouched; `after` sees the handle and result.
  #patch(resource, method, after) {
    if (this.#closed || !resource || typeof resource !== 'object') return;
    const proto = Object.getPrototypeOf(resource);
    if (!proto || this.#patched.some(([p, m]) => p === proto && m === method)) return;
    const original = proto[method];
    if (typeof original !== 'function' || typeof resource.getAsyncId !== 'function') return;
    const wrapped = function () {
      let result = THREW;
      try {
        result = original.apply(this, arguments);
        return result;
      } finally {
        after(this, result);
      }
    };
    Object.defineProperty(wrapped, 'name', { value: original.name });
    proto[method] = wrapped;
    this.#patched.push([proto, method, original, wrapped]);
  }

  #arm() {
    if (this.#armed || this.#closed || this.#failed || this.#mode === 'off') return false;
    try {
      if (!this.#hook) {
        const { JobBook, Routes, createMode, leanModeAvailable } = loadParts();
        const lean = leanModeAvailable();
        const routes = new Routes({ lean, now: this.#now, fail: this.#fail });
        const jobs = new JobBook({ hrtime: this.#hrtime, routes, onCollected: this.#forget });
        const mode = createMode(lean, this.#init, this.#before);
        this.#routes = routes;
        this.#jobs = jobs;
        this.#hook = mode.hook;
        this.#callbacks = mode.callbacks;
        jobs.watchWith(mode.callbacks);
        this.#carrier = mode.carrier;
      }
      /** @type {import('./routes').Routes} */ (this.#routes).arm(/** @type {import('./modes').Carrier} */ (this.#carrier));
      this.#hook.enable();
    } catch (err) {
      this.#fail(err);
      return false;
    }
    this.#armed = true;
    this.#armedSince = this.#now();
    this.#armings++;
    if (this.#callbacks) this.#callbacks.arm();
    return true;
  }

  #disarm() {
    if (this.#hook) {
      try {
        this.#hook.disable();
        if (this.#callbacks) this.#callbacks.disable();
      } catch (err) {
        reportError('tracer', err);
      }
      if (this.#callbacks) this.#callbacks.disarm();
    }
    if (this.#routes) this.#routes.disarm();
    if (this.#armed) {
      this.#armedMs += this.#now() - this.#armedSince;
      this.#disarmedAt = this.#now();
    }
    this.#armed = false;
    this.#armedSince = null;
    if (this.#jobs) this.#jobs.clear();
  }
}

/**
 * The threadpool tracer (see Tracer).
 * @param {ConstructorParameters<typeof Tracer>[0]} [options]
 * @returns {Tracer}
 */
function createTracer(options) {
  return new Tracer(options);
}

module.exports = { createTracer };
