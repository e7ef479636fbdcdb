'use strict';

// When pool threads count as starved of a CPU, in one busy-thread reading
// (details.threadpool.busy, lib/sources/threadpool/pool-threads.js): the thresholds and the test.
// Here, below sources/, because the threadpool sampler arms its tracer on the same test that the
// findings' signals (lib/findings/signals.js) and cpu-starved use.

/**
 * The thresholds, overridable by name in the findings engine's limits.
 * @type {Readonly<{ cpuStarvedThreads: number, cpuStarvedWaitS: number }>}
 */
const POOL_THREADS_STARVED = Object.freeze({
  cpuStarvedThreads: 0.5, // pool threads waiting for a CPU, on average over an interval
  cpuStarvedWaitS: 0.001, // ...per wait (run_delay per arrival): milliseconds are contention, microseconds wake-ups
});

/**
 * Whether pool threads waited for a CPU in a reading's interval: cpuStarvedThreads+ threads on
 * average ready to run but not running, at cpuStarvedWaitS+ per wait. False where the kernel does
 * not tell (Node 20: pool threads not named).
 * @param {{ available: boolean, runnable?: number|null, meanWaitSeconds?: number }|null|undefined} busy
 * @param {{ cpuStarvedThreads: number, cpuStarvedWaitS: number }} [lim]
 * @returns {boolean}
 */
function poolThreadsStarved(busy, lim = POOL_THREADS_STARVED) {
  return Boolean(busy && busy.available) && typeof busy.runnable === 'number'
    && busy.runnable >= lim.cpuStarvedThreads && (busy.meanWaitSeconds || 0) >= lim.cpuStarvedWaitS;
}

/**
 * The share of their runnable time pool threads spent waiting for a CPU in a reading's interval,
 * where the kernel tells (Node 22+), else null.
 * @param {{ available: boolean, computing?: number, runnable?: number|null }|null|undefined} busy
 * @returns {number|null}
 */
function poolCpuWaitShare(busy) {
  if (!busy || !busy.available || typeof busy.runnable !== 'number') return null;
  const total = (busy.computing || 0) + busy.runnable;
  return total > 0 ? busy.runnable / total : 0;
}

module.exports = { POOL_THREADS_STARVED, poolThreadsStarved, poolCpuWaitShare };
