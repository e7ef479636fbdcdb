'use strict';

const diagnosticsChannel = require('diagnostics_channel');
const path = require('path');
const { reportError } = require('../report');

// dd-trace's dns instrumentation publishes here (through dc-polyfill, which uses Node's own
// channels) with ctx.args = [hostname, options?] and, once its dns plugin has bound the store,
// ctx.currentStore.span = the dns.lookup span. See dd-trace-js
// packages/datadog-instrumentations/src/dns.js and packages/datadog-plugin-dns/src/lookup.js.
const DD_LOOKUP_START = 'apm:dns:lookup:start';

const UVSCOPE_ROOT = path.resolve(__dirname, '..', '..') + path.sep;
const SKIP_FRAME = /\(node:|\(internal\/|^\s*at node:|^\s*at internal\/|[\\/]node_modules[\\/](dd-trace|dc-polyfill|@datadog)[\\/]/;

/**
 * The app frame that started a lookup: the first stack frame outside Node, uvscope and dd-trace,
 * as "function (path/relative/to/cwd.js:line)".
 * @param {string} stack
 * @returns {string|undefined}
 */
function callerOf(stack) {
  const lines = String(stack).split('\n').slice(1);
  for (const line of lines) {
    if (SKIP_FRAME.test(line) || line.includes(UVSCOPE_ROOT + 'lib' + path.sep)) continue;
    const m = /^\s*at (?:(.*?) \()?(.*?):(\d+):\d+\)?$/.exec(line);
    if (!m) continue;
    const file = m[2].startsWith('file://') ? m[2].slice(7) : m[2];
    const where = `${path.isAbsolute(file) ? path.relative(process.cwd(), file) : file}:${m[3]}`;
    return m[1] ? `${m[1]} (${where})` : where;
  }
  return undefined;
}

function captureStack() {
  const limit = Error.stackTraceLimit;
  // uvscope's and dd-trace's wrappers add frames; keep enough to reach the app's.
  Error.stackTraceLimit = 40;
  const holder = {};
  Error.captureStackTrace(holder, captureStack);
  Error.stackTraceLimit = limit;
  return holder.stack;
}

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
    const slots = Math.floor((size + 1) / 2);
    span.setTag('uvscope.dns.in_flight', inFlight);
    span.setTag('uvscope.dns.queued_ahead', Math.max(0, inFlight - slots));
    span.setTag('uvscope.threadpool.dns_slots', slots);
    span.setTag('uvscope.threadpool.size', size);
    const caller = callerOf(captureStack());
    if (caller) span.setTag('uvscope.dns.caller', caller);
    tagged++;
  }

  function onUvscopeStart({ hostname, inFlight }) {
    try {
      if (pendingSpan && pendingSpan.hostname === hostname) {
        const { span } = pendingSpan;
        pendingSpan = null;
        tagSpan(span, inFlight);
        return;
      }
      pendingLookup = { hostname, inFlight };
      forgetSoon();
    } catch (err) {
      reportError('exporter:datadog', err);
    }
  }

  function onDdStart(ctx) {
    try {
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
    } catch (err) {
      reportError('exporter:datadog', err);
    }
  }

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

module.exports = { createSpanTagger, callerOf, DD_LOOKUP_START };
