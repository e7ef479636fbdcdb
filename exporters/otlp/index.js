'use strict';

const { CATALOG, eventObservation } = require('../../lib/snapshot/catalog');
const { globalMeterProvider } = require('./global');
const { createInstruments, runtimeNodeLoaded } = require('./instruments');
const { warnOnce, countError, reportError } = require('../../lib/core/errors');
const { injectFault } = require('../../lib/core/faults');
const { safeSubscriber } = require('../../lib/core/channels');
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
 * recorded as one histogram observation. uvscope's context on the app's dns.lookup spans
 * (spans.js) does not depend on this exporter: lib/agent/spans.js starts it.
 * @param {import('../index').ExporterContext} context
 * @returns {{ name: string, export(snapshot: object): void, close(): Promise<void>, readonly mode: string|null }}
 */
function createExporter(context) {
  return new OtlpExporter(context);
}

// Histograms that gain at most one observation per series between two samples (the probes).
const ONE_PER_SAMPLE = new Set(CATALOG.filter((def) => def.type === 'histogram' && def.onePerSample).map((def) => def.name));

class OtlpExporter {
  name = 'otlp';
  #context;
  #mode;
  #runtimeMetrics;
  /** @type {{ provider: object, mode: 'companion'|'standalone', instruments: ReturnType<typeof createInstruments>, standalone?: object } | null} */
  #binding = null;
  /** @type {Array<[string, number, object]> | null} null once uvscope's own provider failed */
  #pending = [];
  #sampled = false;
  #closed = false;
  #standaloneFailed = false;
  #createdAt = Date.now();
  #lastProbe = new Map(); // metric and attributes -> { count, sum } of the previous snapshot
  #unsubscribes;
  #onSigterm = () => this.#sigterm();
  #onBeforeExit = () => this.#beforeExit();

  /** @param {import('../index').ExporterContext} context */
  constructor(context) {
    this.#context = context;
    ({ mode: this.#mode, runtimeMetrics: this.#runtimeMetrics } = context.options.otlp);
    // Every metric the catalog records per event, from its channel, inside the app's path (a
    // dns.lookup callback).
    this.#unsubscribes = CATALOG.filter((def) => def.perEvent).map((def) => {
      const channel = context.channels.published[def.perEvent.channel];
      const onEvent = safeSubscriber('exporter:otlp', (message) => {
        injectFault('channel:otlp');
        const { value, attributes } = eventObservation(def, message);
        this.#record(def.name, value, attributes);
      });
      channel.subscribe(onEvent);
      return () => channel.unsubscribe(onEvent);
    });
    try {
      this.#choose();
    } catch (err) {
      reportError('exporter:otlp', err);
    }
  }

  /** 'companion', 'standalone', or null while uvscope waits for a provider. */
  get mode() {
    return this.#binding ? this.#binding.mode : null;
  }

  /** @param {import('../../lib/snapshot/snapshot').Snapshot} snapshot */
  export(snapshot) {
    if (this.#closed) return;
    this.#sampled = true;
    this.#choose();
    this.#recordProbes(snapshot);
  }

  async close() {
    if (this.#closed) return;
    this.#closed = true;
    for (const unsubscribe of this.#unsubscribes) unsubscribe();
    await this.#unbind();
  }

  #record(name, value, attributes) {
    if (this.#binding) {
      this.#binding.instruments.record(name, value, attributes);
    } else if (this.#pending === null) {
      // uvscope's own provider could not be built: nothing is kept until an app provider appears.
    } else if (this.#pending.length < MAX_PENDING) {
      this.#pending.push([name, value, attributes]);
    } else {
      countError('exporter:otlp');
      warnOnce(WARNINGS.OTLP_PENDING_FULL, `uvscope: ${MAX_PENDING} observations are waiting for an OpenTelemetry MeterProvider (UVSCOPE_OTLP_MODE=${this.#mode}); later ones are dropped until one is registered`);
    }
  }

  // A onePerSample histogram (one probe per queue in flight at a time, a new one only after a
  // sample) gains at most one observation between two snapshots: the difference of the sums is
  // that observation, exactly.
  #recordProbes(snapshot) {
    for (const p of snapshot.points) {
      if (!p.histogram || !ONE_PER_SAMPLE.has(p.name)) continue;
      const key = `${p.name}\u0000${JSON.stringify(p.attributes)}`;
      const before = this.#lastProbe.get(key) || { count: 0, sum: 0 };
      const added = p.histogram.count - before.count;
      if (added === 1) this.#record(p.name, Math.max(0, p.histogram.sum - before.sum), p.attributes);
      else if (added > 1) countError('exporter:otlp'); // cannot happen with one probe at a time; never guess values
      this.#lastProbe.set(key, { count: p.histogram.count, sum: p.histogram.sum });
    }
  }

  #bind(provider, as, standalone) {
    this.#unbind();
    const runtimeMetrics = this.#runtimeMetrics === 'on' || (this.#runtimeMetrics === 'auto' && !runtimeNodeLoaded());
    const instruments = createInstruments(provider, this.#context.latest, { runtimeMetrics });
    this.#binding = { provider, mode: as, instruments, standalone };
    if (standalone) {
      process.on('SIGTERM', this.#onSigterm);
      process.on('beforeExit', this.#onBeforeExit);
    }
    const replay = this.#pending || [];
    this.#pending = [];
    for (const [name, value, attributes] of replay) instruments.record(name, value, attributes);
  }

  #unbind() {
    if (!this.#binding) return null;
    const old = this.#binding;
    this.#binding = null;
    if (old.standalone) {
      // Its last collection still reads the latest snapshot through the callbacks: shut down first.
      process.removeListener('SIGTERM', this.#onSigterm);
      process.removeListener('beforeExit', this.#onBeforeExit);
      return old.standalone.shutdown().catch((err) => reportError('exporter:otlp', err));
    }
    old.instruments.close();
    return null;
  }

  // Which provider uvscope's instruments belong on now. A global provider always wins (unless
  // mode is standalone); uvscope's own is built only when none is there by the first sample.
  #choose() {
    const mode = this.#mode;
    const global = mode === 'standalone' ? undefined : globalMeterProvider();
    if (global) {
      if (!this.#binding || this.#binding.provider !== global) this.#bind(global, 'companion');
      return;
    }
    if (this.#binding) return;
    if (!this.#standaloneFailed && (mode === 'standalone' || (mode === 'auto' && this.#sampled))) {
      const standalone = require('./standalone').createStandaloneProvider({ lookup: this.#context.ownLookup });
      if (standalone) {
        this.#bind(standalone.provider, 'standalone', standalone);
      } else {
        this.#standaloneFailed = true; // warned once; not retried every sample
        this.#pending = null;
      }
    } else if (mode === 'companion' && Date.now() - this.#createdAt > WARN_WAITING_MS) {
      warnOnce(WARNINGS.OTLP_NO_PROVIDER, 'uvscope: UVSCOPE_OTLP_MODE=companion and no global OpenTelemetry MeterProvider is registered yet; uvscope\'s metrics are kept for it (up to a limit) and recorded once the app\'s SDK starts');
    }
  }

  // The last interval, once, bounded: a sample now, then the provider's shutdown (one export,
  // itself bounded by the exporter's timeout), held open by a referenced timer that gives up after
  // the bound (uvscope's sockets are unref'd and would not hold the process by themselves).
  #finalFlush() {
    const current = this.#binding;
    process.removeListener('SIGTERM', this.#onSigterm);
    process.removeListener('beforeExit', this.#onBeforeExit);
    try {
      this.#context.sampleNow();
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
  #sigterm() {
    this.#finalFlush().finally(() => {
      if (process.listenerCount('SIGTERM') === 0) process.kill(process.pid, 'SIGTERM');
    });
  }

  // When the app's work is done (standalone only): export the last interval, then the process
  // exits as it would have. beforeExit comes again after the flush; the listener is gone by then.
  #beforeExit() {
    if (this.#closed || !this.#binding || !this.#binding.standalone) return;
    this.#finalFlush();
  }
}

module.exports = { createExporter };
