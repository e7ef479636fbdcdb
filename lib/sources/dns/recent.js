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
// The compact form: a cell holds up to 2^32 - 1 (ms after the base, or ns: 4.29 s), and the base is
// 2^30 ms (12.4 days) before the first lookup's time, so that a clock set back still fits.
const CELL_MAX = 0xFFFFFFFF;
const BASE_BEFORE_MS = 2 ** 30;

/**
 * The most recent lookups of one hostname, in one buffer of (time, duration, wait) triples,
 * grown as lookups come (16, 32, ... max) and only while the oldest entry is still in the window:
 * a name looked up once a second keeps 64 entries, not 2,048 once it has been looked up for half
 * an hour.
 *
 * A triple is 12 bytes (three Uint32 cells) while every lookup's figures fit: its time as
 * milliseconds after a base (Date.now() gives whole milliseconds), its duration and wait as whole
 * nanoseconds (the DNS sampler's are a difference of process.hrtime() readings divided by 1e9),
 * each kept that way only if it gives back exactly the double it came as. The first lookup that
 * does not fit (4.29 s or longer, a time 12 days before the base or 37 after it, a figure that is
 * not whole nanoseconds) turns the name's buffer into 24-byte triples of doubles for good. The
 * figures are the same doubles either way; a busy name keeps half the bytes.
 */
class RecentLookups {
  #max;
  #windowMs;
  #capacity;
  // Exactly one of the two is set: compact (Uint32 cells) or wide (doubles).
  /** @type {Uint32Array | null} */
  #cells;
  /** @type {Float64Array | null} */
  #buf = null;
  // The compact form's times are milliseconds after this.
  #base = NaN;
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
   * @param {{ wide?: boolean }} [options] wide: doubles from the start (tests compare the forms)
   */
  constructor(max, windowMs, options = undefined) {
    this.#max = max;
    this.#windowMs = windowMs;
    this.#capacity = Math.min(16, max);
    if (options && options.wide) {
      this.#cells = null;
      this.#buf = new Float64Array(3 * this.#capacity);
    } else {
      this.#cells = new Uint32Array(3 * this.#capacity);
    }
  }

  /** Whether the triples are kept as Uint32 cells (12 bytes) rather than doubles (24). */
  get compact() {
    return this.#cells !== null;
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
    let cells = this.#cells;
    let ms = 0;
    let ns = 0;
    let waitNs = 0;
    if (cells !== null) {
      let base = this.#base;
      if (base !== base) base = this.#base = time - BASE_BEFORE_MS;
      ms = time - base;
      ns = Math.round(seconds * 1e9);
      waitNs = Math.round(waited * 1e9);
      if (!(ms >= 0 && ms <= CELL_MAX && ms === Math.floor(ms) && base + ms === time && ns >= 0 && ns <= CELL_MAX && ns / 1e9 === seconds
        && waitNs >= 0 && waitNs <= CELL_MAX && waitNs / 1e9 === waited)) {
        this.#widen();
        cells = null;
      }
    }
    let next = this.#next;
    let capacity = this.#capacity;
    const count = this.#count;
    if (count === capacity && capacity < this.#max && this.#timeAt(next) >= time - this.#windowMs) {
      this.#grow();
      next = this.#next;
      capacity = this.#capacity;
      cells = this.#cells;
    }
    const at = 3 * next;
    if (cells !== null) {
      cells[at] = ms;
      cells[at + 1] = ns;
      cells[at + 2] = waitNs;
    } else {
      const buf = /** @type {Float64Array} */ (this.#buf);
      buf[at] = time;
      buf[at + 1] = seconds;
      buf[at + 2] = waited;
    }
    this.#next = next + 1 === capacity ? 0 : next + 1;
    if (count < capacity) this.#count = count + 1;
    this.#fresh = false;
  }

  // The time of entry k (ms since the epoch), in either form.
  #timeAt(k) {
    const cells = this.#cells;
    return cells !== null ? this.#base + cells[3 * k] : /** @type {Float64Array} */ (this.#buf)[3 * k];
  }

  // From now on doubles: the compact entries written into a wide buffer of the same capacity.
  #widen() {
    const cells = /** @type {Uint32Array} */ (this.#cells);
    const buf = new Float64Array(cells.length);
    const base = this.#base;
    for (let i = 0; i < cells.length; i += 3) {
      buf[i] = base + cells[i];
      buf[i + 1] = cells[i + 1] / 1e9;
      buf[i + 2] = cells[i + 2] / 1e9;
    }
    this.#buf = buf;
    this.#cells = null;
  }

  // Full, below max, and the oldest entry (the next to be overwritten) still counts: twice the
  // room. Entries 0..count-1 are in time order from `next` on; unrolled so that they keep places.
  #grow() {
    const old = this.#cells !== null ? this.#cells : /** @type {Float64Array} */ (this.#buf);
    const next = this.#next;
    const capacity = this.#capacity;
    const size = 3 * Math.min(capacity * 2, this.#max);
    const grown = this.#cells !== null ? new Uint32Array(size) : new Float64Array(size);
    grown.set(old.subarray(3 * next));
    grown.set(old.subarray(0, 3 * next), 3 * (capacity - next));
    if (this.#cells !== null) this.#cells = /** @type {Uint32Array} */ (grown);
    else this.#buf = /** @type {Float64Array} */ (grown);
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
    const cells = this.#cells;
    const buf = this.#buf;
    const base = this.#base;
    const count = this.#count;
    // The durations in the window, in a scratch array shared by every name (no array per name per
    // sample: these are made every interval for every kept name), sorted there by the typed
    // array's own sort (no comparator: numeric, native code, allocates nothing), which gives p50
    // and p99 by their rank. This runs at every sample over up to 2,048 lookups per name, in code
    // that runs once a second and stays in V8's interpreter for minutes, where a quickselect in
    // JavaScript (a call per swap, a new heap number per element load) costs more per sample than
    // the lookups it covers cost on their path.
    const values = scratch(count);
    let n = 0;
    let oldest = Infinity;
    let sum = 0;
    // Two loops, one per form: this runs every sample over every kept name's lookups.
    if (cells !== null) {
      for (let k = 0; k < count; k++) {
        const t = base + cells[3 * k];
        if (t < since) continue;
        const v = cells[3 * k + 1] / 1e9;
        values[n++] = v;
        sum += v;
        if (t < oldest) oldest = t;
      }
    } else {
      const wide = /** @type {Float64Array} */ (buf);
      for (let k = 0; k < count; k++) {
        if (wide[3 * k] < since) continue;
        const v = wide[3 * k + 1];
        values[n++] = v;
        sum += v;
        if (wide[3 * k] < oldest) oldest = wide[3 * k];
      }
    }
    this.#lastOldest = oldest;
    out.recentLookups = n;
    if (n === 0) {
      out.p50 = out.p99 = out.stddev = out.tail = out.mean = null;
      return;
    }
    const mean = sum / n;
    let sq = 0;
    for (let j = 0; j < n; j++) sq += (values[j] - mean) ** 2;
    values.subarray(0, n).sort();
    const p99 = values[rankIndex(n, 0.99)];
    out.p50 = values[rankIndex(n, 0.5)];
    out.p99 = p99;
    out.stddev = Math.sqrt(sq / n);
    out.tail = this.#tailOf(p99, since);
    out.mean = mean;
  }

  // The tail: every lookup at or above p99 (the slowest 1 %, at least one), its mean duration
  // split into waiting and resolving, in the one tail object of this name.
  #tailOf(p99, since) {
    const cells = this.#cells;
    const buf = this.#buf;
    const base = this.#base;
    let tn = 0;
    let tWait = 0;
    let tTotal = 0;
    for (let k = 0; k < this.#count; k++) {
      if (cells !== null) {
        const v = cells[3 * k + 1] / 1e9;
        if (base + cells[3 * k] >= since && v >= p99) {
          tn++;
          tTotal += v;
          tWait += cells[3 * k + 2] / 1e9;
        }
      } else {
        const wide = /** @type {Float64Array} */ (buf);
        if (wide[3 * k] >= since && wide[3 * k + 1] >= p99) {
          tn++;
          tTotal += wide[3 * k + 1];
          tWait += wide[3 * k + 2];
        }
      }
    }
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
