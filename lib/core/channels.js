'use strict';

// Every diagnostics channel uvscope publishes or subscribes to, with the shape of its messages,
// in one table (as undici's lib/core/diagnostics.js does). Nothing else names a channel.

const diagnosticsChannel = require('diagnostics_channel');
const { reportError } = require('./errors');

/**
 * Channels uvscope publishes. Published only when someone subscribes (check hasSubscribers).
 */
const published = Object.freeze({
  /**
   * An app dns.lookup started (not the agent's own probes).
   * `{ hostname: string, inFlight: number }`: inFlight counts app lookups already in flight.
   */
  dnsLookupStart: diagnosticsChannel.channel('uvscope:dns.lookup:start'),
  /**
   * An app dns.lookup called back.
   * `{ hostname: string, name: string, errorType: string, seconds: number,
   * queueWaitSeconds: number }`: name is the bounded label (or _other), errorType the error code
   * ('' on success), seconds from call to callback, queueWaitSeconds the part of it spent waiting
   * for a DNS slot (estimated, see lib/sources/dns/sampler.js).
   */
  dnsLookupEnd: diagnosticsChannel.channel('uvscope:dns.lookup:end'),
  /**
   * A threadpool job the tracer saw start (while armed) called back.
   * `{ kind: 'dns'|'fs'|'crypto'|'zlib'|'other', type: string, seconds: number }`: type is the
   * provider type (PBKDF2REQUEST, ZLIB, an addon's name), seconds from submission to callback.
   */
  threadpoolJobEnd: diagnosticsChannel.channel('uvscope:threadpool.job:end'),
  /**
   * A block of the event loop ended and what blocked it is known (on the main thread, a few ms
   * after the block: the loop runs again, then the watchdog's message is read).
   * `{ start: number, end: number, seconds: number, cause: 'code'|'gc',
   * blocker: { name: string, caller?: string } | null, route: string | null }`: start and end in
   * epoch ms (performance.timeOrigin + performance.now()); the spans open across it are tagged
   * (lib/core/block-victims.js).
   */
  eventloopBlock: diagnosticsChannel.channel('uvscope:eventloop.block'),
});

/**
 * Channels of Node, undici and peers that uvscope subscribes to (by name; a channel a Node
 * version lacks is simply never published).
 */
const subscribed = Object.freeze({
  /** net: `{ socket }` for each outgoing net.Socket connect (Node 20+). */
  netClientSocket: 'net.client.socket',
  /**
   * net: `{ server, options }` when a net.Server (http, https, http2 too) starts listening
   * (options as given to listen(), backlog among them), then `{ server }` once it listens.
   */
  netServerListenStart: 'tracing:net.server.listen:asyncStart',
  netServerListenEnd: 'tracing:net.server.listen:asyncEnd',
  /** http: `{ request }` when an http.ClientRequest starts (Node 20+). */
  httpClientRequestStart: 'http.client.request.start',
  /**
   * http: `{ request, response, socket, server }` when a server starts handling a request
   * (Node 18.7+); the threadpool tracer labels work submitted while serving it with its route.
   */
  httpServerRequestStart: 'http.server.request.start',
  /**
   * undici (fetch and the undici package): `{ request, headers, socket }` when a request is
   * written to a connection; request.origin names the host.
   */
  undiciClientSendHeaders: 'undici:client:sendHeaders',
  /**
   * dd-trace's dns instrumentation: `ctx` with ctx.args = [hostname, options?] and, once its dns
   * plugin bound the store, ctx.currentStore.span (dd-trace-js
   * packages/datadog-instrumentations/src/dns.js, packages/datadog-plugin-dns/src/lookup.js).
   */
  ddTraceDnsLookupStart: 'apm:dns:lookup:start',
  /**
   * dd-trace: `{ span, fields }` when a span starts, and the span when it finishes
   * (packages/dd-trace/src/opentracing/span.js); a block's victims are the spans open across it
   * (lib/core/block-victims.js).
   */
  ddTraceSpanStart: 'dd-trace:span:start',
  ddTraceSpanFinish: 'dd-trace:span:finish',
});

/**
 * A channel subscriber that never throws: diagnostics_channel runs subscribers inside the
 * publisher's call (often the app's own path, such as a dns.lookup callback) and rethrows a
 * subscriber's error on the next tick, so an error is counted and reported once for `component`
 * (lib/core/errors.js) instead.
 * @template M
 * @param {string} component e.g. 'exporter:otlp'
 * @param {(message: M, name: string | symbol) => void} handler
 * @returns {(message: M, name: string | symbol) => void}
 */
function safeSubscriber(component, handler) {
  return (message, name) => {
    try {
      handler(message, name);
    } catch (err) {
      reportError(component, err);
    }
  };
}

module.exports = { published, subscribed, safeSubscriber };
