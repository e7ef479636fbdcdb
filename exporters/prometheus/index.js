'use strict';

const { CATALOG, shortName } = require('../../lib/metrics');
const { warnOnce, countError, reportError } = require('../../lib/report');
const { WARNINGS } = require('../../lib/warnings');
const { sendBody } = require('../../lib/server');

const UNIT_SUFFIX = Object.freeze({ s: 'seconds', By: 'bytes' });

/**
 * The Prometheus name of a catalog metric: dots to underscores, then the unit ('s' -> _seconds),
 * then _total for counters.
 * @param {import('../../lib/metrics').MetricDef} def
 */
function prometheusName(def) {
  let name = def.name.replace(/\./g, '_');
  const suffix = UNIT_SUFFIX[def.unit];
  if (suffix && !name.endsWith(`_${suffix}`)) name += `_${suffix}`;
  if (def.type === 'counter') name += '_total';
  return name;
}

/**
 * One catalog entry as a prom-client registry member. prom-client's Histogram only takes single
 * observations, and our histograms arrive already bucketed in the snapshot, so the registry gets
 * objects with the interface it reads (name, help, type, get()) rather than prom-client classes.
 */
class SnapshotMetric {
  constructor(def, latest) {
    this.def = def;
    this.latest = latest;
    this.name = prometheusName(def);
    this.help = def.help;
    this.type = def.type;
    this.aggregator = 'sum';
  }

  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() };
  }

  values() {
    const snapshot = this.latest();
    if (!snapshot) return [];
    const out = [];
    for (const p of snapshot.points) {
      if (p.name !== this.def.name) continue;
      const labels = {};
      for (const [k, v] of Object.entries(p.attributes)) labels[shortName(k)] = v;
      if (p.histogram) pushHistogram(out, this.name, labels, p.histogram);
      else out.push({ labels, value: p.value });
    }
    return out;
  }

  reset() {}
}

function pushHistogram(out, name, labels, h) {
  if (h.count === 0) return; // an empty histogram exports nothing
  let cumulative = 0;
  for (let i = 0; i < h.bounds.length; i++) {
    cumulative += h.counts[i];
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: h.bounds[i] }, value: cumulative });
  }
  out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: h.count });
  out.push({ metricName: `${name}_sum`, labels, value: h.sum });
  out.push({ metricName: `${name}_count`, labels, value: h.count });
}

/**
 * The Prometheus exporter: the catalog in a prom-client registry (the app's own when given, then
 * no server is opened), else served at /metrics on the agent's endpoint (lib/server.js, an
 * unref'd server on UVSCOPE_PROMETHEUS_HOST:PORT, which also serves /snapshot.json).
 * @param {import('../../lib/exporters').ExporterContext} context
 * @returns {{ name: string, registry: object, server: import('http').Server|null, ready: Promise<{host: string, port: number}|null>, close(): Promise<void> }}
 */
function createExporter(context) {
  const { Registry } = require('prom-client');
  const { registry: given } = context.options.prometheus;
  const registry = given || new Registry();
  const registered = [];
  for (const def of CATALOG) {
    const m = new SnapshotMetric(def, context.latest);
    try {
      registry.registerMetric(m);
      registered.push(m);
    } catch (err) {
      countError('exporter:prometheus');
      warnOnce(WARNINGS.METRIC_CONFLICT, `uvscope: the registry already has a metric named ${m.name}; uvscope's is left out (${err.message})`, m.name);
    }
  }

  const endpoint = given ? null : context.server;
  if (endpoint) endpoint.route('/metrics', (req, res) => serveMetrics(registry, req, res), 'metrics');

  return {
    name: 'prometheus',
    registry,
    server: endpoint ? endpoint.server : null,
    ready: endpoint ? endpoint.ready : Promise.resolve(null),
    async close() {
      for (const m of registered) {
        if (registry.getSingleMetric(m.name) === m) registry.removeSingleMetric(m.name);
      }
    },
  };
}

function serveMetrics(registry, req, res) {
  return registry.metrics().then(
    (body) => sendBody(req, res, registry.contentType, body),
    (err) => {
      reportError('exporter:prometheus', err);
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('uvscope: collecting metrics failed\n');
    },
  );
}

module.exports = { createExporter, prometheusName };
