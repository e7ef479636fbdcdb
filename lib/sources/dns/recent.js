'use strict';

// The recent lookups of one hostname (time, duration, wait for a DNS slot), and the percentiles,
// mean, standard deviation and tail split the DNS sampler reports over them. Imports nothing.

/**
 * The slowest lookups of the recent window (at or above p99): how many, and their mean duration
 * split into waiting for a DNS slot and resolving.
 * @typedef {{ lookups: number, meanSeconds: number, queueWaitSeconds: number, resolveSeconds: number }} TailFigures
 */

/** Recent lookups kept per hostname for percentiles (p50, p99, standard deviation). */
const RECENT_MAX = 2048;

/**
 * The most recent lookups of one hostname, in one buffer of (time, duration, wait) triples,
 * grown as lookups come (16, 32, ... max) and only while the oldest entry is still in the window:
 * a name looked up once a second keeps 64 entries (1.5 KiB), not 2,048 (48 KiB) once it has been
 * looked up for half an hour.
 */
class RecentLookups {
  #max;
  #windowMs;
  #capacity;
  #buf;
  #next = 0;
  #count = 0;
  // What the last stats() covered: while no lookup came and none of the lookups it counted left
  // the window, the figures it wrote are still right and it writes nothing.
  #fresh = false;
  #lastOldest = Infinity;
  // The tail's figures, one object for the name's life (handed out in its details while there are
  // recent lookups), updated in place.
  /** @type {TailFigures | null} */
  #tail = null;

  /**
   * @param {number} max entries kept at most
   * @param {number} windowMs how far back stats() is asked to reach: older entries are overwritten
   *   before the buffer grows
   */
  constructor(max, windowMs) {
    this.#max = max;
    this.#windowMs = windowMs;
    this.#capacity = Math.min(16, max);
    this.#buf = new Float64Array(3 * this.#capacity);
  }

  /**
   * One lookup that ended.
   * @param {number} time when it ended (ms since the epoch)
   * @param {number} seconds its duration
   * @param {number} waited the part of it spent waiting for a DNS slot
   */
  add(time, seconds, waited) {
    // Fields read once into locals: this runs per lookup, where each field access in V8's
    // interpreter or baseline code is an inline-cache call.
    let next = this.#next;
    let capacity = this.#capacity;
    const count = this.#count;
    let buf = this.#buf;
    if (count === capacity && capacity < this.#max && buf[3 * next] >= time - this.#windowMs) {
      this.#grow();
      next = this.#next;
      capacity = this.#capacity;
      buf = this.#buf;
    }
    const at = 3 * next;
    buf[at] = time;
    buf[at + 1] = seconds;
    buf[at + 2] = waited;
    this.#next = next + 1 === capacity ? 0 : next + 1;
    if (count < capacity) this.#count = count + 1;
    this.#fresh = false;
  }

  // Full, below max, and the oldest entry (the next to be overwritten) still counts: twice the
  // room. Entries 0..count-1 are in time order from `next` on; unrolled so that they keep places.
  #grow() {
    const buf = this.#buf;
    const next = this.#next;
    const capacity = this.#capacity;
    const grown = new Float64Array(3 * Math.min(capacity * 2, this.#max));
    grown.set(buf.subarray(3 * next));
    grown.set(buf.subarray(0, 3 * next), 3 * (capacity - next));
    this.#buf = grown;
    this.#next = capacity;
    this.#capacity = grown.length / 3;
  }

  /**
   * p50, p99, mean and standard deviation of lookups since `since`, and the tail's split, written
   * into `out` (a name's details: recentLookups, p50, p99, stddev, mean, tail).
   * @param {number} since ms since the epoch
   * @param {{ recentLookups: number, p50: number | null, p99: number | null, stddev: number | null,
   *   mean: number | null, tail: TailFigures | null }} out
   */
  stats(since, out) {
    if (this.#fresh && this.#lastOldest >= since) return;
    this.#fresh = true;
    const buf = this.#buf;
    const count = this.#count;
    // The durations in the window, in a scratch array shared by every name (no array per name per
    // sample: these are made every interval for every kept name), sorted there by the typed
    // array's own sort (no comparator: numeric, native code, allocates nothing), which gives p50
    // and p99 by their rank. This runs at every sample over up to 2,048 lookups per name, in code
    // that runs once a second and stays in V8's interpreter for minutes: a quickselect written in
    // JavaScript (about 3n comparisons and a call per swap, each element load a new heap number
    // there) cost ~3,000 instructions a lookup in the window, at every sample (Node 24,
    // interpreted; ~4.6 M for 1,500 lookups), more than the lookups it covered cost on their path.
    const values = scratch(count);
    let n = 0;
    let oldest = Infinity;
    let sum = 0;
    for (let k = 0; k < count; k++) {
      const t = buf[3 * k];
      if (t < since) continue;
      const v = buf[3 * k + 1];
      values[n++] = v;
      sum += v;
      if (t < oldest) oldest = t;
    }
    this.#lastOldest = oldest;
    out.recentLookups = n;
    if (n === 0) {
      out.p50 = out.p99 = out.stddev = out.tail = out.mean = null;
      return;
    }
    const mean = sum / n;
    values.subarray(0, n).sort();
    const p99 = values[rankIndex(n, 0.99)];
    // One more pass over the window, in the buffer's order (the order the sums above took): the
    // squared deviations, and the tail (every lookup at or above p99: the slowest 1 %, at least
    // one), its durations and waits.
    let sq = 0;
    let tn = 0;
    let tWait = 0;
    let tTotal = 0;
    for (let k = 0; k < count; k++) {
      if (buf[3 * k] < since) continue;
      const v = buf[3 * k + 1];
      sq += (v - mean) ** 2;
      if (v >= p99) {
        tn++;
        tTotal += v;
        tWait += buf[3 * k + 2];
      }
    }
    out.p50 = values[rankIndex(n, 0.5)];
    out.p99 = p99;
    out.stddev = Math.sqrt(sq / n);
    out.tail = this.#tailOf(tn, tTotal, tWait);
    out.mean = mean;
  }

  // The tail's figures (tn lookups, their durations and waits summed) in the one tail object of
  // this name: its mean duration split into waiting and resolving.
  #tailOf(tn, tTotal, tWait) {
    let tail = this.#tail;
    if (tail === null) tail = this.#tail = Object.seal({ lookups: 0, meanSeconds: 0.5, queueWaitSeconds: 0.5, resolveSeconds: 0.5 });
    tail.lookups = tn;
    tail.meanSeconds = tTotal / tn;
    tail.queueWaitSeconds = tWait / tn;
    tail.resolveSeconds = (tTotal - tWait) / tn;
    return tail;
  }
}

// The index of the q-quantile (nearest rank) in n values sorted ascending.
function rankIndex(n, q) {
  return Math.min(n - 1, Math.ceil(q * n) - 1);
}

// One scratch array for every name's stats(), grown to the largest window seen (at most RECENT_MAX).
let scratchArray = new Float64Array(16);
function scratch(size) {
  if (scratchArray.length < size) scratchArray = new Float64Array(Math.max(size, scratchArray.length * 2));
  return scratchArray;
}

module.exports = { RecentLookups, RECENT_MAX };
