'use strict';

const { monitorEventLoopDelay, performance } = require('perf_hooks');
const { Histogram } = require('../histogram');
const { EVENTLOOP_BUCKETS } = require('../metrics');

const RESOLUTION_MS = 10;
// Linux: nanoseconds the calling thread ran on a CPU and waited on a run queue for one
// (Documentation/scheduler/sched-stats.rst). Opened once from the main thread and re-read in
// place (pread at 0, about 4 us): a procfs file, no disk.
const THREAD_SCHEDSTAT = '/proc/thread-self/schedstat';
// How often the main thread's CPU time is read, to tell a loop the app blocked (the thread ran
// all along) from a loop whose thread waited for a CPU (an overloaded host, a CPU quota).
const CPU_TICK_MS = 20;
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
  const sched = openSchedstat();
  let lastSched = sched ? sched.read() : null;
  // Per interval: the longest lateness of the tick below, less the time the main thread waited
  // for a CPU meanwhile. What is left the thread spent running or in a blocking call (sync I/O,
  // Atomics.wait, execSync): the app's doing.
  let blockedOnCpu = 0;
  let tickTimer = null;
  if (sched) {
    let lastTick = process.hrtime.bigint();
    let lastWait = lastSched ? lastSched[1] : 0;
    tickTimer = setInterval(() => {
      const now = process.hrtime.bigint();
      const s = sched.read();
      if (!s) return;
      const late = Number(now - lastTick) / 1e9 - CPU_TICK_MS / 1000;
      const blocked = late - (s[1] - lastWait) / 1e9;
      if (blocked > blockedOnCpu) blockedOnCpu = blocked;
      lastTick = now;
      lastWait = s[1];
    }, CPU_TICK_MS);
    tickTimer.unref();
  }

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
      const now = sched ? sched.read() : null;
      const known = now !== null && lastSched !== null;
      return {
        mainThreadCpuSeconds: known ? (now[0] - lastSched[0]) / 1e9 : null,
        mainThreadWaitSeconds: known ? (now[1] - lastSched[1]) / 1e9 : null,
        // the longest stretch the loop was late, less the thread's wait for a CPU (null off Linux)
        blockedOnCpuMaxSeconds: sched ? Math.max(0, blockedOnCpu) : null,
      };
    },
    /** Start a new interval. */
    endInterval() {
      lastSched = sched ? sched.read() : null;
      blockedOnCpu = 0;
    },
    close() {
      monitor.disable();
      if (tickTimer) clearInterval(tickTimer);
      if (sched) sched.close();
    },
  };
}

/**
 * The calling (main) thread's schedstat, opened once: read() gives [ns on a CPU, ns waiting for
 * one] or null. Null off Linux or where the kernel does not provide it.
 */
function openSchedstat() {
  if (process.platform !== 'linux') return null;
  const fs = require('fs');
  let fd;
  try {
    fd = fs.openSync(THREAD_SCHEDSTAT, 'r');
  } catch {
    return null;
  }
  const buf = Buffer.alloc(128);
  const sched = {
    read() {
      if (fd === null) return null;
      try {
        const n = fs.readSync(fd, buf, 0, buf.length, 0);
        const f = buf.toString('latin1', 0, n).split(' ');
        const out = [Number(f[0]), Number(f[1])];
        return Number.isFinite(out[0]) && Number.isFinite(out[1]) ? out : null;
      } catch {
        return null;
      }
    },
    close() {
      if (fd === null) return;
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
      fd = null;
    },
  };
  return sched.read() ? sched : (sched.close(), null);
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
