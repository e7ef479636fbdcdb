'use strict';

const { Histogram } = require('../core/histogram');
const { metricDef, RUNTIME, NO_ATTRIBUTES } = require('./metric-def');
const { reportError } = require('../core/errors');

// perf_hooks GC kinds (entry.detail.kind) by OpenTelemetry's v8js.gc.type names.
const gcTypes = (constants) => new Map([
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [constants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb'],
]);

// libuv reports "no limit" as the largest uint64 (Node 20 shows 2^64) or 0 / undefined.
const NO_LIMIT = 2 ** 60;
// The cgroup's limit changes only when the container is resized: read at most this often, since
// process.constrainedMemory() opens, reads and closes /proc/self/cgroup and two cgroup files. The
// heap limit is read with it: V8 moves it only when a near-heap-limit callback raises it
// (--heapsnapshot-near-heap-limit), and v8.getHeapStatistics() makes an object of 14 figures.
const LIMIT_READ_MS = 10000;

/** Upper bounds for GC pauses. */
const GC_BUCKETS = Object.freeze([0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]);

/** @type {readonly import('./metric-def').MetricDef[]} */
const METRICS = Object.freeze([
  metricDef('v8js.memory.heap.limit', 'gauge', 'By', [], 'V8 heap size limit (--max-old-space-size and the young generation).', undefined, RUNTIME),
  metricDef('nodejs.memory.constrained', 'gauge', 'By', [],
    'Memory the process may use under its cgroup (container) limit, from process.constrainedMemory(); absent when there is no limit.'),
  metricDef('v8js.gc.duration', 'histogram', 's', ['v8js.gc.type'], 'Garbage-collection pauses by kind (major, minor, incremental, weakcb).', GC_BUCKETS, RUNTIME),
]);

/**
 * The V8 heap limit against the memory the container (cgroup) allows, and GC pauses by kind.
 * @param {{ constrainedMemory?: () => number|undefined, heapLimit?: () => number, now?: () => number, gc?: boolean }} [options]
 *   heapLimit and now: v8's heap_size_limit and performance.now() by default (tests)
 */
function createMemorySampler(options = {}) {
  // v8 and perf_hooks load with the sampler, not with its declaration (they would cost the preload).
  const v8 = require('v8');
  const { PerformanceObserver, constants, performance } = require('perf_hooks');
  const GC_TYPES = gcTypes(constants);
  const constrained = options.constrainedMemory || (typeof process.constrainedMemory === 'function' ? () => process.constrainedMemory() : () => undefined);
  const gc = new Map(); // type -> Histogram
  const gcAttributes = new Map(); // type -> its points' attributes, the same frozen object every sample
  let observer = null;
  let limit = null;
  let heapLimit = 0;
  let limitAt = -Infinity;
  if (options.gc !== false) {
    try {
      observer = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
          const e = /** @type {any} */ (entry);
          const kind = e.detail ? e.detail.kind : e.kind;
          const type = GC_TYPES.get(kind) || 'other';
          let h = gc.get(type);
          if (!h) gc.set(type, (h = new Histogram(GC_BUCKETS)));
          h.observe(entry.duration / 1000);
        }
      });
      observer.observe({ entryTypes: ['gc'] });
    } catch (err) {
      reportError('sampler:memory', err);
    }
  }

  return {
    name: 'memory',
    sample() {
      const now = options.now ? options.now() : performance.now();
      if (now - limitAt >= LIMIT_READ_MS) {
        heapLimit = options.heapLimit ? options.heapLimit() : v8.getHeapStatistics().heap_size_limit;
        limit = containerLimit(constrained);
        limitAt = now;
      }
      /** @type {import('./index').RawPoint[]} */
      const out = [{ name: 'v8js.memory.heap.limit', attributes: NO_ATTRIBUTES, value: heapLimit }];
      if (limit !== null) out.push({ name: 'nodejs.memory.constrained', attributes: NO_ATTRIBUTES, value: limit });
      gc.forEach((h, type) => {
        let attributes = gcAttributes.get(type);
        if (!attributes) gcAttributes.set(type, (attributes = Object.freeze({ 'v8js.gc.type': type })));
        out.push({ name: 'v8js.gc.duration', attributes, histogram: h.snapshot() });
      });
      return out;
    },
    close() {
      if (observer) observer.disconnect();
    },
  };
}


/** The cgroup memory limit in bytes, or null when there is none. */
function containerLimit(constrained) {
  const v = constrained();
  return typeof v === 'number' && v > 0 && v < NO_LIMIT ? v : null;
}

/** @type {import('./index').Source} */
const source = Object.freeze({
  name: 'memory',
  settings: Object.freeze([]),
  metrics: METRICS,
  create: () => createMemorySampler(),
});

module.exports = { source, GC_BUCKETS, createMemorySampler, containerLimit };
