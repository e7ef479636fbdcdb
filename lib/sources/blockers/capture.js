'use strict';

// The main thread's side of the blockers source: starts the watchdog worker (watchdog.js), keeps
// the blocks it reports for the interval (bounded) and their durations in a histogram, and
// answers its probe. The worker is unref'd and holds nothing of the app: the process exits as if
// it were not there. Where the capture cannot run (not Linux, no inspector in this build, not the
// main thread, the worker failed), one warning, details say why, and everything else goes on.

const path = require('path');
const { Histogram } = require('../../core/histogram');
const { warnOnce, reportError } = require('../../core/errors');
const { WARNINGS } = require('../../core/warnings');
const { attributesOf } = require('../metric-def');
const { BLOCK_BUCKETS } = require('./metrics');

// Blocks kept per interval: the longest ones (a loop blocked all the time makes a few a second).
const MAX_BLOCKS = 10;
const PROBE = Symbol.for('uvscope.blockers.probe');
const CAUSE = attributesOf('nodejs.eventloop.block.cause');

/**
 * @typedef {object} Block
 * @property {number} startedMs when it began (epoch ms, to within a poll)
 * @property {number} durationSeconds as the watchdog timed it (to within a poll)
 * @property {number} ranSeconds of it, the main thread's time on a CPU (the rest it waited for
 *   one); the threshold applies to this
 * @property {number} capturedSeconds the part the profiler sampled (from its start to the block's end)
 * @property {number} samples
 * @property {number} gcShare of the samples, in V8's garbage collector
 * @property {string | null} route 'GET /users/:id' when the block ran in an HTTP request's handler
 * @property {import('./summary').Blocker[]} blockers costliest first
 * @property {string | null} uncaptured why there are no blockers, when the block was timed but not captured
 * @property {{ usedBytes: number, limitBytes: number } | null} heap V8's heap as the block ended,
 *   where the garbage collector had samples in it (what the finding says of a GC block)
 */

/**
 * Why the capture cannot run here, or null when it can.
 * @returns {string | null}
 */
function unavailable() {
  if (process.platform !== 'linux') return `needs Linux (/proc), this is ${process.platform}`;
  let inspector;
  try {
    inspector = require('inspector');
  } catch {
    return 'this Node.js is built without the inspector';
  }
  if (typeof inspector.Session !== 'function' || typeof inspector.Session.prototype.connectToMainThread !== 'function') return 'this Node.js has no inspector Session.connectToMainThread';
  if (!require('worker_threads').isMainThread) return 'not on the main thread (the agent runs in a worker)';
  return null;
}

/**
 * What the watchdog's probe reads, on the main thread, by an interrupt while a block runs: the
 * route of the HTTP request whose handler is on the stack (Node's HTTPServerAsyncResource holds
 * its socket, whose response holds the request), and libuv's loop count.
 * @returns {{ route: string | null, loops: number }}
 */
function probe() {
  let route = null;
  try {
    const resource = /** @type {any} */ (require('async_hooks').executionAsyncResource());
    const req = resource && resource.socket && resource.socket._httpMessage && resource.socket._httpMessage.req;
    if (req && typeof req.url === 'string') {
      const { routeOf } = require('../threadpool/routes');
      const r = routeOf(req.method, req.url);
      route = `${r.method} ${r.route}`;
    }
  } catch {
    // No route: the block is still reported.
  }
  const info = require('perf_hooks').performance.nodeTiming.uvMetricsInfo;
  return { route, loops: info && typeof info.loopCount === 'number' ? info.loopCount : -1 };
}

/** V8's heap now: its used size and its limit (a few microseconds; once per block with GC in it). */
function heapNow() {
  const h = require('v8').getHeapStatistics();
  return { usedBytes: h.used_heap_size, limitBytes: h.heap_size_limit };
}

class BlockersSampler {
  name = 'blockers';
  /** @type {string | null} why there is no capture, or null while it runs */
  #unavailable = null;
  /** @type {import('worker_threads').Worker | null} */
  #worker = null;
  #thresholdMs;
  /** @type {Block[]} */
  #blocks = [];
  #dropped = 0;
  // Captures that did not complete (the main thread answered too late: see watchdog.js missed()).
  #missed = 0;
  #ready = false;
  /** @type {Map<string, Histogram>} */
  #histograms = new Map();

  /**
   * @param {{ mode?: string, thresholdMs?: number, workerFile?: string, pollMs?: number, intervalUs?: number }} options
   */
  constructor(options) {
    this.#thresholdMs = options.thresholdMs || 100;
    if (options.mode === 'off') {
      this.#unavailable = 'the capture is off (UVSCOPE_BLOCKERS=on turns it on)';
      return;
    }
    const why = unavailable();
    if (why) return void this.#fail(why);
    try {
      const fs = require('fs');
      const tid = fs.readlinkSync('/proc/thread-self').split('/').pop();
      const { Worker } = require('worker_threads');
      const threshold = this.#thresholdMs;
      Object.defineProperty(globalThis, PROBE, { value: probe, configurable: true, writable: true, enumerable: false });
      const worker = new Worker(options.workerFile || path.join(__dirname, 'watchdog.js'), {
        workerData: {
          statPath: `/proc/self/task/${tid}/status`,
          thresholdMs: threshold,
          // Every quarter of the threshold: a block is noticed within half of it.
          pollMs: options.pollMs || Math.max(5, Math.round(threshold / 4)),
          armMs: Math.round(threshold / 2),
          intervalUs: options.intervalUs || 1000,
          root: process.cwd(),
        },
        // The worker needs none of the app's preloads (uvscope's own included) nor its flags.
        execArgv: [],
        env: {},
        stdout: false,
        stderr: false,
        resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
      });
      worker.on('message', (m) => this.#onMessage(m));
      worker.on('error', (err) => this.#fail(`the watchdog thread failed: ${err && err.message}`));
      worker.on('exit', () => {
        if (this.#worker) this.#fail('the watchdog thread exited');
      });
      // After the listeners: adding one refs the worker again.
      worker.unref();
      this.#worker = worker;
    } catch (err) {
      this.#fail(`the watchdog thread could not start: ${err && /** @type {Error} */ (err).message}`);
    }
  }

  #fail(why) {
    this.#unavailable = why;
    this.#ready = false;
    warnOnce(WARNINGS.BLOCKERS_UNAVAILABLE, `uvscope: what blocks the event loop cannot be captured: ${why}; everything else goes on`);
    const worker = this.#worker;
    this.#worker = null;
    if (worker) worker.terminate().catch(() => {});
  }

  #onMessage(m) {
    if (!m || typeof m !== 'object') return;
    if (m.type === 'ready') this.#ready = true;
    else if (m.type === 'error') reportError('blockers', new Error(String(m.message)));
    else if (m.type === 'missed') this.#missed++;
    else if (m.type === 'block') this.#onBlock(m);
    // 'poke': its only purpose was to run JavaScript here (the session is read meanwhile).
  }

  #onBlock(m) {
    const seconds = m.durationMs / 1000;
    const cause = m.gcShare > 0.5 ? 'gc' : 'code';
    let h = this.#histograms.get(cause);
    if (!h) this.#histograms.set(cause, (h = new Histogram(BLOCK_BUCKETS)));
    h.observe(seconds);
    /** @type {Block} */
    const block = {
      startedMs: m.startedMs, durationSeconds: seconds, ranSeconds: m.ranMs / 1000, capturedSeconds: m.capturedMs / 1000,
      samples: m.samples, gcShare: m.gcShare, route: m.route, blockers: m.blockers, uncaptured: m.uncaptured || null,
      heap: m.gcShare > 0 ? heapNow() : null,
    };
    const blocks = this.#blocks;
    if (blocks.length < MAX_BLOCKS) return void blocks.push(block);
    // Full: the shortest kept one makes room for a longer one.
    this.#dropped++;
    let min = 0;
    for (let i = 1; i < blocks.length; i++) if (blocks[i].durationSeconds < blocks[min].durationSeconds) min = i;
    if (blocks[min].durationSeconds < seconds) blocks[min] = block;
  }

  /** @returns {import('../index').RawPoint[]} */
  sample() {
    const out = [];
    for (const [cause, h] of this.#histograms) {
      if (h.count > 0) out.push({ name: 'nodejs.eventloop.block.duration', attributes: CAUSE(cause), histogram: h.snapshot() });
    }
    return out;
  }

  /**
   * The interval's blocks (longest MAX_BLOCKS, in the order they ended), how many more there
   * were, and whether the capture runs.
   */
  details() {
    return {
      capturing: this.#unavailable === null,
      ready: this.#ready,
      unavailable: this.#unavailable,
      thresholdSeconds: this.#thresholdMs / 1000,
      blocks: this.#blocks.slice(),
      dropped: this.#dropped,
      missed: this.#missed,
    };
  }

  endInterval() {
    this.#blocks = [];
    this.#dropped = 0;
    this.#missed = 0;
  }

  close() {
    const worker = this.#worker;
    this.#worker = null;
    if (worker) {
      worker.postMessage('close');
      worker.terminate().catch(() => {});
    }
    if (globalThis[PROBE] === probe) delete globalThis[PROBE];
  }
}

/**
 * The blockers sampler (see BlockersSampler); its watchdog starts at once.
 * @param {{ mode?: string, thresholdMs?: number, workerFile?: string, pollMs?: number, intervalUs?: number }} [options]
 * @returns {BlockersSampler}
 */
function createBlockersSampler(options = {}) {
  return new BlockersSampler(options);
}

module.exports = { createBlockersSampler, MAX_BLOCKS, _internal: { probe, unavailable } };
