'use strict';

// An interval's blocks of the event loop (snapshot details.blockers, lib/sources/blockers/), as
// the window keeps them in the interval's summary (summary.blocks, made by window.js): the
// figures the findings say and the interval's costliest blockers, at most MAX_KEPT, nothing per
// block. Most intervals have no block: they share one frozen object. What the findings say of
// them over the window is in found/blockers.js, loaded once a finding needs it.

const { functionKey } = require('../core/frames');

// Blockers kept per interval: the costliest, merged by frame (the source gives up to 5 a block).
const MAX_KEPT = 5;

/**
 * One of an interval's blockers: what ran (the source's frames, kept by reference: the snapshot
 * already holds them) and the seconds of the interval's blocks it had.
 * @typedef {object} KeptBlocker
 * @property {import('../sources/blockers/summary').Frame} frame
 * @property {import('../sources/blockers/summary').Frame | null} appFrame
 * @property {import('../sources/blockers/summary').Frame | null} call
 * @property {string | null} route
 * @property {string} key what makes it the same blocker over the window (blockerKey())
 * @property {number} seconds its share of each block's samples times the block's duration, summed
 */

/** An interval's blocks: what the findings read. */
class IntervalBlocks {
  constructor() {
    this.capturing = true;
    /** @type {string | null} why there is no capture */
    this.unavailable = null;
    this.thresholdSeconds = 0;
    this.count = 0; // blocks timed
    this.seconds = 0; // their durations, summed
    this.maxSeconds = 0;
    this.gcSeconds = 0; // duration x GC share, summed
    this.maxGcSeconds = 0; // the longest block with GC in it, times its GC share
    this.uncapturedSeconds = 0; // the blocks timed but not captured (no samples)
    /** @type {string | null} why the longest of those was not */
    this.uncaptured = null;
    this.missed = 0;
    this.dropped = 0;
    /** @type {{ usedBytes: number, limitBytes: number } | null} the heap after the block with the most GC */
    this.heap = null;
    /** @type {KeptBlocker[]} costliest first */
    this.blockers = [];
  }
}

// A capture that ran and saw no block (most intervals), by its threshold (one per process).
const QUIET = new Map();

/** @param {number} thresholdSeconds */
function quiet(thresholdSeconds) {
  let q = QUIET.get(thresholdSeconds);
  if (!q) QUIET.set(thresholdSeconds, (q = Object.freeze(Object.assign(new IntervalBlocks(), { thresholdSeconds, blockers: Object.freeze([]) }))));
  return q;
}

/**
 * An interval's blocks, compact, for its summary: null where the snapshot has no
 * details.blockers (an agent without the source: the findings then say nothing of blockers).
 * @param {any} d the sample's details.blockers
 * @param {IntervalBlocks | null} [kept] what a summary that left the window held: overwritten
 *   rather than a new one made
 * @returns {IntervalBlocks | null}
 */
function intervalBlocks(d, kept) {
  if (!d || typeof d !== 'object') return null;
  const blocks = Array.isArray(d.blocks) ? d.blocks : [];
  if (d.capturing && blocks.length === 0 && !d.missed && !d.dropped) return quiet(d.thresholdSeconds || 0);
  const o = kept && !Object.isFrozen(kept) ? kept : new IntervalBlocks();
  o.capturing = Boolean(d.capturing);
  o.unavailable = typeof d.unavailable === 'string' ? d.unavailable : null;
  o.thresholdSeconds = d.thresholdSeconds || 0;
  o.count = blocks.length + (d.dropped || 0);
  o.missed = d.missed || 0;
  o.dropped = d.dropped || 0;
  o.seconds = 0;
  o.maxSeconds = 0;
  o.gcSeconds = 0;
  o.maxGcSeconds = 0;
  o.uncapturedSeconds = 0;
  o.uncaptured = null;
  o.heap = null;
  let uncapturedMax = 0;
  const kept2 = o.blockers;
  let n = 0;
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i];
    const s = b.durationSeconds || 0;
    o.seconds += s;
    if (s > o.maxSeconds) o.maxSeconds = s;
    if (!(b.samples > 0)) {
      o.uncapturedSeconds += s;
      if (s > uncapturedMax) {
        uncapturedMax = s;
        o.uncaptured = b.uncaptured || null;
      }
      continue;
    }
    const gc = s * (b.gcShare || 0);
    o.gcSeconds += gc;
    if (gc > o.maxGcSeconds) {
      o.maxGcSeconds = gc;
      o.heap = b.heap || null;
    }
    const list = b.blockers || [];
    for (let j = 0; j < list.length; j++) {
      const x = list[j];
      const seconds = s * x.share;
      const key = blockerKey(x);
      let at = -1;
      for (let k = 0; k < n; k++) if (kept2[k].key === key) at = k;
      if (at >= 0) {
        kept2[at].seconds += seconds;
        if (!kept2[at].route) kept2[at].route = b.route || null; // a block that knew it
        continue;
      }
      const entry = { frame: x.frame, appFrame: x.appFrame || null, call: x.call || null, route: b.route || null, key, seconds };
      if (n < kept2.length) Object.assign(kept2[n], entry);
      else kept2.push(entry);
      n++;
    }
  }
  kept2.length = n;
  kept2.sort((a, b) => b.seconds - a.seconds);
  if (kept2.length > MAX_KEPT) kept2.length = MAX_KEPT;
  return o;
}

/**
 * What makes two blockers the same: the function that ran and the app's function under it.
 * @param {{ frame: any, appFrame?: any }} b
 * @returns {string}
 */
function blockerKey(b) {
  return `${functionKey(b.frame)}\0${b.appFrame ? functionKey(b.appFrame) : ''}`;
}

module.exports = { intervalBlocks, IntervalBlocks, MAX_KEPT };
