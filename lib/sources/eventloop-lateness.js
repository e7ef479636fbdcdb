'use strict';

// The lateness values of timer mode's clock (lib/sources/eventloop-timer.js) and their union with
// Node's native monitor, read as one histogram. Timer mode's values for an interval are in two
// places: the native monitor's histogram (its fine firings) and LatenessValues (what JavaScript
// recorded: a coarse firing's, the one-shot timer's after a reset, a mode switch's);
// LatenessUnion reads them as one, with the read interface of a perf_hooks histogram, as
// lib/sources/eventloop.js reads one.

// Values LatenessValues keeps as they are; more (an interval far longer than the default second)
// go into a perf_hooks histogram.
const KEPT_VALUES = 2048;

/**
 * The lateness values (ns, integers >= 1) recorded in JavaScript in a sampling interval, with the
 * read interface of a perf_hooks RecordableHistogram (count, min, max, mean, percentile, reset):
 * a coarse firing's, the one-shot timer's, a mode switch's; ten a second at most while quiet.
 * Kept as they are, so exact, where a createHistogram() keeps 3 significant digits in a counts
 * array for 1 to 2^53 (45,056 counters, 352 KB) that each reset() writes whole (hdr_reset's
 * memset), all of it resident from the first sample on. Past `kept` values (a long
 * interval) they move into such a histogram, which keeps any number of values in that size.
 */
class LatenessValues {
  /** @type {number[]} */
  #values = [];
  #sorted = true;
  #sum = 0;
  #min = Infinity;
  #max = 0;
  /** @type {import('perf_hooks').RecordableHistogram | null} where values go past `kept` */
  #spill = null;
  #kept;

  /** @param {number} [kept] how many values to keep before they move into a native histogram */
  constructor(kept = KEPT_VALUES) {
    this.#kept = kept;
  }

  /** Records a value (ns, an integer >= 1). */
  record(ns) {
    if (this.#spill) {
      this.#spill.record(ns);
      return;
    }
    const values = this.#values;
    if (values.length >= this.#kept) {
      const { createHistogram } = require('perf_hooks');
      const spill = createHistogram();
      for (let i = 0; i < values.length; i++) spill.record(values[i]);
      spill.record(ns);
      this.#spill = spill;
      this.#values = [];
      return;
    }
    if (values.length > 0 && ns < values[values.length - 1]) this.#sorted = false;
    values.push(ns);
    this.#sum += ns;
    if (ns < this.#min) this.#min = ns;
    if (ns > this.#max) this.#max = ns;
  }

  get count() {
    return this.#spill ? this.#spill.count : this.#values.length;
  }

  get min() {
    if (this.#spill) return this.#spill.min;
    return this.#values.length > 0 ? this.#min : 0;
  }

  get max() {
    return this.#spill ? this.#spill.max : this.#max;
  }

  get mean() {
    if (this.#spill) return this.#spill.mean;
    return this.#values.length > 0 ? this.#sum / this.#values.length : NaN;
  }

  /** The value at rank round(p/100 x count) (at least 1), as hdr_value_at_percentile maps it. */
  percentile(p) {
    if (this.#spill) return this.#spill.percentile(p);
    const values = this.#values;
    const n = values.length;
    if (n === 0) return 0;
    if (!this.#sorted) {
      values.sort((a, b) => a - b);
      this.#sorted = true;
    }
    const k = Math.floor((Math.min(p, 100) / 100) * n + 0.5);
    return values[Math.min(n, Math.max(1, k)) - 1];
  }

  reset() {
    this.#values = [];
    this.#sorted = true;
    this.#sum = 0;
    this.#min = Infinity;
    this.#max = 0;
    this.#spill = null;
  }
}

/**
 * The union of three sets of lateness values (ns) with a histogram's read interface (count, min,
 * max, mean, percentile, reset), as lib/sources/eventloop.js reads one: `native`'s values less
 * `offsetNs` (at least 0), `recorded`'s values, and `zeros` values of 0. A percentile is the
 * value at rank round(p/100 x count), as hdr_value_at_percentile maps it, so countAtMost's
 * rank search works on the union too. Where only one histogram holds values a call is one native
 * call; with both, the smaller (`recorded`: a few JavaScript-recorded values) is read once into a
 * sorted array and the rank is found by binary search against `native`'s ranks.
 */
class LatenessUnion {
  zeros = 0;
  /** @type {number[] | null} recorded's values in order, read on demand */
  #sorted = null;

  /**
   * @param {import('perf_hooks').Histogram} native
   * @param {number} offsetNs what native records for no lateness
   * @param {LatenessValues | import('perf_hooks').RecordableHistogram} recorded
   * @param {() => void} [onReset] called by reset() instead of native.reset()
   */
  constructor(native, offsetNs, recorded, onReset) {
    this.native = native;
    this.offsetNs = offsetNs;
    this.recorded = recorded;
    this.onReset = onReset;
  }

  /** Records a lateness (ns, >= 0). */
  record(ns) {
    if (ns >= 1) this.recorded.record(Math.round(ns));
    else this.zeros++;
    this.#sorted = null;
  }

  get count() {
    return this.native.count + this.recorded.count + this.zeros;
  }

  get min() {
    let min = Infinity;
    if (this.zeros > 0) return 0;
    if (this.native.count > 0) min = this.#shift(this.native.min);
    if (this.recorded.count > 0) min = Math.min(min, this.recorded.min);
    return min === Infinity ? 0 : min;
  }

  get max() {
    let max = 0;
    if (this.native.count > 0) max = this.#shift(this.native.max);
    if (this.recorded.count > 0) max = Math.max(max, this.recorded.max);
    return max;
  }

  /** The mean (a native mean less the offset: values below the offset count as less than 0 there). */
  get mean() {
    const c = this.native.count;
    const m = this.recorded.count;
    const n = c + m + this.zeros;
    if (n === 0) return NaN;
    return ((c > 0 ? c * this.#shift(this.native.mean) : 0) + (m > 0 ? m * this.recorded.mean : 0)) / n;
  }

  percentile(p) {
    const c = this.native.count;
    const m = this.recorded.count;
    const n = c + m + this.zeros;
    if (n === 0) return 0;
    let k = Math.max(1, Math.floor((Math.min(p, 100) / 100) * n + 0.5));
    if (k <= this.zeros) return 0;
    k -= this.zeros;
    if (m === 0) return this.#nativeAt(k, c);
    if (c === 0) return this.recorded.percentile((100 * k) / m);
    const a = this.#recordedSorted();
    // j values from `recorded`, k - j from native: the largest j whose j-th value is not above
    // native's (k - j + 1)-th.
    let lo = Math.max(0, k - c);
    let hi = Math.min(k, m);
    while (lo < hi) {
      const j = Math.ceil((lo + hi) / 2);
      if (k - j + 1 <= c && a[j - 1] > this.#nativeAt(k - j + 1, c)) hi = j - 1;
      else lo = j;
    }
    return Math.max(lo > 0 ? a[lo - 1] : 0, k - lo > 0 ? this.#nativeAt(k - lo, c) : 0);
  }

  /** Clears the values (the native ones through onReset, if given: it reads them first). */
  reset() {
    if (this.onReset) this.onReset();
    else if (this.native.count > 0) this.native.reset();
    this.recorded.reset();
    this.zeros = 0;
    this.#sorted = null;
  }

  /** Native's k-th of c values (by rank, as hdr maps a percentile back to it), less the offset. */
  #nativeAt(k, c) {
    return this.#shift(this.native.percentile((100 * k) / c));
  }

  #shift(ns) {
    return Math.max(0, ns - this.offsetNs);
  }

  #recordedSorted() {
    if (this.#sorted) return this.#sorted;
    const m = this.recorded.count;
    const out = new Array(m);
    for (let i = 1; i <= m; i++) out[i - 1] = this.recorded.percentile((100 * i) / m);
    this.#sorted = out;
    return out;
  }
}

module.exports = { LatenessValues, LatenessUnion };
