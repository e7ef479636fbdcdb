'use strict';

const { Histogram } = require('../core/histogram');
const { metricDef, RUNTIME, NO_ATTRIBUTES, attributesOf } = require('./metric-def');
const { openSchedstat } = require('./schedstat');

const RESOLUTION_MS = 10;
// Readings of the main thread's wait for a CPU kept (see waitAt): 1.6 s at 100 ms, 16 s at 1 s.
const WAITS = 16;
const RESOLUTION_NS = RESOLUTION_MS * 1e6;

/** Upper bounds for event-loop delay (lateness of a 10 ms timer). */
const EVENTLOOP_BUCKETS = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
// nodejs.eventloop.delay.mode's attributes, one frozen object per mode.
const MODE_ATTRIBUTES = attributesOf('nodejs.eventloop.delay.mode');

/** @type {readonly import('./metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('nodejs.eventloop.delay', 'histogram', 's', [],
    'Event-loop delay: how late a timer fired, every 10 ms while the loop is busy (a native timer, monitorEventLoopDelay), every 100 ms while it is quiet and every second (read at each sample) while it is idle (then the longer of that and the time the loop was busy since the last firing, when it woke at most 8 times; a firing counts as one sample per 10 ms of its period).',
    EVENTLOOP_BUCKETS, {
      ...RUNTIME,
      intervalGauges: Object.freeze(['min', 'max', 'mean', 'p50', 'p90', 'p99'].map((s) => `nodejs.eventloop.delay.${s}`)),
    }),
  metricDef('nodejs.eventloop.delay.mode', 'gauge', '1', ['nodejs.eventloop.delay.mode'],
    'How this process samples event-loop delay (always 1; the attribute says it): timer, a timer\'s lateness, 10 ms while the loop is busy, 100 ms while it is quiet, 1 s while it is idle (the only mode this version has).'),
  metricDef('nodejs.eventloop.delay.min', 'gauge', 's', [], 'Smallest event-loop delay in the last sampling interval.', undefined, RUNTIME),
  metricDef('nodejs.eventloop.delay.max', 'gauge', 's', [], 'Largest event-loop delay in the last sampling interval.', undefined, RUNTIME),
  metricDef('nodejs.eventloop.delay.mean', 'gauge', 's', [], 'Mean event-loop delay in the last sampling interval.', undefined, RUNTIME),
  metricDef('nodejs.eventloop.delay.p50', 'gauge', 's', [], 'Median event-loop delay in the last sampling interval.', undefined, RUNTIME),
  metricDef('nodejs.eventloop.delay.p90', 'gauge', 's', [], '90th percentile event-loop delay in the last sampling interval.', undefined, RUNTIME),
  metricDef('nodejs.eventloop.delay.p99', 'gauge', 's', [], '99th percentile event-loop delay in the last sampling interval.', undefined, RUNTIME),
  metricDef('nodejs.eventloop.utilization', 'gauge', '1', [],
    'Fraction of the last sampling interval the event loop was busy (performance.eventLoopUtilization).', undefined, RUNTIME),
  metricDef('nodejs.eventloop.iterations', 'counter', '{iteration}', [],
    'Event-loop iterations since the process started (performance.nodeTiming.uvMetricsInfo.loopCount, from libuv\'s uv_metrics_info).'),
  metricDef('nodejs.eventloop.events', 'counter', '{event}', [],
    'I/O events the event loop has processed since the process started (uvMetricsInfo.events).'),
  metricDef('nodejs.eventloop.events.waiting', 'counter', '{event}', [],
    'I/O events that were already waiting when the event loop polled for them, i.e. that arrived while it was busy (uvMetricsInfo.eventsWaiting). Its rate against nodejs.eventloop.events is the share of I/O that found the loop busy.'),
]);

/**
 * Event-loop delay and utilization per sampling interval, plus a cumulative delay histogram: how
 * late a repeating timer fires (lib/sources/eventloop-timer.js), every 10 ms while the loop is
 * busy (Node's monitorEventLoopDelay, a timer in C++), every 100 ms while it is quiet and every
 * second while it is idle, read at each sample (a JavaScript timer), where a firing also reads the
 * time the loop was busy since the previous one, so a 100 ms block reads 100 ms in each, in any callback (timers, immediates, I/O and
 * threadpool completions); an idle loop reads ~0 (prom-client's nodejs_eventloop_lag_* read the
 * 10 ms period itself). Samples are spread evenly over time (a firing counts one per 10 ms of its period). Its
 * work runs from timers, by the clock: nothing per loop iteration or per request, so an app's
 * async_hooks see no resource per iteration. (Not monitorEventLoopDelay({ samplePerIteration }):
 * it counts the poll phase, where I/O callbacks run, only past the poll's timeout, so a 200 ms
 * block in an fs.readFile callback reads 1 ms; IterationHistogram::CheckCB, src/histogram.cc.)
 *
 * The histogram buckets are filled from the HDR histogram by rank (see countAtMost), so they are
 * exact to its 3 significant digits, without a JavaScript timer of our own.
 */
class EventLoopSampler {
  /** Also the key of its details in snapshot.details. */
  name = 'eventloop';
  /** How it samples: nodejs.eventloop.delay.mode's attribute (timer, the only mode). */
  mode = 'timer';
  /** @type {import('perf_hooks').Performance} */
  #performance;
  /** @type {ReturnType<typeof import('./eventloop-timer').createLoopTimer>} the clock */
  #timer;
  /** @type {import('perf_hooks').RecordableHistogram} the clock's lateness (its union of fine and coarse firings) */
  #monitor;
  /** @type {Histogram} */
  #histogram;
  /** @type {import('perf_hooks').EventLoopUtilization} */
  #lastElu;
  /** @type {{ read(): number[] | null, close(): void } | null} */
  #sched;
  /** @type {number[] | null} the main thread's schedstat at the interval's start */
  #lastSched;
  /** @type {number[] | null} ...and at its end: read once, by sample() (see #read) */
  #nowSched = null;
  // performance.now() (ms) of those two readings: the interval's span.
  #lastAt = 0;
  #nowAt = 0;
  /** @type {import('./index').LoopReading} handed on in the tick (one object, rewritten each sample) */
  #reading = { lateSeconds: 0, spanSeconds: 0, mainThreadCpuSeconds: null, mainThreadWaitSeconds: null, blockedOnCpuMaxSeconds: null };
  // The last WAITS readings' [time (s, performance.now), the thread's wait for a CPU so far (s)]:
  // a lateness longer than its interval (a firing due before the last sample, on a starved core)
  // began in an earlier one, whose wait counts too.
  #waits = new Float64Array(2 * WAITS);
  #waitsAt = 0; // readings written
  /** @type {NodeJS.CpuUsage | null} the process's CPU time at the interval's start */
  #lastCpu = null;
  // The interval's longest lateness (seconds), as sample() read it; with the thread's wait for a
  // CPU it tells a loop the app blocked from one whose thread waited for a CPU (details()).
  #intervalLate = 0;

  /**
   * @param {object} options
   * @param {number} [options.resolutionMs] the period while the loop is busy (10)
   * @param {number} [options.coarseMs] the period while it is quiet (100; equal to resolutionMs:
   *   always the busy period)
   */
  constructor(options) {
    // perf_hooks and the clock load with the sampler, not with its declaration (the preload).
    const { performance } = require('perf_hooks');
    const { createLoopTimer, COARSE_MS } = require('./eventloop-timer');
    this.#performance = performance;
    this.#timer = createLoopTimer({ fineMs: options.resolutionMs || RESOLUTION_MS, coarseMs: options.coarseMs || COARSE_MS });
    this.#monitor = /** @type {any} */ (this.#timer.histogram);
    this.#histogram = new Histogram(EVENTLOOP_BUCKETS);
    this.#lastElu = performance.eventLoopUtilization();
    this.#sched = openSchedstat();
    this.#lastSched = this.#sched ? this.#sched.read() : null;
    this.#lastAt = performance.now();
    if (this.#lastSched) {
      this.#waits[0] = this.#lastAt / 1000;
      this.#waits[1] = this.#lastSched[1] / 1e9;
      this.#waitsAt = 1;
    }
  }

  /** The timer's current period in milliseconds (10 busy, 100 quiet, 1000 idle). */
  get timerPeriodMs() {
    return this.#timer.periodMs;
  }

  /**
   * @param {import('./index').Tick} [tick] gets the interval's reading (tick.loop), for the
   *   samplers after this one (the blockers capture's start)
   * @returns {import('./index').RawPoint[]}
   */
  sample(tick) {
    const performance = this.#performance;
    /** @type {import('./index').RawPoint[]} */
    const out = [{ name: 'nodejs.eventloop.delay.mode', attributes: MODE_ATTRIBUTES(this.mode), value: 1 }];
    // One reading a sample: the interval's utilization is this reading against the last one (and
    // the next interval starts where this one ends, with no gap between two readings).
    const now = performance.eventLoopUtilization();
    const elu = performance.eventLoopUtilization(now, this.#lastElu);
    this.#lastElu = now;
    out.push({ name: 'nodejs.eventloop.utilization', attributes: NO_ATTRIBUTES, value: elu.utilization });
    const uv = uvMetrics(performance);
    if (uv) {
      out.push(
        { name: 'nodejs.eventloop.iterations', attributes: NO_ATTRIBUTES, value: uv.loopCount },
        { name: 'nodejs.eventloop.events', attributes: NO_ATTRIBUTES, value: uv.events },
        { name: 'nodejs.eventloop.events.waiting', attributes: NO_ATTRIBUTES, value: uv.eventsWaiting },
      );
    }
    this.#timer.flush(); // a long period's reading so far, into this interval
    this.#sampleDelay(out);
    this.#read();
    if (tick) tick.loop = this.#reading;
    if (this.#histogram.count > 0) {
      out.push({ name: 'nodejs.eventloop.delay', attributes: NO_ATTRIBUTES, histogram: this.#histogram.snapshot() });
    }
    return out;
  }

  /**
   * The interval's delay gauges into `out`, its samples into the histogram; then the monitor is
   * reset (the clock records the interval that spans the reset itself: nothing is lost).
   * @param {import('./index').RawPoint[]} out
   */
  #sampleDelay(out) {
    const monitor = this.#monitor;
    const n = monitor.count;
    this.#intervalLate = n > 0 ? seconds(monitor.max) : 0;
    if (n === 0) return;
    // Each of the histogram's statistics is a native walk over its buckets: mean is read once.
    const mean = monitor.mean;
    out.push(
      { name: 'nodejs.eventloop.delay.min', attributes: NO_ATTRIBUTES, value: seconds(monitor.min) },
      { name: 'nodejs.eventloop.delay.max', attributes: NO_ATTRIBUTES, value: this.#intervalLate },
      { name: 'nodejs.eventloop.delay.mean', attributes: NO_ATTRIBUTES, value: seconds(mean) },
      { name: 'nodejs.eventloop.delay.p50', attributes: NO_ATTRIBUTES, value: seconds(monitor.percentile(50)) },
      { name: 'nodejs.eventloop.delay.p90', attributes: NO_ATTRIBUTES, value: seconds(monitor.percentile(90)) },
      { name: 'nodejs.eventloop.delay.p99', attributes: NO_ATTRIBUTES, value: seconds(monitor.percentile(99)) },
    );
    addToBuckets(this.#histogram, monitor, n, mean);
    monitor.reset();
  }

  /**
   * The interval's end: the main thread's schedstat, read once for every reader of the interval
   * (details(), the tick's loop reading, the next interval's start).
   */
  #read() {
    const now = this.#sched ? this.#sched.read() : null;
    this.#nowSched = now;
    this.#nowAt = this.#performance.now();
    const last = this.#lastSched;
    const known = now !== null && last !== null;
    const r = this.#reading;
    r.lateSeconds = this.#intervalLate;
    r.spanSeconds = (this.#nowAt - this.#lastAt) / 1000;
    r.mainThreadCpuSeconds = known ? (now[0] - last[0]) / 1e9 : null;
    r.mainThreadWaitSeconds = known ? (now[1] - last[1]) / 1e9 : null;
    // The interval's longest lateness less the time the thread waited for a CPU over it: what the
    // app blocked at least, running or in a blocking call (sync I/O, Atomics.wait, execSync). A
    // lower bound: the wait may have been outside the block. A lateness longer than the interval
    // (a firing due before the last sample, on a starved core) counts the wait over all of it.
    let wait = r.mainThreadWaitSeconds;
    if (now !== null) {
      if (wait !== null && r.lateSeconds > r.spanSeconds) wait = now[1] / 1e9 - waitAt(this.#waits, this.#waitsAt, this.#nowAt / 1000 - r.lateSeconds);
      const i = (this.#waitsAt++ % WAITS) * 2;
      this.#waits[i] = this.#nowAt / 1000;
      this.#waits[i + 1] = now[1] / 1e9;
    }
    r.blockedOnCpuMaxSeconds = wait !== null ? Math.max(0, r.lateSeconds - wait) : null;
  }

  /**
   * Seconds the main thread ran on a CPU and waited for one in the interval (null where the
   * platform does not tell): a loop late because its thread waited for a CPU (an overloaded host,
   * a CPU quota) is not an app blocking its loop. From sample()'s reading (read there if not yet).
   */
  details() {
    if (this.#nowSched === null) this.#read();
    const r = this.#reading;
    return {
      mainThreadCpuSeconds: r.mainThreadCpuSeconds,
      mainThreadWaitSeconds: r.mainThreadWaitSeconds,
      blockedOnCpuMaxSeconds: r.blockedOnCpuMaxSeconds,
      // CPU time of the whole process (every thread) in the interval: against the CPU budget it
      // tells an app that uses its CPUs from one that waits for a busy host (cpu-starved).
      processCpuSeconds: this.#lastCpu ? cpuSeconds(process.cpuUsage(this.#lastCpu)) : null,
    };
  }

  /** Start a new interval. */
  endInterval() {
    if (this.#nowSched === null) this.#read();
    this.#lastSched = this.#nowSched;
    this.#lastAt = this.#nowAt;
    this.#nowSched = null;
    this.#lastCpu = process.cpuUsage();
    this.#intervalLate = 0;
  }

  /** Stops the clock, closes the schedstat file. */
  close() {
    this.#timer.close();
    if (this.#sched) this.#sched.close();
  }
}

/**
 * The event-loop sampler (see EventLoopSampler); it starts monitoring at once.
 * @param {object} [options]
 * @param {number} [options.resolutionMs] the period while the loop is busy
 * @param {number} [options.coarseMs] the period while it is quiet
 * @returns {EventLoopSampler}
 */
function createEventLoopSampler(options = {}) {
  return new EventLoopSampler(options);
}

/**
 * The main thread's wait for a CPU so far (s) at time t (s), from the ring of readings [time, wait
 * so far] (the last min(written, WAITS)): interpolated between the two around t, the oldest one's
 * where t is before it (what it waited before is not counted).
 * @param {Float64Array} w
 * @param {number} written readings written so far (the newest at (written - 1) % WAITS)
 * @param {number} t
 */
function waitAt(w, written, t) {
  const n = Math.min(written, WAITS);
  let after = -1; // the oldest reading at or after t
  let before = -1; // the newest reading before t
  for (let k = 0; k < n; k++) {
    const i = ((written - 1 - k) % WAITS) * 2; // newest first
    if (w[i] >= t) after = i;
    else {
      before = i;
      break;
    }
  }
  if (after < 0) return before < 0 ? 0 : w[before + 1];
  if (before < 0) return w[after + 1];
  const share = (t - w[before]) / Math.max(1e-9, w[after] - w[before]);
  return w[before + 1] + share * (w[after + 1] - w[before + 1]);
}

/** User and system CPU time (µs) in seconds. */
function cpuSeconds(usage) {
  return (usage.user + usage.system) / 1e6;
}

/** A monitor's lateness (ns) in seconds, never below 0. */
function seconds(ns) {
  return Math.max(0, ns) / 1e9;
}

/**
 * libuv's loop metrics (uv_metrics_info: iterations, events processed, events that were waiting
 * when the loop polled), where Node exposes them as performance.nodeTiming.uvMetricsInfo
 * (Node 20.18+, 22.8+, 24, 26); cumulative since the process started. Null elsewhere.
 * @param {import('perf_hooks').Performance} performance
 * @returns {{ loopCount: number, events: number, eventsWaiting: number } | null}
 */
function uvMetrics(performance) {
  const info = performance.nodeTiming && performance.nodeTiming.uvMetricsInfo;
  return info && typeof info.loopCount === 'number' ? info : null;
}

/**
 * Move one interval's samples (lateness, ns) from the HDR histogram into the explicit buckets.
 * The sum is count x mean, which is exact.
 */
function addToBuckets(histogram, monitor, n, mean = monitor.mean) {
  // Bounds at or above the largest value hold every sample, bounds below the smallest none: no
  // search for those (an idle interval needs one native call, not ~90; a tenth of a sample's CPU).
  const max = monitor.max;
  const min = monitor.min;
  let below = 0;
  for (let i = 0; i < histogram.bounds.length; i++) {
    const limit = histogram.bounds[i] * 1e9;
    const atMost = limit >= max ? n : limit < min ? below : countAtMost(monitor, n, limit, below);
    histogram.counts[i] += atMost - below;
    below = atMost;
  }
  histogram.counts[histogram.bounds.length] += n - below;
  histogram.count += n;
  histogram.sum += (n * Math.max(0, mean)) / 1e9;
  histogram.frozen = null; // its cached snapshot (lib/core/histogram.js) is stale now
}

/**
 * How many of the n recorded values are <= limitNs: the largest rank k whose value
 * (percentile(100 k / n), which hdr_value_at_percentile maps back to rank k) is <= limitNs.
 * Binary search from a known lower rank; about log2(n) native calls.
 */
function countAtMost(monitor, n, limitNs, lower) {
  let lo = lower; // ranks <= lo are known to be <= limitNs
  let hi = n;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (monitor.percentile((100 * mid) / n) <= limitNs) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** @type {import('./index').Source} */
const source = Object.freeze({
  name: 'eventloop',
  settings: Object.freeze([]),
  metrics: METRICS,
  create: () => createEventLoopSampler(),
});

module.exports = { source, EVENTLOOP_BUCKETS, createEventLoopSampler, RESOLUTION_MS, RESOLUTION_NS, _internal: { addToBuckets, countAtMost, waitAt, WAITS } };
