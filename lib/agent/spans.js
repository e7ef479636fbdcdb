'use strict';

// uvscope's context on the app's spans, whatever UVSCOPE_EXPORTERS says: on its dns.lookup spans,
// the lookups ahead of them; on every span open across a block of the event loop, the block's time
// and blocker (lib/core/block-victims.js, when uvscope:eventloop.block is published). A trace is
// the app's, exported by its own tracer, and the common setup is OpenTelemetry or dd-trace traces
// with Prometheus metrics. It acts only once a tracer is there, and loads its code then
// (exporters/otlp/spans.js, exporters/datadog/spans.js): OpenTelemetry's global tracer provider,
// or dd-trace loaded (global._ddtrace) or publishing a lookup. Until then the app's lookups pay
// nothing after the agent's first tick; before it (the app's top-level code, a tracer preloaded
// after uvscope) a watcher on uvscope's start event reads two globals per lookup.
// UVSCOPE_OTLP_TRACE_ATTRIBUTES=false and UVSCOPE_DATADOG_TRACE_TAGS=false turn each off.

const diagnosticsChannel = require('diagnostics_channel');
const { subscribed, safeSubscriber } = require('../core/channels');

// @opentelemetry/api 1.x's globals; its `trace` slot is set by trace.setGlobalTracerProvider
// (exporters/otlp/global.js reads the provider behind it).
const OTEL_API = Symbol.for('opentelemetry.js.api.1');
const otelTracing = () => {
  const api = globalThis[OTEL_API];
  return Boolean(api && api.trace);
};
const ddTracing = () => Boolean(globalThis._ddtrace);

/**
 * @param {object} options
 * @param {Readonly<object>} options.options resolved options (lib/agent/options.js)
 * @param {import('diagnostics_channel').Channel} options.startChannel uvscope:dns.lookup:start
 * @param {() => object | null} options.latest the agent's last snapshot (null before the first)
 * @returns {{ refresh(watch?: boolean): void, close(): void, readonly otlp: object | null, readonly datadog: object | null }}
 */
function startSpanContext({ options, startChannel, latest }) {
  const poolSize = () => threadpoolSize(latest());
  const wantOtlp = options.otlp.traceAttributes;
  const wantDatadog = options.datadog.traceTags;
  // With its exporter on, a tracer's tagger is made at once, as it always was (a tracer loaded
  // later is then paired from its first lookup on, whichever wrapper is outside).
  const otlpOn = options.exporters.includes('otlp');
  const datadogOn = options.exporters.includes('datadog');
  const ddChannel = diagnosticsChannel.channel(subscribed.ddTraceDnsLookupStart);
  /** @type {ReturnType<typeof import('../../exporters/otlp/spans').createSpanAttributer> | null} */
  let otlp = null;
  /** @type {ReturnType<typeof import('../../exporters/datadog/spans').createSpanTagger> | null} */
  let datadog = null;
  let watching = false;
  let closed = false;

  // Creates what a tracer present now needs; true when something was created. A tagger made
  // during a publish misses that publish (Node iterates the subscribers it had): the caller
  // hands the event on.
  const load = () => {
    let made = false;
    if (wantOtlp && !otlp && (otlpOn || otelTracing())) {
      otlp = require('../../exporters/otlp/spans').createSpanAttributer({ startChannel, poolSize });
      made = true;
    }
    if (wantDatadog && !datadog && (datadogOn || ddTracing())) {
      datadog = require('../../exporters/datadog/spans').createSpanTagger({ startChannel, poolSize });
      made = true;
    }
    return made;
  };
  const onLookup = safeSubscriber('spans', (message, name) => {
    if (!load()) return;
    if (otlp) otlp.lookupStarted(message, name);
    if (datadog) datadog.lookupStarted(message, name);
    unwatch();
  });
  // dd-trace publishing a lookup (its wrapper outside uvscope's): loaded then, this span paired.
  const onDdLookup = safeSubscriber('spans', (ctx, name) => {
    if (datadog || !load() || !datadog) return;
    datadog.ddLookupStarted(ctx, name);
  });
  const unwatch = () => {
    if (!watching) return;
    watching = false;
    startChannel.unsubscribe(onLookup);
  };

  load();
  if (wantDatadog) ddChannel.subscribe(onDdLookup);
  if ((wantOtlp && !otlp) || (wantDatadog && !datadog)) {
    watching = true;
    startChannel.subscribe(onLookup);
  }
  // A provider registered by a later preload is found before the app's first callback; unref'd.
  const immediate = setImmediate(() => refresh());
  immediate.unref();

  /**
   * Looks for a tracer registered since (after each sample) and puts a provider registered anew
   * under uvscope's span processor. watch false (the agent's first tick): stop watching lookups.
   * @param {boolean} [watch]
   */
  function refresh(watch = true) {
    if (closed) return;
    load();
    if (otlp) {
      otlp.attach();
      otlp.sweep(); // the spans ended since the last sample are let go
    }
    if (datadog) datadog.sweep();
    if (!watch || ((!wantOtlp || otlp) && (!wantDatadog || datadog))) unwatch();
  }

  return {
    get otlp() {
      return otlp;
    },
    get datadog() {
      return datadog;
    },
    refresh,
    close() {
      closed = true;
      clearImmediate(immediate);
      unwatch();
      ddChannel.unsubscribe(onDdLookup);
      if (otlp) otlp.close();
      if (datadog) datadog.close();
    },
  };
}

// The threadpool size in effect: the last snapshot's, else the setting (read when a span is
// tagged, so the snapshot's module loads then, not in the preload).
function threadpoolSize(snapshot) {
  if (snapshot) {
    const p = /** @type {{ value?: number } | undefined} */ (require('../snapshot/snapshot').findPoint(snapshot.points, 'nodejs.uv.threadpool.size'));
    if (p) return p.value;
  }
  const { readSetting } = require('../core/setting');
  const { UV_THREADPOOL_SIZE } = require('../core/libuv');
  return readSetting(UV_THREADPOOL_SIZE);
}

module.exports = { startSpanContext };
