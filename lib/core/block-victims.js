'use strict';

// The victims of an event-loop block, the part every tracer shares: the spans open across a block
// of the loop are given the block time that fell inside them and the costliest block's blocker.
// A tracer's adapter (exporters/otlp/spans.js, exporters/datadog/spans.js)
// hands on each span as it starts and each block's record (uvscope:eventloop.block,
// lib/core/channels.js), which arrives a few ms after the block ended; a span that ended by then
// is left as it is.
//
// Per span, an array store at its start and a comparison at its end: the spans started go on a
// stack, a span that ends on top of it is popped (with the ended ones under it), and whether
// another is still open is asked of the span (the tracer's own flag) only when it matters: at a
// block, and when the stack is compacted: once it holds twice the spans open at the last
// compaction plus 64, and at each sample, so an ended span is not kept long (kept, it would
// survive the young generation's collections and cost the host more than it saves). A Set or Map
// of the spans open costs ~100 ns a span (the add and delete of a fresh key, its identity hash
// made).

/** What a victim span is told, under these names (docs/opentelemetry.md, docs/datadog.md). */
const VICTIM_KEYS = Object.freeze({
  blockedMs: 'uvscope.eventloop.blocked_ms',
  blocker: 'uvscope.eventloop.blocker',
  caller: 'uvscope.eventloop.blocker.caller',
  route: 'uvscope.eventloop.blocker.route',
  cause: 'uvscope.eventloop.block.cause',
});

// Spans followed at most: when more are open, the oldest are forgotten (a span the app never ends
// must not be kept), as is one open longer than MAX_AGE_MS.
const CAP = 4096;
const MAX_AGE_MS = 5 * 60 * 1000;
// Room above twice the spans open before the stack is compacted again.
const SLACK = 64;
// An overlap this short is the tracers' clock (dd-trace's span times are Date.now()-based, whole
// milliseconds) rather than a span that was open across the block.
const MIN_OVERLAP_MS = 1;
const UNKNOWN = '(unknown)';
// The blocker's name, else what the block was: V8's garbage collector, or not known.
const blockerName = (record, blocker) => (blocker ? blocker.name : record.cause === 'gc' ? 'gc' : UNKNOWN);
// A tracer cannot take an attribute back: one written for an earlier block is overwritten when the
// costliest has none.
const replacing = (value, previous) => (typeof value === 'string' ? value : previous !== null ? UNKNOWN : null);

/**
 * @typedef {{ start: number, end: number, seconds: number, cause: 'code' | 'gc',
 *   blocker: { name: string, caller?: string } | null, route: string | null }} BlockRecord
 *   start and end in epoch ms on performance.timeOrigin + performance.now()'s scale
 */

/**
 * The victims' figures of one span, decided here once for every tracer: the blocked time inside
 * it (summed over blocks) and the costliest block's blocker (its name, 'gc' for a collection
 * without one, else '(unknown)'), cause, caller and the route it was serving (null: none to write).
 * @typedef {{ blockedMs: number, worstMs: number, blocker: string, caller: string | null,
 *   route: string | null, cause: string }} VictimFigures
 */

/**
 * @template S
 * @param {object} options
 * @param {(span: S) => number} options.startOf the span's start, in epoch ms on the record's scale
 *   (NaN when unknown: the span is skipped)
 * @param {(span: S) => boolean} options.isOpen whether the span has not ended yet
 * @param {(span: S, figures: VictimFigures) => void} options.tag puts the figures on the span
 *   (called again with the new sums when a later block falls in it too)
 * @param {number} [options.cap]
 * @returns {{ spanStarted(span: S): void, spanEnded(span: S): void, blocked(record: BlockRecord): number, sweep(): void,
 *   readonly open: number, readonly tagged: number }}
 */
function createBlockVictims({ startOf, isOpen, tag, cap = CAP }) {
  const size = Math.max(2, cap);
  /** @type {Array<S | undefined>} the spans started and not yet let go, oldest first */
  const stack = new Array(size);
  /** @type {Array<VictimFigures | null | undefined>} their figures, once a block fell in them */
  const figures = new Array(size);
  let used = 0;
  let limit = Math.min(size, SLACK);
  let tagged = 0;

  // Keeps the spans still open and younger than MAX_AGE_MS, in order, at the bottom of the stack;
  // when it is full (room), over half of it open, the oldest are forgotten: half of it is freed.
  const compact = (room = false, now = performance.timeOrigin + performance.now()) => {
    const cutoff = now - MAX_AGE_MS;
    let kept = 0;
    for (let i = 0; i < used; i++) {
      const span = /** @type {S} */ (stack[i]);
      if (!isOpen(span) || startOf(span) < cutoff) continue;
      stack[kept] = span;
      figures[kept++] = figures[i];
    }
    const drop = room ? Math.max(0, kept - (size >> 1)) : 0;
    if (drop > 0) {
      stack.copyWithin(0, drop, kept);
      figures.copyWithin(0, drop, kept);
      kept -= drop;
    }
    stack.fill(undefined, kept, used);
    figures.fill(undefined, kept, used);
    used = kept;
    limit = Math.min(size, 2 * kept + SLACK);
  };

  return {
    spanStarted(span) {
      if (used >= limit) compact(used === size);
      figures[used] = null;
      stack[used++] = span;
    },
    /** A span ended: popped if it is on top, with the ended ones under it. */
    spanEnded(span) {
      if (used === 0 || stack[used - 1] !== span) return;
      do {
        stack[--used] = undefined;
        figures[used] = undefined;
      } while (used > 0 && !isOpen(/** @type {S} */ (stack[used - 1])));
    },
    /**
     * Tags the spans open now that were open across the block; returns how many.
     * @param {BlockRecord} record
     */
    blocked(record) {
      if (!record || !(record.end > record.start)) return 0;
      compact();
      const blocker = record.blocker && typeof record.blocker.name === 'string' ? record.blocker : null;
      let n = 0;
      for (let i = 0; i < used; i++) {
        const span = /** @type {S} */ (stack[i]);
        const ms = record.end - Math.max(record.start, startOf(span));
        if (!(ms >= MIN_OVERLAP_MS)) continue;
        let f = figures[i];
        if (!f) {
          f = figures[i] = { blockedMs: 0, worstMs: 0, blocker: UNKNOWN, caller: null, route: null, cause: record.cause };
          tagged++;
        }
        f.blockedMs += ms;
        if (ms > f.worstMs) {
          f.worstMs = ms;
          f.blocker = blockerName(record, blocker);
          f.caller = replacing(blocker && blocker.caller, f.caller);
          f.route = replacing(record.route, f.route);
          f.cause = record.cause;
        }
        tag(span, f);
        n++;
      }
      return n;
    },
    /** Forgets the spans ended (and those open too long): each sample, so none is kept past it. */
    sweep() {
      compact();
    },
    /** spans followed now (open at the last compaction, or started since) */
    get open() {
      return used;
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
