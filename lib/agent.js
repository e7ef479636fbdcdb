'use strict';

const { countTypes } = require('./samplers/resources');
const { SAMPLERS } = require('./samplers');
const { createExporter } = require('./exporters');
const { createOwnIo } = require('./own-io');
const { createAgentServer, endpointFor, sendBody } = require('./server');
const channels = require('./channels');
const { reportError, errorCountsSnapshot } = require('./report');
const { readResolverConfig } = require('./resolver');
const { createFindingsEngine } = require('./findings');
const { formatReport } = require('./format-report');
const { createHistory } = require('./page');

// resolv.conf and /etc/hosts are re-read this often (tiny files, read synchronously).
const RESOLVER_REFRESH_MS = 60000;

const NO_STORE = Object.freeze({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });

/**
 * The agent owns time: one unref'd interval timer calls every sampler (each isolated), builds one
 * frozen snapshot and keeps it as `latest`. Push exporters get export(snapshot); pull exporters
 * read `latest`.
 */
class Agent {
  /** @param {Readonly<object>} options resolved options (lib/options.js) */
  constructor(options) {
    this.options = options;
    /** @type {import('./snapshot').Snapshot | null} */
    this.latest = null;
    /** @type {import('./samplers').Sampler[]} */
    this.samplers = [];
    /** @type {import('./exporters').Exporter[]} */
    this.exporters = [];
    this.timer = null;
    this.closed = false;
    this.resolver = null;
    this.resolverReadAt = 0;
    this.ownIo = createOwnIo();
    /** @type {import('./server').AgentServer | null} */
    this.server = null;
    this.history = createHistory();
    this.findings = createFindingsEngine({ intervalMs: options.intervalMs, startTime: Date.now() });
  }

  /** Create samplers and exporters and start the timer. Never throws. */
  start() {
    this.#refreshResolver(Date.now());
    /** @type {import('./samplers').SamplerContext} */
    const samplerContext = { options: this.options, ownIo: this.ownIo, resolver: () => this.resolver };
    for (const { name, create } of SAMPLERS) {
      const sampler = this.#safely(`sampler:${name}`, () => create(samplerContext));
      if (sampler) this.samplers.push(sampler);
    }
    this.server = this.#safely('server', () => this.#createServer());
    const context = this.#exporterContext();
    for (const name of this.options.exporters) {
      const exporter = this.#safely(`exporter:${name}`, () => createExporter(name, context));
      if (exporter) this.exporters.push(exporter);
    }
    this.timer = setInterval(() => this.sampleNow(), this.options.intervalMs);
    this.timer.unref();
    if (this.options.reportOnExit) {
      const target = this.options.reportOnExit;
      this.onExit = () => this.#safely('report', () => {
        const snapshot = this.sampleNow();
        if (target === true) process.stderr.write(formatReport(snapshot));
        else require('fs').writeFileSync(target, require('./page').staticReport({ snapshot: { pid: process.pid, ...snapshot }, history: this.history.list() }));
      });
      process.on('exit', this.onExit);
    }
    return this;
  }

  /**
   * Take one sample now: call every sampler, build and keep a frozen snapshot, hand it to push
   * exporters. Exposed for tests and benchmarks.
   * @returns {import('./snapshot').Snapshot}
   */
  sampleNow() {
    const tick = { resources: this.#countResources() };
    const points = this.#samplePoints(tick);
    const time = Date.now();
    const details = this.#collectDetails();
    this.#endIntervals();
    this.#refreshResolver(time);
    if (this.resolver) details.resolver = resolverDetails(this.resolver);
    const findings = this.#evaluateFindings(time, points, details);
    points.push(...errorPoints());
    const snapshot = deepFreeze({ time, intervalMs: this.options.intervalMs, points, details, findings });
    this.latest = snapshot;
    this.#safely('page', () => this.history.add(snapshot));
    this.#exportAll(snapshot);
    return snapshot;
  }

  /** Stop the timer, restore what was wrapped, close exporters. Never rejects. */
  async stop() {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    if (this.onExit) process.off('exit', this.onExit);
    for (const s of this.samplers) this.#safely(`sampler:${s.name}`, () => s.close());
    await Promise.all([
      ...this.exporters.map(async (e) => {
        try {
          await e.close();
        } catch (err) {
          reportError(`exporter:${e.name}`, err);
        }
      }),
      this.server && this.server.close(),
    ]);
  }

  /** The agent's narrow face for exporters (lib/exporters.js ExporterContext). */
  #exporterContext() {
    return Object.freeze({
      options: this.options,
      latest: () => this.latest,
      sampleNow: () => this.sampleNow(),
      channels,
      ownLookup: this.ownIo.lookup,
      ownAgent: this.ownIo.createAgent,
      server: this.server,
    });
  }

  /**
   * The agent's HTTP endpoint (lib/server.js) with the snapshot, the page and its history on it;
   * exporters add theirs (/metrics). A route is one line.
   */
  #createServer() {
    const endpoint = endpointFor(this.options);
    if (!endpoint) return null;
    const server = createAgentServer(endpoint);
    // The latest snapshot with its findings (uvscope report reads this).
    server.route('/snapshot.json', (req, res) => sendBody(req, res, 'application/json', JSON.stringify(this.latest ? { pid: process.pid, ...this.latest } : null)), 'findings');
    // The page (lib/page) and the compact history its charts start from.
    server.route('/', (req, res) => sendBody(req, res, 'text/html; charset=utf-8', require('./page').pageHtml(), NO_STORE), 'the page');
    server.route('/history.json', (req, res) => sendBody(req, res, 'application/json', JSON.stringify(this.history.list()), NO_STORE));
    return server;
  }

  /** process.getActiveResourcesInfo() counted by type, once for every sampler. */
  #countResources() {
    try {
      if (typeof process.getActiveResourcesInfo === 'function') return countTypes(process.getActiveResourcesInfo());
    } catch (err) {
      reportError('sampler:resources', err);
    }
    return new Map();
  }

  /** Every sampler's points, frozen, in sampler order; a failing sampler is counted and skipped. */
  #samplePoints(tick) {
    const points = [];
    for (const sampler of this.samplers) {
      try {
        for (const p of sampler.sample(tick)) points.push(Object.freeze({ ...p, attributes: Object.freeze(p.attributes) }));
      } catch (err) {
        reportError(`sampler:${sampler.name}`, err);
      }
    }
    return points;
  }

  /** @returns {import('./snapshot').SnapshotDetails} every sampler's details() by sampler name */
  #collectDetails() {
    const details = {};
    for (const sampler of this.samplers) {
      if (typeof sampler.details !== 'function') continue;
      try {
        details[sampler.name] = sampler.details();
      } catch (err) {
        reportError(`sampler:${sampler.name}`, err);
      }
    }
    return details;
  }

  /** The interval boundary: every sampler with interval figures starts a new interval. */
  #endIntervals() {
    for (const sampler of this.samplers) {
      if (typeof sampler.endInterval !== 'function') continue;
      try {
        sampler.endInterval();
      } catch (err) {
        reportError(`sampler:${sampler.name}`, err);
      }
    }
  }

  #evaluateFindings(time, points, details) {
    try {
      return this.findings.evaluate({ time, points, details });
    } catch (err) {
      reportError('findings', err);
      return [];
    }
  }

  #exportAll(snapshot) {
    for (const exporter of this.exporters) {
      if (typeof exporter.export !== 'function') continue;
      try {
        exporter.export(snapshot);
      } catch (err) {
        reportError(`exporter:${exporter.name}`, err);
      }
    }
  }

  #refreshResolver(now) {
    if (this.resolver && now - this.resolverReadAt < RESOLVER_REFRESH_MS) return;
    this.resolverReadAt = now;
    try {
      this.resolver = readResolverConfig();
    } catch (err) {
      reportError('resolver', err);
    }
  }

  #safely(component, fn) {
    try {
      return fn();
    } catch (err) {
      reportError(component, err);
      return null;
    }
  }
}

/** @returns {import('./snapshot').ResolverDetails} */
function resolverDetails(resolver) {
  const { hosts, ...conf } = resolver;
  return { ...conf, hostsNames: [...hosts].slice(0, 1000) };
}

/** uvscope.errors: failures inside uvscope so far, by component. */
function errorPoints() {
  const out = [];
  for (const [component, value] of errorCountsSnapshot()) {
    out.push(Object.freeze({ name: 'uvscope.errors', attributes: Object.freeze({ 'uvscope.component': component }), value }));
  }
  return out;
}

function deepFreeze(value) {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

module.exports = { Agent };
