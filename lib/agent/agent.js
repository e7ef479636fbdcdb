'use strict';

// The agent owns time: one unref'd interval timer, two-phase start, stop. What one sample does
// is in sampling.js, the resolver's configuration in resolver.js, the endpoint's routes in
// lib/endpoint/routes.js and the exit report in lib/report/exit.js.

const { SOURCES } = require('../sources');
const { createExporter } = require('../../exporters');
const { createOwnIo } = require('../core/own-io');
const channels = require('../core/channels');
const { startSpanContext } = require('./spans');
const { reportError } = require('../core/errors');
const { injectFault, checkQuietOn } = require('../core/faults');

// Loaded when the agent's second phase starts (see start()), off the app's startup path.
const lazy = {
  get sampling() { return require('./sampling'); },
  get resolver() { return require('./resolver'); },
  get server() { return require('../endpoint/server'); },
  get routes() { return require('../endpoint/routes'); },
  get findings() { return require('../findings/engine'); },
  get page() { return require('../report/page'); },
  get exitReport() { return require('../report/exit'); },
};

/**
 * The agent owns time: one unref'd interval timer calls every sampler (each isolated), builds one
 * frozen snapshot and keeps it as `latest`. Push exporters get export(snapshot); pull exporters
 * read `latest`.
 */
class Agent {
  #options;
  /** @type {import('../snapshot/snapshot').Snapshot | null} */
  #latest = null;
  /** @type {import('../sources').Sampler[]} */
  #samplers = [];
  /** @type {import('../../exporters').Exporter[]} */
  #exporters = [];
  /** @type {NodeJS.Timeout | null} */
  #timer = null;
  #closed = false;
  /** @type {import('./resolver').ResolverReader | null} made in the second phase */
  #resolver = null;
  #ownIo = createOwnIo();
  /** @type {import('../endpoint/server').AgentServer | null} */
  #server = null;
  /** @type {any} the page's recent samples (lib/report/page), from the second phase */
  #history = null;
  /** @type {any} the findings engine, from the second phase */
  #findings = null;
  /** @type {ReturnType<typeof startSpanContext> | null} uvscope's context on the app's dns.lookup spans */
  #spans = null;
  /** @type {{ samplerContext: object, samplers: Map<string, any> } | null} what the first phase made, until the second phase adopts it */
  #early = null;
  /** @type {NodeJS.Timeout | null} the timer that starts the second phase */
  #deferred = null;
  /** @type {(() => void) | null} */
  #onExit = null;

  /** @param {Readonly<object>} options resolved options (lib/agent/options.js) */
  constructor(options) {
    this.#options = options;
  }

  /** @returns {Readonly<any>} the resolved options */
  get options() {
    return this.#options;
  }

  /** @returns {import('../snapshot/snapshot').Snapshot | null} the last snapshot, or null before the first sample */
  get latest() {
    return this.#latest;
  }

  /** @returns {import('../sources').Sampler[]} the running samplers, in sampling order (read by tests and benches) */
  get samplers() {
    return this.#samplers;
  }

  /** @returns {import('../../exporters').Exporter[]} the running exporters (read by tests and benches) */
  get exporters() {
    return this.#exporters;
  }

  /** @returns {import('../endpoint/server').AgentServer | null} the agent's HTTP endpoint, once the second phase made it */
  get server() {
    return this.#server;
  }

  /**
   * Start in two phases. The first does what must precede the app's first line: the early
   * samplers (wrap dns.lookup, subscribe to the connection channels) and the lookup-span context
   * (./spans.js), all cheap. The second creates the endpoint, the exporters
   * (prom-client, hot-shots, the OpenTelemetry SDK load there) and the other samplers; the
   * sampling timer starts with the first. With `defer` (the preload) the second phase runs on the
   * first timer tick, after the app's top-level code, from an unref'd timer: a process that exits
   * before its loop turns never pays for it, and a long-running one gets its endpoint within a millisecond of its
   * loop starting. That tick comes before any I/O callback of the loop's first turn, so no lookup
   * the app's top-level code starts completes before the exporters listen for it. Never throws.
   * @param {{ defer?: boolean }} [how]
   */
  start({ defer = false } = {}) {
    /** @type {import('../sources').SamplerContext} */
    const samplerContext = { options: this.#options, ownIo: this.#ownIo, resolver: () => (this.#resolver ? this.#resolver.current : null) };
    const samplers = new Map();
    for (const { name, early, create } of SOURCES) {
      if (!(typeof early === 'function' ? early(this.#options) : early)) continue;
      const sampler = this.#createSampler(name, create, samplerContext);
      if (sampler) samplers.set(name, sampler);
    }
    this.#samplers = [...samplers.values()];
    this.#early = { samplerContext, samplers };
    this.#spans = this.#safely('spans', () => startSpanContext({ options: this.#options, startChannel: channels.published.dnsLookupStart, latest: () => this.#latest }));
    if (this.#options.reportOnExit) {
      const target = this.#options.reportOnExit;
      this.#onExit = () => this.#safely('report', () => {
        const snapshot = this.sampleNow();
        lazy.exitReport.writeExitReport(target, snapshot, this.#history ? this.#history.list() : []);
      });
      process.on('exit', this.#onExit);
    }
    // The sampling timer starts now, so the first sample comes one interval after the preload
    // however long the second phase takes (loading prom-client on a busy machine: 100s of ms).
    this.#timer = setInterval(() => this.sampleNow(), this.#options.intervalMs);
    this.#timer.unref();
    if (defer) {
      this.#deferred = setTimeout(() => this.#startRest(), 0);
      this.#deferred.unref();
    } else {
      this.#startRest();
    }
    injectFault('agent:start');
    return this;
  }

  /**
   * Take one sample now: call every sampler, build and keep a frozen snapshot, hand it to push
   * exporters. Exposed for tests and benchmarks.
   * @returns {import('../snapshot/snapshot').Snapshot}
   */
  sampleNow() {
    this.#startRest();
    const { countResources, samplePoints, collectDetails, endIntervals, errorPoints, exactPoints, reuseFrozen } = lazy.sampling;
    const samplers = this.#samplers;
    const tick = { resources: countResources() };
    const previous = this.#latest;
    const points = samplePoints(samplers, tick, previous ? previous.points : undefined);
    const time = Date.now();
    const details = collectDetails(samplers);
    endIntervals(samplers);
    if (!this.#resolver) this.#resolver = new lazy.resolver.ResolverReader();
    this.#resolver.refresh(time);
    const resolver = this.#resolver.details();
    if (resolver) details.resolver = resolver;
    const findings = this.#evaluateFindings(time, points, details);
    const signals = this.#signals();
    // Frozen whole; the parts equal to the previous snapshot's are its (lib/agent/sampling.js).
    const snapshot = reuseFrozen(previous, { time, intervalMs: this.#options.intervalMs, points: exactPoints(points, errorPoints()), details, findings, signals });
    this.#latest = snapshot;
    if (this.#history) this.#safely('page', () => this.#history.add(snapshot));
    this.#exportAll(snapshot);
    return snapshot;
  }

  /** Stop the timer, restore what was wrapped, close exporters. Never rejects. */
  async stop() {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#deferred);
    clearInterval(this.#timer);
    if (this.#onExit) process.off('exit', this.#onExit);
    for (const s of this.#samplers) this.#safely(`sampler:${s.name}`, () => s.close());
    if (this.#spans) this.#safely('spans', () => this.#spans.close());
    await Promise.all([
      ...this.#exporters.map(async (e) => {
        try {
          await e.close();
        } catch (err) {
          reportError(`exporter:${e.name}`, err);
        }
      }),
      this.#server && this.#server.close(),
    ]);
  }

  /** The second phase (see start()); runs once. */
  #startRest() {
    if (this.#early === null || this.#closed) return;
    clearTimeout(this.#deferred);
    this.#deferred = null;
    const { samplerContext, samplers } = this.#early;
    this.#early = null;
    this.#history = this.#safely('page', () => lazy.page.createHistory());
    this.#findings = this.#safely('findings', () => lazy.findings.createFindingsEngine({ intervalMs: this.#options.intervalMs, startTime: Date.now(), checkQuiet: checkQuietOn }));
    this.#resolver = new lazy.resolver.ResolverReader();
    this.#resolver.refresh(Date.now());
    this.#server = this.#safely('server', () => this.#createServer());
    // Exporters before the other samplers: loading their libraries blocks the loop for tens of
    // ms, which the event-loop sampler must not take for the app's delay (its monitor starts after).
    if (this.#spans) this.#safely('spans', () => this.#spans.refresh(false)); // the app's top-level code is done
    const context = this.#exporterContext();
    for (const name of this.#options.exporters) {
      const exporter = this.#safely(`exporter:${name}`, () => {
        injectFault(`create:exporter:${name}`);
        return createExporter(name, context);
      });
      if (exporter) this.#exporters.push(exporter);
    }
    const all = [];
    for (const { name, create } of SOURCES) {
      const sampler = samplers.has(name) ? samplers.get(name) : this.#createSampler(name, create, samplerContext);
      if (sampler) all.push(sampler);
    }
    this.#samplers = all;
  }

  #createSampler(name, create, samplerContext) {
    return this.#safely(`sampler:${name}`, () => {
      injectFault(`create:sampler:${name}`);
      return create(samplerContext);
    });
  }

  /** The agent's narrow face for exporters (exporters/index.js ExporterContext). */
  #exporterContext() {
    return Object.freeze({
      options: this.#options,
      latest: () => this.#latest,
      sampleNow: () => this.sampleNow(),
      channels,
      ownLookup: this.#ownIo.lookup,
      ownAgent: this.#ownIo.createAgent,
      server: this.#server,
    });
  }

  /**
   * The agent's HTTP endpoint (lib/endpoint/server.js) with the snapshot, the page and its history
   * on it (lib/endpoint/routes.js); exporters add theirs (/metrics).
   */
  #createServer() {
    const endpoint = lazy.server.endpointFor(this.#options);
    if (!endpoint) return null;
    const multiprocess = { ...this.#options.multiprocess, intervalMs: this.#options.intervalMs, lookup: this.#ownIo.lookup, sample: () => this.sampleNow() };
    const server = lazy.server.createAgentServer({ ...endpoint, multiprocess });
    lazy.routes.addAgentRoutes(server, { latest: () => this.#latest, history: () => (this.#history ? this.#history.list() : []) });
    return server;
  }

  #evaluateFindings(time, points, details) {
    try {
      injectFault('findings');
      return this.#findings ? this.#findings.evaluate({ time, points, details }) : [];
    } catch (err) {
      reportError('findings', err);
      return [];
    }
  }

  // The latest interval's signals (lib/findings/signals.js), which the findings were made from.
  #signals() {
    try {
      return this.#findings ? this.#findings.signals() : null;
    } catch (err) {
      reportError('findings', err);
      return null;
    }
  }

  #exportAll(snapshot) {
    // A process that does not hold the endpoint's port sends its snapshot to the one that does.
    if (this.#server) this.#safely('multiprocess', () => this.#server.export(snapshot));
    if (this.#spans) this.#safely('spans', () => this.#spans.refresh()); // a tracer registered since
    const exporters = this.#exporters;
    for (let i = 0; i < exporters.length; i++) {
      const exporter = exporters[i];
      if (typeof exporter.export !== 'function') continue;
      try {
        injectFault(`export:${exporter.name}`);
        exporter.export(snapshot);
      } catch (err) {
        reportError(`exporter:${exporter.name}`, err);
      }
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

module.exports = { Agent };
