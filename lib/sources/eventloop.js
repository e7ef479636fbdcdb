'use strict';

const { Histogram } = require('../core/histogram');
const { metricDef, RUNTIME, NO_ATTRIBUTES, attributesOf } = require('./metric-def');
const { openSchedstat } = require('./schedstat');
// eventloop-timer.js (timer mode's clock) loads when a sampler runs in timer mode: the default on
// every Node (iteration mode is an explicit option, see EventLoopSampler).

const RESOLUTION_MS = 10;
const RESOLUTION_NS = RESOLUTION_MS * 1e6;
// Iteration mode's histogram holds busy times up to an hour (longer ones count as an hour).
const ITERATION_HIGHEST_NS = 3600e9;

/** Upper bounds for event-loop delay (lateness of a 10 ms timer). */
const EVENTLOOP_BUCKETS = Object.freeze([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
// nodejs.eventloop.delay.mode's attributes, one frozen object per mode.
const MODE_ATTRIBUTES = attributesOf('nodejs.eventloop.delay.mode');

/** @type {readonly import('./metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('nodejs.eventloop.delay', 'histogram', 's', [],
    'Event-loop delay. Mode timer (the default): how late a timer fired, every 10 ms while the loop is busy (a native timer, monitorEventLoopDelay), every 100 ms while it is quiet (then the longer of that and the time the loop was busy since the last firing, when it woke at most 8 times; a firing counts as 10 samples). Mode iteration (an option of the sampler, not the default): how long each loop iteration was busy (its callbacks, I/O ones included). See nodejs.eventloop.delay.mode; the two do not compare.',
    EVENTLOOP_BUCKETS, {
      ...RUNTIME,
      intervalGauges: Object.freeze(['min', 'max', 'mean', 'p50', 'p90', 'p99'].map((s) => `nodejs.eventloop.delay.${s}`)),
    }),
  metricDef('nodejs.eventloop.delay.mode', 'gauge', '1', ['nodejs.eventloop.delay.mode'],
    'How this process samples event-loop delay (always 1; the attribute says it): timer (the default: a timer\'s lateness, 10 ms while the loop is busy, 100 ms while it is quiet) or iteration (an option of the sampler: one sample per loop iteration, its busy time, check phase to check phase less the poll\'s wait).'),
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
 * Whether iteration mode can run here: it reads libuv's idle time (performance.nodeTiming.idleTime,
 * Node 14.10+; Node configures the loop with UV_METRICS_IDLE_TIME at startup), and needs nothing
 * else. (Node's monitorEventLoopDelay({ samplePerIteration }) is not used: it misses the poll
 * phase. A monitor created and dropped trips Node 20 in process._getActiveHandles(), an assertion
 * in AsyncWrap::GetOwner: eventloop-timer.js keeps its one monitor for that reason.)
 * @param {import('perf_hooks').Performance} performance
 * @returns {boolean}
 */
function readsIdleTime(performance) {
  return Boolean(performance.nodeTiming) && typeof performance.nodeTiming.idleTime === 'number';
}

/**
 * Event-loop delay and utilization per sampling interval, plus a cumulative delay histogram, in
 * one of two modes (nodejs.eventloop.delay.mode says which; their figures do not compare):
 *
 * - timer (the default, every Node): how late a repeating timer fires
 *   (lib/sources/eventloop-timer.js), every 10 ms while the loop is busy (Node's
 *   monitorEventLoopDelay, a timer in C++) and every 100 ms while it is quiet (a JavaScript timer),
 *   where a firing also reads the time the loop was busy since the previous one, so a 100 ms
 *   block reads 100 ms in either, in any callback (timers, immediates, I/O and threadpool
 *   completions); an idle loop reads ~0 (prom-client's nodejs_eventloop_lag_* read the 10 ms
 *   period itself). Samples are spread evenly over time (a coarse firing counts as ten). Its work
 *   runs from timers, by the clock: nothing per loop iteration or per request.
 * - iteration (options.mode 'iteration' only; see #iterationTick): how long each loop iteration
 *   was busy, read in its check phase (the time since the previous check phase less libuv's idle
 *   time), so a 200 ms block reads 200 ms in any callback and blocks shorter than 10 ms are seen
 *   too; no timer of its own. Percentiles are over iterations, not over time. Not the default:
 *   the immediate it chains runs every loop iteration (an Immediate object, Node's
 *   processImmediate called from C++, two native ref toggles): on Node 24 under callgrind, ~9.7k
 *   instructions an I/O-driven iteration with V8's compilers and ~16k in the interpreter for the
 *   chain alone, so a hello server paid ~20k a request interpreted (bench/instructions.js), where
 *   prom-client pays nothing; and an app's async_hooks saw one Immediate resource an iteration.
 *   Node offers no cheaper JavaScript hook per iteration, and its native one
 *   (monitorEventLoopDelay({ samplePerIteration }), 24.19+, 26.5+) misses the poll phase's
 *   callbacks (see the constructor).
 *
 * The histogram buckets are filled from the HDR histogram by rank (see countAtMost), so they are
 * exact to its 3 significant digits, without a JavaScript timer of our own.
 */
class EventLoopSampler {
  /** Also the key of its details in snapshot.details. */
  name = 'eventloop';
  /** @type {'iteration' | 'timer'} how it samples (see above) */
  mode;
  /** @type {import('perf_hooks').Performance} */
  #performance;
  /** @type {import('perf_hooks').RecordableHistogram} iteration mode's; timer mode's is its clock's union (same read interface) */
  #monitor;
  /** What a sample reads when nothing delayed the loop (ns): subtracted, so both modes read lateness. */
  #offsetNs;
  /** @type {Histogram} */
  #histogram;
  /** @type {import('perf_hooks').EventLoopUtilization} */
  #lastElu;
  /** @type {{ read(): number[] | null, close(): void } | null} */
  #sched;
  /** @type {number[] | null} */
  #lastSched;
  /** @type {NodeJS.CpuUsage | null} the process's CPU time at the interval's start */
  #lastCpu = null;
  // The interval's longest lateness (seconds), as sample() read it; with the thread's wait for a
  // CPU it tells a loop the app blocked from one whose thread waited for a CPU (details()).
  #intervalLate = 0;
  /** @type {ReturnType<typeof import('./eventloop-timer').createLoopTimer> | null} timer mode's clock */
  #timer = null;
  // Iteration mode's clock (see #iterationTick): the last reading's performance.now() and libuv
  // idle time (ms; -1 before the first), the pending immediate, whether closed.
  #lastCheck = -1;
  #lastIdle = 0;
  /** @type {NodeJS.Immediate | null} */
  #immediate = null;
  #closed = false;
  #onCheck = () => this.#iterationTick();

  /**
   * @param {object} options
   * @param {number} [options.resolutionMs] timer mode's period while the loop is busy (10)
   * @param {number} [options.coarseMs] timer mode's period while it is quiet (100; equal to
   *   resolutionMs: always the busy period)
   * @param {'auto'|'timer'|'iteration'} [options.mode] auto (the default) and timer: timer mode;
   *   iteration: iteration mode where Node reads libuv's idle time (every supported Node), else timer
   */
  constructor(options) {
    // perf_hooks loads with the sampler, not with its declaration (it would cost the preload).
    const { createHistogram, performance } = require('perf_hooks');
    this.#performance = performance;
    const resolutionMs = options.resolutionMs || RESOLUTION_MS;
    const mode = options.mode === 'iteration' && readsIdleTime(performance) ? 'iteration' : 'timer';
    this.mode = mode;
    // Timer mode's histogram reads lateness (its native monitor's period is subtracted there);
    // iteration mode records durations: nothing to subtract.
    this.#offsetNs = 0;
    if (mode === 'timer') {
      const { createLoopTimer, COARSE_MS } = require('./eventloop-timer');
      this.#timer = createLoopTimer({ fineMs: resolutionMs, coarseMs: options.coarseMs || COARSE_MS });
      this.#monitor = /** @type {any} */ (this.#timer.histogram);
    } else {
      // Not Node's monitorEventLoopDelay({ samplePerIteration }): it records the time from one
      // check phase to the next prepare phase and of the poll phase only what ran past the
      // poll's timeout (IterationHistogram::CheckCB, src/histogram.cc), so a callback the poll
      // phase runs (all I/O: sockets, and threadpool completions, fs, dns.lookup, crypto, through
      // libuv's async handle) is unseen unless a timer was due in it: a 200 ms block in an
      // fs.readFile callback read 1 ms on Node 24.21 and 26.12. Here each iteration's busy time
      // is read in its check phase: the time since the previous check phase less libuv's idle
      // time in between (its poll's wait), in an unref'd immediate that queues the next one (no
      // idle handle: the loop still sleeps in its poll, and nothing runs while it does).
      // 1 us to 1 h at 3 digits: 188 KB of counts (Node's iteration histogram, 1 ns to 2^63, had 442).
      this.#monitor = createHistogram({ lowest: 1000, highest: ITERATION_HIGHEST_NS });
      this.#immediate = setImmediate(this.#onCheck);
      this.#immediate.unref();
    }
    this.#histogram = new Histogram(EVENTLOOP_BUCKETS);
    this.#lastElu = performance.eventLoopUtilization();
    this.#sched = openSchedstat();
    this.#lastSched = this.#sched ? this.#sched.read() : null;
  }

  /**
   * Iteration mode, once per loop iteration in its check phase: records the iteration's busy time
   * (ns, at least 1). The first reading only starts the clock: from a preload or top-level code the
   * time since the sampler began holds the app's startup, which is no iteration.
   */
  #iterationTick() {
    const now = this.#performance.now();
    const idle = this.#performance.nodeTiming.idleTime;
    if (this.#lastCheck >= 0) {
      const ns = Math.round((now - this.#lastCheck - (idle - this.#lastIdle)) * 1e6);
      // (NaN, were idleTime ever missing, records 1: record() would throw into the app.)
      this.#monitor.record(ns >= 1 ? (ns < ITERATION_HIGHEST_NS ? ns : ITERATION_HIGHEST_NS) : 1);
    }
    this.#lastCheck = now;
    this.#lastIdle = idle;
    if (this.#closed) return;
    this.#immediate = setImmediate(this.#onCheck);
    this.#immediate.unref();
  }

  /** Timer mode: the timer's current period in milliseconds (10 busy, 100 quiet); null in iteration mode. */
  get timerPeriodMs() {
    return this.#timer ? this.#timer.periodMs : null;
  }

  /** @returns {import('./index').RawPoint[]} */
  sample() {
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
    this.#sampleDelay(out);
    if (this.#histogram.count > 0) {
      out.push({ name: 'nodejs.eventloop.delay', attributes: NO_ATTRIBUTES, histogram: this.#histogram.snapshot() });
    }
    return out;
  }

  /**
   * The interval's delay gauges into `out`, its samples into the histogram; then the monitor is
   * reset (timer mode records the interval that spans the reset itself, iteration mode records an
   * iteration at its end: nothing is lost at a reset).
   * @param {import('./index').RawPoint[]} out
   */
  #sampleDelay(out) {
    const monitor = this.#monitor;
    const offsetNs = this.#offsetNs;
    const n = monitor.count;
    this.#intervalLate = n > 0 ? lateness(monitor.max, offsetNs) : 0;
    if (n === 0) return;
    // Each of the histogram's statistics is a native walk over its buckets: mean is read once.
    const mean = monitor.mean;
    out.push(
      { name: 'nodejs.eventloop.delay.min', attributes: NO_ATTRIBUTES, value: lateness(monitor.min, offsetNs) },
      { name: 'nodejs.eventloop.delay.max', attributes: NO_ATTRIBUTES, value: this.#intervalLate },
      { name: 'nodejs.eventloop.delay.mean', attributes: NO_ATTRIBUTES, value: lateness(mean, offsetNs) },
      { name: 'nodejs.eventloop.delay.p50', attributes: NO_ATTRIBUTES, value: lateness(monitor.percentile(50), offsetNs) },
      { name: 'nodejs.eventloop.delay.p90', attributes: NO_ATTRIBUTES, value: lateness(monitor.percentile(90), offsetNs) },
      { name: 'nodejs.eventloop.delay.p99', attributes: NO_ATTRIBUTES, value: lateness(monitor.percentile(99), offsetNs) },
    );
    addToBuckets(this.#histogram, monitor, n, offsetNs, mean);
    monitor.reset();
  }

  /**
   * Seconds the main thread ran on a CPU and waited for one since the last endInterval() (null where
   * the platform does not tell): a loop late because its thread waited for a CPU (an
   * overloaded host, a CPU quota) is not an app blocking its loop. Read after sample().
   */
  details() {
    const now = this.#sched ? this.#sched.read() : null;
    const last = this.#lastSched;
    const known = now !== null && last !== null;
    const wait = known ? (now[1] - last[1]) / 1e9 : null;
    return {
      mainThreadCpuSeconds: known ? (now[0] - last[0]) / 1e9 : null,
      mainThreadWaitSeconds: wait,
      // The interval's longest lateness less all the time the thread waited for a CPU in the
      // interval: what the app blocked at least, running or in a blocking call (sync I/O,
      // Atomics.wait, execSync). A lower bound: the wait may have been outside the block.
      blockedOnCpuMaxSeconds: known ? Math.max(0, this.#intervalLate - wait) : null,
      // CPU time of the whole process (every thread) in the interval: against the CPU budget it
      // tells an app that uses its CPUs from one that waits for a busy host (cpu-starved).
      processCpuSeconds: this.#lastCpu ? cpuSeconds(process.cpuUsage(this.#lastCpu)) : null,
    };
  }

  /** Start a new interval. */
  endInterval() {
    this.#lastSched = this.#sched ? this.#sched.read() : null;
    this.#lastCpu = process.cpuUsage();
    this.#intervalLate = 0;
  }

  /** Stops the monitor (or timer mode's timer), closes the schedstat file. */
  close() {
    this.#closed = true;
    if (this.#timer) this.#timer.close();
    if (this.#immediate) clearImmediate(this.#immediate);
    this.#immediate = null;
    if (this.#sched) this.#sched.close();
  }
}

/**
 * The event-loop sampler (see EventLoopSampler); it starts monitoring at once.
 * @param {object} [options]
 * @param {number} [options.resolutionMs] timer mode's period while the loop is busy
 * @param {number} [options.coarseMs] timer mode's period while it is quiet
 * @param {'auto'|'timer'|'iteration'} [options.mode] auto (the default): timer; iteration on request
 * @returns {EventLoopSampler}
 */
function createEventLoopSampler(options = {}) {
  return new EventLoopSampler(options);
}

/** User and system CPU time (µs) in seconds. */
function cpuSeconds(usage) {
  return (usage.user + usage.system) / 1e6;
}

/** A monitor's value (ns) as lateness in seconds: less what an undelayed loop reads. */
function lateness(ns, offsetNs) {
  return Math.max(0, ns - offsetNs) / 1e9;
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
 * Move one interval's samples from the HDR histogram into the explicit buckets.
 * The sum is count x mean, which is exact.
 */
function addToBuckets(histogram, monitor, n, resolutionNs, mean = monitor.mean) {
  // Bounds at or above the largest value hold every sample, bounds below the smallest none: no
  // search for those (an idle interval needs one native call, not ~90; a tenth of a sample's CPU).
  const max = monitor.max;
  const min = monitor.min;
  let below = 0;
  for (let i = 0; i < histogram.bounds.length; i++) {
    const limit = histogram.bounds[i] * 1e9 + resolutionNs;
    const atMost = limit >= max ? n : limit < min ? below : countAtMost(monitor, n, limit, below);
    histogram.counts[i] += atMost - below;
    below = atMost;
  }
  histogram.counts[histogram.bounds.length] += n - below;
  histogram.count += n;
  histogram.sum += (n * Math.max(0, mean - resolutionNs)) / 1e9;
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

module.exports = { source, EVENTLOOP_BUCKETS, createEventLoopSampler, readsIdleTime, RESOLUTION_MS, RESOLUTION_NS, _internal: { addToBuckets, countAtMost } };
