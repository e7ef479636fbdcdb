'use strict';

const { createResourcesSampler, countTypes } = require('./samplers/resources');
const { createThreadpoolSampler } = require('./samplers/threadpool');
const { createEventLoopSampler } = require('./samplers/eventloop');
const { createDnsSampler } = require('./samplers/dns');
const { reportError, errorCountsSnapshot } = require('./report');

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
  }

  /** Create samplers and exporters and start the timer. Never throws. */
  start() {
    const dns = this.#safely('sampler:dns', () => createDnsSampler({ maxNames: this.options.dns.maxNames }));
    const samplers = [
      this.#safely('sampler:resources', () => createResourcesSampler()),
      this.#safely('sampler:threadpool', () => createThreadpoolSampler({ lookup: dns ? dns.originalLookup : undefined })),
      this.#safely('sampler:eventloop', () => createEventLoopSampler()),
      dns,
    ];
    this.samplers = samplers.filter(Boolean);
    for (const name of this.options.exporters) {
      const exporter = this.#safely(`exporter:${name}`, () => require(`../exporters/${name}`).createExporter(this));
      if (exporter) this.exporters.push(exporter);
    }
    this.timer = setInterval(() => this.sampleNow(), this.options.intervalMs);
    this.timer.unref();
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
    for (const [component, value] of errorCountsSnapshot()) {
      points.push(Object.freeze({ name: 'uvscope.errors', attributes: Object.freeze({ 'uvscope.component': component }), value }));
    }
    const snapshot = Object.freeze({ time: Date.now(), intervalMs: this.options.intervalMs, points: Object.freeze(points) });
    this.latest = snapshot;
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
    for (const s of this.samplers) this.#safely(`sampler:${s.name}`, () => s.close());
    await Promise.all(this.exporters.map(async (e) => {
      try {
        await e.close();
      } catch (err) {
        reportError(`exporter:${e.name}`, err);
      }
    }));
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
