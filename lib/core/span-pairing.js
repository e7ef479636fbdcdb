'use strict';

// uvscope's context on the app's dns.lookup spans, the part every tracer shares. uvscope's start
// event of an app's lookup and the tracer's dns.lookup span of that lookup both happen
// synchronously inside the app's dns.lookup call, in an order set by which wrapper is outside
// (whichever of uvscope and the tracer wrapped dns.lookup last): the second of the two pairs
// them. Anything left unpaired (the span of a lookup uvscope does not time, such as an IP
// literal's) is forgotten at the next microtask. Used by exporters/otlp/spans.js (OpenTelemetry)
// and exporters/datadog/spans.js (dd-trace); lib/agent/spans.js starts them.

const { dnsSlots } = require('./libuv');

/**
 * What a lookup's span is told, decided here once for every tracer: lookups in flight when it
 * started, how many of them were queued ahead of it (beyond the pool's DNS slots), the slots and
 * the pool size.
 * @param {number} inFlight the app's lookups in flight when this one started
 * @param {number} poolSize the threadpool size in effect
 * @returns {{ inFlight: number, queuedAhead: number, slots: number, poolSize: number }}
 */
function lookupFigures(inFlight, poolSize) {
  const slots = dnsSlots(poolSize);
  return { inFlight, queuedAhead: Math.max(0, inFlight - slots), slots, poolSize };
}

/**
 * Pairs uvscope's start event of a lookup with a tracer's span of it (see the top of this file).
 * @template S
 * @param {(span: S, inFlight: number) => void} tag called once per pair, synchronously
 * @returns {{ lookupStarted(key: unknown, inFlight: number): void, spanStarted(key: unknown, span: S): void }}
 *   key: what must be equal on both sides for them to be the same lookup (dd-trace's hostname;
 *   OpenTelemetry's span has none at its start, so undefined on both sides)
 */
function createLookupPairing(tag) {
  let hasLookup = false; // uvscope's start, waiting for the span
  let lookupKey;
  let lookupInFlight = 0;
  let pendingSpan = null; // the span, waiting for uvscope's start
  let spanKey;
  let clearScheduled = false;

  const forgetSoon = () => {
    if (clearScheduled) return;
    clearScheduled = true;
    queueMicrotask(() => {
      clearScheduled = false;
      hasLookup = false;
      pendingSpan = null;
    });
  };

  return {
    lookupStarted(key, inFlight) {
      if (pendingSpan !== null && spanKey === key) {
        const span = pendingSpan;
        pendingSpan = null;
        tag(span, inFlight);
        return;
      }
      hasLookup = true;
      lookupKey = key;
      lookupInFlight = inFlight;
      forgetSoon();
    },
    spanStarted(key, span) {
      if (hasLookup && lookupKey === key) {
        hasLookup = false;
        tag(span, lookupInFlight);
        return;
      }
      pendingSpan = span;
      spanKey = key;
      forgetSoon();
    },
  };
}

module.exports = { createLookupPairing, lookupFigures };
