'use strict';

// Timer mode's clock for lib/sources/eventloop.js (Node without monitorEventLoopDelay's
// samplePerIteration: 20, 22, 24 before 24.19, 26 before 26.5). A timer's lateness is the loop's
// delay; a 10 ms timer wakes an idle process a hundred times a second, most of its idle CPU. So:
// - fine (10 ms) while the loop is busy: Node's own monitorEventLoopDelay({ resolution: 10 })
//   samples, a libuv timer in C++ that records the time between its firings (the period plus
//   the lateness; no JavaScript runs per firing, a JavaScript interval cost ~60 us each). A
//   one-second JavaScript check decides when to go coarse;
// - coarse (100 ms) while it is quiet: a JavaScript interval; each firing records the longer of
//   its lateness and the time the loop spent outside its poll since the previous firing
//   (libuv's idle time, as performance.eventLoopUtilization reads it), when the loop woke at
//   most MAX_WAKEUPS times besides the timer itself (loop iterations from uv_metrics_info). That
//   busy time holds the longest iteration and is an upper bound of it: with one wake-up it is
//   that iteration, so a block reads its full length though the timer was due only at its end;
//   with a few, the others add their (in a quiet loop, short) time. With more wake-ups it
//   records busy / wake-ups (the longest is at least that) and goes fine; so it does when more
//   than one wake-up (ONE_WAKEUP iterations) kept the loop busy over AMBIGUOUS_BUSY of the
//   period (an upper bound too loose).
// It starts fine. Fine turns coarse after a second with at most QUIET_WAKEUPS_PER_S wake-ups
// besides its own and at most QUIET_BUSY of the time busy. Coarse turns long (LONG_MS, 1 s) after
// a second with at most LONG_WAKEUPS wake-ups besides its own and at most one fine period busy
// (an idle app's, whose few wake-ups are the agent's sample and the like). A long period reads the
// same way, and since its busy time is at most one fine period it errs by less than the
// resolution; one with more, or with more than MAX_WAKEUPS wake-ups, goes back to coarse. The sampler reads a long period at each
// sample (flush(): the period so far, then a new one from now), so a block is in the interval it
// happened in, and with the agent's 1 s interval the long timer never fires: an idle process
// wakes for the sample alone, not ten times a second (each wake-up costs ~0.1 ms of CPU). A
// coarse or long firing counts period/FINE samples (the others as no lateness), so percentiles
// stay over time, as a fine timer's. Where Node lacks loop counts (before 20.18) it stays fine.
//
// The native monitor's reset() forgets its last firing (Histogram::Reset sets prev_ = 0: the
// firing after a reset records nothing), so the interval that spans a reset would be lost, a
// block in it too. At each reset the monitor is restarted with a one-shot JavaScript timer due at
// the same time as its first firing; that timer records the lost interval itself: from the
// monitor's last firing before the reset (its first firing after the previous restart, which
// the one-shot timer saw, plus the sum of the intervals it recorded since: count x mean) to now.
// Mode switches do the same. So an interval's values are in two places (the native histogram,
// and LatenessValues with the JavaScript ones): `histogram` is a view of their union
// (lib/sources/eventloop-lateness.js).

const { LatenessValues, LatenessUnion } = require('./eventloop-lateness');

const FINE_MS = 10;
const COARSE_MS = 100;
const LONG_MS = 1000;
// Others' wake-ups in a second of coarse firings at most, to turn long: half what a long period
// may see (MAX_WAKEUPS), so an app woken about as often does not go back and forth.
const LONG_WAKEUPS = 4;
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
 * The adaptive lateness timer (see above). `histogram` reads lateness in nanoseconds.
 */
class LoopTimer {
  /** @type {LatenessUnion} */
  histogram;
  #performance;
  #native;
  #fineMs;
  #coarseMs;
  #longMs;
  #adaptive;
  /** @type {NodeJS.Timeout | null} the coarse interval, or fine mode's one-second check */
  #timer = null;
  /** @type {NodeJS.Timeout | null} the one-shot timer due with the native monitor's first firing */
  #shot = null;
  #shotBase = 0;
  /** performance.now() of the native monitor's first firing after its restart (the one-shot saw it), or null */
  #anchor = null;
  #periodMs = 0;
  #closed = false;
  // Coarse mode's last firing.
  #last = 0;
  #lastLoops = 0;
  #lastIdle = 0;
  // Coarse mode's window towards long: since #quietAt, wake-ups besides its own and busy time.
  #quietAt = 0;
  #quietWakeups = 0;
  #quietBusy = 0;
  // Fine mode's window: firings of its own (native, one-shot, check) so far, less the native
  // monitor's current count.
  #fired = 0;
  #windowAt = 0;
  #windowLoops = 0;
  #windowIdle = 0;
  #windowFired = 0;
  #check = () => this.#checkTick();
  #coarse = () => this.#coarseTick();
  #onShot = () => this.#shotTick();

  /**
   * @param {object} options
   * @param {number} [options.fineMs] the period while the loop is busy (10)
   * @param {number} [options.coarseMs] the period while it is quiet (100); equal to fineMs: never coarse
   * @param {number} [options.longMs] the period while it is idle (1000); equal to coarseMs: never long
   */
  constructor(options = {}) {
    const { monitorEventLoopDelay, performance } = require('perf_hooks');
    this.#performance = performance;
    this.#fineMs = Math.max(1, Math.round(options.fineMs || FINE_MS));
    this.#coarseMs = Math.max(this.#fineMs, options.coarseMs || COARSE_MS);
    this.#longMs = Math.max(this.#coarseMs, options.longMs || LONG_MS);
    this.#adaptive = this.#coarseMs > this.#fineMs && loopCount(performance) !== null;
    // One monitor for the timer's life, enabled while fine: a monitor created and dropped trips
    // Node 20 in process._getActiveHandles() (an assertion in AsyncWrap::GetOwner). Its libuv
    // timer is unref'd (Node's IntervalHistogram::OnStart).
    this.#native = monitorEventLoopDelay({ resolution: this.#fineMs });
    this.histogram = new LatenessUnion(this.#native, this.#fineMs * 1e6, new LatenessValues(), () => this.#resetNative());
    // Fine at first: startup is busy, and an interval as short as a process that ends at once
    // still gets firings; a quiet second turns it coarse.
    this.#startFine(performance.now());
  }

  /** The current period in milliseconds (fine, coarse or long). */
  get periodMs() {
    return this.#periodMs;
  }

  /** Stops the timers and the native monitor. */
  close() {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#shot) clearTimeout(this.#shot);
    this.#shot = null;
    this.#native.disable();
  }

  #startFine(base) {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    const performance = this.#performance;
    const native = this.#native;
    // Values the monitor kept from an earlier fine period (no sample since): into the recorded
    // histogram, since restarting clears them. Rare: fine, coarse and fine again between samples.
    const c = native.count;
    for (let i = 1; i <= c; i++) this.histogram.record(native.percentile((100 * i) / c) - this.#fineMs * 1e6);
    this.#periodMs = this.#fineMs;
    this.#restartNative(base);
    if (!this.#adaptive) return;
    this.#windowAt = performance.now();
    this.#windowLoops = loopCount(performance) || 0;
    this.#windowIdle = performance.nodeTiming.idleTime;
    this.#windowFired = this.#fired;
    this.#timer = setInterval(this.#check, WINDOW_MS);
    this.#timer.unref();
  }

  /**
   * Restarts the native monitor, its values cleared, with a one-shot timer due with its first
   * firing (which records nothing) that records the interval from `base` (the monitor's last
   * firing, or when sampling began) to itself.
   */
  #restartNative(base) {
    if (this.#shot) clearTimeout(this.#shot);
    this.#shotBase = base;
    // setTimeout first: it updates libuv's clock, from which the monitor's timer is due.
    this.#shot = setTimeout(this.#onShot, this.#fineMs);
    this.#shot.unref();
    this.#anchor = null;
    this.#fired += this.#native.count + 1; // + its first firing, which records nothing
    this.#native.disable();
    this.#native.reset();
    this.#native.enable();
  }

  /** performance.now() of the native monitor's last firing (estimated; see above), at most `now`. */
  #lastNativeFiring(now) {
    if (this.#shot) return Math.min(now, this.#shotBase);
    if (this.#anchor === null) return now;
    const native = this.#native;
    const c = native.count;
    return Math.min(now, this.#anchor + (c > 0 ? (c * native.mean) / 1e6 : 0));
  }

  /** The sampler read the interval: clear the native values, restarting the monitor while fine. */
  #resetNative() {
    if (this.#closed || this.#periodMs !== this.#fineMs) {
      if (this.#native.count > 0) this.#native.reset();
      return;
    }
    this.#restartNative(this.#lastNativeFiring(this.#performance.now()));
  }

  #shotTick() {
    this.#shot = null;
    const now = this.#performance.now();
    this.#anchor = now;
    this.#fired++;
    this.histogram.record((now - this.#shotBase - this.#fineMs) * 1e6);
  }

  #checkTick() {
    const performance = this.#performance;
    const now = performance.now();
    this.#fired++;
    const fired = this.#fired + this.#native.count;
    const loops = loopCount(performance) || 0;
    const idle = performance.nodeTiming.idleTime;
    const wall = now - this.#windowAt;
    const wakeups = loops - this.#windowLoops - (fired - this.#windowFired);
    const busy = wall - (idle - this.#windowIdle);
    this.#windowAt = now;
    this.#windowLoops = loops;
    this.#windowIdle = idle;
    this.#windowFired = fired;
    if (wakeups <= (QUIET_WAKEUPS_PER_S * wall) / 1000 && busy <= QUIET_BUSY * wall) this.#startCoarse(now);
  }

  #startCoarse(now) {
    const performance = this.#performance;
    if (this.#periodMs === this.#fineMs) {
      // The interval from the monitor's last firing to now, which disabling it loses.
      this.histogram.record((now - this.#lastNativeFiring(now) - this.#fineMs) * 1e6);
      if (this.#shot) clearTimeout(this.#shot);
      this.#shot = null;
      this.#anchor = null;
      this.#native.disable(); // its values stay for the next sample
    }
    if (this.#timer) clearInterval(this.#timer);
    this.#periodMs = this.#coarseMs;
    this.#last = now;
    this.#lastLoops = loopCount(performance) || 0;
    this.#lastIdle = performance.nodeTiming.idleTime;
    this.#quietAt = now;
    this.#quietWakeups = 0;
    this.#quietBusy = 0;
    this.#timer = setInterval(this.#coarse, this.#coarseMs);
    this.#timer.unref();
  }

  #startLong() {
    if (this.#timer) clearInterval(this.#timer);
    this.#periodMs = this.#longMs;
    this.#timer = setInterval(this.#coarse, this.#longMs);
    this.#timer.unref();
  }

  /**
   * The sampler is about to read the interval: in long mode, the period so far is recorded as a
   * firing would record it (it is not late: not due yet), and the next period starts now.
   */
  flush() {
    if (this.#closed || this.#periodMs !== this.#longMs || this.#longMs === this.#coarseMs) return;
    if (this.#read(this.#performance.now(), false) && this.#timer) this.#timer.refresh();
  }

  #coarseTick() {
    this.#read(this.#performance.now(), true);
  }

  /**
   * A coarse or long period's reading (a firing's, or flush()'s), then the mode it leaves the timer
   * in. Returns whether the timer stays long.
   * @param {number} now performance.now()
   * @param {boolean} due the timer fired (its lateness counts)
   */
  #read(now, due) {
    const performance = this.#performance;
    const loops = loopCount(performance) || 0;
    const idle = performance.nodeTiming.idleTime;
    const wall = now - this.#last;
    const late = due ? wall - this.#periodMs : 0;
    const wakeups = Math.max(0, loops - this.#lastLoops - (due ? 1 : 0));
    const busy = wall - (idle - this.#lastIdle);
    this.#last = now;
    this.#lastLoops = loops;
    this.#lastIdle = idle;
    this.histogram.record(Math.max(late, wakeups <= MAX_WAKEUPS ? busy : busy / wakeups) * 1e6);
    this.histogram.zeros += Math.max(1, Math.round((due ? this.#periodMs : wall) / this.#fineMs)) - 1;
    if (this.#periodMs === this.#longMs && this.#longMs > this.#coarseMs) {
      if (wakeups <= MAX_WAKEUPS && busy <= this.#fineMs) return true;
      this.#startCoarse(now);
      return false;
    }
    if (wakeups > MAX_WAKEUPS || (wakeups > ONE_WAKEUP && busy > AMBIGUOUS_BUSY * this.#periodMs)) {
      this.#startFine(now);
      return false;
    }
    // Beyond the iterations one wake-up of its own can take (ONE_WAKEUP): the others' wake-ups.
    this.#quietWakeups += Math.max(0, wakeups - (ONE_WAKEUP - 1));
    this.#quietBusy += busy;
    if (now - this.#quietAt >= WINDOW_MS) {
      const quiet = this.#longMs > this.#coarseMs && this.#quietWakeups <= LONG_WAKEUPS && this.#quietBusy <= this.#fineMs;
      this.#quietAt = now;
      this.#quietWakeups = 0;
      this.#quietBusy = 0;
      if (quiet) this.#startLong();
    }
    return false;
  }
}

/**
 * Timer mode's adaptive lateness timer (see LoopTimer); it starts at once.
 * @param {{ fineMs?: number, coarseMs?: number, longMs?: number }} [options]
 * @returns {LoopTimer}
 */
function createLoopTimer(options) {
  return new LoopTimer(options);
}

module.exports = { createLoopTimer, FINE_MS, COARSE_MS, LONG_MS, MAX_WAKEUPS };
