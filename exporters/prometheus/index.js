'use strict';

const { CATALOG, shortName } = require('../../lib/snapshot/catalog');
const { warnOnce, countError, reportError } = require('../../lib/core/errors');
const { injectFault } = require('../../lib/core/faults');
const { WARNINGS } = require('../../lib/core/warnings');

// prom-client's Registry.PROMETHEUS_CONTENT_TYPE: the text format 0.0.4.
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const UNIT_SUFFIX = Object.freeze({ s: 'seconds', By: 'bytes' });

/**
 * The Prometheus name of a catalog metric: dots to underscores, then the unit ('s' -> _seconds),
 * then _total for counters.
 * @param {import('../../lib/snapshot/catalog').MetricDef} def
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
    injectFault('export:prometheus');
    const snapshot = this.latest();
    if (!snapshot) return [];
    const out = [];
    for (const p of snapshot.points) {
      if (p.name !== this.def.name) continue;
      const labels = {};
      for (const [k, v] of Object.entries(p.attributes)) labels[shortName(k)] = v;
      if (!p.histogram) {
        out.push({ labels, value: p.value });
        continue;
      }
      const name = this.name;
      histogramLines(p.histogram, (suffix, le, value) => {
        out.push({ metricName: name + suffix, labels: le === null ? labels : { ...labels, le }, value });
      });
    }
    return out;
  }

  reset() {}
}

/**
 * The text exposition of the catalog for the given sources, the same text prom-client's
 * Registry#metrics() writes for the SnapshotMetrics, built without an object per bucket line
 * (its cost against the registry's: bench/multiprocess.js).
 * @param {{ attributes: Record<string, string>, snapshot: { points: readonly object[] } }[]} sources
 * @returns {string}
 */
function renderText(sources) {
  return [...textPieces(sources)].join('');
}

/**
 * renderText written to a response in pieces of about 64 KiB, giving the event loop back every
 * sliceMs: a holder serving many processes with many hostnames writes megabytes per scrape, and
 * it may be a process serving the app's traffic.
 * @param {{ attributes: Record<string, string>, snapshot: { points: readonly object[] } }[]} sources
 * @param {(chunk: string) => void} write
 * @param {number} [sliceMs]
 * @returns {Promise<void>}
 */
async function writeTextSliced(sources, write, sliceMs = 5) {
  let since = process.hrtime.bigint();
  let chunk = '';
  let pieces = 0;
  for (const piece of textPieces(sources)) {
    chunk += piece;
    if (chunk.length >= 65536) {
      write(chunk);
      chunk = '';
    }
    if (++pieces % 16 === 0 && Number(process.hrtime.bigint() - since) / 1e6 > sliceMs) {
      await new Promise((resolve) => setImmediate(resolve));
      since = process.hrtime.bigint();
    }
  }
  if (chunk) write(chunk);
}

function* textPieces(sources) {
  const byName = new Map();
  for (const { attributes, snapshot } of sources) {
    const extra = labelText(attributes);
    for (const p of snapshot.points) {
      let list = byName.get(p.name);
      if (!list) byName.set(p.name, (list = []));
      list.push({ p, extra });
    }
  }
  let first = true;
  for (const def of CATALOG) {
    const { name, header } = headerOf(def);
    yield first ? header.slice(2) : header;
    first = false;
    for (const { p, extra } of byName.get(def.name) || []) {
      const labels = (labelText(p.attributes) + extra).slice(1);
      if (!p.histogram) {
        yield `\n${name}${labels ? `{${labels}}` : ''} ${valueString(p.value)}`;
        continue;
      }
      const bucket = `\n${name}_bucket{${labels ? `${labels},` : ''}le="`;
      const braces = labels ? `{${labels}}` : '';
      let text = '';
      histogramLines(p.histogram, (suffix, le, value) => {
        text += le === null ? `\n${name}${suffix}${braces} ${valueString(value)}` : `${bucket}${le}"} ${valueString(value)}`;
      });
      if (text) yield text;
    }
  }
  yield '\n';
}

// Each catalog metric's name and HELP/TYPE lines (after a blank line), made at the first render:
// the same text at every scrape, and the help texts are most of the metrics text's length.
/** @type {Map<object, { name: string, header: string }>} */
const headers = new Map();

function headerOf(def) {
  let h = headers.get(def);
  if (h === undefined) {
    const name = prometheusName(def);
    headers.set(def, (h = { name, header: `\n\n# HELP ${name} ${escapeString(def.help)}\n# TYPE ${name} ${def.type}` }));
  }
  return h;
}

// A point's attributes as label text (',k="v"' each), kept for frozen attributes objects: the
// samplers hand out the same frozen object for a series at every sample.
/** @type {WeakMap<object, string>} */
const labelTexts = new WeakMap();

function labelText(attributes) {
  let text = labelTexts.get(attributes);
  if (text !== undefined) return text;
  text = '';
  for (const k in attributes) {
    if (Object.prototype.hasOwnProperty.call(attributes, k)) text += `,${shortName(k)}="${escapeLabelValue(attributes[k])}"`;
  }
  if (Object.isFrozen(attributes)) labelTexts.set(attributes, text);
  return text;
}

// As prom-client writes them (lib/registry.js, lib/util.js).
function escapeString(str) {
  return str.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabelValue(str) {
  return typeof str === 'string' ? escapeString(str).replace(/"/g, '\\"') : str;
}

function valueString(value) {
  if (Number.isNaN(value)) return 'Nan';
  if (!Number.isFinite(value)) return value < 0 ? '-Inf' : '+Inf';
  return `${value}`;
}

/**
 * A histogram's lines as Prometheus has them, for both the registry's values and the text: each
 * bucket with its cumulative count (`_bucket`, le its bound, then '+Inf'), then `_sum` and
 * `_count` (le null). An empty histogram has none: it exports nothing.
 * @param {import('../../lib/core/histogram').HistogramSnapshot} h
 * @param {(suffix: string, le: number | string | null, value: number) => void} line
 */
function histogramLines(h, line) {
  if (h.count === 0) return;
  let cumulative = 0;
  for (let i = 0; i < h.bounds.length; i++) {
    cumulative += h.counts[i];
    line('_bucket', h.bounds[i], cumulative);
  }
  line('_bucket', '+Inf', h.count);
  line('_sum', null, h.sum);
  line('_count', null, h.count);
}

/**
 * The Prometheus exporter: the catalog in a prom-client registry (the app's own when given, then
 * no server is opened), else served at /metrics on the agent's endpoint (lib/endpoint/server.js, an
 * unref'd server on UVSCOPE_PROMETHEUS_HOST:PORT, which also serves /snapshot.json).
 * @param {import('../index').ExporterContext} context
 * @returns {{ name: string, registry: object, server: import('http').Server|null, ready: Promise<{host: string, port: number}|null>, close(): Promise<void> }}
 */
function createExporter(context) {
  const { registry: given } = context.options.prometheus;
  const registered = [];
  const registerInto = (registry) => {
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
    return registry;
  };
  let registry = given ? registerInto(given) : null;

  const endpoint = given ? null : context.server;
  if (endpoint) endpoint.route('/metrics', (req, res) => serveMetrics(endpoint, context.latest, CONTENT_TYPE, req, res), 'metrics');

  return {
    name: 'prometheus',
    /**
     * The app's registry, or a prom-client registry of uvscope's own made on first use: the
     * endpoint writes the exposition itself, so prom-client (about 50 ms to load, on the app's
     * first tick) is loaded only for the app's registry or when someone asks for this one.
     */
    get registry() {
      if (!registry) registry = registerInto(new (require('prom-client').Registry)());
      return registry;
    },
    server: endpoint ? endpoint.server : null,
    ready: endpoint ? endpoint.ready : Promise.resolve(null),
    async close() {
      if (!registry) return;
      for (const m of registered) {
        if (registry.getSingleMetric(m.name) === m) registry.removeSingleMetric(m.name);
      }
    },
  };
}

// The agent's endpoint writes the text itself, for every process it serves (lib/endpoint/multiprocess/):
// the same text as the registry's, without an object per bucket line.
function serveMetrics(endpoint, latest, contentType, req, res) {
  let sources;
  try {
    injectFault('export:prometheus');
    sources = endpoint.sources(latest());
  } catch (err) {
    reportError('exporter:prometheus', err);
    res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('uvscope: collecting metrics failed\n');
    return undefined;
  }
  res.writeHead(200, { 'Content-Type': contentType });
  if (req.method === 'HEAD') {
    res.end();
    return undefined;
  }
  return writeTextSliced(sources, (chunk) => res.write(chunk)).then(
    () => res.end(),
    (err) => {
      reportError('exporter:prometheus', err);
      res.destroy(); // the status line is out: a cut-off body tells the scraper
    },
  );
}

module.exports = { createExporter, prometheusName, renderText };
