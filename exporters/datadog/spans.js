'use strict';

// uvscope's context on the dns.lookup span dd-trace creates, as exporters/otlp/spans.js does for
// OpenTelemetry (the pairing they share: lib/core/span-pairing.js). dd-trace's dns instrumentation
// publishes on its channel (through dc-polyfill, which uses Node's own channels) with
// ctx.args = [hostname, options?] and, once its dns plugin has bound the store,
// ctx.currentStore.span = the dns.lookup span. See dd-trace-js
// packages/datadog-instrumentations/src/dns.js and packages/datadog-plugin-dns/src/lookup.js.
// Every span, for a block's victims (lib/core/block-victims.js), comes from dd-trace's own
// channels: dd-trace:span:start `{ span, fields }` and dd-trace:span:finish `span`; a span has
// finished once its _duration is set (packages/dd-trace/src/opentracing/span.js, 5.x and 6.x).

const diagnosticsChannel = require('diagnostics_channel');
const { injectFault } = require('../../lib/core/faults');
const { published, subscribed, safeSubscriber } = require('../../lib/core/channels');
const { createLookupPairing, lookupFigures } = require('../../lib/core/span-pairing');
const { createBlockVictims, VICTIM_KEYS, roundMs } = require('../../lib/core/block-victims');

const DD_LOOKUP_START = subscribed.ddTraceDnsLookupStart;

// dd-trace's span times are Date.now()-based ms (its trace's start plus performance.now() since);
// the block records' are on performance.timeOrigin + performance.now(): the difference, read once
// per block.
let dateOffset = 0;
const startMs = (span) => (typeof span._startTime === 'number' ? span._startTime - dateOffset : NaN);
const isOpen = (span) => span._duration === undefined;

function tagVictim(span, f) {
  span.setTag(VICTIM_KEYS.blockedMs, roundMs(f.blockedMs));
  span.setTag(VICTIM_KEYS.cause, f.cause);
  span.setTag(VICTIM_KEYS.blocker, f.blocker);
  if (f.caller) span.setTag(VICTIM_KEYS.caller, f.caller);
  if (f.route) span.setTag(VICTIM_KEYS.route, f.route);
}

/**
 * Puts uvscope's context on the dns.lookup span dd-trace creates, so a slow lookup in an APM
 * trace explains itself: lookups in flight and queued ahead of it when it started, the pool's DNS
 * slots and size, and the calling frame. The two events of one lookup are paired by hostname.
 * While dd-trace is not loaded (global._ddtrace, set by its bootstrap) each app lookup costs one
 * property read.
 *
 * @param {object} options
 * @param {import('diagnostics_channel').Channel} options.startChannel uvscope:dns.lookup:start
 * @param {() => number} options.poolSize the threadpool size in effect
 * @returns {{ lookupStarted(message: object, name: string | symbol): void, ddLookupStarted(ctx: object, name: string | symbol): void,
 *   sweep(): void, close(): void, readonly tagged: number, readonly victims: { open: number, tagged: number } }}
 */
function createSpanTagger({ startChannel, poolSize }) {
  const ddChannel = diagnosticsChannel.channel(DD_LOOKUP_START);
  const spanStart = diagnosticsChannel.channel(subscribed.ddTraceSpanStart);
  const spanFinish = diagnosticsChannel.channel(subscribed.ddTraceSpanFinish);
  const victims = createBlockVictims({ startOf: startMs, isOpen, tag: tagVictim });
  let tagged = 0;

  const pairing = createLookupPairing((span, inFlight) => {
    const figures = lookupFigures(inFlight, poolSize());
    span.setTag('uvscope.dns.in_flight', figures.inFlight);
    span.setTag('uvscope.dns.queued_ahead', figures.queuedAhead);
    span.setTag('uvscope.threadpool.dns_slots', figures.slots);
    span.setTag('uvscope.threadpool.size', figures.poolSize);
    // Required here, at the first span tagged: the preload loads this file, not the stack reader.
    const caller = require('../../lib/core/callers').captureCaller();
    if (caller !== '(unknown)') span.setTag('uvscope.dns.caller', caller);
    tagged++;
  });

  const onUvscopeStart = safeSubscriber('exporter:datadog', ({ hostname, inFlight }) => {
    injectFault('channel:datadog.spans');
    if (!globalThis._ddtrace) return;
    pairing.lookupStarted(hostname, inFlight);
  });

  const onDdStart = safeSubscriber('exporter:datadog', (ctx) => {
    injectFault('channel:datadog.spans');
    const span = ctx && ctx.currentStore && ctx.currentStore.span;
    const hostname = ctx && Array.isArray(ctx.args) ? ctx.args[0] : undefined;
    if (!span || typeof span.setTag !== 'function' || typeof hostname !== 'string') return;
    pairing.spanStarted(hostname, span);
  });

  // No try/catch on the per-span path: an array store, a comparison.
  const onSpanStart = (message) => {
    const span = message && message.span;
    if (span && typeof span.setTag === 'function') victims.spanStarted(span);
  };
  const onSpanFinish = (span) => victims.spanEnded(span);
  const onBlock = safeSubscriber('exporter:datadog', (record) => {
    injectFault('channel:datadog.spans');
    dateOffset = Date.now() - (performance.timeOrigin + performance.now());
    victims.blocked(record);
  });

  startChannel.subscribe(onUvscopeStart);
  ddChannel.subscribe(onDdStart);
  spanStart.subscribe(onSpanStart);
  spanFinish.subscribe(onSpanFinish);
  published.eventloopBlock.subscribe(onBlock);
  return {
    /** uvscope's start event, handed on by whoever made this tagger while it was published. */
    lookupStarted: onUvscopeStart,
    /** dd-trace's start event, handed on likewise. */
    ddLookupStarted: onDdStart,
    get tagged() {
      return tagged;
    },
    /** spans followed now; spans tagged as a block's victims */
    get victims() {
      return { open: victims.open, tagged: victims.tagged };
    },
    /** Lets go of the spans finished since (and those open too long): each sample. */
    sweep() {
      victims.sweep();
    },
    close() {
      startChannel.unsubscribe(onUvscopeStart);
      ddChannel.unsubscribe(onDdStart);
      spanStart.unsubscribe(onSpanStart);
      spanFinish.unsubscribe(onSpanFinish);
      published.eventloopBlock.unsubscribe(onBlock);
    },
  };
}

module.exports = { createSpanTagger };
