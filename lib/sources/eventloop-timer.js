'use strict';

// Timer mode's clock for lib/sources/eventloop.js (Node without monitorEventLoopDelay's
// samplePerIteration: 20, 22, 24 before 24.19, 26 before 26.5). A timer's lateness is the loop's
// delay; a 10 ms timer wakes an idle process a hundred times a second, most of its idle CPU. So:
// - fine (10 ms) while the loop is busy: each firing records how late it fired;
// - coarse (100 ms) while it is quiet: each firing records the longer of its lateness and the
//   time the loop spent outside its poll since the previous firing (libuv's idle time, as
//   performance.eventLoopUtilization reads it), when the loop woke at most MAX_WAKEUPS times
//   besides the timer itself (loop iterations from uv_metrics_info). That busy time holds the
//   longest iteration and is an upper bound of it: with one wake-up it is that iteration, so a
//   block reads its full length though the timer was due only at its end; with a few, the
//   others add their (in a quiet loop, short) time. With more wake-ups it records
//   busy / wake-ups (the longest is at least that) and goes fine; so it does when more than one
//   wake-up (ONE_WAKEUP iterations) kept the loop busy over AMBIGUOUS_BUSY of the period (an
//   upper bound too loose).
// It starts fine. Fine turns coarse after a second with at most QUIET_WAKEUPS_PER_S wake-ups besides its own and
// at most QUIET_BUSY of the time busy. A coarse firing counts COARSE/FINE samples (the others as
// no lateness), so percentiles stay over time, as a fine timer's. Where Node lacks loop counts
// (before 20.18) it stays fine.

const FINE_MS = 10;
const COARSE_MS = 100;
const WINDOW_MS = 1000;
const QUIET_WAKEUPS_PER_S = 40;
const QUIET_BUSY = 0.1;
const MAX_WAKEUPS = 8;
const AMBIGUOUS_BUSY = 0.5;
// Iterations one wake-up can take: two where a timer's callbacks end the iteration after the one
// the loop woke in (seen on Node 24 and 26).
const ONE_WAKEUP = 2;

/** @returns {number|null} libuv loop iterations so far, null where Node does not tell */
function loopCount(performance) {
  const info = performance.nodeTiming && performance.nodeTiming.uvMetricsInfo;
  return info && typeof info.loopCount === 'number' ? info.loopCount : null;
}

/**
 * The adaptive lateness timer (see above). Values go to `histogram` in nanoseconds of lateness
 * (at least 1: a RecordableHistogram takes no 0).
 */
class LoopTimer {
  /** @type {import('perf_hooks').RecordableHistogram} */
  histogram;
  #performance;
  #fineMs;
  #coarseMs;
  #weight;
  #adaptive;
  /** @type {NodeJS.Timeout | null} */
  #timer = null;
  #periodMs = 0;
  #last = 0;
  #lastLoops = 0;
  #lastIdle = 0;
  #firings = 0;
  #windowAt = 0;
  #windowLoops = 0;
  #windowIdle = 0;
  #fine = () => this.#fineTick();
  #coarse = () => this.#coarseTick();

  /**
   * @param {object} options
   * @param {number} [options.fineMs] the period while the loop is busy (10)
   * @param {number} [options.coarseMs] the period while it is quiet (100); equal to fineMs: never coarse
   */
  constructor(options = {}) {
    const { createHistogram, performance } = require('perf_hooks');
    this.#performance = performance;
    this.histogram = createHistogram();
    this.#fineMs = options.fineMs || FINE_MS;
    this.#coarseMs = Math.max(this.#fineMs, options.coarseMs || COARSE_MS);
    this.#weight = Math.max(1, Math.round(this.#coarseMs / this.#fineMs));
    this.#adaptive = this.#coarseMs > this.#fineMs && loopCount(performance) !== null;
    // Fine at first: startup is busy, and an interval as short as a process that ends at once
    // still gets firings; a quiet second turns it coarse.
    this.#start(this.#fineMs);
  }

  /** The current period in milliseconds (fine or coarse). */
  get periodMs() {
    return this.#periodMs;
  }

  /** Stops the timer. */
  close() {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  #start(periodMs) {
    if (this.#timer) clearInterval(this.#timer);
    const performance = this.#performance;
    this.#periodMs = periodMs;
    this.#last = performance.now();
    this.#lastLoops = this.#windowLoops = loopCount(performance) || 0;
    this.#lastIdle = this.#windowIdle = performance.nodeTiming.idleTime;
    this.#windowAt = this.#last;
    this.#firings = 0;
    this.#timer = setInterval(periodMs === this.#fineMs ? this.#fine : this.#coarse, periodMs);
    this.#timer.unref();
  }

  #record(ms) {
    this.histogram.record(ms > 0 ? Math.max(1, Math.round(ms * 1e6)) : 1);
  }

  #fineTick() {
    const now = this.#performance.now();
    this.#record(now - this.#last - this.#periodMs);
    this.#last = now;
    if (!this.#adaptive || ++this.#firings * this.#periodMs < WINDOW_MS) return;
    const performance = this.#performance;
    const loops = loopCount(performance) || 0;
    const idle = performance.nodeTiming.idleTime;
    const wall = now - this.#windowAt;
    const wakeups = loops - this.#windowLoops - this.#firings;
    const busy = wall - (idle - this.#windowIdle);
    this.#windowAt = now;
    this.#windowLoops = loops;
    this.#windowIdle = idle;
    this.#firings = 0;
    if (wakeups <= (QUIET_WAKEUPS_PER_S * wall) / 1000 && busy <= QUIET_BUSY * wall) this.#start(this.#coarseMs);
  }

  #coarseTick() {
    const performance = this.#performance;
    const now = performance.now();
    const loops = loopCount(performance) || 0;
    const idle = performance.nodeTiming.idleTime;
    const late = now - this.#last - this.#periodMs;
    const wakeups = Math.max(0, loops - this.#lastLoops - 1);
    const busy = now - this.#last - (idle - this.#lastIdle);
    this.#last = now;
    this.#lastLoops = loops;
    this.#lastIdle = idle;
    this.#record(Math.max(late, wakeups <= MAX_WAKEUPS ? busy : busy / wakeups));
    for (let i = 1; i < this.#weight; i++) this.histogram.record(1);
    if (wakeups > MAX_WAKEUPS || (wakeups > ONE_WAKEUP && busy > AMBIGUOUS_BUSY * this.#periodMs)) this.#start(this.#fineMs);
  }
}

/**
 * Timer mode's adaptive lateness timer (see LoopTimer); it starts at once.
 * @param {{ fineMs?: number, coarseMs?: number }} [options]
 * @returns {LoopTimer}
 */
function createLoopTimer(options) {
  return new LoopTimer(options);
}

module.exports = { createLoopTimer, FINE_MS, COARSE_MS, MAX_WAKEUPS };
