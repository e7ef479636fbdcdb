'use strict';

// The victims of an event-loop block, the part every tracer shares: the spans open across a block
// of the loop are given the block time that fell inside them and the costliest block's blocker
// (issue 32 item 3). A tracer's adapter (exporters/otlp/spans.js, exporters/datadog/spans.js)
// tells this the spans that start and end, and hands on each block's record
// (uvscope:eventloop.block, lib/core/channels.js), which arrives a few ms after the block ended.
// Per span: one Set add and one Set delete; the work is done once per block, over the spans open.

/** What a victim span is told, under these names (docs/opentelemetry.md, docs/datadog.md). */
const VICTIM_KEYS = Object.freeze({
  blockedMs: 'uvscope.eventloop.blocked_ms',
  blocker: 'uvscope.eventloop.blocker',
  caller: 'uvscope.eventloop.blocker.caller',
  cause: 'uvscope.eventloop.block.cause',
});

// Open spans tracked at most: past it the oldest is forgotten (a span the app never ends must not
// be kept), as is one open longer than MAX_AGE_MS (swept at each block and each sample).
const CAP = 4096;
const MAX_AGE_MS = 5 * 60 * 1000;
// An overlap this short is the tracers' clock (dd-trace's span times are Date.now()-based, whole
// milliseconds) rather than a span that was open across the block.
const MIN_OVERLAP_MS = 1;

const UNKNOWN = '(unknown)';
// The blocker's name, else what the block was: V8's garbage collector, or not known.
const blockerName = (record, blocker) => (blocker ? blocker.name : record.cause === 'gc' ? 'gc' : UNKNOWN);

/**
 * @typedef {{ start: number, end: number, seconds: number, cause: 'code' | 'gc',
 *   blocker: { name: string, caller?: string } | null, route: string | null }} BlockRecord
 *   start and end in epoch ms on performance.timeOrigin + performance.now()'s scale
 */

/**
 * The victims' figures of one span, decided here once for every tracer: the blocked time inside
 * it (summed over blocks) and the costliest block's blocker (its name, 'gc' for a collection
 * without one, else '(unknown)'), cause and caller (null: none to write).
 * @typedef {{ blockedMs: number, worstMs: number, blocker: string, caller: string | null,
 *   cause: string }} VictimFigures
 */

/**
 * @template S
 * @param {object} options
 * @param {(span: S) => number} options.startOf the span's start, in epoch ms on the record's scale
 *   (NaN when unknown: the span is skipped)
 * @param {(span: S, figures: VictimFigures) => void} options.tag puts the figures on the span
 *   (called again with the new sums when a later block falls in it too)
 * @param {number} [options.cap]
 * @returns {{ spanStarted(span: S): void, spanEnded(span: S): void, blocked(record: BlockRecord): number,
 *   sweep(now?: number): void, readonly open: number, readonly tagged: number }}
 */
function createBlockVictims({ startOf, tag, cap = CAP }) {
  /** @type {Set<S>} in start order, so the first is the oldest */
  const open = new Set();
  /** @type {WeakMap<object, VictimFigures>} a span's figures so far, once a block fell in it */
  const figuresOf = new WeakMap();
  let tagged = 0;

  const sweep = (now = performance.timeOrigin + performance.now()) => {
    const cutoff = now - MAX_AGE_MS;
    for (const span of open) {
      if (!(startOf(span) < cutoff)) break;
      open.delete(span);
    }
  };

  return {
    spanStarted(span) {
      if (open.size >= cap) open.delete(open.values().next().value);
      open.add(span);
    },
    spanEnded(span) {
      open.delete(span);
    },
    /**
     * Tags the spans open now that were open across the block; returns how many.
     * @param {BlockRecord} record
     */
    blocked(record) {
      if (!record || !(record.end > record.start)) return 0;
      sweep();
      const blocker = record.blocker && typeof record.blocker.name === 'string' ? record.blocker : null;
      let n = 0;
      for (const span of open) {
        const from = Math.max(record.start, startOf(span));
        const ms = record.end - from;
        if (!(ms >= MIN_OVERLAP_MS)) continue;
        let f = figuresOf.get(/** @type {object} */ (span));
        if (!f) {
          f = { blockedMs: 0, worstMs: 0, blocker: UNKNOWN, caller: null, cause: record.cause };
          figuresOf.set(/** @type {object} */ (span), f);
          tagged++;
        }
        f.blockedMs += ms;
        if (ms > f.worstMs) {
          f.worstMs = ms;
          f.blocker = blockerName(record, blocker);
          // A tracer cannot take an attribute back: a caller written for an earlier block is
          // overwritten when the costliest has none.
          const caller = blocker && typeof blocker.caller === 'string' ? blocker.caller : null;
          f.caller = caller !== null ? caller : f.caller !== null ? UNKNOWN : null;
          f.cause = record.cause;
        }
        tag(span, f);
        n++;
      }
      return n;
    },
    sweep,
    get open() {
      return open.size;
    },
    /** spans given a victim's figures so far */
    get tagged() {
      return tagged;
    },
  };
}

/** Rounds a victim's blocked time for a tag: milliseconds, to 0.1. */
const roundMs = (ms) => Math.round(ms * 10) / 10;

module.exports = { createBlockVictims, VICTIM_KEYS, roundMs };
