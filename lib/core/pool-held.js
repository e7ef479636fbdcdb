'use strict';

// When the pool counts as held (no thread free for a job) in an interval: the limit and the test.
// Here, below sources/, because the threadpool sampler arms its tracer on the premise that the
// findings' signal poolHeld (lib/findings/signals.js) and threadpool-saturated read.

/**
 * The limit, overridable by name in the findings engine's limits.
 * @type {Readonly<{ poolWaitS: number }>}
 */
const POOL_HELD = Object.freeze({
  poolWaitS: 0.05, // the work probe waited this long for any thread, beyond the loop's own delay
});

/**
 * How long a probe's job waited for a thread, beyond what the event loop explains: the probe's
 * answer waits for the loop too, so a blocked loop makes a probe of an idle pool late. The larger
 * of two lower bounds of the pool's hold:
 * - idle: the loop's idle time during the probe's flight (performance.nodeTiming.idleTime). An
 *   idle loop wakes for a finished job, so while it was idle the job was not done.
 * - the wait less the loop's longest delay in the interval (loopDelay): a finished job's
 *   callback waits for the loop's current turn at most.
 * A probe still in flight at the sample while the loop was blocked for half the interval or more
 * says nothing by the second bound (its wait is the block's).
 * @param {{ wait: number|null, idle?: number|null, stuck?: boolean, loopDelay?: number|null, seconds?: number }} probe
 *   wait: the longest wait in the interval (seconds; null: no reading)
 * @returns {number|null} seconds, null without a reading
 */
function waitBeyondLoop({ wait, idle = null, stuck = false, loopDelay = null, seconds = Infinity }) {
  if (wait === null || wait === undefined) return null;
  const byIdle = typeof idle === 'number' ? Math.min(idle, wait) : 0;
  if (typeof loopDelay !== 'number') return typeof idle === 'number' ? byIdle : wait;
  const byDelay = stuck && loopDelay >= seconds / 2 ? 0 : Math.max(0, wait - loopDelay);
  return Math.max(byIdle, byDelay);
}

/**
 * Whether the pool was held: a job waited poolWaitS or more for a thread beyond the loop's delay.
 * @param {number|null} beyondLoop waitBeyondLoop()'s answer
 * @param {{ poolWaitS: number }} [lim]
 * @returns {boolean}
 */
function poolHeld(beyondLoop, lim = POOL_HELD) {
  return typeof beyondLoop === 'number' && beyondLoop >= lim.poolWaitS;
}

module.exports = { POOL_HELD, waitBeyondLoop, poolHeld };
