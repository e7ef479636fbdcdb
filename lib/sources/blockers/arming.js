'use strict';

// When the capture runs (blockers/capture.js), in UVSCOPE_BLOCKERS=auto: from the first interval
// whose event-loop delay (the event-loop source's reading of the interval, in the tick) less the
// main thread's wait for a CPU and, where the process starved, its other threads' (starved.js)
// reached the threshold, until no interval has for the quiet period. While the loop is healthy
// nothing of the capture exists: no worker, no GC observer, no request listener, no native
// module. `on` runs it always, `off` never.

// How long the capture stays without a block before it stops (its worker's memory can return).
const QUIET_MS = 10 * 60 * 1000;

class Arming {
  armed = false;
  armings = 0;
  /** @type {number | null} epoch ms of the last arming */
  armedSince = null;
  #lastBlockAt = 0;
  #thresholdSeconds;
  #quietMs;
  #now;

  /**
   * @param {{ thresholdMs: number, quietMs?: number, now?: () => number }} options
   */
  constructor(options) {
    this.#thresholdSeconds = options.thresholdMs / 1000;
    this.#quietMs = options.quietMs === undefined ? QUIET_MS : options.quietMs;
    this.#now = options.now || Date.now;
  }

  /**
   * Once per sample: 'start' when a disarmed capture saw a block, 'stop' when an armed one saw
   * none for the quiet period, else null.
   * @param {number} delayMaxSeconds the interval's longest loop delay
   * @param {boolean} blocked whether the capture itself reported a block in the interval
   * @returns {'start' | 'stop' | null}
   */
  consider(delayMaxSeconds, blocked) {
    const t = this.#now();
    const block = blocked || delayMaxSeconds >= this.#thresholdSeconds;
    if (block) this.#lastBlockAt = t;
    if (!this.armed) {
      if (!block) return null;
      this.armed = true;
      this.armings++;
      this.armedSince = t;
      return 'start';
    }
    if (t - this.#lastBlockAt < this.#quietMs) return null;
    this.armed = false;
    return 'stop';
  }
}

module.exports = { Arming, QUIET_MS };
