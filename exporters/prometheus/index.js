'use strict';

const http = require('http');
const { CATALOG, shortName } = require('../../lib/metrics');
const { warnOnce, countError, reportError } = require('../../lib/report');
const { WARNINGS } = require('../../lib/warnings');

const UNIT_SUFFIX = Object.freeze({ s: 'seconds', By: 'bytes' });

/**
 * The Prometheus name of a catalog metric: dots to underscores, then the unit ('s' -> _seconds),
 * then _total for counters.
 * @param {import('../lib/metrics').MetricDef} def
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
  constructor(def, agent) {
    this.def = def;
    this.agent = agent;
    this.name = prometheusName(def);
    this.help = def.help;
    this.type = def.type;
    this.aggregator = 'sum';
  }

  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() };
  }

  values() {
    const snapshot = this.agent.latest;
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
 * no server is opened), else served on http://host:port/metrics by an unref'd server, which also
 * serves the latest snapshot and its findings as JSON at /snapshot.json.
 * @param {import('../lib/agent').Agent} agent
 * @returns {{ name: string, registry: object, ready: Promise<{host: string, port: number}|null>, close(): Promise<void> }}
 */
function createExporter(agent) {
  const { Registry } = require('prom-client');
  const { host, port, registry: given } = agent.options.prometheus;
  const registry = given || new Registry();
  const registered = [];
  for (const def of CATALOG) {
    const m = new SnapshotMetric(def, agent);
    try {
      registry.registerMetric(m);
      registered.push(m);
    } catch (err) {
      countError('exporter:prometheus');
      warnOnce(WARNINGS.METRIC_CONFLICT, `uvscope: the registry already has a metric named ${m.name}; uvscope's is left out (${err.message})`, m.name);
    }
  }

  let server = null;
  let ready = Promise.resolve(null);
  if (!given) {
    server = createServer(registry, agent);
    ready = listen(server, host, port);
  }

  return {
    name: 'prometheus',
    registry,
    server,
    ready,
    async close() {
      for (const m of registered) {
        if (registry.getSingleMetric(m.name) === m) registry.removeSingleMetric(m.name);
      }
      if (server) {
        await new Promise((resolve) => {
          server.close(() => resolve());
          if (typeof server.closeAllConnections === 'function') server.closeAllConnections();
        });
      }
    },
  };
}

function createServer(registry, agent) {
  const server = http.createServer((req, res) => {
    const path = (req.url || '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/snapshot.json') {
      // The latest snapshot with its findings (uvscope report reads this).
      const body = JSON.stringify(agent.latest ? { pid: process.pid, ...agent.latest } : null);
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (path === '/' || path === '/history.json') {
      // The page (lib/page) and the compact history its charts start from.
      const page = require('../../lib/page');
      const html = path === '/';
      const body = html ? page.pageHtml() : JSON.stringify(agent.history ? agent.history.list() : []);
      res.writeHead(200, {
        'Content-Type': html ? 'text/html; charset=utf-8' : 'application/json',
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
      }).end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('uvscope: metrics are at /metrics, findings at /snapshot.json, the page at /\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(req.method === 'HEAD' ? undefined : body),
      (err) => {
        reportError('exporter:prometheus', err);
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('uvscope: collecting metrics failed\n');
      },
    );
  });
  // A scraper's keep-alive connection must not keep the app alive.
  server.on('connection', (socket) => socket.unref());
  return server;
}

function listen(server, host, port) {
  return new Promise((resolve) => {
    server.once('error', (err) => {
      countError('exporter:prometheus');
      const hint = err.code === 'EADDRINUSE'
        ? `the port is in use; set UVSCOPE_PROMETHEUS_PORT to a free port (0 picks one)`
        : 'check UVSCOPE_PROMETHEUS_HOST and UVSCOPE_PROMETHEUS_PORT';
      warnOnce(WARNINGS.LISTEN_FAILED, `uvscope: cannot serve Prometheus metrics on ${host}:${port} (${err.code || err.message}): ${hint}. The app goes on without this endpoint.`);
      resolve(null);
    });
    server.listen(port, host, () => {
      const a = server.address();
      resolve({ host: a.address, port: a.port });
    });
    server.unref();
  });
}

module.exports = { createExporter, prometheusName };
