'use strict';

const diagnosticsChannel = require('diagnostics_channel');
const { injectFault } = require('../../lib/core/faults');
const { captureCaller } = require('../../lib/core/callers');
const { dnsSlots } = require('../../lib/core/libuv');

// dd-trace's dns instrumentation publishes here (through dc-polyfill, which uses Node's own
// channels) with ctx.args = [hostname, options?] and, once its dns plugin has bound the store,
// ctx.currentStore.span = the dns.lookup span. See dd-trace-js
// packages/datadog-instrumentations/src/dns.js and packages/datadog-plugin-dns/src/lookup.js.
const { subscribed, safeSubscriber } = require('../../lib/core/channels');

const DD_LOOKUP_START = subscribed.ddTraceDnsLookupStart;

/**
 * Puts uvscope's context on the dns.lookup span dd-trace creates, so a slow lookup in an APM
 * trace explains itself: lookups in flight and queued ahead of it when it started, the pool's DNS
 * slots and size, and the calling frame.
 *
 * dd-trace and uvscope both wrap dns.lookup, in whichever order they were loaded. Both events
 * for one lookup fire synchronously inside the app's dns.lookup call; whichever comes second tags
 * the span, and anything left unmatched is forgotten at the next microtask.
 *
 * @param {object} options
 * @param {import('diagnostics_channel').Channel} options.startChannel uvscope:dns.lookup:start
 * @param {() => number} options.poolSize the threadpool size in effect
 * @returns {{ close(): void, readonly tagged: number }}
 */
function createSpanTagger({ startChannel, poolSize }) {
  const ddChannel = diagnosticsChannel.channel(DD_LOOKUP_START);
  let pendingLookup = null; // uvscope's start, waiting for dd-trace's span
  let pendingSpan = null; // dd-trace's span, waiting for uvscope's start
  let clearScheduled = false;
  let tagged = 0;

  function forgetSoon() {
    if (clearScheduled) return;
    clearScheduled = true;
    queueMicrotask(() => {
      clearScheduled = false;
      pendingLookup = null;
      pendingSpan = null;
    });
  }

  function tagSpan(span, inFlight) {
    const size = poolSize();
    const slots = dnsSlots(size);
    span.setTag('uvscope.dns.in_flight', inFlight);
    span.setTag('uvscope.dns.queued_ahead', Math.max(0, inFlight - slots));
    span.setTag('uvscope.threadpool.dns_slots', slots);
    span.setTag('uvscope.threadpool.size', size);
    const caller = captureCaller();
    if (caller !== '(unknown)') span.setTag('uvscope.dns.caller', caller);
    tagged++;
  }

  const onUvscopeStart = safeSubscriber('exporter:datadog', ({ hostname, inFlight }) => {
    injectFault('channel:datadog.spans');
    if (pendingSpan && pendingSpan.hostname === hostname) {
      const { span } = pendingSpan;
      pendingSpan = null;
      tagSpan(span, inFlight);
      return;
    }
    pendingLookup = { hostname, inFlight };
    forgetSoon();
  });

  const onDdStart = safeSubscriber('exporter:datadog', (ctx) => {
    injectFault('channel:datadog.spans');
    const span = ctx && ctx.currentStore && ctx.currentStore.span;
    const hostname = ctx && Array.isArray(ctx.args) ? ctx.args[0] : undefined;
    if (!span || typeof span.setTag !== 'function' || typeof hostname !== 'string') return;
    if (pendingLookup && pendingLookup.hostname === hostname) {
      const { inFlight } = pendingLookup;
      pendingLookup = null;
      tagSpan(span, inFlight);
      return;
    }
    pendingSpan = { hostname, span };
    forgetSoon();
  });

  startChannel.subscribe(onUvscopeStart);
  ddChannel.subscribe(onDdStart);
  return {
    get tagged() {
      return tagged;
    },
    close() {
      startChannel.unsubscribe(onUvscopeStart);
      ddChannel.unsubscribe(onDdStart);
    },
  };
}

module.exports = { createSpanTagger };
