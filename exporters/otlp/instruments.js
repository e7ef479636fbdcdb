'use strict';

const path = require('path');
const { CATALOG, metric } = require('../../lib/metrics');

const SCOPE = 'uvscope';
const SCOPE_VERSION = require('../../package.json').version;

// Histograms recorded one observation at a time. Each lookup and each probe is a real value, so
// the SDK's histogram (explicit buckets, an exponential one, min and max) is true whatever
// aggregation the app's views choose.
const RECORDED = Object.freeze({ dns: 'dns.lookup.duration', dnsQueueWait: 'nodejs.dns.lookup.queue_wait', queueWait: 'nodejs.uv.threadpool.queue_wait' });

// Every other catalog histogram (nodejs.eventloop.delay, ...) reaches the snapshot pre-bucketed.
// The metrics API only takes single values, and replaying made-up values into the app's
// aggregation (whose buckets, exponential or not, the app's views choose) would be fake data, so
// those are left out here: the event loop goes out as the interval gauges nodejs.eventloop.delay.*
// (the semantic conventions' own shape), and Prometheus keeps the histograms.

// What @opentelemetry/instrumentation-runtime-node exports too (nodejs.eventloop.delay.*,
// .utilization, .time; v8js.gc.duration, v8js.memory.heap.*): left out next to it, so no name is
// exported twice on one provider.
const RUNTIME_NODE_PREFIXES = Object.freeze(['nodejs.eventloop.', 'v8js.']);

/** Whether @opentelemetry/instrumentation-runtime-node is loaded in this process. */
function runtimeNodeLoaded() {
  const marker = `${path.sep}@opentelemetry${path.sep}instrumentation-runtime-node${path.sep}`;
  return Object.keys(require.cache).some((file) => file.includes(marker));
}

/**
 * Create uvscope's instruments on a meter provider: observable gauges and counters read the
 * latest snapshot in one batch callback; the DNS and queue-wait histograms take single observations.
 * @param {object} provider an OpenTelemetry MeterProvider (the app's global one or uvscope's own)
 * @param {() => object|null} latest the latest snapshot
 * @param {{ runtimeMetrics: boolean }} options false leaves out what runtime-node exports too
 * @returns {{ record(kind: 'dns'|'dnsQueueWait'|'queueWait', seconds: number, attributes: object): void, names: string[], close(): void }}
 */
function createInstruments(provider, latest, { runtimeMetrics }) {
  const meter = provider.getMeter(SCOPE, SCOPE_VERSION);
  const observables = new Map();
  for (const def of CATALOG) {
    if (def.type === 'histogram') continue;
    if (!runtimeMetrics && RUNTIME_NODE_PREFIXES.some((prefix) => def.name.startsWith(prefix))) continue;
    const opts = { description: def.help, unit: def.unit };
    observables.set(def.name, def.type === 'counter' ? meter.createObservableCounter(def.name, opts) : meter.createObservableGauge(def.name, opts));
  }
  const histograms = {};
  for (const [kind, name] of Object.entries(RECORDED)) {
    const def = metric(name);
    histograms[kind] = meter.createHistogram(name, {
      description: def.help,
      unit: def.unit,
      advice: { explicitBucketBoundaries: [...def.buckets] },
    });
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
    names: [...observables.keys(), ...Object.values(RECORDED)],
    record(kind, seconds, attributes) {
      histograms[kind].record(seconds, otelAttributes(attributes));
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

module.exports = { createInstruments, runtimeNodeLoaded, RUNTIME_NODE_PREFIXES, otelAttributes, SCOPE, SCOPE_VERSION, RECORDED };
