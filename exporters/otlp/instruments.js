'use strict';

const path = require('path');
const { CATALOG } = require('../../lib/snapshot/catalog');

const SCOPE = 'uvscope';
const SCOPE_VERSION = require('../../package.json').version;

/**
 * The instrument a catalog metric becomes, derived from its catalog fields (lib/snapshot/catalog.js), or
 * null when it is left out:
 * - a histogram recorded one observation at a time (def.perEvent: each lookup; def.onePerSample:
 *   each probe) is a Histogram: each value is real, so the SDK's histogram (explicit buckets, an
 *   exponential one, min and max) is true whatever aggregation the app's views choose;
 * - every other histogram reaches the snapshot pre-bucketed. The metrics API only takes single
 *   values, and replaying made-up values into the app's aggregation would be fake data, so it is
 *   left out (the event loop goes out as its interval gauges, the semantic conventions' own shape;
 *   Prometheus keeps the histograms);
 * - what @opentelemetry/instrumentation-runtime-node exports too (def.runtimeMetrics) is left out
 *   next to it, so no name is exported twice on one provider.
 * @param {import('../../lib/snapshot/catalog').MetricDef} def
 * @param {{ runtimeMetrics: boolean }} options false: runtime-node's metrics are left out
 * @returns {'histogram'|'observableCounter'|'observableGauge'|null}
 */
function instrumentOf(def, { runtimeMetrics }) {
  if (!runtimeMetrics && def.runtimeMetrics) return null;
  if (def.type === 'histogram') return def.perEvent || def.onePerSample ? 'histogram' : null;
  return def.type === 'counter' ? 'observableCounter' : 'observableGauge';
}

/** Whether @opentelemetry/instrumentation-runtime-node is loaded in this process. */
function runtimeNodeLoaded() {
  const marker = `${path.sep}@opentelemetry${path.sep}instrumentation-runtime-node${path.sep}`;
  return Object.keys(require.cache).some((file) => file.includes(marker));
}

/**
 * Create uvscope's instruments on a meter provider: observable gauges and counters read the
 * latest snapshot in one batch callback; histograms recorded per event or per probe take single
 * observations (instrumentOf).
 * @param {object} provider an OpenTelemetry MeterProvider (the app's global one or uvscope's own)
 * @param {() => object|null} latest the latest snapshot
 * @param {{ runtimeMetrics: boolean }} options false leaves out what runtime-node exports too
 * @returns {{ record(name: string, value: number, attributes: object): void, close(): void }}
 */
function createInstruments(provider, latest, { runtimeMetrics }) {
  const meter = provider.getMeter(SCOPE, SCOPE_VERSION);
  const observables = new Map();
  const histograms = new Map();
  for (const def of CATALOG) {
    const kind = instrumentOf(def, { runtimeMetrics });
    const opts = { description: def.help, unit: def.unit };
    if (kind === 'histogram') {
      histograms.set(def.name, meter.createHistogram(def.name, { ...opts, advice: { explicitBucketBoundaries: [...def.buckets] } }));
    } else if (kind === 'observableCounter') {
      observables.set(def.name, meter.createObservableCounter(def.name, opts));
    } else if (kind === 'observableGauge') {
      observables.set(def.name, meter.createObservableGauge(def.name, opts));
    }
  }

  const observe = (result) => {
    const snapshot = latest();
    if (!snapshot) return;
    for (const p of snapshot.points) {
      const instrument = observables.get(p.name);
      if (instrument && p.histogram === undefined) result.observe(instrument, p.value, otelAttributes(p.attributes));
    }
  };
  const list = [...observables.values()];
  meter.addBatchObservableCallback(observe, list);

  return {
    /** Record one observation of a histogram metric (left out ones are ignored). */
    record(name, value, attributes) {
      const histogram = histograms.get(name);
      if (histogram) histogram.record(value, otelAttributes(attributes));
    },
    close() {
      meter.removeBatchObservableCallback(observe, list);
    },
  };
}

/**
 * Attributes as OpenTelemetry wants them: an empty value is left out (semantic conventions set
 * error.type only when the operation failed; Prometheus shows it as an empty label).
 * @param {Record<string, string>} attributes
 */
function otelAttributes(attributes) {
  const out = {};
  for (const [k, v] of Object.entries(attributes)) if (v !== '' && v !== undefined) out[k] = v;
  return out;
}

module.exports = { createInstruments, instrumentOf, runtimeNodeLoaded };
