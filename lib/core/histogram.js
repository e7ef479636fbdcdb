'use strict';

/**
 * A histogram as it appears in a snapshot: cumulative since the start; frozen (snapshot()), or a
 * live view updated in place at each sample (view(); see lib/snapshot/snapshot.js).
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
  // The bounds again, as doubles of the histogram's own, for observe()'s search: keyed loads from
  // the frozen bounds arrays the sources share go through V8's KeyedLoadIC in optimized code on
  // Node 20, dozens of instructions a load. Shared by the histograms of one bounds array (the
  // sources' frozen constants), not one typed array per kept hostname.
  #limits;

  /** @param {readonly number[]} bounds ascending upper bounds */
  constructor(bounds) {
    this.bounds = bounds;
    this.#limits = limitsOf(bounds);
    this.counts = new Array(bounds.length + 1).fill(0);
    this.sum = 0;
    this.count = 0;
    // The last snapshot, handed out again while nothing was observed: a kept hostname that had no
    // lookup in an interval costs no new objects in the next snapshot.
    this.frozen = null;
    // The live view (view()): one object for the histogram's life, updated in place.
    this.live = null;
  }

  /**
   * Record one observation.
   * @param {number} value
   * @param {number} [times] how many observations of this value (default 1)
   */
  observe(value, times = 1) {
    // The bucket: the first bound at or above the value (NaN: the overflow). A value in the first
    // bucket (a DNS lookup's queue wait, most often 0) needs one load; others a binary search.
    // Inline, not a function: this runs per lookup, twice, in code that may stay in V8's
    // interpreter or baseline code, where each call costs a few hundred instructions.
    const limits = this.#limits;
    let lo = 0;
    if (!(value <= limits[0])) {
      lo = 1;
      let hi = limits.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (value <= limits[mid]) hi = mid;
        else lo = mid + 1;
      }
    }
    this.counts[lo] += times;
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

  /**
   * The histogram as of this call, in one object for the histogram's life: the same object every
   * time, its figures updated in place (sealed: readers cannot add to it or write it through a
   * frozen snapshot, lib/agent/agent.js leaves it unfrozen). For series that a snapshot holds per kept
   * hostname: a frozen copy per change made ~300 bytes per name and sample that lived until the
   * next sample and survived V8's scavenges (bench/dns-names-memory.js). A reader that keeps its
   * figures past the next sample copies them.
   * @returns {HistogramSnapshot}
   */
  view() {
    const v = this.live;
    if (v === null) {
      this.live = Object.seal({ bounds: this.bounds, counts: Object.seal(this.counts.slice()), sum: this.sum, count: this.count });
      return this.live;
    }
    if (v.count !== this.count || v.sum !== this.sum) {
      for (let i = 0; i < this.counts.length; i++) v.counts[i] = this.counts[i];
      v.sum = this.sum;
      v.count = this.count;
    }
    return v;
  }
}

// The doubles of each bounds array, made once (weakly held: a test's own bounds go with it). A
// bounds array that is not frozen may still change: its own copy.
const LIMITS = new WeakMap();

/** @param {readonly number[]} bounds */
function limitsOf(bounds) {
  if (!Object.isFrozen(bounds)) return Float64Array.from(bounds);
  let limits = LIMITS.get(bounds);
  if (!limits) LIMITS.set(bounds, (limits = Float64Array.from(bounds)));
  return limits;
}

module.exports = { Histogram };
