// @ts-check
'use strict';

const { CATALOG, eventObservation } = require('../../lib/snapshot/catalog');
const { globalMeterProvider } = require('./global');
const { createInstruments, runtimeNodeLoaded } = require('./instruments');
const { warnOnce, countError, reportError } = require('../../lib/core/errors');
const { injectFault } = require('../../lib/core/faults');
const { WARNINGS } = require('../../lib/core/warnings');

// Observations made before uvscope has a provider to record them on (the app's SDK may start
// after uvscope): kept, up to this many, and recorded once a provider is there.
const MAX_PENDING = 10000;
// In companion mode, how long to wait for the app's SDK before saying it is missing.
const WARN_WAITING_MS = 10000;
// The last export (SIGTERM, beforeExit) gets the exporter's timeout and this much more.
const FINAL_FLUSH_MARGIN_MS = 250;

/**
 * The OpenTelemetry exporter. Companion mode: uvscope's instruments live on the MeterProvider the
 * app registered globally, so they leave through the app's readers with the app's resource.
 * Standalone mode: uvscope builds its own provider from the SDK packages and the OTEL_* variables.
 * In mode `auto` the choice is made at the first sample (after the app's preloads and top-level
 * code), and a global provider that appears later still wins: uvscope flushes and closes its own
 * provider and moves its instruments to the app's. Every lookup and every queue-wait probe is
 * recorded as one histogram observation.
 * @param {import('../index').ExporterContext} context
 * @returns {{ name: string, export(snapshot: object): void, close(): Promise<void>, readonly mode: string|null }}
 */
function createExporter(context) {
  const { mode, runtimeMetrics } = context.options.otlp;
  let binding = null; // { provider, mode: 'companion'|'standalone', instruments, standalone }
  let pending = [];
  let sampled = false;
  let closed = false;
  let standaloneFailed = false;
  const createdAt = Date.now();
  const lastProbe = new Map(); // metric and attributes -> { count, sum } of the previous snapshot

  function record(name, value, attributes) {
    if (binding) {
      binding.instruments.record(name, value, attributes);
    } else if (pending === null) {
      // uvscope's own provider could not be built: nothing is kept until an app provider appears.
    } else if (pending.length < MAX_PENDING) {
      pending.push([name, value, attributes]);
    } else {
      countError('exporter:otlp');
      warnOnce(WARNINGS.OTLP_PENDING_FULL, `uvscope: ${MAX_PENDING} observations are waiting for an OpenTelemetry MeterProvider (UVSCOPE_OTLP_MODE=${mode}); later ones are dropped until one is registered`);
    }
  }

  // Every metric the catalog records per event, from its channel. Runs inside the app's path (a
  // dns.lookup callback): diagnostics_channel rethrows a subscriber's error on the next tick, so
  // nothing may escape.
  const subscriptions = CATALOG.filter((def) => def.perEvent).map((def) => {
    const channel = context.channels.published[def.perEvent.channel];
    const onEvent = (message) => {
      try {
        injectFault('channel:otlp');
        const { value, attributes } = eventObservation(def, message);
        record(def.name, value, attributes);
      } catch (err) {
        reportError('exporter:otlp', err);
      }
    };
    channel.subscribe(onEvent);
    return () => channel.unsubscribe(onEvent);
  });
  // Histograms that gain at most one observation per series between two samples (the probes).
  const onePerSample = new Set(CATALOG.filter((def) => def.type === 'histogram' && def.onePerSample).map((def) => def.name));

  function bind(provider, as, standalone) {
    unbind();
    const instruments = createInstruments(provider, context.latest, { runtimeMetrics: runtimeMetrics === 'on' || (runtimeMetrics === 'auto' && !runtimeNodeLoaded()) });
    binding = { provider, mode: as, instruments, standalone };
    if (standalone) {
      process.on('SIGTERM', onSigterm);
      process.on('beforeExit', onBeforeExit);
    }
    const replay = pending || [];
    pending = [];
    for (const [name, value, attributes] of replay) instruments.record(name, value, attributes);
  }

  function unbind() {
    if (!binding) return null;
    const old = binding;
    binding = null;
    if (old.standalone) {
      // Its last collection still reads the latest snapshot through the callbacks: shut down first.
      process.removeListener('SIGTERM', onSigterm);
      process.removeListener('beforeExit', onBeforeExit);
      return old.standalone.shutdown().catch((err) => reportError('exporter:otlp', err));
    }
    old.instruments.close();
    return null;
  }

  // Which provider uvscope's instruments belong on now. A global provider always wins (unless
  // mode is standalone); uvscope's own is built only when none is there by the first sample.
  function choose() {
    const global = mode === 'standalone' ? undefined : globalMeterProvider();
    if (global) {
      if (!binding || binding.provider !== global) bind(global, 'companion');
      return;
    }
    if (binding) return;
    if (!standaloneFailed && (mode === 'standalone' || (mode === 'auto' && sampled))) {
      const standalone = require('./standalone').createStandaloneProvider({ lookup: context.ownLookup });
      if (standalone) {
        bind(standalone.provider, 'standalone', standalone);
      } else {
        standaloneFailed = true; // warned once; not retried every sample
        pending = null;
      }
    } else if (mode === 'companion' && Date.now() - createdAt > WARN_WAITING_MS) {
      warnOnce(WARNINGS.OTLP_NO_PROVIDER, 'uvscope: UVSCOPE_OTLP_MODE=companion and no global OpenTelemetry MeterProvider is registered yet; uvscope\'s metrics are kept for it (up to a limit) and recorded once the app\'s SDK starts');
    }
  }

  // The last interval, once, bounded: a sample now, then the provider's shutdown (one export,
  // itself bounded by the exporter's timeout), held open by a referenced timer that gives up after
  // the bound (uvscope's sockets are unref'd and would not hold the process by themselves).
  function finalFlush() {
    const current = binding;
    process.removeListener('SIGTERM', onSigterm);
    process.removeListener('beforeExit', onBeforeExit);
    try {
      context.sampleNow();
    } catch (err) {
      reportError('exporter:otlp', err);
    }
    let timer;
    const bound = new Promise((resolve) => {
      timer = setTimeout(resolve, current.standalone.settings.exportTimeoutMs + FINAL_FLUSH_MARGIN_MS);
    });
    return Promise.race([current.standalone.shutdown(), bound])
      .catch((err) => reportError('exporter:otlp', err))
      .finally(() => clearTimeout(timer));
  }

  // On SIGTERM (standalone only): export the last interval, then let the signal do what it would
  // have done without us (exit) unless the app handles SIGTERM itself.
  function onSigterm() {
    finalFlush().finally(() => {
      if (process.listenerCount('SIGTERM') === 0) process.kill(process.pid, 'SIGTERM');
    });
  }

  // When the app's work is done (standalone only): export the last interval, then the process
  // exits as it would have. beforeExit comes again after the flush; the listener is gone by then.
  function onBeforeExit() {
    if (closed || !binding || !binding.standalone) return;
    finalFlush();
  }

  try {
    choose();
  } catch (err) {
    reportError('exporter:otlp', err);
  }

  return {
    name: 'otlp',
    /** 'companion', 'standalone', or null while uvscope waits for a provider. */
    get mode() {
      return binding ? binding.mode : null;
    },
    export(snapshot) {
      if (closed) return;
      sampled = true;
      choose();
      // A onePerSample histogram (one probe per queue in flight at a time, a new one only after a
      // sample) gains at most one observation between two snapshots: the difference of the sums
      // is that observation, exactly.
      for (const p of snapshot.points) {
        if (!p.histogram || !onePerSample.has(p.name)) continue;
        const key = `${p.name}\u0000${JSON.stringify(p.attributes)}`;
        const before = lastProbe.get(key) || { count: 0, sum: 0 };
        const added = p.histogram.count - before.count;
        if (added === 1) record(p.name, Math.max(0, p.histogram.sum - before.sum), p.attributes);
        else if (added > 1) countError('exporter:otlp'); // cannot happen with one probe at a time; never guess values
        lastProbe.set(key, { count: p.histogram.count, sum: p.histogram.sum });
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const unsubscribe of subscriptions) unsubscribe();
      await unbind();
    },
  };
}

module.exports = { createExporter, MAX_PENDING };
