'use strict';

// The main thread's side of the blockers source: registers the main thread with Sentry's native
// stack capture (lazily, once), starts the watchdog worker (watchdog.js; at once when on, at the
// first block when auto, stopped after a quiet period: arming.js), answers its "arm"
// messages (the time, in a shared buffer: the callback that ran when it was posted has returned),
// keeps the blocks it reports for the interval (bounded) and their durations in a histogram, and
// gives each block its GC share (V8's gc entries that overlap it) and its route (the request
// whose handler was on the stack), and publishes each block's record for the tracers' victims
// (uvscope:eventloop.block, where someone listens). The worker is unref'd and holds nothing of
// the app: the process exits as if it were not there. Where the capture cannot run (not Linux, no binary of
// the native capture for this platform and Node, not the main thread, the worker failed), one
// warning, details say why, and everything else goes on.

const path = require('path');
const { Histogram } = require('../../core/histogram');
const { warnOnce, reportError } = require('../../core/errors');
const { WARNINGS } = require('../../core/warnings');
const { attributesOf } = require('../metric-def');
const { BLOCK_BUCKETS } = require('./metrics');
const { published } = require('../../core/channels');
const { shortName } = require('./names');
const { unavailable, loadNative } = require('./native');
const { OtherThreads, blockedSeconds } = require('./starved');

// Blocks kept per interval: the longest ones (a loop blocked all the time makes a few a second).
const MAX_BLOCKS = 10;
const CAUSE = attributesOf('nodejs.eventloop.block.cause');
// The longest the main thread answers a capture begun as the process exits (see #shut()).
const GATE_MS = 100;

/**
 * @typedef {object} Block
 * @property {number} startedMs when it began (epoch ms, to within a poll)
 * @property {number} durationSeconds as the watchdog timed it (to within a poll, to the callback's end)
 * @property {number} ranSeconds of it, the main thread's time not waiting for a CPU; the threshold applies to this
 * @property {number} capturedSeconds the part the stack samples cover
 * @property {number} samples
 * @property {number} gcShare of the block, in V8's full collections (major, incremental, weakcb)
 * @property {string | null} gcKind the kind of its longest one
 * @property {number} scavengeShare of the block, in V8's scavenges (minor GCs): part of the code's shares
 * @property {string | null} route 'GET /users/:id' when the block ran in an HTTP request's handler
 * @property {import('./summary').Blocker[]} blockers costliest first, shares of the whole block
 * @property {string | null} uncaptured why there are no blockers, when the block was timed but not captured
 * @property {{ usedBytes: number, limitBytes: number } | null} heap V8's heap after the block,
 *   where the garbage collector had a share of it (what the finding says of a GC block)
 */

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
  /** @type {any[]} blocks reported, not yet given their GC share (its entries come after the block) */
  #pending = [];
  #dropped = 0;
  // Stack samples that got no stack (the capture's 5 s wait ran out, the isolate terminating).
  #missed = 0;
  #ready = false;
  /** @type {Map<string, Histogram>} */
  #histograms = new Map();
  /** @type {BigInt64Array | null} the arm answered last and when (hrtime ns), read by the worker */
  #answer = null;
  /** @type {Int32Array | null} [0] 1 once the process exits or the capture closes, [1] 1 while the watchdog captures */
  #gate = null;
  #onExit = () => this.#shut();
  // performance.now() (ms) to hrtime (ns): both count from the same monotonic clock.
  #offsetNs = 0;
  /** @type {import('./gc').GcPauses | null} V8's GC pauses (gc.js) */
  #gc = null;
  /** @type {import('./requests').Requests | null} what a block's route is read from */
  #requests = null;

  /** @type {any} the options the worker starts with */
  #options;
  /** @type {import('./arming').Arming | null} auto: when the capture runs */
  #arming = null;
  /** @type {import('./starved').OtherThreads | null} auto, Linux: the process's other threads (starved.js) */
  #others = null;

  /**
   * @param {{ mode?: string, thresholdMs?: number, quietMs?: number, now?: () => number, workerFile?: string, pollMs?: number, sampleMs?: number }} options
   */
  constructor(options) {
    this.#thresholdMs = options.thresholdMs || 100;
    this.#options = options;
    if (options.mode === 'off') {
      this.#unavailable = 'the capture is off (UVSCOPE_BLOCKERS=auto or on turns it on)';
      return;
    }
    const why = unavailable();
    // auto (the default) says why in details only: a platform without it is no fault of the app's.
    if (why) return void this.#fail(why, options.mode !== 'on');
    // auto: nothing runs until a block (sample(), arming.js); on: from now.
    if (options.mode === 'on') return void this.#start();
    const { Arming } = require('./arming');
    this.#arming = new Arming({ thresholdMs: this.#thresholdMs, quietMs: options.quietMs, now: options.now });
    this.#others = new OtherThreads();
  }

  /** The capture started: the native module, the watchdog worker, the GC observer, the request listener. */
  #start() {
    const options = this.#options;
    const loaded = loadNative();
    if ('why' in loaded) return void this.#fail(loaded.why, options.mode !== 'on');
    try {
      const fs = require('fs');
      const tid = fs.readlinkSync('/proc/thread-self').split('/').pop();
      const { Worker } = require('worker_threads');
      const threshold = this.#thresholdMs;
      const shared = new SharedArrayBuffer(16);
      this.#answer = new BigInt64Array(shared);
      const gate = new SharedArrayBuffer(8);
      this.#gate = new Int32Array(gate);
      this.#offsetNs = Number(process.hrtime.bigint()) - require('perf_hooks').performance.now() * 1e6;
      const worker = new Worker(options.workerFile || path.join(__dirname, 'watchdog.js'), {
        workerData: {
          schedPath: `/proc/self/task/${tid}/schedstat`,
          thresholdMs: threshold,
          // Every quarter of the threshold: a block is noticed within half of it.
          pollMs: options.pollMs || Math.max(5, Math.round(threshold / 4)),
          // A stack sample every twentieth of the threshold while a block lasts (5 ms at 100 ms).
          sampleMs: options.sampleMs || Math.max(2, Math.round(threshold / 20)),
          shared,
          gate,
          root: process.cwd(),
          nativeFile: loaded.file,
        },
        // The worker needs none of the app's preloads (uvscope's own included) nor its flags.
        execArgv: [],
        env: {},
        stdout: false,
        stderr: false,
        resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
      });
      worker.on('message', (m) => {
        if (this.#worker === worker) this.#onMessage(m);
      });
      worker.on('error', (err) => {
        if (this.#worker === worker) this.#fail(`the watchdog thread failed: ${err && err.message}`);
      });
      worker.on('exit', () => {
        if (this.#worker === worker) this.#fail('the watchdog thread exited');
      });
      // After the listeners: adding one refs the worker again.
      worker.unref();
      this.#worker = worker;
      process.on('exit', this.#onExit);
      this.#observe();
    } catch (err) {
      this.#fail(`the watchdog thread could not start: ${err && /** @type {Error} */ (err).message}`);
    }
  }

  /**
   * The capture stopped (auto, after the quiet period; close()): the worker terminated, the
   * observer disconnected, the listeners removed, so their memory can return.
   */
  #stop() {
    this.#shut();
    process.removeListener('exit', this.#onExit);
    const worker = this.#worker;
    this.#worker = null;
    this.#ready = false;
    this.#answer = null;
    this.#gate = null;
    if (worker) {
      worker.postMessage('close');
      worker.terminate().catch(() => {});
    }
    this.#unobserve();
  }

  /** GC pauses (gc.js) and requests (requests.js): what a block is matched with. */
  #observe() {
    const { GcPauses } = require('./gc');
    this.#gc = new GcPauses(this.#offsetNs);
    const { Requests } = require('./requests');
    this.#requests = new Requests();
  }

  /**
   * @param {string} why
   * @param {boolean} [quiet] no warning (details say why)
   */
  #fail(why, quiet = false) {
    this.#unavailable = why;
    this.#ready = false;
    this.#arming = null;
    if (!quiet) warnOnce(WARNINGS.BLOCKERS_UNAVAILABLE, `uvscope: what blocks the event loop cannot be captured: ${why}; everything else goes on`);
    const worker = this.#worker;
    this.#worker = null;
    if (worker) worker.terminate().catch(() => {});
    this.#unobserve();
  }

  #unobserve() {
    if (this.#gc) this.#gc.close();
    this.#gc = null;
    if (this.#requests) this.#requests.close();
    this.#requests = null;
  }

  #onMessage(m) {
    if (!m || typeof m !== 'object') return;
    if (m.type === 'arm') {
      // The callback that ran when the watchdog posted this has returned: the loop is free.
      const a = this.#answer;
      if (a) {
        Atomics.store(a, 1, process.hrtime.bigint());
        Atomics.store(a, 0, BigInt(m.seq));
      }
    } else if (m.type === 'block') {
      if (this.#pending.length < MAX_BLOCKS * 4) this.#pending.push(m);
      else this.#dropped++;
      if (published.eventloopBlock.hasSubscribers) published.eventloopBlock.publish(this.#recordOf(m));
    } else if (m.type === 'ready') this.#ready = true;
    else if (m.type === 'error') reportError('blockers', new Error(String(m.message)));
  }

  /** The blocks reported since the last call, given their GC share and route, kept and counted. */
  #settle() {
    const list = this.#pending;
    if (list.length === 0) return;
    this.#pending = [];
    for (const m of list) {
      this.#missed += m.missed || 0;
      this.#keep(this.#blockOf(m));
    }
  }

  /**
   * A block's record for the tracers' victims (lib/core/channels.js eventloopBlock), as soon as
   * the watchdog reports it: its GC share from the gc entries already in (V8 may deliver the last
   * ones later: the interval's figures take them all, at the sample).
   */
  #recordOf(m) {
    const b = this.#blockOf(m);
    const toMs = (ns) => performance.timeOrigin + (ns - this.#offsetNs) / 1e6;
    const top = b.blockers[0];
    return {
      start: toMs(Number(m.startNs)), end: toMs(Number(m.endNs)), seconds: b.durationSeconds,
      cause: b.gcShare > 0.5 ? 'gc' : 'code', blocker: top && top.share >= b.gcShare ? shortName(top) : null, route: b.route,
    };
  }

  /** @returns {Block} */
  #blockOf(m) {
    const start = Number(m.startNs);
    const end = Number(m.endNs);
    const durationNs = Math.max(1, end - start);
    // V8's full collections inside the block: its GC share (the stack sample answered after a
    // pause was weighted with it: the code's shares give it back); scavenges said, not taken out.
    const { gcNs, minorNs, kind } = this.#gc ? this.#gc.within(start, end) : { gcNs: 0, minorNs: 0, kind: null };
    const gcShare = Math.min(1, gcNs / durationNs);
    const code = 1 - gcShare;
    return {
      startedMs: m.startedMs, durationSeconds: m.durationMs / 1000, ranSeconds: m.ranMs / 1000, capturedSeconds: m.capturedMs / 1000,
      samples: m.samples, gcShare, gcKind: gcShare > 0 ? kind : null, scavengeShare: Math.min(1, minorNs / durationNs),
      route: this.#requests ? this.#requests.route(m.via, Number(m.firstNs)) : null,
      blockers: m.blockers.map((x) => ({ ...x, share: x.share * code })),
      uncaptured: m.samples > 0 || gcShare > 0.5 ? null : m.uncaptured || null,
      heap: gcShare > 0 ? heapNow() : null,
    };
  }

  /** @param {Block} block */
  #keep(block) {
    const cause = block.gcShare > 0.5 ? 'gc' : 'code';
    let h = this.#histograms.get(cause);
    if (!h) this.#histograms.set(cause, (h = new Histogram(BLOCK_BUCKETS)));
    h.observe(block.durationSeconds);
    const blocks = this.#blocks;
    if (blocks.length < MAX_BLOCKS) return void blocks.push(block);
    // Full: the shortest kept one makes room for a longer one.
    this.#dropped++;
    let min = 0;
    for (let i = 1; i < blocks.length; i++) if (blocks[i].durationSeconds < blocks[min].durationSeconds) min = i;
    if (blocks[min].durationSeconds < block.durationSeconds) blocks[min] = block;
  }

  /**
   * @param {import('../index').Tick} [tick]
   * @returns {import('../index').RawPoint[]}
   */
  sample(tick) {
    const before = this.#blocks.length + this.#dropped;
    this.#settle();
    if (this.#arming) this.#consider(tick, this.#blocks.length + this.#dropped > before);
    const out = [];
    for (const [cause, h] of this.#histograms) {
      if (h.count > 0) out.push({ name: 'nodejs.eventloop.block.duration', attributes: CAUSE(cause), histogram: h.snapshot() });
    }
    return out;
  }

  /**
   * auto: the capture starts at the first interval whose loop delay reached the threshold (that
   * block timed, not seen into: a block without samples, which the findings word as such) and
   * stops after the quiet period without one (arming.js).
   * @param {import('../index').Tick | undefined} tick
   * @param {boolean} blocked
   */
  #consider(tick, blocked) {
    const loop = tick && tick.loop;
    const late = loop ? loop.lateSeconds : 0;
    // Less the time the main thread waited for a CPU in the interval (the event-loop source's
    // reading, as its blockedOnCpuMaxSeconds, which eventloop-blocked counts: a loaded host is not
    // a block), and, while the capture is off, the other threads' wait for a CPU that the main
    // thread waited on (starved.js: a starved process is not a block either).
    const others = this.#others;
    const delay = !loop ? 0 : others && !(this.#arming && this.#arming.armed) ? others.blocked(loop, this.#thresholdMs / 1000) : blockedSeconds(loop, null);
    const arming = /** @type {import('./arming').Arming} */ (this.#arming);
    const what = arming.consider(delay, blocked);
    if (what === 'stop') return void this.#stop();
    if (what !== 'start') return;
    if (others) others.forget();
    this.#blocks.push({
      startedMs: Date.now() - late * 1000, durationSeconds: late, ranSeconds: delay, capturedSeconds: 0, samples: 0,
      gcShare: 0, gcKind: null, scavengeShare: 0, route: null, blockers: [], heap: null,
      uncaptured: 'the capture starts at the first block: the blocks of that interval were timed, not seen into',
    });
    this.#start();
  }

  /**
   * The interval's blocks (longest MAX_BLOCKS, in the order they ended), how many more there
   * were, and whether the capture runs.
   */
  details() {
    this.#settle();
    return {
      capturing: this.#unavailable === null,
      // auto: whether the capture runs now (it starts at the first block), how often it started
      mode: this.#options.mode || 'auto',
      armed: this.#unavailable === null && this.#worker !== null,
      armings: this.#arming ? this.#arming.armings : this.#worker ? 1 : 0,
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

  /**
   * No capture from here on. A capture waits (up to 5 s, in the native module) for the main
   * thread's next interrupt check: at exit, with no JavaScript left to run, it would hold the
   * process's end while Node joins the worker. So the watchdog marks each capture and checks this
   * gate first; one it already began is answered here, by a JavaScript loop (its checks serve the
   * interrupt), for at most GATE_MS.
   */
  #shut() {
    const g = this.#gate;
    if (!g) return;
    Atomics.store(g, 0, 1);
    const until = Date.now() + GATE_MS;
    while (Atomics.load(g, 1) === 1 && Date.now() < until);
  }

  close() {
    if (this.#arming) this.#arming.armed = false;
    this.#arming = null;
    this.#others = null;
    this.#stop();
  }
}

/**
 * The blockers sampler (see BlockersSampler); its watchdog starts at once (mode on), at the first
 * block (auto, the default) or never (off).
 * @param {{ mode?: string, thresholdMs?: number, quietMs?: number, now?: () => number, workerFile?: string, pollMs?: number, sampleMs?: number }} [options]
 * @returns {BlockersSampler}
 */
function createBlockersSampler(options = {}) {
  return new BlockersSampler(options);
}

module.exports = { createBlockersSampler, MAX_BLOCKS, _internal: { unavailable, loadNative } };
