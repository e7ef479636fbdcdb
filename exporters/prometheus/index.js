'use strict';

const http = require('http');
const { CATALOG, shortName } = require('../../lib/metrics');
const { warnOnce, countError, reportError } = require('../../lib/report');
const { createMultiprocess } = require('../../lib/multiprocess');

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
  constructor(def, sources) {
    this.def = def;
    this.sources = sources;
    this.name = prometheusName(def);
    this.help = def.help;
    this.type = def.type;
    this.aggregator = 'sum';
  }

  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() };
  }

  values() {
    const out = [];
    // One source per process served here (lib/multiprocess.js); only this one's when alone.
    for (const { attributes, snapshot } of this.sources()) {
      for (const p of snapshot.points) {
        if (p.name !== this.def.name) continue;
        const labels = {};
        for (const [k, v] of Object.entries(p.attributes)) labels[shortName(k)] = v;
        for (const [k, v] of Object.entries(attributes)) labels[shortName(k)] = v;
        if (p.histogram) pushHistogram(out, this.name, labels, p.histogram);
        else out.push({ labels, value: p.value });
      }
    }
    return out;
  }

  reset() {}
}

/**
 * The text exposition of the catalog for the given sources, the same text prom-client's
 * Registry#metrics() writes for the SnapshotMetrics, built without an object per bucket line
 * (bench/multiprocess.js: about a fifth of the registry's time at 8 MiB of text).
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
    let extra = '';
    for (const [k, v] of Object.entries(attributes)) extra += `,${shortName(k)}="${escapeLabelValue(v)}"`;
    for (const p of snapshot.points) {
      let list = byName.get(p.name);
      if (!list) byName.set(p.name, (list = []));
      list.push({ p, extra });
    }
  }
  let first = true;
  for (const def of CATALOG) {
    const name = prometheusName(def);
    yield `${first ? '' : '\n\n'}# HELP ${name} ${escapeString(def.help)}\n# TYPE ${name} ${def.type}`;
    first = false;
    for (const { p, extra } of byName.get(def.name) || []) {
      let labels = '';
      for (const [k, v] of Object.entries(p.attributes)) labels += `,${shortName(k)}="${escapeLabelValue(v)}"`;
      labels = (labels + extra).slice(1);
      if (!p.histogram) {
        yield `\n${name}${labels ? `{${labels}}` : ''} ${valueString(p.value)}`;
        continue;
      }
      const h = p.histogram;
      if (h.count === 0) continue;
      const prefix = `\n${name}_bucket{${labels ? `${labels},` : ''}le="`;
      let text = '';
      let cumulative = 0;
      for (let i = 0; i < h.bounds.length; i++) {
        cumulative += h.counts[i];
        text += `${prefix}${h.bounds[i]}"} ${valueString(cumulative)}`;
      }
      const braces = labels ? `{${labels}}` : '';
      yield `${text}${prefix}+Inf"} ${valueString(h.count)}\n${name}_sum${braces} ${valueString(h.sum)}\n${name}_count${braces} ${valueString(h.count)}`;
    }
  }
  yield '\n';
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
  let multiprocess = null;
  const sources = () => {
    if (multiprocess) return multiprocess.sources(agent.latest);
    return agent.latest ? [{ attributes: {}, snapshot: agent.latest }] : [];
  };
  for (const def of CATALOG) {
    const m = new SnapshotMetric(def, sources);
    try {
      registry.registerMetric(m);
      registered.push(m);
    } catch (err) {
      countError('exporter:prometheus');
      warnOnce('UVSCOPE_METRIC_CONFLICT', `uvscope: the registry already has a metric named ${m.name}; uvscope's is left out (${err.message})`, m.name);
    }
  }

  let server = null;
  let ready = Promise.resolve(null);
  let onBeforeExit = null;
  let closed = false;
  if (!given) {
    const { aggregate, maxProcesses, processTtlMs } = agent.options.prometheus;
    const dnsSampler = agent.samplers.find((s) => s.name === 'dns');
    multiprocess = createMultiprocess({
      host, port, intervalMs: agent.options.intervalMs, aggregate, maxProcesses, ttlMs: processTtlMs,
      lookup: dnsSampler && dnsSampler.originalLookup,
      // A fresh server per attempt: the first bind, and each takeover after the holder is gone.
      listen: async () => {
        const candidate = createServer(registry, agent, multiprocess);
        const err = await listen(candidate, host, port);
        if (err) return err;
        if (closed) {
          candidate.close();
          return new Error('closed');
        }
        server = candidate;
        return null;
      },
      onListenFailed: (err) => warnListenFailed(err, host, port),
    });
    ready = multiprocess.start().then(() => {
      if (!server) return null;
      const a = server.address();
      return { host: a.address, port: a.port };
    });
    // A member's last figures reach the holder when the app ends on its own (bounded to 1 s).
    onBeforeExit = () => {
      process.off('beforeExit', onBeforeExit);
      if (multiprocess.role === 'member') multiprocess.finalPush(() => agent.sampleNow());
    };
    process.on('beforeExit', onBeforeExit);
  }

  return {
    name: 'prometheus',
    registry,
    get server() {
      return server;
    },
    ready,
    multiprocess,
    /** A member pushes each snapshot to the process that holds the port. */
    export(snapshot) {
      if (multiprocess) multiprocess.export(snapshot);
    },
    async close() {
      for (const m of registered) {
        if (registry.getSingleMetric(m.name) === m) registry.removeSingleMetric(m.name);
      }
      closed = true;
      if (onBeforeExit) process.off('beforeExit', onBeforeExit);
      if (multiprocess) multiprocess.close();
      if (server) {
        await new Promise((resolve) => {
          server.close(() => resolve());
          if (typeof server.closeAllConnections === 'function') server.closeAllConnections();
        });
      }
    },
  };
}

function createServer(registry, agent, multiprocess) {
  const server = http.createServer((req, res) => {
    const path = (req.url || '/').split('?')[0];
    if (multiprocess.handle(req, res)) return; // another process's push
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/snapshot.json') {
      // The latest snapshot with its findings (uvscope report reads this).
      // With other processes pushing here, theirs follow under processes (points and findings).
      let others = [];
      try {
        others = multiprocess.others();
      } catch (err) {
        reportError('multiprocess', err);
      }
      const own = agent.latest ? { pid: process.pid, ...agent.latest } : null;
      const body = JSON.stringify(others.length === 0 ? own : { ...own, processes: others });
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
    res.writeHead(200, { 'Content-Type': registry.contentType });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    Promise.resolve().then(() => writeTextSliced(multiprocess.sources(agent.latest), (chunk) => res.write(chunk))).then(
      () => res.end(),
      (err) => {
        reportError('exporter:prometheus', err);
        res.destroy(); // the status line is out: a cut-off body is how the scraper learns
      },
    );
  });
  // A scraper's keep-alive connection must not keep the app alive.
  server.on('connection', (socket) => socket.unref());
  return server;
}

function listen(server, host, port) {
  return new Promise((resolve) => {
    server.once('error', (err) => resolve(err));
    // exclusive: a node:cluster worker binds the port itself, so two workers never share it
    // round-robin (each scrape would then see one worker); the second gets EADDRINUSE and joins.
    server.listen({ port, host, exclusive: true }, () => resolve(null));
    server.unref();
  });
}

function warnListenFailed(err, host, port) {
  countError('exporter:prometheus');
  const hint = err.code === 'EADDRINUSE'
    ? `the port is in use; set UVSCOPE_PROMETHEUS_PORT to a free port (0 picks one)`
    : 'check UVSCOPE_PROMETHEUS_HOST and UVSCOPE_PROMETHEUS_PORT';
  warnOnce('UVSCOPE_LISTEN_FAILED', `uvscope: cannot serve Prometheus metrics on ${host}:${port} (${err.code || err.message}): ${hint}. The app goes on without this endpoint.`);
}

module.exports = { createExporter, prometheusName, renderText, writeTextSliced };
