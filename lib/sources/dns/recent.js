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
    const next = this.#next;
    if (this.#count === this.#capacity && this.#capacity < this.#max && this.#buf[3 * next] >= time - this.#windowMs) {
      this.#grow();
    }
    const buf = this.#buf;
    const at = 3 * this.#next;
    buf[at] = time;
    buf[at + 1] = seconds;
    buf[at + 2] = waited;
    this.#next = (this.#next + 1) % this.#capacity;
    if (this.#count < this.#capacity) this.#count++;
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
    // The durations in the window, sorted in a scratch array shared by every name (no array
    // per name per sample: these are made every interval for every kept name).
    const sorted = scratch(count);
    let n = 0;
    let oldest = Infinity;
    for (let k = 0; k < count; k++) {
      if (buf[3 * k] < since) continue;
      sorted[n++] = buf[3 * k + 1];
      if (buf[3 * k] < oldest) oldest = buf[3 * k];
    }
    this.#lastOldest = oldest;
    out.recentLookups = n;
    if (n === 0) {
      out.p50 = out.p99 = out.stddev = out.tail = out.mean = null;
      return;
    }
    heapSort(sorted, n);
    let sum = 0;
    for (let j = 0; j < n; j++) sum += sorted[j];
    const mean = sum / n;
    let sq = 0;
    for (let j = 0; j < n; j++) sq += (sorted[j] - mean) ** 2;
    const p99 = rank(sorted, n, 0.99);
    out.p50 = rank(sorted, n, 0.5);
    out.p99 = p99;
    out.stddev = Math.sqrt(sq / n);
    out.tail = this.#tailOf(sorted, n, p99, since);
    out.mean = mean;
  }

  // The tail: every lookup at or above p99 (the slowest 1 %, at least one), its mean duration
  // split into waiting and resolving, in the one tail object of this name.
  #tailOf(sorted, n, p99, since) {
    const buf = this.#buf;
    let tn = 0;
    let tWait = 0;
    let tTotal = 0;
    for (let j = n - 1; j >= 0 && sorted[j] >= p99; j--) {
      tn++;
      tTotal += sorted[j];
    }
    for (let k = 0; k < this.#count; k++) if (buf[3 * k] >= since && buf[3 * k + 1] >= p99) tWait += buf[3 * k + 2];
    let tail = this.#tail;
    if (tail === null) tail = this.#tail = Object.seal({ lookups: 0, meanSeconds: 0.5, queueWaitSeconds: 0.5, resolveSeconds: 0.5 });
    tail.lookups = tn;
    tail.meanSeconds = tTotal / tn;
    tail.queueWaitSeconds = tWait / tn;
    tail.resolveSeconds = (tTotal - tWait) / tn;
    return tail;
  }
}

// Ascending, in place, a[0..n): TypedArray#sort copies the array (about 1 KB per name per sample
// at 60 lookups in the window), this allocates nothing.
function heapSort(a, n) {
  for (let i = (n >> 1) - 1; i >= 0; i--) siftDown(a, i, n);
  for (let end = n - 1; end > 0; end--) {
    const t = a[0];
    a[0] = a[end];
    a[end] = t;
    siftDown(a, 0, end);
  }
}

function siftDown(a, i, end) {
  for (;;) {
    let c = 2 * i + 1;
    if (c >= end) return;
    if (c + 1 < end && a[c + 1] > a[c]) c++;
    if (a[c] <= a[i]) return;
    const t = a[i];
    a[i] = a[c];
    a[c] = t;
    i = c;
  }
}

// The q-quantile of sorted[0..n) (nearest rank).
function rank(sorted, n, q) {
  return sorted[Math.min(n - 1, Math.ceil(q * n) - 1)];
}

// One scratch array for every name's stats(), grown to the largest window seen (at most RECENT_MAX).
let scratchArray = new Float64Array(16);
function scratch(size) {
  if (scratchArray.length < size) scratchArray = new Float64Array(Math.max(size, scratchArray.length * 2));
  return scratchArray;
}

module.exports = { RecentLookups, RECENT_MAX };
