'use strict';

const { SAMPLERS } = require('../sources');
const { createExporter, startEarly } = require('../../exporters');
const { createOwnIo } = require('../core/own-io');
const channels = require('../core/channels');
const { reportError, errorCountsSnapshot } = require('../core/errors');
const { injectFault } = require('../core/faults');

// Loaded when the agent's second phase starts (see start()), off the app's startup path.
const lazy = {
  get countTypes() { return require('../sources/resources').countTypes; },
  get server() { return require('../endpoint/server'); },
  get resolver() { return require('../sources/dns/resolver'); },
  get findings() { return require('../findings/engine'); },
  get formatReport() { return require('../report/text').formatReport; },
  get page() { return require('../report/page'); },
};

// resolv.conf and /etc/hosts are re-read this often (tiny files, read synchronously).
const RESOLVER_REFRESH_MS = 60000;

const NO_STORE = Object.freeze({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });

/**
 * The agent owns time: one unref'd interval timer calls every sampler (each isolated), builds one
 * frozen snapshot and keeps it as `latest`. Push exporters get export(snapshot); pull exporters
 * read `latest`.
 */
class Agent {
  /** @param {Readonly<object>} options resolved options (lib/agent/options.js) */
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
    this.history = null; // the page's recent samples (lib/report/page), from the second phase
    this.findings = null; // from the second phase
    this.early = null; // what the first phase made, until the second phase adopts it
    this.deferred = null; // the timer that starts the second phase
  }

  /**
   * Start in two phases. The first does what must precede the app's first line: the early
   * samplers (wrap dns.lookup, subscribe to the connection channels) and the exporters' early
   * work (exporters/index.js EARLY), all cheap. The second creates the endpoint, the exporters
   * (prom-client, hot-shots, the OpenTelemetry SDK load there) and the other samplers; the
   * sampling timer starts with the first. With `defer` (the preload) the second phase runs on the
   * first timer tick, after the app's top-level code, from an unref'd timer: a process that exits
   * before its loop turns never pays for it, and a long-running one gets its endpoint within a millisecond of its
   * loop starting. That tick comes before any I/O callback of the loop's first turn, so no lookup
   * the app's top-level code starts completes before the exporters listen for it. Never throws.
   * @param {{ defer?: boolean }} [how]
   */
  start({ defer = false } = {}) {
    /** @type {import('./samplers').SamplerContext} */
    const samplerContext = { options: this.options, ownIo: this.ownIo, resolver: () => this.resolver };
    const samplers = new Map();
    for (const { name, early, create } of SAMPLERS) {
      if (!(typeof early === 'function' ? early(this.options) : early)) continue;
      const sampler = this.#safely(`sampler:${name}`, () => {
        injectFault(`create:sampler:${name}`);
        return create(samplerContext);
      });
      if (sampler) samplers.set(name, sampler);
    }
    this.samplers = [...samplers.values()];
    const context = this.#exporterContext();
    const pre = new Map();
    for (const name of this.options.exporters) {
      this.#safely(`exporter:${name}`, () => pre.set(name, startEarly(name, context)));
    }
    this.early = { samplerContext, samplers, pre };
    if (this.options.reportOnExit) {
      const target = this.options.reportOnExit;
      this.onExit = () => this.#safely('report', () => {
        const snapshot = this.sampleNow();
        if (target === true) process.stderr.write(lazy.formatReport(snapshot));
        else require('fs').writeFileSync(target, lazy.page.staticReport({ snapshot: { pid: process.pid, ...snapshot }, history: this.history ? this.history.list() : [] }));
      });
      process.on('exit', this.onExit);
    }
    // The sampling timer starts now, so the first sample comes one interval after the preload
    // however long the second phase takes (loading prom-client on a busy machine: 100s of ms).
    this.timer = setInterval(() => this.sampleNow(), this.options.intervalMs);
    this.timer.unref();
    if (defer) {
      this.deferred = setTimeout(() => this.#startRest(), 0);
      this.deferred.unref();
    } else {
      this.#startRest();
    }
    injectFault('agent:start');
    return this;
  }

  /** The second phase (see start()); runs once. */
  #startRest() {
    if (this.early === null || this.closed) return;
    clearTimeout(this.deferred);
    this.deferred = null;
    const { samplerContext, samplers, pre } = this.early;
    this.early = null;
    this.history = this.#safely('page', () => lazy.page.createHistory());
    this.findings = this.#safely('findings', () => lazy.findings.createFindingsEngine({ intervalMs: this.options.intervalMs, startTime: Date.now() }));
    this.#refreshResolver(Date.now());
    this.server = this.#safely('server', () => this.#createServer());
    // Exporters before the other samplers: loading their libraries blocks the loop for tens of
    // ms, which the event-loop sampler must not take for the app's delay (its monitor starts after).
    const context = this.#exporterContext();
    for (const name of this.options.exporters) {
      const exporter = this.#safely(`exporter:${name}`, () => {
        injectFault(`create:exporter:${name}`);
        return createExporter(name, context, pre.get(name));
      });
      if (exporter) this.exporters.push(exporter);
      else if (pre.get(name)) this.#safely(`exporter:${name}`, () => pre.get(name).close());
    }
    const all = [];
    for (const { name, create } of SAMPLERS) {
      const sampler = samplers.has(name) ? samplers.get(name) : this.#safely(`sampler:${name}`, () => {
        injectFault(`create:sampler:${name}`);
        return create(samplerContext);
      });
      if (sampler) all.push(sampler);
    }
    this.samplers = all;
  }

  /**
   * Take one sample now: call every sampler, build and keep a frozen snapshot, hand it to push
   * exporters. Exposed for tests and benchmarks.
   * @returns {import('./snapshot').Snapshot}
   */
  sampleNow() {
    this.#startRest();
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
    if (this.history) this.#safely('page', () => this.history.add(snapshot));
    this.#exportAll(snapshot);
    return snapshot;
  }

  /** Stop the timer, restore what was wrapped, close exporters. Never rejects. */
  async stop() {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.deferred);
    clearInterval(this.timer);
    if (this.onExit) process.off('exit', this.onExit);
    for (const s of this.samplers) this.#safely(`sampler:${s.name}`, () => s.close());
    // Stopped before the second phase: undo the exporters' early work.
    if (this.early) for (const [name, pre] of this.early.pre) if (pre) this.#safely(`exporter:${name}`, () => pre.close());
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

  /** The agent's narrow face for exporters (exporters/index.js ExporterContext). */
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
   * The agent's HTTP endpoint (lib/endpoint/server.js) with the snapshot, the page and its history on it;
   * exporters add theirs (/metrics). A route is one line.
   */
  #createServer() {
    const { createAgentServer, endpointFor, sendBody } = lazy.server;
    const endpoint = endpointFor(this.options);
    if (!endpoint) return null;
    const multiprocess = { ...this.options.multiprocess, intervalMs: this.options.intervalMs, lookup: this.ownIo.lookup, sample: () => this.sampleNow() };
    const server = createAgentServer({ ...endpoint, multiprocess });
    // The latest snapshot with its findings (uvscope report reads this); other processes of the
    // app served here follow under processes (lib/endpoint/multiprocess.js).
    server.route('/snapshot.json', (req, res) => {
      const own = this.latest ? { pid: process.pid, ...this.latest } : null;
      const others = server.others();
      sendBody(req, res, 'application/json', JSON.stringify(others.length === 0 ? own : { ...own, processes: others }));
    }, 'findings');
    // The page (lib/report/page) and the compact history its charts start from.
    server.route('/', (req, res) => sendBody(req, res, 'text/html; charset=utf-8', lazy.page.pageHtml(), NO_STORE), 'the page');
    server.route('/history.json', (req, res) => sendBody(req, res, 'application/json', JSON.stringify(this.history ? this.history.list() : []), NO_STORE));
    return server;
  }

  /** process.getActiveResourcesInfo() counted by type, once for every sampler. */
  #countResources() {
    try {
      if (typeof process.getActiveResourcesInfo === 'function') return lazy.countTypes(process.getActiveResourcesInfo());
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
        injectFault(`sample:${sampler.name}`);
        // Samplers return fresh points: frozen in place rather than copied (fewer objects per sample).
        // An index loop: once a second this runs in V8's interpreter, where for...of makes an
        // iterator result per point (one per kept hostname and series).
        const own = sampler.sample(tick);
        for (let i = 0; i < own.length; i++) {
          const p = own[i];
          if (Object.isExtensible(p)) {
            Object.freeze(p.attributes);
            Object.freeze(p);
          }
          points.push(p);
        }
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
        injectFault(`details:${sampler.name}`);
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
      injectFault('findings');
      return this.findings ? this.findings.evaluate({ time, points, details }) : [];
    } catch (err) {
      reportError('findings', err);
      return [];
    }
  }

  #exportAll(snapshot) {
    // A process that does not hold the endpoint's port sends its snapshot to the one that does.
    if (this.server) this.#safely('multiprocess', () => this.server.export(snapshot));
    for (const exporter of this.exporters) {
      if (typeof exporter.export !== 'function') continue;
      try {
        injectFault(`export:${exporter.name}`);
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
      this.resolver = lazy.resolver.readResolverConfig();
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

// for...in rather than Object.values(): no array per object (a snapshot holds thousands of
// objects with many hostnames, and this runs every sample); arrays by index, since for...in over
// an array makes a string per index. Objects that are not extensible are skipped whole: frozen ones
// handed out again, and the live ones a sampler updates in place at each sample (sealed: the DNS
// sampler's per-hostname details and histogram views, lib/snapshot/snapshot.js).
function deepFreeze(value) {
  if (value && typeof value === 'object' && Object.isExtensible(value)) {
    Object.freeze(value);
    if (Array.isArray(value)) for (let i = 0; i < value.length; i++) deepFreeze(value[i]);
    else for (const k in value) deepFreeze(value[k]);
  }
  return value;
}

module.exports = { Agent };
