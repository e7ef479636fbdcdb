'use strict';

const { monitorEventLoopDelay, performance } = require('perf_hooks');
const { Histogram } = require('../histogram');
const { EVENTLOOP_BUCKETS } = require('../metrics');

const RESOLUTION_MS = 10;
// Linux: nanoseconds the calling thread ran on a CPU and waited on a run queue for one
// (Documentation/scheduler/sched-stats.rst). Read synchronously: a small procfs file, no disk.
const THREAD_SCHEDSTAT = '/proc/thread-self/schedstat';
const RESOLUTION_NS = RESOLUTION_MS * 1e6;

/**
 * Event-loop delay and utilization per sampling interval, plus a cumulative delay histogram.
 *
 * monitorEventLoopDelay records the time between two firings of a repeating 10 ms timer, so an
 * idle loop reads ~10 ms (prom-client's nodejs_eventloop_lag_* show this). uvscope subtracts the
 * resolution and reports lateness: an idle loop reads ~0, a 200 ms block reads up to 200 ms.
 * The histogram buckets are filled from the HDR histogram by rank (see countAtMost), so they are
 * exact to its 3 significant digits, without a JavaScript timer of our own.
 *
 * @param {object} [options]
 * @param {number} [options.resolutionMs]
 */
function createEventLoopSampler(options = {}) {
  const resolutionMs = options.resolutionMs || RESOLUTION_MS;
  const resolutionNs = resolutionMs * 1e6;
  const monitor = monitorEventLoopDelay({ resolution: resolutionMs });
  monitor.enable();
  const histogram = new Histogram(EVENTLOOP_BUCKETS);
  let lastElu = performance.eventLoopUtilization();
  let lastSched = mainThreadSchedstat();

  return {
    name: 'eventloop',
    sample() {
      const out = [];
      const elu = performance.eventLoopUtilization(lastElu);
      lastElu = performance.eventLoopUtilization();
      out.push({ name: 'nodejs.eventloop.utilization', attributes: {}, value: elu.utilization });

      const n = monitor.count;
      if (n > 0) {
        const lateness = (ns) => Math.max(0, ns - resolutionNs) / 1e9;
        out.push(
          { name: 'nodejs.eventloop.delay.min', attributes: {}, value: lateness(monitor.min) },
          { name: 'nodejs.eventloop.delay.max', attributes: {}, value: lateness(monitor.max) },
          { name: 'nodejs.eventloop.delay.mean', attributes: {}, value: lateness(monitor.mean) },
          { name: 'nodejs.eventloop.delay.p50', attributes: {}, value: lateness(monitor.percentile(50)) },
          { name: 'nodejs.eventloop.delay.p90', attributes: {}, value: lateness(monitor.percentile(90)) },
          { name: 'nodejs.eventloop.delay.p99', attributes: {}, value: lateness(monitor.percentile(99)) },
        );
        addToBuckets(histogram, monitor, n, resolutionNs);
        monitor.reset();
      }
      if (histogram.count > 0) {
        out.push({ name: 'nodejs.eventloop.delay', attributes: {}, histogram: histogram.snapshot() });
      }
      return out;
    },
    /**
     * Seconds the main thread ran on a CPU and waited for one since the last endInterval() (null where
     * the platform does not tell): a loop late because its thread waited for a CPU (an
     * overloaded host, a CPU quota) is not an app blocking its loop.
     */
    details() {
      const now = mainThreadSchedstat();
      const known = now !== null && lastSched !== null;
      return {
        mainThreadCpuSeconds: known ? (now[0] - lastSched[0]) / 1e9 : null,
        mainThreadWaitSeconds: known ? (now[1] - lastSched[1]) / 1e9 : null,
      };
    },
    /** Start a new interval. */
    endInterval() {
      lastSched = mainThreadSchedstat();
    },
    close() {
      monitor.disable();
    },
  };
}

/** [ns on a CPU, ns waiting for one] of the calling (main) thread, or null off Linux. */
function mainThreadSchedstat() {
  if (process.platform !== 'linux') return null;
  try {
    const f = require('fs').readFileSync(THREAD_SCHEDSTAT, 'latin1').split(' ');
    const out = [Number(f[0]), Number(f[1])];
    return Number.isFinite(out[0]) && Number.isFinite(out[1]) ? out : null;
  } catch {
    return null;
  }
}

/**
 * Move one interval's samples from the HDR histogram into the explicit buckets.
 * The sum is count x mean, which is exact.
 */
function addToBuckets(histogram, monitor, n, resolutionNs) {
  let below = 0;
  for (let i = 0; i < histogram.bounds.length; i++) {
    const atMost = countAtMost(monitor, n, histogram.bounds[i] * 1e9 + resolutionNs, below);
    histogram.counts[i] += atMost - below;
    below = atMost;
  }
  histogram.counts[histogram.bounds.length] += n - below;
  histogram.count += n;
  histogram.sum += (n * Math.max(0, monitor.mean - resolutionNs)) / 1e9;
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

module.exports = { createEventLoopSampler, RESOLUTION_MS, RESOLUTION_NS, _internal: { addToBuckets, countAtMost } };
