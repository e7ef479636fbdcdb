'use strict';

const { createDnsSampler } = require('./samplers/dns');
const { createConnectionsSampler } = require('./samplers/connections');
const { reportError, errorCountsSnapshot } = require('./report');

// Loaded when the agent's second phase starts (see start()), off the app's startup path.
const lazy = {
  get resources() { return require('./samplers/resources'); },
  get threadpool() { return require('./samplers/threadpool'); },
  get eventloop() { return require('./samplers/eventloop'); },
  get memory() { return require('./samplers/memory'); },
  get resolver() { return require('./resolver'); },
  get findings() { return require('./findings'); },
  get formatReport() { return require('./format-report').formatReport; },
  get page() { return require('./page'); },
};

// resolv.conf and /etc/hosts are re-read this often (tiny files, read synchronously).
const RESOLVER_REFRESH_MS = 60000;

/**
 * The agent owns time: one unref'd interval timer calls every sampler (each isolated), builds one
 * frozen snapshot and keeps it as `latest`. Push exporters get export(snapshot); pull exporters
 * read `latest`.
 */
class Agent {
  /** @param {Readonly<object>} options resolved options (lib/options.js) */
  constructor(options) {
    this.options = options;
    this.latest = null;
    this.samplers = [];
    this.exporters = [];
    this.timer = null;
    this.closed = false;
    this.resolver = null;
    this.resolverReadAt = 0;
    this.history = null; // the page's recent samples (lib/page), from the second phase
    this.findings = null;
    this.early = null; // what the first phase made, until the second phase adopts it
    this.deferred = null; // the timer that starts the second phase
  }

  /**
   * Start in two phases. The first does what must precede the app's first line: wrap dns.lookup,
   * subscribe to the connection channels and run the exporters' early(agent) (all cheap). The
   * second creates the other samplers,
   * the exporters (prom-client, hot-shots, the OpenTelemetry SDK are loaded there) and the
   * sampling timer. With `defer` (the preload) the second phase runs on the first timer tick,
   * after the app's top-level code, from an unref'd timer: a process that exits before its loop
   * turns never pays for it, and a long-running one gets its endpoint within a millisecond of its
   * loop starting. That tick comes before any I/O callback of that loop turn, so no lookup that
   * the app's top-level code starts completes before the exporters listen for it. Never throws.
   * @param {{ defer?: boolean }} [how]
   */
  start({ defer = false } = {}) {
    const dns = this.#safely('sampler:dns', () => createDnsSampler({ maxNames: this.options.dns.maxNames, resolver: () => this.resolver }));
    const connections = this.#safely('sampler:connections', () => createConnectionsSampler());
    // An exporter may have work that cannot wait either (its module's early(agent), e.g. tags on a
    // tracer's dns.lookup spans); its libraries still load in the second phase.
    const exporters = [];
    for (const name of this.options.exporters) {
      this.#safely(`exporter:${name}`, () => {
        const mod = require(`../exporters/${name}`);
        exporters.push({ name, mod, pre: typeof mod.early === 'function' ? mod.early(this) : undefined });
      });
    }
    this.early = { dns, connections, exporters };
    this.samplers = [dns, connections].filter(Boolean);
    if (this.options.reportOnExit) {
      const target = this.options.reportOnExit;
      this.onExit = () => this.#safely('report', () => {
        const snapshot = this.sampleNow();
        if (target === true) process.stderr.write(lazy.formatReport(snapshot));
        else require('fs').writeFileSync(target, lazy.page.staticReport({ snapshot: { pid: process.pid, ...snapshot }, history: this.history ? this.history.list() : [] }));
      });
      process.on('exit', this.onExit);
    }
    if (defer) {
      this.deferred = setTimeout(() => this.#startRest(), 0);
      this.deferred.unref();
    } else {
      this.#startRest();
    }
    return this;
  }

  /** The second phase (see start()); runs once. */
  #startRest() {
    if (this.early === null || this.closed) return;
    clearTimeout(this.deferred);
    this.deferred = null;
    const { dns, connections, exporters } = this.early;
    this.early = null;
    this.history = this.#safely('page', () => lazy.page.createHistory());
    this.findings = this.#safely('findings', () => lazy.findings.createFindingsEngine({ intervalMs: this.options.intervalMs, startTime: Date.now() }));
    this.#refreshResolver(Date.now());
    // Exporters first: loading their libraries blocks the loop for tens of ms, which the
    // event-loop sampler must not take for the app's delay (its monitor starts after).
    for (const { name, mod, pre } of exporters) {
      const exporter = this.#safely(`exporter:${name}`, () => (pre === undefined ? mod.createExporter(this) : mod.createExporter(this, pre)));
      if (exporter) this.exporters.push(exporter);
      else if (pre) this.#safely(`exporter:${name}`, () => pre.close());
    }
    const samplers = [
      this.#safely('sampler:resources', () => lazy.resources.createResourcesSampler()),
      this.#safely('sampler:threadpool', () => lazy.threadpool.createThreadpoolSampler({ lookup: dns ? dns.originalLookup : undefined })),
      this.#safely('sampler:eventloop', () => lazy.eventloop.createEventLoopSampler()),
      dns,
      connections,
      this.#safely('sampler:memory', () => lazy.memory.createMemorySampler()),
    ];
    this.samplers = samplers.filter(Boolean);
    this.timer = setInterval(() => this.sampleNow(), this.options.intervalMs);
    this.timer.unref();
  }

  /**
   * Take one sample now: call every sampler, build and keep a frozen snapshot, hand it to push
   * exporters. Exposed for tests and benchmarks.
   * @returns {Readonly<{time: number, intervalMs: number, points: readonly object[]}>}
   */
  sampleNow() {
    this.#startRest();
    const points = [];
    let resources = new Map();
    try {
      if (typeof process.getActiveResourcesInfo === 'function') resources = lazy.resources.countTypes(process.getActiveResourcesInfo());
    } catch (err) {
      reportError('sampler:resources', err);
    }
    const tick = { resources };
    for (const sampler of this.samplers) {
      try {
        for (const p of sampler.sample(tick)) points.push(Object.freeze({ ...p, attributes: Object.freeze(p.attributes) }));
      } catch (err) {
        reportError(`sampler:${sampler.name}`, err);
      }
    }
    const time = Date.now();
    const details = {};
    for (const sampler of this.samplers) {
      if (typeof sampler.details !== 'function') continue;
      try {
        details[sampler.name] = sampler.details();
      } catch (err) {
        reportError(`sampler:${sampler.name}`, err);
      }
    }
    this.#refreshResolver(time);
    if (this.resolver) {
      const { hosts, ...conf } = this.resolver;
      details.resolver = { ...conf, hostsNames: [...hosts].slice(0, 1000) };
    }
    let findings = [];
    try {
      if (this.findings) findings = this.findings.evaluate({ time, points, details });
    } catch (err) {
      reportError('findings', err);
    }
    for (const [component, value] of errorCountsSnapshot()) {
      points.push(Object.freeze({ name: 'uvscope.errors', attributes: Object.freeze({ 'uvscope.component': component }), value }));
    }
    const snapshot = deepFreeze({ time, intervalMs: this.options.intervalMs, points, details, findings });
    this.latest = snapshot;
    if (this.history) this.#safely('page', () => this.history.add(snapshot));
    for (const exporter of this.exporters) {
      if (typeof exporter.export !== 'function') continue;
      try {
        exporter.export(snapshot);
      } catch (err) {
        reportError(`exporter:${exporter.name}`, err);
      }
    }
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
    // Stopped before the second phase: undo what the exporters did early.
    if (this.early) for (const { name, pre } of this.early.exporters) if (pre) this.#safely(`exporter:${name}`, () => pre.close());
    await Promise.all(this.exporters.map(async (e) => {
      try {
        await e.close();
      } catch (err) {
        reportError(`exporter:${e.name}`, err);
      }
    }));
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

function deepFreeze(value) {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

module.exports = { Agent };
