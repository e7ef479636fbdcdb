'use strict';

/**
 * A histogram as it appears in a snapshot: frozen, cumulative since the start.
 * @typedef {object} HistogramSnapshot
 * @property {readonly number[]} bounds ascending upper bounds
 * @property {readonly number[]} counts per bucket (not cumulative); the last is the overflow (+Inf)
 * @property {number} sum
 * @property {number} count
 */

/**
 * A cumulative explicit-bucket histogram in base units: the shape Prometheus and OTLP both
 * export. `counts[i]` counts observations v with bounds[i-1] < v <= bounds[i]; the last slot is
 * the overflow (+Inf) bucket.
 */
class Histogram {
  /** @param {readonly number[]} bounds ascending upper bounds */
  constructor(bounds) {
    this.bounds = bounds;
    this.counts = new Array(bounds.length + 1).fill(0);
    this.sum = 0;
    this.count = 0;
    // The last snapshot, handed out again while nothing was observed: a kept hostname that had no
    // lookup in an interval costs no new objects in the next snapshot.
    this.frozen = null;
  }

  /**
   * Record one observation.
   * @param {number} value
   * @param {number} [times] how many observations of this value (default 1)
   */
  observe(value, times = 1) {
    this.counts[bucketIndex(this.bounds, value)] += times;
    this.sum += value * times;
    this.count += times;
    this.frozen = null;
  }

  /** @returns {HistogramSnapshot} a frozen copy */
  snapshot() {
    if (this.frozen) return this.frozen;
    this.frozen = Object.freeze({
      bounds: this.bounds,
      counts: Object.freeze(this.counts.slice()),
      sum: this.sum,
      count: this.count,
    });
    return this.frozen;
  }
}

/**
 * Index of the bucket a value falls in (binary search; bounds are few but this runs per lookup).
 * @param {readonly number[]} bounds
 * @param {number} value
 */
function bucketIndex(bounds, value) {
  let lo = 0;
  let hi = bounds.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (value <= bounds[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

module.exports = { Histogram, bucketIndex };
