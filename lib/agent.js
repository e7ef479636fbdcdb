'use strict';

const { createResourcesSampler, countTypes } = require('./samplers/resources');
const { createThreadpoolSampler } = require('./samplers/threadpool');
const { createEventLoopSampler } = require('./samplers/eventloop');
const { createDnsSampler } = require('./samplers/dns');
const { createConnectionsSampler } = require('./samplers/connections');
const { createMemorySampler } = require('./samplers/memory');
const { reportError, errorCountsSnapshot } = require('./report');
const { readResolverConfig } = require('./resolver');
const { createFindingsEngine } = require('./findings');
const { formatReport } = require('./format-report');
const { createHistory } = require('./page');

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
    this.history = createHistory();
    this.findings = createFindingsEngine({ intervalMs: options.intervalMs, startTime: Date.now() });
  }

  /** Create samplers and exporters and start the timer. Never throws. */
  start() {
    this.#refreshResolver(Date.now());
    const dns = this.#safely('sampler:dns', () => createDnsSampler({ maxNames: this.options.dns.maxNames, resolver: () => this.resolver }));
    const samplers = [
      this.#safely('sampler:resources', () => createResourcesSampler()),
      this.#safely('sampler:threadpool', () => createThreadpoolSampler({ lookup: dns ? dns.ownLookup : undefined })),
      this.#safely('sampler:eventloop', () => createEventLoopSampler()),
      dns,
      this.#safely('sampler:connections', () => createConnectionsSampler()),
      this.#safely('sampler:memory', () => createMemorySampler()),
    ];
    this.samplers = samplers.filter(Boolean);
    for (const name of this.options.exporters) {
      const exporter = this.#safely(`exporter:${name}`, () => require(`../exporters/${name}`).createExporter(this));
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
   * @returns {Readonly<{time: number, intervalMs: number, points: readonly object[]}>}
   */
  sampleNow() {
    const points = [];
    let resources = new Map();
    try {
      if (typeof process.getActiveResourcesInfo === 'function') resources = countTypes(process.getActiveResourcesInfo());
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
      findings = this.findings.evaluate({ time, points, details });
    } catch (err) {
      reportError('findings', err);
    }
    for (const [component, value] of errorCountsSnapshot()) {
      points.push(Object.freeze({ name: 'uvscope.errors', attributes: Object.freeze({ 'uvscope.component': component }), value }));
    }
    const snapshot = deepFreeze({ time, intervalMs: this.options.intervalMs, points, details, findings });
    this.latest = snapshot;
    this.#safely('page', () => this.history.add(snapshot));
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
    clearInterval(this.timer);
    if (this.onExit) process.off('exit', this.onExit);
    for (const s of this.samplers) this.#safely(`sampler:${s.name}`, () => s.close());
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

function deepFreeze(value) {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

module.exports = { Agent };
